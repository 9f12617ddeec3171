"""The coroutine twins of a sharded model's operations: ``aget``, ``aquery``, ``asave``...

Each twin runs its sync operation on the running event loop
(:func:`shardmodel.core.bridge.call`): the same planning, placement, merging, cursors,
validation, retries and errors, every request sent by the async executor. So each is
one line, and what holds for the sync operation holds for its twin: a cursor from
``query`` resumes in ``aquery`` and the other way round, a bad argument raises the same
error before anything is sent, a dynamic key grows on throttling, a write keeps the
migration phase it began in.

``aquery``, ``ascan`` and ``abatch_get`` return an :class:`AsyncResultIterator` at once;
the call is planned (and a bad argument raised) at the first ``__anext__``.
"""

from __future__ import annotations

from collections.abc import (
    Generator,
    Iterable,
    Iterator,
    Sequence,
)
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.models import BatchWrite, Model

from shardmodel.core.bridge import AsyncStream, call
from shardmodel.keyspace.strategies import TimeBounds

if TYPE_CHECKING:
    from pynamodb.models import Model as _Base

    from shardmodel.dynamic.metadata import ShardMetadata
else:
    _Base = object  # at run time a mixin of ShardedModel, which is a Model

__all__ = ["AsyncBatchWrite", "AsyncIndex", "AsyncModelMethods", "AsyncResultIterator"]

_T = TypeVar("_T")
_M = TypeVar("_M", bound=Model)


class AsyncResultIterator(AsyncStream[_T]):
    """The async iterator of ``aquery``, ``ascan`` and ``abatch_get``.

    The sync iterator's attributes are read through once iteration has begun:
    ``last_evaluated_key`` (the same cursor ``query`` gives: either resumes the other),
    ``total_count``, and a merged query's ``requests``, ``items_read``,
    ``consumed_capacity`` and ``shard_count``.
    """

    async def start(self) -> Self:
        """Plan the read now (a bad argument raises here), before any item is asked.

        ``it = await Model.aquery(...)`` does the same: the cursor and counts are then
        there at once, as the sync iterator's are (``async for`` starts it on its own).
        """
        return await super().start()

    def __await__(self) -> Generator[Any, None, AsyncResultIterator[_T]]:
        return self.start().__await__()

    async def aclose(self) -> None:
        """Stop early: shard requests in flight are waited out, queued ones dropped."""
        await super().aclose()

    @property
    def iterator(self) -> Iterator[_T]:
        """The sync iterator underneath (a ``MergedQuery``, PynamoDB's ``ResultIterator``)."""
        if self._iterator is None:
            raise _NotStarted(_NOT_STARTED)
        return self._iterator

    @property
    def last_evaluated_key(self) -> Any:
        """The cursor resuming after the last item returned (None when complete)."""
        return getattr(self.iterator, "last_evaluated_key", None)

    @property
    def total_count(self) -> int:
        """Items returned so far."""
        return int(getattr(self.iterator, "total_count", 0))

    def __getattr__(self, name: str) -> Any:
        if name == "iterator":  # the property raised: Python asks here next
            raise _NotStarted(_NOT_STARTED)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.iterator, name)

    async def to_list(self) -> list[_T]:
        """Every remaining item, in order."""
        return [item async for item in self]


class _NotStarted(AttributeError):
    """An async iterator's cursor or counts asked for before it started."""


_NOT_STARTED = (
    "the async iterator has not started: its cursor and counts exist once it is awaited "
    "(it = await Model.aquery(...)) or its first item is asked for"
)


class AsyncBatchWrite(Generic[_M]):
    """``batch_write()``'s async twin: ``async with Model.abatch_write() as batch``.

    ``await batch.save(item)`` and ``await batch.delete(item)`` check each item's
    physical key as the sync batch does, sending 25 items a call; leaving the block
    commits the rest (or, on a shardmodel error, drops them, as the sync batch does).
    """

    def __init__(self, batch: BatchWrite[_M]) -> None:
        self.batch = batch

    async def __aenter__(self) -> AsyncBatchWrite[_M]:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Any:
        return await call(self.batch.__exit__, exc_type, exc, tb)

    async def save(self, item: _M) -> None:
        """Add a put (sent once 25 are pending)."""
        await call(self.batch.save, item)

    async def delete(self, item: _M) -> None:
        """Add a delete (sent once 25 are pending)."""
        await call(self.batch.delete, item)

    async def commit(self) -> None:
        """Send what is pending now."""
        await call(self.batch.commit)


