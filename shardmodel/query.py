"""Reading every shard of a logical key as one stream, in DynamoDB's sort order."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any, Generic, TypeVar

from pynamodb.attributes import Attribute
from pynamodb.constants import NUMBER
from pynamodb.pagination import ResultIterator

__all__ = ["MergedResultIterator", "dynamodb_sort_key"]

_T = TypeVar("_T")
_RawItem = dict[str, dict[str, Any]]


def dynamodb_sort_key(attribute: Attribute[Any] | None) -> Callable[[_RawItem], Any]:
    """Order raw items the way DynamoDB orders this sort key.

    Numbers compare numerically, strings by their UTF-8 bytes, binary by bytes.
    """
    if attribute is None:
        return lambda item: 0
    name, kind = attribute.attr_name, attribute.attr_type

    def key(item: _RawItem) -> Any:
        value = item[name][kind]
        if kind == NUMBER:
            return Decimal(value)
        if isinstance(value, str):
            return value.encode("utf-8")
        return bytes(value)

    return key


class MergedResultIterator(Generic[_T]):
    """One ordered iterator over the per-shard query streams of one logical key.

    Streams are merged lazily (a k-way heap), so memory holds one page per shard.
    ``limit`` applies to the merged order.

    Attributes:
        total_count: items yielded so far.
        shard_count: how many physical keys the query reads.
    """

    def __init__(
        self,
        streams: list[ResultIterator[_RawItem]],
        sort_key: Callable[[_RawItem], Any],
        forward: bool,
        build: Callable[[_RawItem], _T],
        limit: int | None,
    ) -> None:
        self._streams = streams
        self.shard_count = len(streams)
        self.total_count = 0
        merged = heapq.merge(*streams, key=sort_key, reverse=not forward)
        self._items: Iterator[_RawItem] = merged
        self._build = build
        self._limit = limit

    def __iter__(self) -> MergedResultIterator[_T]:
        return self

    def __next__(self) -> _T:
        if self._limit is not None and self.total_count >= self._limit:
            raise StopIteration
        raw = next(self._items)
        self.total_count += 1
        return self._build(raw)
