"""The codec between a model instance and its stored item: logical keys in, physical out.

Instances always show the logical key. The physical key is chosen when the item is first
serialized for a write, remembered on the instance (so a retried or repeated save goes to
the same shard), and read back from every item loaded from the table. The instance keeps
this state in a few attributes the codec owns: ``_physical_key`` (the table key),
``_index_keys`` (sharded index keys), ``_write_counts`` (the dynamic count a fresh pick
used), ``_pinned_key`` (a copy written at one key during a migration) and
``_loaded_counters`` (counters as loaded).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import attrs
from pynamodb.constants import STRING
from pynamodb.expressions.condition import Comparison, Condition, In
from pynamodb.expressions.operand import Path, Value
from pynamodb.expressions.update import Action

from shardmodel.attributes import ShardedKeyAttribute
from shardmodel.core.canonical import storable_number
from shardmodel.engine.items import (
    check_logical,
    hinted_values,
    instance_key_values,
    key_values,
    python_name,
    range_value,
    range_values,
    sharded,
)
from shardmodel.engine.sharding import sharding_of
from shardmodel.errors import ShardKeyError, UnsupportedOperationError
from shardmodel.keyspace.keys import KeyLayout
from shardmodel.keyspace.phases import check_move_room
from shardmodel.request_bound import request_bound

__all__ = [
    "check_actions",
    "check_counters_unchanged",
    "deserialize",
    "hinted",
    "home_key",
    "key_condition",
    "loader",
    "logical_raw",
    "physical_condition",
    "pinned",
    "remember_counters",
    "serialize_keys",
    "stored_key",
    "stored_keys",
    "write_key",
]

_RawItem = dict[str, dict[str, Any]]
#: an item with logical keys, its physical key, its sharded index keys
_Unsharded = tuple[_RawItem, str | None, dict[str, str] | None]
_T = TypeVar("_T")


def write_key(item: Any) -> str:
    """The physical key this instance is written under; chosen once, then kept."""
    if item._pinned_key is not None:
        return str(item._pinned_key)
    model = type(item)
    engine = sharding_of(model)
    attr = sharded(model)
    key = instance_key_values(item)
    existing = item._physical_key
    # inside a write the operation's view; a bare serialize() asks the table nothing
    placement = engine.placement(io=False)
    if (
        placement.migration is None
        and engine.directory is not None
        and not placement.belongs(existing, key.logical_key)
    ):
        seen = item._write_counts
        if seen is None or seen.logical_key != key.logical_key:
            seen = item._write_counts = engine.directory.for_write(key.logical_key)
        now = engine.directory.settings.clock.now()
        key = attrs.evolve(key, shards=seen.count_at(now))
    item._physical_key = placement.write_key(key, existing, attr.rng)
    return str(item._physical_key)


def stored_key(item: Any, io: bool = True) -> str:
    """The physical key of this stored item, for update, delete and refresh.

    A counter item's updates go to its home shard, where its other attributes live.

    Raises:
        ShardKeyError: the model has a sort key and the item's is None (DynamoDB refuses
            such a key; a shard hashed from the sort key cannot be computed either).
    """
    model = type(item)
    name = model._range_keyname
    if name is not None and range_value(item) is None:
        raise ShardKeyError(
            f"{model.__name__}: the item's sort key {name!r} is None; set {name} (part of "
            "the item's key) before update, delete or refresh"
        )
    if item._pinned_key is not None:
        return str(item._pinned_key)
    engine = sharding_of(model)
    if engine.spec.counters:
        logical = check_logical(model, getattr(item, sharded(model).attr_name))
        return home_key(model, logical, range_value(item))
    key = instance_key_values(item)
    physical = engine.placement(io=io).stored_key(
        key, item._physical_key, model.__name__, sharded(model).attr_name
    )
    if io:  # a key worked out from a view not asked of the table is not kept
        item._physical_key = physical
    return physical


def home_key(model: type[Any], hash_key: Any, range_key: Any = None) -> str:
    """The first candidate shard of a key: where a counter item keeps its other attributes."""
    logical = check_logical(model, hash_key)
    key = key_values(model, logical, range_values(model, range_key))
    what = f"{model.__name__}.get({logical!r})"
    return sharding_of(model).placement().home_key(key, what=what, bound=request_bound(model))


def hinted(item: _T, shard_by: Mapping[str, Any]) -> _T:
    """A copy of ``item`` holding the ``shard_by`` values it lacks (the item is unchanged).

    Raises:
        ShardKeyError: ``shard_by`` names what the shard is not computed from, or gives
            a value other than the one the instance holds.
    """
    model = type(item)
    range_key = range_value(item)
    values = hinted_values(model, range_key, shard_by, f"{model.__name__}.delete")
    copied: Any = copy.copy(item)
    copied.attribute_values = dict(item.attribute_values)  # type: ignore[attr-defined]
    for name in shard_by:
        held = getattr(item, name)
        if held is not None and held != values[name]:
            raise ShardKeyError(
                f"{model.__name__}.delete(shard_by={{{name!r}: {values[name]!r}}}): the "
                f"instance holds {name}={held!r}; leave shard_by out, or give the same value"
            )
        setattr(copied, name, values[name])
    return copied  # type: ignore[no-any-return]


def pinned(item: _T, physical: str) -> _T:
    """This item (its values shared) written or deleted at ``physical`` whatever the phase."""
    copied = copy.copy(item)
    copied._pinned_key = physical  # type: ignore[attr-defined]
    return copied


def write_index_key(item: Any, attr: ShardedKeyAttribute) -> str | None:
    """The physical value of a sharded index key (None: the item is not in the index)."""
    model = type(item)
    if getattr(item, python_name(model, attr) or "", None) is None:
        return None
    if item._index_keys is None:
        item._index_keys = {}
    existing = item._index_keys.get(attr.attr_name)
    placement = sharding_of(model).placement(attr)
    physical = placement.write_key(instance_key_values(item, attr), existing, attr.rng)
    item._index_keys[attr.attr_name] = physical
    return physical


def serialize_keys(item: Any, data: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """PynamoDB's serialized item with the physical keys (choosing shards on first write)."""
    spec = sharding_of(type(item)).spec
    key = spec.table_key()
    if key is not None:
        data[key.attr_name] = {STRING: write_key(item)}
    for attr in spec.index_keys:
        physical = write_index_key(item, attr)
        if physical is not None:
            data[attr.attr_name] = {STRING: physical}
    if key is not None:
        check_move_room(type(item).__name__, data)
    return data


