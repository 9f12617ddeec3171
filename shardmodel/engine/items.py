"""What the strategies see of an item: its logical key and its values in canonical form.

Also the small questions about a model's keys every path asks: the logical key checked,
an attribute's python name, a key value in the form DynamoDB-equal values share, a
projection that keeps the keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pynamodb.attributes import Attribute
from pynamodb.constants import NUMBER

from shardmodel.attributes import ShardedKeyAttribute
from shardmodel.core.canonical import canonical_value, storable_number
from shardmodel.engine.sharding import sharding_of
from shardmodel.errors import ShardConfigurationError, ShardKeyError
from shardmodel.keyspace.strategies import KeyValues, ShardCount

__all__ = [
    "check_logical",
    "check_range_key",
    "hinted_values",
    "instance_key_values",
    "key_text",
    "key_values",
    "physical_hint",
    "python_name",
    "range_value",
    "sharded",
    "with_keys",
]


def sharded(model: type[Any]) -> ShardedKeyAttribute:
    """The table's sharded partition key of ``model``."""
    attr = sharding_of(model).spec.table_key()
    if attr is None:  # pragma: no cover - guarded by callers
        raise ShardConfigurationError(f"{model.__name__} has no ShardedKeyAttribute")
    return attr


def physical_hint(
    model: type[Any], key: Any, attr: ShardedKeyAttribute | None = None
) -> str | None:
    """A sentence for a read that found nothing under ``key`` when ``key`` reads as one of
    the layout's physical keys (None otherwise; see :meth:`KeyLayout.looks_physical`).
    ``Meta.physical_key_hints = False`` turns it off, for logical keys that look so."""
    attr = attr or sharding_of(model).spec.table_key()
    if attr is None or not isinstance(key, str):
        return None
    if getattr(model.Meta, "physical_key_hints", True) is False:
        return None
    logical = attr.layout.looks_physical(key)
    if logical is None:
        return None
    return (
        f"{model.__name__}: nothing under the logical key {key!r}, which reads as a "
        f"physical key of this layout (logical key {logical!r}); reads and writes take "
        f"logical keys (a key copied from the table is physical: {model.__name__}."
        f"logical_key_of({key!r}) gives {logical!r})"
    )


def check_logical(model: type[Any], value: Any, attr: ShardedKeyAttribute | None = None) -> str:
    """``value`` as a logical key of ``attr`` (default: the table's), or a clear error."""
    attr = attr or sharded(model)
    field = f"{model.__name__}.{attr.attr_name}"
    if not isinstance(value, str):
        raise ShardKeyError(
            f"{field}: a sharded key must be a str, got {type(value).__name__} {value!r}; "
            f"pass str({value!r})"
        )
    if not value:
        raise ShardKeyError(f"{field}: the key is empty; DynamoDB keys need a value")
    return value


def key_values(
    model: type[Any],
    logical: str,
    values: Mapping[str, Any],
    attr: ShardedKeyAttribute | None = None,
    counts: ShardCount | None = None,
) -> KeyValues:
    """What ``attr``'s strategies see, from python values by attribute name.

    The table's sort key is seen too when given: a strategy swap's new HashShards may
    hash it while the code still declares a strategy that does not.
    """
    attributes = model.get_attributes()
    attr = attr or sharded(model)
    canonical: dict[str, str] = {}
    known: dict[str, Any] = {}
    names = list(attr.layout.attributes)
    sort_name = model._range_keyname
    if sort_name is not None and sort_name not in names and values.get(sort_name) is not None:
        names.append(sort_name)
    for name in names:
        source = attributes[name]
        if source is attr:
            known[name], canonical[name] = logical, logical
            continue
        value = values.get(name)
        if value is None:
            continue
        known[name] = value
        try:
            canonical[name] = str(canonical_value(source.attr_type, source.serialize(value)))
        except ValueError as error:
            raise ShardKeyError(
                f"{model.__name__}.{name}: {error}; the shard is computed from {name}, give "
                "it a finite number"
            ) from None
    return KeyValues(logical_key=logical, values=known, canonical=canonical, shards=counts)


