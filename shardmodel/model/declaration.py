"""A sharded model's declaration, checked when its class is defined.

:class:`ShardedModelMeta` finds the model's sharded keys and counters, refuses what
cannot work (naming the attribute and the fix), and gives the class its engine (see
:func:`~shardmodel.engine.sharding_of`).
"""

from __future__ import annotations

from typing import Any

from pynamodb.attributes import Attribute
from pynamodb.constants import NUMBER, STRING
from pynamodb.indexes import GlobalSecondaryIndex
from pynamodb.models import MetaModel

from shardmodel.attributes import ShardedKeyAttribute
from shardmodel.counters import CounterAttribute
from shardmodel.dynamic.directory import ShardDirectory
from shardmodel.engine.items import python_name
from shardmodel.engine.sharding import ENGINE, Sharding
from shardmodel.engine.spec import ShardingSpec
from shardmodel.errors import ShardConfigurationError
from shardmodel.keyspace.dynamic import DynamicShards
from shardmodel.keyspace.keys import KeyLayout
from shardmodel.keyspace.normalization import NormalizedAttribute
from shardmodel.keyspace.ordered import OrderedShards
from shardmodel.keyspace.strategies import KeyValues
from shardmodel.keyspace.time_buckets import TimeBuckets

__all__ = ["MAX_DEFAULT_POOL", "ShardedModelMeta"]

#: The largest connection pool a sharded model gets by default (set Meta to go beyond).
MAX_DEFAULT_POOL = 64


class ShardedModelMeta(MetaModel):
    """Checks a model's sharding declaration when the class is defined."""

    def __init__(
        cls,
        name: str,
        bases: tuple[type, ...],
        namespace: dict[str, Any],
        discriminator: Any = None,
    ) -> None:
        meta = namespace.get("Meta")
        pool_chosen = meta is not None and "max_pool_connections" in vars(meta)
        super().__init__(name, bases, namespace, discriminator)
        spec = _configure(cls)
        if spec.sharded and not pool_chosen and hasattr(cls, "Meta"):
            # one connection per shard a query reads at once, so the fan-out never waits
            # for a socket ("Connection pool is full"); PynamoDB's default is 10
            widest = max(_fan_out(attr.layout) for attr in spec.sharded)
            current = int(getattr(cls.Meta, "max_pool_connections", 10) or 10)
            cls.Meta.max_pool_connections = max(current, min(widest, MAX_DEFAULT_POOL))


def _fan_out(layout: KeyLayout) -> int:
    """How many shards one query of a key reads at once (one time bucket's worth)."""
    count = 1
    for strategy in layout.strategies:
        if isinstance(strategy, DynamicShards):
            count *= strategy.max_shards
        elif not strategy.ordered:
            count *= len(strategy.query_candidates(KeyValues("x", {}, {}), {}))
    return count


def _configure(cls: Any) -> ShardingSpec:
    attributes: dict[str, Attribute[Any]] = cls.get_attributes()
    sharded = [a for a in attributes.values() if isinstance(a, ShardedKeyAttribute)]
    table_keys = tuple(a for a in sharded if a.is_hash_key)
    index_keys = tuple(a for a in sharded if not a.is_hash_key)
    gsi_keys = {
        attr.attr_name
        for index in cls._indexes.values()
        if isinstance(index, GlobalSecondaryIndex)
        for attr in index.Meta.attributes.values()
        if attr.is_hash_key
    }
    for attr in index_keys:
        if attr.attr_name not in gsi_keys:
            raise ShardConfigurationError(
                f"{cls.__name__}.{attr.attr_name}: a ShardedKeyAttribute must be the table's "
                "partition key (hash_key=True) or the partition key of a global secondary "
                "index of the model; declare it hash_key=True, or add the index"
            )
    for attr in sharded:
        _check_layout(cls, attr, attributes)
    hints = getattr(getattr(cls, "Meta", None), "physical_key_hints", True)
    if not isinstance(hints, bool):
        raise ShardConfigurationError(
            f"{cls.__name__}.Meta.physical_key_hints is {hints!r}; set it to True (the "
            "default: a read that finds nothing under a key like 'user-1#3' says so) or False"
        )
    directory = _directory(cls, sharded)
    counters = tuple(n for n, a in attributes.items() if isinstance(a, CounterAttribute))
    if counters and not table_keys:
        raise ShardConfigurationError(
            f"{cls.__name__}: CounterAttribute {counters[0]!r} needs a sharded partition key "
            "to spread over; declare it ShardedKeyAttribute(hash_key=True, "
            "strategy=RandomShards(n))"
        )
    if counters and cls._version_attribute_name is not None:
        raise ShardConfigurationError(
            f"{cls.__name__}: a counter model cannot have a VersionAttribute "
            f"({cls._version_attribute_name!r}): its item lives on several shards; drop one"
        )
    spec = ShardingSpec(
        model_name=cls.__name__,
        sharded=(*table_keys, *index_keys),
        counters=counters,
        counter_fields=tuple(attributes[n].attr_name for n in counters),
    )
    setattr(cls, ENGINE, Sharding(cls, spec, directory))
    return spec