class AsyncModelMethods(_Base):
    """The ``a``-prefixed twins of ``ShardedModel``'s operations (see the module)."""

    # -- reads ----------------------------------------------------------------------------

    @classmethod
    async def aget(
        cls,
        hash_key: Any,
        range_key: Any = None,
        consistent_read: bool = False,
        attributes_to_get: Sequence[str] | None = None,
    ) -> Self:
        """``get``'s twin: one item by logical key (raises ``DoesNotExist``)."""
        return await call(cls.get, hash_key, range_key, consistent_read, attributes_to_get)

    @classmethod
    def abatch_get(
        cls,
        items: Iterable[Any],
        consistent_read: bool | None = None,
        attributes_to_get: Sequence[str] | None = None,
    ) -> AsyncResultIterator[Self]:
        """``batch_get``'s twin: ``async for item in Model.abatch_get(keys)``."""
        keys = list(items)
        return AsyncResultIterator(lambda: cls.batch_get(keys, consistent_read, attributes_to_get))

    async def arefresh(self, consistent_read: bool = False) -> None:
        """``refresh``'s twin."""
        await call(self.refresh, consistent_read)

    @classmethod
    def aquery(
        cls,
        hash_key: Any,
        range_key_condition: Condition | None = None,
        filter_condition: Condition | None = None,
        consistent_read: bool = False,
        index_name: str | None = None,
        scan_index_forward: bool | None = None,
        limit: int | None = None,
        last_evaluated_key: Any = None,
        attributes_to_get: Sequence[str] | None = None,
        page_size: int | None = None,
        rate_limit: float | None = None,
        *,
        parallelism: int | None = None,
        time_range: TimeBounds | None = None,
        max_requests: int | None = None,
    ) -> AsyncResultIterator[Self]:
        """``query``'s twin: ``async for item in Model.aquery(key, ...)``.

        Shards are read concurrently on the event loop (``parallelism`` of them at a
        time, default ``Meta.max_pool_connections``), merged in DynamoDB's order.
        """
        return AsyncResultIterator(
            lambda: cls.query(  # type: ignore[call-arg]
                hash_key,
                range_key_condition,
                filter_condition,
                consistent_read,
                index_name,
                scan_index_forward,
                limit,
                last_evaluated_key,
                attributes_to_get,
                page_size,
                rate_limit,
                parallelism=parallelism,
                time_range=time_range,
                max_requests=max_requests,
            )
        )

    @classmethod
    async def acount(
        cls,
        hash_key: Any = None,
        range_key_condition: Condition | None = None,
        filter_condition: Condition | None = None,
        consistent_read: bool = False,
        index_name: str | None = None,
        limit: int | None = None,
        rate_limit: float | None = None,
        *,
        parallelism: int | None = None,
        time_range: TimeBounds | None = None,
        max_requests: int | None = None,
    ) -> int:
        """``count``'s twin: summed over the shards, counted concurrently."""
        return await call(
            cls.count,
            hash_key,
            range_key_condition,
            filter_condition,
            consistent_read,
            index_name,
            limit,
            rate_limit,
            parallelism=parallelism,
            time_range=time_range,
            max_requests=max_requests,
        )

    @classmethod
    def ascan(
        cls,
        filter_condition: Condition | None = None,
        segment: int | None = None,
        total_segments: int | None = None,
        limit: int | None = None,
        last_evaluated_key: dict[str, dict[str, Any]] | None = None,
        page_size: int | None = None,
        consistent_read: bool | None = None,
        index_name: str | None = None,
        rate_limit: float | None = None,
        attributes_to_get: Sequence[str] | None = None,
    ) -> AsyncResultIterator[Self]:
        """``scan``'s twin: ``async for item in Model.ascan(...)``."""
        return AsyncResultIterator(
            lambda: cls.scan(
                filter_condition,
                segment,
                total_segments,
                limit,
                last_evaluated_key,
                page_size,
                consistent_read,
                index_name,
                rate_limit,
                attributes_to_get,
            )
        )

    # -- writes ---------------------------------------------------------------------------

    async def asave(
        self, condition: Condition | None = None, *, add_version_condition: bool = True
    ) -> dict[str, Any]:
        """``save``'s twin."""
        return await call(self.save, condition, add_version_condition=add_version_condition)

    async def aupdate(
        self,
        actions: list[Action],
        condition: Condition | None = None,
        *,
        add_version_condition: bool = True,
    ) -> Any:
        """``update``'s twin."""
        return await call(
            self.update,
            actions,
            condition,
            add_version_condition=add_version_condition,
        )

    async def adelete(
        self, condition: Condition | None = None, *, add_version_condition: bool = True
    ) -> Any:
        """``delete``'s twin."""
        return await call(self.delete, condition, add_version_condition=add_version_condition)

    @classmethod
    def abatch_write(cls, auto_commit: bool = True) -> AsyncBatchWrite[Self]:
        """``batch_write``'s twin: ``async with Model.abatch_write() as batch``."""
        return AsyncBatchWrite(cls.batch_write(auto_commit=auto_commit))

    # -- counters -------------------------------------------------------------------------

    @classmethod
    async def aadd(
        cls, hash_key: Any, range_key: Any = None, *, token: str | None = None, **increments: Any
    ) -> None:
        """``add``'s twin: one ``UpdateItem ADD`` on one shard (``token``: counted once)."""
        await call(cls.add, hash_key, range_key, token=token, **increments)  # type: ignore[attr-defined]

    @classmethod
    async def arollup(cls, hash_key: Any, range_key: Any = None) -> Self:
        """``rollup``'s twin."""
        return await call(cls.rollup, hash_key, range_key)  # type: ignore[attr-defined]

    @classmethod
    async def aget_cached(cls, hash_key: Any, range_key: Any = None, max_age: float = 60) -> Self:
        """``get_cached``'s twin."""
        return await call(cls.get_cached, hash_key, range_key, max_age)  # type: ignore[attr-defined]

    # -- dynamic keys ---------------------------------------------------------------------

    @classmethod
    async def ashard_metadata(cls, hash_key: str) -> ShardMetadata | None:
        """``shard_metadata``'s twin."""
        return await call(cls.shard_metadata, hash_key)  # type: ignore[attr-defined]

    @classmethod
    async def agrow_shards(cls, hash_key: str, to: int) -> ShardMetadata:
        """``grow_shards``'s twin."""
        return await call(cls.grow_shards, hash_key, to)  # type: ignore[attr-defined]

    @classmethod
    async def ashrink_shards(cls, hash_key: str, count: int) -> ShardMetadata:
        """``shrink_shards``'s twin."""
        return await call(cls.shrink_shards, hash_key, count)  # type: ignore[attr-defined]


class AsyncIndex:
    """The coroutine twins of a PynamoDB index's reads, for an index of a sharded model.

    Put it first among the bases: ``class ByTitle(AsyncIndex, GlobalSecondaryIndex[Album])``;
    ``Album.by_title.aquery(key)`` is then ``Album.aquery(key, index_name="by_title")``
    (``Album.aquery(..., index_name=...)`` works without it).
    """

    def aquery(self, hash_key: Any, *args: Any, **options: Any) -> AsyncResultIterator[Any]:
        """``query``'s twin: the index's arguments (conditions, limit, cursor, ...)."""
        return AsyncResultIterator(lambda: self.query(hash_key, *args, **options))  # type: ignore[attr-defined]

    async def acount(self, hash_key: Any, *args: Any, **options: Any) -> int:
        """``count``'s twin."""
        return await call(self.count, hash_key, *args, **options)  # type: ignore[attr-defined]

    def ascan(self, *args: Any, **options: Any) -> AsyncResultIterator[Any]:
        """``scan``'s twin."""
        return AsyncResultIterator(lambda: self.scan(*args, **options))  # type: ignore[attr-defined]
