"""One logical item out of several merged ones: counter shares summed, copies collapsed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from shardmodel.engine.merge import MergedQuery

__all__ = ["GroupedQuery"]

_T = TypeVar("_T")
_RawItem = dict[str, dict[str, Any]]


class GroupedQuery(Generic[_T]):
    """A merged query whose consecutive items with one sort key form one logical item.

    Counter models keep one item per shard; merged by sort key, a logical item's shard
    items are adjacent. Each run is combined into one item, ``limit`` counts combined
    items, and the cursor only ever falls between runs. Items for which ``seen`` is true
    (returned before a resumed cursor) are skipped, and so are combined items ``keep``
    rejects (a filter applied after combining).
    """

    def __init__(
        self,
        merged: MergedQuery[_RawItem],
        same: Callable[[_RawItem, _RawItem], bool],
        combine: Callable[[list[_RawItem]], _RawItem | None],
        build: Callable[[_RawItem], _T],
        limit: int | None,
        seen: Callable[[_RawItem], bool] | None = None,
        keep: Callable[[_RawItem], bool] | None = None,
    ) -> None:
        self._merged = merged
        self._seen = seen
        self._keep = keep
        self._same = same
        self._combine = combine
        self._build = build
        self._limit = limit
        self.total_count = 0

    def __iter__(self) -> Iterator[_T]:
        return self

    def __next__(self) -> _T:
        if self._limit is not None and self.total_count >= self._limit:
            self._merged.close()
            raise StopIteration
        while True:
            combined = self._next_combined()
            if combined is None:
                continue  # no item: a moved item's tombstone, or a deleted one's
            if self._keep is None or self._keep(combined):
                self.total_count += 1
                return self._build(combined)

    def _next_combined(self) -> _RawItem | None:
        first = next(self._merged)
        while self._seen is not None and self._seen(first):
            first = next(self._merged)
        run = [first]
        while True:
            following = self._merged.peek()
            if following is None or not self._same(first, following):
                break
            run.append(next(self._merged))
        return self._combine(run)

    def close(self) -> None:
        """Stop the underlying merged query."""
        self._merged.close()

    @property
    def last_evaluated_key(self) -> str | None:
        """The merged query's cursor, which always falls between logical items."""
        return self._merged.last_evaluated_key

    @property
    def items_read(self) -> int:
        return self._merged.items_read

    @property
    def requests(self) -> int:
        return self._merged.requests

    @property
    def consumed_capacity(self) -> float:
        return self._merged.consumed_capacity

    @property
    def shard_count(self) -> int:
        return self._merged.shard_count
