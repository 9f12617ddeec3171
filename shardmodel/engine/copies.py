"""Index reads during a layout change: each item once, from the copy that holds it.

While an item moves, its old copy and its new copy carry the same attribute values, so a
secondary index holds it twice (a tombstone keeps only the key's inputs). An index read
keeps, of every copy it meets whose table key moves, only the one that holds the item: it
asks the table, one BatchGetItem of the item's keys
(:func:`~shardmodel.keyspace.phases.authority`).

A cursor also records where the read stood: the index sort key of the last item returned
and the items returned with that sort key. A copy met later that sorts before it, or is
one of those items, was returned already (its other copy), so a resume in any later phase
returns each item once.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, Generic, TypeVar

from attrs import frozen

from shardmodel.engine.cursor import decode_cursor, raw_key
from shardmodel.engine.items import instance_key_values, key_text, sharded
from shardmodel.engine.query_plan import cursor_secret
from shardmodel.engine.sharding import sharding_of
from shardmodel.errors import CursorError
from shardmodel.keyspace.phases import (
    COPY_MARKER,
    MOVE_MARKER,
    ActiveMigration,
    authority,
    is_tombstone,
)

__all__ = ["PLACE_MARK", "IndexCopies", "PreferredCopies", "index_copies", "split_cursor"]

_T = TypeVar("_T")

#: The entry an index cursor (a key dict) carries for where the read stood.
PLACE_MARK = "_shardmodel_place"
#: Between the place and a merged query's cursor string.
_JOIN = "~"


@frozen
class Place:
    """Where an index read stood: the last index sort key returned, and the items returned
    with it (their table keys, logical: a copy of one of them is not returned again)."""

    sort: Any
    items: tuple[str, ...]


def split_cursor(token: Any) -> tuple[Any, Place | None]:
    """An index cursor without its place mark, and the place (None: unmarked)."""
    if isinstance(token, dict) and PLACE_MARK in token:
        rest = {k: v for k, v in token.items() if k != PLACE_MARK}
        return rest, _place(token[PLACE_MARK].get("S"))
    if isinstance(token, str) and _JOIN in token:
        mark, rest_text = token.split(_JOIN, 1)
        return rest_text, _place(mark)
    return token, None


def _place(text: Any) -> Place:
    try:
        data = json.loads(base64.urlsafe_b64decode(str(text).encode("ascii")))
        kind, value = data["sort"]
        if kind not in ("S", "N", "B") or not isinstance(value, str):
            raise ValueError(f"sort key {data['sort']!r}")
        return Place([kind, value], tuple(str(i) for i in data["items"]))
    except (ValueError, KeyError, TypeError) as error:
        raise CursorError(
            "last_evaluated_key carries a damaged index position; pass the cursor of an "
            "index query unchanged, or start over"
        ) from error


def _place_text(place: Place) -> str:
    data = json.dumps({"sort": place.sort, "items": list(place.items)}, sort_keys=True)
    return base64.urlsafe_b64encode(data.encode("utf-8")).decode("ascii")


@frozen
class IndexCopies:
    """How one index read of ``model`` picks copies during ``migration``."""

    model: Any
    migration: ActiveMigration
    index_sort: Any  # the index's sort key attribute (None: none)
    resumed: Place | None
    forward: bool = True

    def keep(self, item: Any) -> bool:
        """True for the copy of ``item`` that holds it (asking the table where it moves)."""
        physical = getattr(item, "_physical_key", None)
        if physical is None:
            return True
        key = instance_key_values(item)
        new_key = self.migration.new_key(key, physical)
        olds = self.migration.old_keys(key, physical)
        keys = list(dict.fromkeys([*olds, new_key]))
        if keys == [physical]:
            return True
        model = self.model
        attr = sharded(model)
        range_attr = model._range_key_attribute()
        range_value = None
        if range_attr is not None:
            range_value = range_attr.serialize(getattr(item, model._range_keyname))
        requests = []
        for candidate in keys:
            request: dict[str, Any] = {attr.attr_name: candidate}
            if range_attr is not None:
                request[range_attr.attr_name] = range_value
            requests.append(request)
        names = [attr.attr_name, MOVE_MARKER, COPY_MARKER]
        if range_attr is not None:
            names.append(range_attr.attr_name)
        found = sharding_of(model).executor.batch_get(requests, True, names)
        by_key = {raw[attr.attr_name]["S"]: raw for raw in found}
        old = [by_key[k] for k in olds if k in by_key and k != new_key]
        holder = authority(old, by_key.get(new_key))
        if holder is None and new_key not in by_key and any(is_tombstone(r) for r in old):
            # the batch read the new key before a move reached it: the copy there holds it
            return bool(physical == new_key)
        return holder is not None and holder[attr.attr_name]["S"] == physical

    def seen(self, item: Any) -> bool:
        """True when a resumed read returned ``item`` already (through its other copy)."""
        if self.resumed is None or self.index_sort is None:
            return False
        sort = self.sort_of(item)
        if sort is None:
            return False
        mark = _order(self.resumed.sort)
        if (sort < mark) if self.forward else (sort > mark):
            return True
        return sort == mark and self.ident(item) in self.resumed.items

    def sort_text(self, item: Any) -> list[str] | None:
        """An item's index sort key as ``[type, canonical text]`` (None: it has none)."""
        value = getattr(item, self.index_sort_name, None)
        if value is None:
            return None
        kind = self.index_sort.attr_type
        serialized = self.index_sort.serialize(value)
        if kind == "B":
            raw = serialized if isinstance(serialized, bytes) else str(serialized).encode()
            return [kind, base64.b64encode(raw).decode("ascii")]
        return [kind, str(key_text(self.index_sort, serialized))]

    def sort_of(self, item: Any) -> Any:
        text = self.sort_text(item)
        return None if text is None else _order(text)

    @property
    def index_sort_name(self) -> str:
        for name, attr in self.model.get_attributes().items():
            if attr.attr_name == self.index_sort.attr_name:
                return str(name)
        return ""

    def ident(self, item: Any) -> str:
        """An item's logical table key, as text."""
        model = self.model
        logical = getattr(item, sharded(model).attr_name)
        range_value = getattr(item, model._range_keyname) if model._range_keyname else None
        return json.dumps([logical, str(range_value)])

    def projection(self, model: Any, attributes_to_get: Any) -> list[str] | None:
        """``attributes_to_get`` and what :meth:`keep` reads (the table key's inputs)."""
        if attributes_to_get is None:
            return None
        attr = sharded(model)
        attributes = model.get_attributes()
        names = [attributes[name].attr_name for name in attr.layout.attributes]
        keys = [a.attr_name for a in (attr, model._range_key_attribute()) if a is not None]
        extra = [self.index_sort.attr_name] if self.index_sort is not None else []
        return list(dict.fromkeys([*attributes_to_get, *keys, *names, *extra]))

    def wrap(self, results: Any, limit: int | None) -> PreferredCopies[Any]:
        return PreferredCopies(results, self, limit)


