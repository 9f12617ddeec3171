"""The coroutine twins of ``TimeSeriesModel``'s range reads (see :mod:`shardmodel.model.aio`).

Each runs its sync read on the event loop: the same plan (entity, buckets, sort-key
range, request bound checked before any request), merge and cursor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from shardmodel.core.bridge import call
from shardmodel.model.aio import AsyncResultIterator

if TYPE_CHECKING:
    from pynamodb.models import Model as _Base
else:
    _Base = object  # at run time a mixin of TimeSeriesModel

__all__ = ["AsyncSeriesMethods"]


class AsyncSeriesMethods(_Base):
    """``aquery_series``, ``alatest``, ``acount_series`` and ``aget_reading``."""

    @classmethod
    def aquery_series(
        cls, entity: str, start: Any, end: Any, **options: Any
    ) -> AsyncResultIterator[Self]:
        """``query_series``'s twin: ``async for reading in Model.aquery_series(...)``."""
        return AsyncResultIterator(
            lambda: cls.query_series(entity, start, end, **options)  # type: ignore[attr-defined]
        )

    @classmethod
    def alatest(
        cls, entity: str, hours: int = 1, *, now: Any = None, **options: Any
    ) -> AsyncResultIterator[Self]:
        """``latest``'s twin: the last ``hours`` clock hours of ``entity``."""
        return AsyncResultIterator(
            lambda: cls.latest(entity, hours, now=now, **options)  # type: ignore[attr-defined]
        )

    @classmethod
    async def acount_series(cls, entity: str, start: Any, end: Any, **options: Any) -> int:
        """``count_series``'s twin."""
        return await call(cls.count_series, entity, start, end, **options)  # type: ignore[attr-defined]

    @classmethod
    async def aget_reading(
        cls,
        entity: str,
        at: Any,
        consistent_read: bool = False,
        attributes_to_get: Any = None,
    ) -> Self:
        """``get_reading``'s twin."""
        return await call(cls.get_reading, entity, at, consistent_read, attributes_to_get)  # type: ignore[attr-defined]