def logical_raw(
    model: type[Any], data: _RawItem
) -> tuple[_RawItem, str | None, dict[str, str] | None]:
    """The item with logical keys, its physical key and its sharded index keys."""
    return _logical(sharding_of(model).spec.unshard_plan, data)


def _logical(plan: tuple[tuple[str, KeyLayout, bool], ...], data: _RawItem) -> _Unsharded:
    physical = None
    index_keys: dict[str, str] | None = None
    logical_data = dict(data)  # botocore's item stays as stored (cursors read it)
    for name, layout, is_table_key in plan:
        stored = data.get(name)
        value = stored.get(STRING) if stored is not None else None
        if value is None:
            continue
        logical_data[name] = {STRING: layout.logical_key(value)}
        if is_table_key:
            physical = value
        else:
            index_keys = index_keys or {}
            index_keys[name] = value
    return logical_data, physical, index_keys


def physical_condition(item: Any, condition: Condition | None, physical: str) -> Condition | None:
    """Rewrite ``key == logical`` comparisons in a condition to the physical key."""
    attr = sharding_of(type(item)).spec.table_key()
    if condition is None or attr is None:
        return condition
    logical = getattr(item, attr.attr_name)

    def rewrite(node: Any) -> Any:
        if not isinstance(node, Condition):
            return node
        values = list(node.values)
        is_key_test = (
            isinstance(node, Comparison | In)
            and node.operator in ("=", "<>", "IN")
            and isinstance(values[0], Path)
            and values[0].path == [attr.attr_name]
        )
        if is_key_test:
            values = [values[0]] + [
                Value(physical, attribute=attr)
                if isinstance(v, Value) and v.value == {STRING: logical}
                else v
                for v in values[1:]
            ]
        else:
            values = [rewrite(v) for v in values]
        clone = copy.copy(node)
        clone.values = tuple(values)
        return clone

    result: Condition = rewrite(condition)
    return result


