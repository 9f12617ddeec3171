"""Scans whose filter tests a sharded key: the filter sees logical keys, on the client.

A sharded key is stored with its shard segments (``user-1#7``): DynamoDB would compare
``user_id = "user-1"`` with the stored ``user-1#7`` and match nothing (``<>`` would match
everything). Such a scan sends no filter; each scanned item is tested with its logical
keys (:mod:`shardmodel.expressions.filters`, DynamoDB's rules), and the projection is
applied after the filter, as DynamoDB does. Pages, ``page_size`` (DynamoDB's ``Limit``,
counted before the filter), ``limit`` (items returned), ``rate_limit``, segments and
``last_evaluated_key`` mean what they mean on PynamoDB's scan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from pynamodb.expressions.condition import Condition
from pynamodb.pagination import ResultIterator

from shardmodel.engine.codec import logical_raw
from shardmodel.engine.items import with_keys
from shardmodel.engine.sharding import sharding_of
from shardmodel.expressions.conditions import named_paths
from shardmodel.expressions.filters import matches

__all__ = ["LogicalScan", "logical_scan", "tests_sharded_key"]

_T = TypeVar("_T")
_RawItem = dict[str, dict[str, Any]]


def tests_sharded_key(model: type[Any], condition: Condition) -> bool:
    """True when ``condition`` names a sharded key attribute (stored with its segments)."""
    stored = {attr.attr_name for attr in sharding_of(model).spec.sharded}
    return bool(named_paths(condition) & stored)


class LogicalScan(Generic[_T]):
    """A scan's items that pass a filter tested on their logical keys.

    Attributes:
        total_count: items returned so far.
    """

    def __init__(
        self,
        inner: ResultIterator[_RawItem],
        keep: Callable[[_RawItem], bool],
        build: Callable[[_RawItem], _T],
        limit: int | None,
    ) -> None:
        self._inner = inner
        self._keep = keep
        self._build = build
        self._limit = limit
        self.total_count = 0

    def __iter__(self) -> Iterator[_T]:
        return self

    def __next__(self) -> _T:
        if self._limit is not None and self.total_count >= self._limit:
            raise StopIteration
        for raw in self._inner:
            if self._keep(raw):
                self.total_count += 1
                return self._build(raw)
        raise StopIteration

    @property
    def last_evaluated_key(self) -> _RawItem | None:
        """Where a scan resuming after the last item returned starts (None: complete).

        Items scanned after the last one returned all failed the filter, so resuming
        after the last item scanned skips nothing.
        """
        key: _RawItem | None = self._inner.last_evaluated_key
        return key


def logical_scan(
    model: type[Any],
    filter_condition: Condition,
    segment: int | None,
    total_segments: int | None,
    limit: int | None,
    last_evaluated_key: _RawItem | None,
    page_size: int | None,
    consistent_read: bool | None,
    index_name: str | None,
    rate_limit: float | None,
    attributes_to_get: Sequence[str] | None,
) -> LogicalScan[Any]:
    """A scan with ``filter_condition`` applied to each item's logical form."""
    projection = with_keys(model, attributes_to_get)
    fetched = None
    if projection is not None:  # the filter reads attributes the projection may drop
        fetched = list(dict.fromkeys([*projection, *sorted(named_paths(filter_condition))]))
    inner: ResultIterator[_RawItem] = ResultIterator(
        sharding_of(model).executor.connection().scan,
        (),
        {
            "exclusive_start_key": last_evaluated_key,
            "segment": segment,
            "total_segments": total_segments,
            "limit": page_size if page_size is not None else limit,
            "consistent_read": consistent_read,
            "index_name": index_name,
            "attributes_to_get": fetched,
        },
        rate_limit=rate_limit,
    )

    def keep(raw: _RawItem) -> bool:
        return matches(filter_condition, logical_raw(model, raw)[0])

    build: Callable[[_RawItem], Any] = model.from_raw_data
    if projection is not None:
        wanted = set(projection)

        def build(raw: _RawItem) -> Any:
            return model.from_raw_data({k: v for k, v in raw.items() if k in wanted})

    return LogicalScan(inner, keep, build, limit)
