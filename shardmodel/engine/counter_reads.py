"""Reads of counter models that see logical items: summed, then filtered, then counted.

A counter item is spread over shard items, each holding a share of the counters (and
the home shard the other attributes). ``get``, ``batch_get`` and ``query`` sum them;
this module makes ``count``, filters and ``scan`` do the same:

* a filter is applied to the summed item on the client (:mod:`shardmodel.expressions.filters`),
  never sent to DynamoDB, which would apply it to each share;
* ``count(key)`` counts the summed items of a query;
* ``scan`` reads shard items (keys only), and for each one found reads every shard of
  its logical item (BatchGetItem); the lowest-numbered shard item that exists (the home
  shard's, when there is one) emits the summed item, so parallel segments together
  return each logical item once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from pynamodb.expressions.condition import Condition

from shardmodel.engine.codec import logical_raw
from shardmodel.engine.sharding import sharding_of
from shardmodel.errors import UnsupportedOperationError
from shardmodel.expressions.filters import matches

__all__ = ["CounterScan", "check_countable", "check_index_read", "summed_filter"]

_T = TypeVar("_T")
_RawItem = dict[str, dict[str, Any]]
#: page(exclusive start key, page size) -> a Scan response of shard-item keys
ScanPage = Callable[[_RawItem | None, int | None], dict[str, Any]]


def check_countable(model: Any, hash_key: Any) -> None:
    """Refuse ``count()`` without a key on a counter model, before any request."""
    if hash_key is None:
        name = model.__name__
        raise UnsupportedOperationError(
            f"{name}.count() without a key: DescribeTable's item count counts the shard "
            "items of every counter item, not the items; count one key with "
            f"{name}.count(key), or every item with sum(1 for _ in {name}.scan())"
        )


def check_index_read(
    model: Any, operation: str, attributes_to_get: Sequence[str] | None, filtered: bool
) -> None:
    """Refuse an index read of a counter model that would show partial counters.

    An index holds shard items, each with its share of the counters (and, for an index
    on other attributes, the home shard's item only): its counters are not totals. An
    index read may return keys and other attributes, without counters and without a
    filter; ``batch_get`` the keys for totals.
    """
    name = model.__name__
    attributes = model.get_attributes()
    counters = {attributes[n].attr_name for n in sharding_of(model).spec.counters}
    shown = counters if attributes_to_get is None else counters & set(attributes_to_get)
    if shown or filtered:
        raise UnsupportedOperationError(
            f"{name}.{operation}(index_name=...): an index holds shard items, whose "
            f"counters ({', '.join(sorted(counters))}) are shares, not totals; read the "
            "index without a filter and with attributes_to_get naming no counter, then "
            f"{name}.batch_get() the keys for totals"
        )


def summed_filter(
    model: Any, condition: Condition, projection: Sequence[str] | None
) -> tuple[Callable[[_RawItem], bool], Callable[[_RawItem], Any]]:
    """(keep, build) for summed raw items: the filter on the logical item, then projection.

    The filter sees the item as a plain model would store it: logical key, summed
    counters. The projection is applied after the filter, as DynamoDB does.
    """

    def keep(raw: _RawItem) -> bool:
        logical: _RawItem = logical_raw(model, raw)[0]
        return matches(condition, logical)

    if projection is None:
        return keep, model.from_raw_data
    wanted = set(projection)

    def build(raw: _RawItem) -> Any:
        return model.from_raw_data({k: v for k, v in raw.items() if k in wanted})

    return keep, build


class CounterScan(Generic[_T]):
    """A scan returning each logical counter item once, summed and filtered.

    Attributes:
        total_count: items returned so far.
        scanned: shard items the scan read.
    """

    def __init__(
        self,
        *,
        page: ScanPage,
        emit: Callable[[list[_RawItem]], list[_RawItem | None]],
        keep: Callable[[_RawItem], bool],
        build: Callable[[_RawItem], _T],
        limit: int | None,
        page_size: int | None,
        start: _RawItem | None,
    ) -> None:
        self._page = page
        self._emit = emit
        self._keep = keep
        self._build = build
        self._limit = limit
        self._page_size = page_size
        self._next_start = start  # ExclusiveStartKey of the next page
        self._page_start = start  # ExclusiveStartKey of the current page
        self._rows: list[_RawItem] = []
        self._emitted: list[_RawItem | None] = []
        self._index = 0
        self._done = False
        self.total_count = 0
        self.scanned = 0

    def __iter__(self) -> Iterator[_T]:
        return self

    def __next__(self) -> _T:
        if self._limit is not None and self.total_count >= self._limit:
            raise StopIteration
        while True:
            if self._index >= len(self._rows):
                if self._done:
                    raise StopIteration
                self._load()
                continue
            item = self._emitted[self._index]
            self._index += 1
            if item is not None and self._keep(item):
                self.total_count += 1
                return self._build(item)

    def _load(self) -> None:
        response = self._page(self._next_start, self._page_size)
        self._page_start = self._next_start
        self._rows = list(response.get("Items", []))
        self.scanned += len(self._rows)
        self._emitted = self._emit(self._rows) if self._rows else []
        self._index = 0
        self._next_start = response.get("LastEvaluatedKey")
        self._done = self._next_start is None

    @property
    def last_evaluated_key(self) -> _RawItem | None:
        """Where a scan resuming after the last item returned starts (None: complete).

        Like PynamoDB's scan: a raw key, passed back as ``last_evaluated_key``.
        """
        if self._index < len(self._rows):
            return self._rows[self._index - 1] if self._index else self._page_start
        return self._next_start