def check_actions(item: Any, actions: Sequence[Action]) -> None:
    """Refuse update actions on what a shard is computed from, and on counters."""
    model = type(item)
    spec = sharding_of(model).spec
    attributes = model.get_attributes()
    guarded: dict[str, str] = {}
    for attr in spec.sharded:
        guarded.update({attributes[n].attr_name: n for n in attr.layout.attributes})
    for attr in spec.index_keys:
        guarded[attr.attr_name] = python_name(model, attr) or attr.attr_name
    for action in actions:
        path = action.values[0]
        if isinstance(path, Path) and path.path and path.path[0] in guarded:
            name = guarded[path.path[0]]
            raise ShardKeyError(
                f"{model.__name__}.{name}: the shard is computed from {name}, so updating it "
                "in place would strand the item on the wrong shard; delete() the item and "
                "save() it with the new value"
            )
    counters = {attributes[n].attr_name: n for n in spec.counters}
    for action in actions:
        path = action.values[0]
        if isinstance(path, Path) and path.path and path.path[0] in counters:
            name = counters[path.path[0]]
            raise UnsupportedOperationError(
                f"{model.__name__}.{name} is a counter spread over shards; change it with "
                f"{model.__name__}.add(key, {name}=amount), not update()"
            )


def remember_counters(item: Any) -> None:
    """Keep the counters as loaded, to tell a changed one at save."""
    counters = sharding_of(type(item)).spec.counters
    if counters:
        item._loaded_counters = {n: getattr(item, n) for n in counters}


def _number_text(value: Any) -> str | None:
    """A counter value compared by number: ``1``, ``1.0`` and ``Decimal('1E+0')`` agree."""
    if value is None:
        return None
    try:
        return storable_number(value)
    except (ValueError, TypeError):
        return repr(value)


def check_counters_unchanged(item: Any) -> None:
    """Refuse a save whose counters differ from those loaded (or the defaults, if new)."""
    model = type(item)
    loaded = item._loaded_counters
    attributes = model.get_attributes()
    for name in sharding_of(model).spec.counters:
        if loaded is not None:
            before = loaded.get(name)
        else:
            default = attributes[name].default
            before = default() if callable(default) else default
        now = getattr(item, name)
        if _number_text(now) != _number_text(before):
            try:
                amount = repr(now - before) if loaded is not None else "amount"
            except TypeError:
                amount = "amount"
            raise UnsupportedOperationError(
                f"{model.__name__}.{name} was changed on the instance ({before!r} to {now!r}), "
                f"which save() would not write: a counter spread over shards changes only "
                f"by {model.__name__}.add(key, {name}={amount}); call add() and leave the "
                "attribute as loaded"
            )


def stored_keys(item: Any, hash_value: Any, range_value: Any) -> tuple[Any, Any]:
    """The keys PynamoDB sends for an existing item: the physical partition key."""
    if sharding_of(type(item)).spec.table_key() is None:
        return hash_value, range_value
    return stored_key(item), range_value


def key_condition(item: Any, condition: Condition | None) -> Condition | None:
    """A write's condition with ``key == logical`` tests aimed at the stored physical key."""
    if sharding_of(type(item)).spec.table_key() is None:
        return condition
    return physical_condition(item, condition, stored_key(item))


def loader(model: type[_T], build: Callable[[_RawItem], _T]) -> Callable[[_RawItem], _T]:
    """Builds instances from stored items: logical keys shown, physical keys kept.

    Runs for every item a read returns, so the model's spec is looked up here, once;
    ``build`` makes the instance from the item with its logical keys.
    """
    spec = sharding_of(model).spec
    plan, counters = spec.unshard_plan, spec.counters

    def load(data: _RawItem) -> _T:
        if data is None:
            raise ValueError("Received no data to construct object")
        logical_data, physical, index_keys = _logical(plan, data)
        instance: Any = build(logical_data)
        if physical is not None:
            instance._physical_key = physical
        if index_keys:
            instance._index_keys = index_keys
        if counters:
            instance._loaded_counters = {n: getattr(instance, n) for n in counters}
        return instance  # type: ignore[no-any-return]

    return load


def deserialize(item: Any, attribute_values: _RawItem, plain: Callable[[_RawItem], None]) -> None:
    """Load stored values into ``item``: logical keys shown, physical keys kept."""
    logical_data, physical, index_keys = logical_raw(type(item), attribute_values)
    plain(logical_data)
    if physical is not None:
        item._physical_key = physical
    if index_keys:
        item._index_keys = {**(item._index_keys or {}), **index_keys}
    remember_counters(item)
