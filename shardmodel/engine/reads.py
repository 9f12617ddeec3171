"""Reads by full key: get, batch_get, refresh and transaction keys.

A read by full key touches every candidate shard of its placement in one BatchGetItem
(100 keys a call); of an item found under several keys, one is returned: counter shares
summed, the current copy of a moving item, or a :class:`DuplicateItemError` naming both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from shardmodel.counters import aggregate
from shardmodel.engine.executor import BATCH_GET_KEYS
from shardmodel.engine.items import (
    check_logical,
    check_range_key,
    hinted_values,
    instance_key_values,
    key_text,
    key_values,
    physical_hint,
    range_value,
    sharded,
    with_keys,
)
from shardmodel.engine.sharding import sharding_of
from shardmodel.errors import DuplicateItemError, UnsupportedOperationError
from shardmodel.keyspace.keys import PhysicalKey
from shardmodel.keyspace.phases import COPY_MARKER, MOVE_MARKER
from shardmodel.request_bound import request_bound

__all__ = [
    "batch_get",
    "candidate_keys",
    "get",
    "merge_shares",
    "refresh",
    "transaction_key",
]

_M = TypeVar("_M")
_RawItem = dict[str, dict[str, Any]]
#: (logical key, sort key, its candidate physical keys)
_Request = tuple[Any, Any, list[str]]


def candidate_keys(
    model: type[Any],
    hash_key: Any,
    range_key: Any = None,
    shard_by: Mapping[str, Any] | None = None,
    operation: str = "get",
) -> list[str]:
    """Every physical key a read of (hash_key, range_key) must touch, in shard order.

    ``shard_by``: values of attributes the shard is computed from (beyond the key).
    """
    engine = sharding_of(model)
    operation = f"{model.__name__}.{operation}"
    check_range_key(model, range_key, operation)
    if isinstance(hash_key, PhysicalKey):
        return engine.placement().read_keys(hash_key, what="", bound=1)
    logical = check_logical(model, hash_key)
    key = key_values(model, logical, hinted_values(model, range_key, shard_by, operation))
    placement = engine.placement(reading=[logical])
    what = f"{operation}({logical!r})"
    return placement.read_keys(key, what=what, bound=request_bound(model))


def merge_shares(model: type[Any], items: Sequence[_RawItem], home: str) -> _RawItem:
    """One logical counter item from its shard items: counters summed."""
    spec = sharding_of(model).spec
    return aggregate(items, spec.counter_fields, home, sharded(model).attr_name)


def _resolve(
    model: type[Any],
    requests: list[_Request],
    consistent_read: bool | None,
    attributes_to_get: Sequence[str] | None,
) -> Iterator[_RawItem | None]:
    """For each (logical, range key, candidates), the one stored raw item or None."""
    engine = sharding_of(model)
    hash_attr = sharded(model)
    range_attr = model._range_key_attribute()
    keys: list[dict[str, Any]] = []
    wanted: list[tuple[list[str], Any]] = []
    for _, range_key, candidates in requests:
        serialized = range_attr.serialize(range_key) if range_attr is not None else None
        wanted.append((candidates, key_text(range_attr, serialized)))
        for physical in candidates:
            key: dict[str, Any] = {hash_attr.attr_name: physical}
            if range_attr is not None:
                key[range_attr.attr_name] = serialized
            keys.append(key)
    projection = with_keys(model, attributes_to_get)
    placement = engine.placement()
    migrating = placement.migration is not None
    if migrating and projection is not None:  # which copy holds an item: their markers say
        projection.extend((MOVE_MARKER, COPY_MARKER))
    raw_items = engine.executor.batch_get(keys, consistent_read, projection)
    by_key: dict[tuple[str, Any], _RawItem] = {}
    for raw in raw_items:
        range_value_ = (
            raw[range_attr.attr_name][range_attr.attr_type] if range_attr is not None else None
        )
        by_key[(raw[hash_attr.attr_name]["S"], key_text(range_attr, range_value_))] = raw
    for (logical, _, _), (candidates, range_ser) in zip(requests, wanted, strict=True):
        hits = [p for p in candidates if (p, range_ser) in by_key]
        if hits and engine.spec.counters:
            yield merge_shares(model, [by_key[(p, range_ser)] for p in hits], candidates[0])
            continue
        if (hits and migrating) or (len(hits) > 1 and placement.moving):
            # a layout change (a tombstone alone is no item) or a compaction's two copies
            yield placement.current(
                [by_key[(p, range_ser)] for p in hits],
                lambda raw: _raw_key_values(model, raw),
                moved_copy(model),
            )
            continue
        if len(hits) > 1:
            raise DuplicateItemError(
                _duplicate_message(model, logical, [(p, by_key[(p, range_ser)]) for p in hits]),
                hits,
            )
        yield by_key[(hits[0], range_ser)] if hits else None


def _duplicate_message(model: type[Any], logical: str, hits: list[tuple[str, _RawItem]]) -> str:
    """Why one logical item has several stored copies, and the fix.

    Copies that hold disjoint attributes are one item split across shards (the
    write-sharding guide's split profile): no copy is the item, so none is picked.
    """
    hash_attr = sharded(model)
    range_attr = model._range_key_attribute()
    keys = {hash_attr.attr_name, *([range_attr.attr_name] if range_attr is not None else [])}
    names = [sorted(set(raw) - keys) for _, raw in hits]
    where = f"{model.__name__}({hash_attr.attr_name}={logical!r})"
    physical = ", ".join(p for p, _ in hits)
    seen: set[str] = set()
    disjoint = all(part for part in names)
    for part in names:
        disjoint = disjoint and not seen.intersection(part)
        seen.update(part)
    if disjoint:
        parts = " / ".join(", ".join(part) for part in names)
        return (
            f"{where} is split across {len(hits)} shards, each copy holding other "
            f"attributes ({parts}): {physical}; get reads one item. Store each part as "
            "its own item under its own sort key (e.g. 'PROFILE#contact', 'PROFILE#prefs') "
            "with HashShards(on=[sort key]) and read the parts with query, or keep the "
            "item whole on one shard"
        )
    return (
        f"{where} is stored under {len(hits)} physical keys: {physical}; random shards "
        "suit append-only items, use HashShards(on=[sort key]) for items you overwrite, "
        "and delete the extra copies"
    )


def moved_copy(model: type[Any]) -> Callable[[str, _RawItem], _RawItem | None]:
    """A consistent read of the copy at ``physical`` of the item ``row`` is a row of: what
    a read asks when it met only a moved item's tombstone (it passed the new key first)."""
    range_attr = model._range_key_attribute()
    hash_name = sharded(model).attr_name

    def lookup(physical: str, row: _RawItem) -> _RawItem | None:
        key: dict[str, Any] = {hash_name: physical}
        if range_attr is not None:
            key[range_attr.attr_name] = row[range_attr.attr_name][range_attr.attr_type]
        found = sharding_of(model).executor.batch_get([key], True, None)
        return found[0] if found else None

    return lookup


def _raw_key_values(model: type[Any], raw: _RawItem) -> Any:
    """What the strategies see of a stored item."""
    return instance_key_values(model.from_raw_data(raw))


def _one_row_is_the_item(engine: Any) -> bool:
    """Whether the row at an item's one key is the item, for PynamoDB's plain read.

    Not for a counter item (its shares are summed, one like several, so a stored "1.0"
    reads as the total 1), nor during a layout change (the key may hold a tombstone).
    """
    return not engine.spec.counters and engine.migration() is None


def get(
    model: type[_M],
    hash_key: Any,
    range_key: Any,
    consistent_read: bool,
    attributes_to_get: Sequence[str] | None,
    plain: Callable[..., _M],
    shard_by: Mapping[str, Any] | None = None,
) -> _M:
    """One item by logical key, every candidate shard read in one BatchGetItem.

    ``plain`` is PynamoDB's own ``get``, used when one physical key is the only one.
    """
    candidates = candidate_keys(model, hash_key, range_key, shard_by)
    if len(candidates) == 1 and _one_row_is_the_item(sharding_of(model)):
        try:
            return plain(
                candidates[0], range_key, consistent_read, with_keys(model, attributes_to_get)
            )
        except model.DoesNotExist:  # type: ignore[attr-defined]
            raw = None
    else:
        (raw,) = _resolve(
            model, [(hash_key, range_key, candidates)], consistent_read, attributes_to_get
        )
    if raw is None:
        hint = physical_hint(model, hash_key)
        raise model.DoesNotExist(hint) if hint else model.DoesNotExist()  # type: ignore[attr-defined]
    return model.from_raw_data(raw)  # type: ignore[attr-defined,no-any-return]


def batch_get(
    model: type[_M],
    items: Iterable[Any],
    consistent_read: bool | None,
    attributes_to_get: Sequence[str] | None,
) -> Iterator[_M]:
    """Many items by logical key; each key's candidate shards are read together."""
    group: list[_Request] = []
    size = 0
    seen: set[tuple[Any, Any]] = set()
    for item in items:
        hash_key, range_key, shard_by = _split_batch_key(model, item)
        if (hash_key, range_key) in seen:  # one item, asked twice: read once
            continue
        seen.add((hash_key, range_key))
        candidates = candidate_keys(model, hash_key, range_key, shard_by, "batch_get")
        if group and size + len(candidates) > BATCH_GET_KEYS:
            yield from _instances(model, group, consistent_read, attributes_to_get)
            group, size = [], 0
        group.append((hash_key, range_key, candidates))
        size += len(candidates)
    if group:
        yield from _instances(model, group, consistent_read, attributes_to_get)


def _instances(
    model: type[_M],
    group: list[_Request],
    consistent_read: bool | None,
    attributes_to_get: Sequence[str] | None,
) -> Iterator[_M]:
    for raw in _resolve(model, group, consistent_read, attributes_to_get):
        if raw is not None:
            yield model.from_raw_data(raw)  # type: ignore[attr-defined]


def _hints(item: tuple[Any, ...]) -> bool:
    return bool(item) and isinstance(item[-1], Mapping)


def _split_batch_key(model: type[Any], item: Any) -> tuple[Any, Any, Any]:
    """(hash key, range key, shard_by) of a batch_get key.

    A key is the hash key (or a (hash key, range key) pair), optionally followed by a
    ``shard_by`` mapping: ``(hash_key, range_key, {"event_id": ...})``.
    """
    shard_by = None
    if isinstance(item, tuple) and _hints(item):
        *rest, shard_by = item
        item = rest[0] if model._range_keyname is None and len(rest) == 1 else tuple(rest)
    if model._range_keyname is None:
        return item, None, shard_by
    pair = "a (hash key, range key) pair, optionally followed by a shard_by dict"
    if isinstance(item, str):
        raise ValueError(f"Invalid key value {item!r}: expected {pair}")
    try:
        hash_key, range_key = item
    except (TypeError, ValueError):
        raise ValueError(f"Invalid key value {item!r}: expected {pair}") from None
    return hash_key, range_key, shard_by


def refresh(item: Any, consistent_read: bool, plain: Callable[[bool], None]) -> None:
    """Reload an item; one of unknown shard (or a counter item) is read on every candidate."""
    model = type(item)
    engine = sharding_of(model)
    attr = sharded(model)
    single = item._physical_key is not None or attr.layout.deterministic
    if single and _one_row_is_the_item(engine):
        plain(consistent_read)
        return
    logical = check_logical(model, getattr(item, attr.attr_name))
    range_key = range_value(item)
    candidates = candidate_keys(model, logical, range_key, operation="refresh")
    (raw,) = _resolve(model, [(logical, range_key, candidates)], consistent_read, None)
    if raw is None:
        raise item.DoesNotExist("This item does not exist in the table.")
    item.deserialize(raw)


def transaction_key(model: type[Any], hash_key: Any, range_key: Any) -> str:
    """The one physical key a transaction names for (hash_key, range_key).

    Raises:
        UnsupportedOperationError: the key may be on several shards, or a shard count
            change may keep two copies.
    """
    candidates = candidate_keys(model, hash_key, range_key)
    if len(candidates) != 1 or sharding_of(model).placement().migration is not None:
        raise UnsupportedOperationError(
            f"{model.__name__}: a transaction names exactly one item, but key {hash_key!r} "
            f"may be on any of {len(candidates)} shards; pass a loaded instance's "
            "get_physical_key(), or shard with HashShards(on=[sort key]) so the key names "
            "one shard"
        )
    return candidates[0]