def _directory(cls: Any, sharded: list[ShardedKeyAttribute]) -> ShardDirectory | None:
    """The metadata table access of a DynamicShards partition key (None without one)."""
    found: ShardDirectory | None = None
    for attr in sharded:
        dynamic = [s for s in attr.layout.strategies if isinstance(s, DynamicShards)]
        if not dynamic:
            continue
        if not attr.is_hash_key:
            raise ShardConfigurationError(
                f"{cls.__name__}.{attr.attr_name}: DynamicShards grows a key when the table's "
                "partition throttles, so it shards the table's partition key only; give this "
                "index key RandomShards(n) or HashShards(n, on=...)"
            )
        if len(dynamic) > 1:
            raise ShardConfigurationError(
                f"{cls.__name__}.{attr.attr_name}: one DynamicShards per key; remove the others"
            )
        if not hasattr(cls, "Meta") or not getattr(cls.Meta, "table_name", None):
            return None  # an abstract base: its subclasses get their own directory
        found = ShardDirectory(cls, attr.attr_name, dynamic[0])
    return found


def _check_layout(cls: Any, attr: ShardedKeyAttribute, attributes: dict[str, Any]) -> None:
    layout = attr.layout
    for strategy in layout.strategies:
        strategy.check(cls.__name__, attributes, layout.separator)
        for name in strategy.attributes:
            source = attributes[name]
            if source.attr_type not in (STRING, NUMBER):
                raise ShardConfigurationError(
                    f"{cls.__name__}: {type(strategy).__name__} reads {name!r}, a "
                    f"{type(source).__name__}; shard on a string or number attribute"
                )
            if isinstance(strategy, OrderedShards):
                check_sort_key(cls, attr, strategy)
            if isinstance(strategy, TimeBuckets) and source is attr:
                raise ShardConfigurationError(
                    f"{cls.__name__}: TimeBuckets(on={name!r}) names the partition key itself; "
                    "name the time attribute, e.g. the sort key"
                )


def check_sort_key(model: Any, attr: Any, strategy: OrderedShards) -> None:
    """Refuse an OrderedShards whose ``on`` is not the sort key of the key it shards."""
    if attr.is_hash_key:
        sort_name = model._range_keyname
        where = f"the table {model.Meta.table_name!r}" if hasattr(model, "Meta") else "the table"
    else:
        sort_name, where = None, "its index"
        for index in model._indexes.values():
            keys = index.Meta.attributes.values()
            if any(a.is_hash_key and a.attr_name == attr.attr_name for a in keys):
                where = f"index {index.Meta.index_name!r}"
                sort_attr = next((a for a in keys if a.is_range_key), None)
                sort_name = python_name(model, sort_attr)
    if sort_name != strategy.on:
        fix = (
            f"declare {strategy.on!r} the sort key there, or pass on={sort_name!r}"
            if sort_name
            else f"give {where} a string sort key, NormalizedAttribute(range_key=True)"
        )
        raise ShardConfigurationError(
            f"{model.__name__}.{attr.attr_name}: OrderedShards(on={strategy.on!r}) must order "
            f"by the sort key of {where}, which is {sort_name!r}: a shard keeps its items in "
            f"the order of that sort key, which is what makes the shards read in order; {fix}"
        )
    if attr.is_hash_key and strategy.overflow:
        values = ", ".join(repr(value) for value, _ in strategy.overflow)
        raise ShardConfigurationError(
            f"{model.__name__}.{attr.attr_name}: OrderedShards(overflow=...) on the table's "
            f"partition key: the sort key {strategy.on!r} is the ordered value, so a key holds "
            f"one item of each value ({values}) and no value fills a shard, while a random "
            "sub-shard per save would store one item under two keys; drop overflow= (it "
            "spreads values that repeat, on a global secondary index's key)"
        )
    source = model.get_attributes()[strategy.on]
    if isinstance(source, NormalizedAttribute) and source.normalize is not strategy.normalize:
        raise ShardConfigurationError(
            f"{model.__name__}.{strategy.on}: NormalizedAttribute(normalize=...) and "
            f"OrderedShards(normalize=...) differ; pass the same function to both"
        )