def instance_key_values(item: Any, attr: ShardedKeyAttribute | None = None) -> KeyValues:
    """What the strategies of ``attr`` (default: the table's key) see of this item."""
    model = type(item)
    attr = attr or sharded(model)
    logical = check_logical(model, getattr(item, python_name(model, attr) or ""), attr)
    names = [*attr.layout.attributes, *([model._range_keyname] if model._range_keyname else [])]
    return key_values(model, logical, {n: getattr(item, n, None) for n in names}, attr)


def range_value(item: Any) -> Any:
    """The item's sort key value (None on a model without one)."""
    name = type(item)._range_keyname
    return getattr(item, name) if name else None


def range_values(model: type[Any], range_key: Any) -> dict[str, Any]:
    """The values a key's sort key gives the strategies: ``{sort key name: value}``."""
    name = model._range_keyname
    return {} if name is None or range_key is None else {name: range_key}


def check_range_key(model: type[Any], range_key: Any, what: str) -> None:
    """Refuse, before sending, a read by full key without a valid sort key value.

    DynamoDB refuses a key without its sort key, or with a value of another type
    (``ValidationException``); refused here with the argument named.
    """
    attr = model._range_key_attribute()
    if attr is None:
        return
    name = model._range_keyname
    if range_key is None:
        raise ShardKeyError(
            f"{what}: {model.__name__} has the sort key {name!r}, and range_key is None; "
            f"give the {name} of the item"
        )
    try:
        serialized = attr.serialize(range_key)
        if attr.attr_type == NUMBER:
            storable_number(serialized)
        else:
            key_text(attr, serialized)
    except (ValueError, TypeError, AttributeError) as error:
        raise ShardKeyError(
            f"{what}: range_key={range_key!r} is no value of the sort key {name!r} "
            f"({type(attr).__name__}): {error}"
        ) from None


def hinted_values(
    model: type[Any], range_key: Any, shard_by: Mapping[str, Any] | None, what: str
) -> dict[str, Any]:
    """The values a read by full key gives the strategies: the sort key and ``shard_by``.

    ``shard_by`` names attributes the table key's shard is computed from beyond the key
    (``HashShards(on=["event_id"])``): with their values a read touches one shard.

    Raises:
        ShardKeyError: ``shard_by`` is not a mapping, names an attribute the shard is not
            computed from (or a key, given as hash_key or range_key), or gives None.
    """
    values = range_values(model, range_key)
    if shard_by is None:
        return values
    attr = sharded(model)
    keys = {python_name(model, attr), model._range_keyname}
    hinted = [n for n in attr.layout.attributes if n not in keys]
    choices = ", ".join(hinted) if hinted else "none: no attribute beyond the key decides it"
    if not isinstance(shard_by, Mapping):
        raise ShardKeyError(
            f"{what}(shard_by={shard_by!r}): give a dict of attribute name to value, the "
            f"attributes the shard is computed from ({choices})"
        )
    for name, value in shard_by.items():
        if name not in hinted:
            raise ShardKeyError(
                f"{what}(shard_by={{{name!r}: ...}}): {model.__name__}'s shard is not computed "
                f"from {name!r} beyond its key; shard_by takes: {choices}"
            )
        if value is None:
            raise ShardKeyError(
                f"{what}(shard_by={{{name!r}: None}}): give the item's {name}, or leave it "
                "out to read every shard"
            )
        values[name] = value
    return values


def key_text(attribute: Attribute[Any] | None, serialized: Any) -> Any:
    """A serialized key value of ``attribute`` in the form equal values share."""
    if attribute is None or serialized is None:
        return None
    return canonical_value(attribute.attr_type, serialized)


def python_name(model: type[Any], attribute: Attribute[Any] | None) -> str | None:
    """The python name of a model attribute, given it or an index's copy of it."""
    if attribute is None:
        return None
    for name, candidate in model.get_attributes().items():
        if candidate.attr_name == attribute.attr_name:
            return str(name)
    return None


def with_keys(
    model: type[Any], attributes_to_get: Sequence[str] | None, key_names: Sequence[str] = ()
) -> list[str] | None:
    """A projection that still returns the key attributes (the physical key is needed).

    ``key_names`` defaults to the table's partition and sort keys.
    """
    if attributes_to_get is None:
        return None
    if not key_names:
        attrs = (model._hash_key_attribute(), model._range_key_attribute())
        key_names = [a.attr_name for a in attrs if a is not None]
    return list(dict.fromkeys([*attributes_to_get, *key_names]))