def _order(sort: Any) -> Any:
    """A ``[type, text]`` index sort key in DynamoDB's order (numbers by value, else bytes)."""
    kind, text = sort
    if kind == "N":
        return Decimal(text)
    if kind == "B":
        return base64.b64decode(text)
    return str(text).encode("utf-8")


def index_copies(
    model: Any, token: Any, index_sort: Any, forward: bool = True
) -> tuple[IndexCopies | None, Any]:
    """The copy rule of an index read of ``model`` (None: no migration) and its cursor;
    ``forward``: the read's direction (what a resumed read returned already sorts before
    its place, or after it when descending)."""
    start, place = split_cursor(token)
    migration = sharding_of(model).migration()
    if migration is None:
        return None, start
    if place is None and start is not None and index_sort is not None:
        place = _place_of(model, start, index_sort, forward)
    return IndexCopies(model, migration, index_sort, place, forward), start


def _place_of(model: Any, start: Any, index_sort: Any, forward: bool) -> Place | None:
    """The place of a cursor taken without one (before the migration began).

    A moved item's index entry has another table key at the same index sort key, so a
    resumed read would meet it again after the cursor's start: the place is the last
    returned sort key (the merge returned everything before it) and the items there.
    """
    if isinstance(start, dict):
        starts = [start]
    else:
        cursor = decode_cursor(start, cursor_secret(model))
        starts = [raw_key(s.start) for s in cursor.shards if s.start is not None]
    marks: list[tuple[Any, list[str], str]] = []
    layout = sharded(model).layout
    hash_name = sharded(model).attr_name
    range_attr = model._range_key_attribute()
    for raw in starts:
        typed = raw.get(index_sort.attr_name)
        if typed is None or hash_name not in raw:
            continue
        ((kind, value),) = typed.items()
        if kind == "B":
            raw_bytes = value if isinstance(value, bytes) else base64.b64decode(value)
            sort = [kind, base64.b64encode(raw_bytes).decode("ascii")]
        else:
            sort = [kind, str(key_text(index_sort, value))]
        range_value = None
        if range_attr is not None and range_attr.attr_name in raw:
            range_value = range_attr.deserialize(raw[range_attr.attr_name][range_attr.attr_type])
        logical = layout.logical_key(raw[hash_name]["S"])
        marks.append((_order(sort), sort, json.dumps([logical, str(range_value)])))
    if not marks:
        return None
    last = (max if forward else min)(order for order, _, _ in marks)
    sort = next(text for order, text, _ in marks if order == last)
    return Place(sort, tuple(ident for order, _, ident in marks if order == last))


class PreferredCopies(Generic[_T]):
    """An index query's items, each logical item once; its cursor carries its place."""

    def __init__(self, results: Any, copies: IndexCopies, limit: int | None) -> None:
        self._results = results
        self._copies = copies
        self._limit = limit
        self._place = copies.resumed
        self.total_count = 0

    def __iter__(self) -> Iterator[_T]:
        return self

    def __next__(self) -> _T:
        copies = self._copies
        while self._limit is None or self.total_count < self._limit:
            item = next(self._results)
            if copies.seen(item) or not copies.keep(item):
                continue
            self.total_count += 1
            self._remember(item)
            return item  # type: ignore[no-any-return]
        close = getattr(self._results, "close", None)
        if close is not None:
            close()  # a merged query may have shard requests in flight
        raise StopIteration

    def _remember(self, item: Any) -> None:
        copies = self._copies
        if copies.index_sort is None:
            return
        sort = copies.sort_text(item)
        if sort is None:
            return
        ident = copies.ident(item)
        if self._place is not None and self._place.sort == sort:
            self._place = Place(sort, (*self._place.items, ident))
        else:
            self._place = Place(sort, (ident,))

    @property
    def last_evaluated_key(self) -> Any:
        """The inner query's cursor, marked with where this read stood."""
        inner = self._results.last_evaluated_key
        if inner is None:
            return None
        if self._place is None:
            return inner
        text = _place_text(self._place)
        if isinstance(inner, dict):
            return {**inner, PLACE_MARK: {"S": text}}
        return f"{text}{_JOIN}{inner}"

    def __getattr__(self, name: str) -> Any:
        return getattr(self._results, name)  # requests, consumed capacity, close, ...
