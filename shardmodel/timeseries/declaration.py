"""A time-series model's declaration: its keys checked when the class is defined.

:class:`TimeSeriesMeta` finds the :class:`BucketKeyAttribute` partition key and the
:class:`SeriesKeyAttribute` sort key, checks them against the entity and time attributes
they name, and keeps the resulting :class:`SeriesLayout` on the class;
:func:`hot_count` reads ``Meta.hot_entities``, how many sub-partitions a hot entity's
buckets are spread over.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import evolve
from pynamodb.attributes import Attribute
from pynamodb.constants import STRING

from shardmodel.errors import ShardConfigurationError
from shardmodel.keyspace.bucket_counts import check_counts_before
from shardmodel.keyspace.strategies import MAX_SHARDS
from shardmodel.model.declaration import ShardedModelMeta
from shardmodel.timeseries.keys import (
    TIME_CHARACTERS,
    BucketKeyAttribute,
    SeriesKeyAttribute,
    SeriesLayout,
    SeriesTimeAttribute,
)

__all__ = ["TimeSeriesMeta", "hot_count"]


class TimeSeriesMeta(ShardedModelMeta):
    """Checks a time-series model's key declaration when the class is defined."""

    def __init__(
        cls,
        name: str,
        bases: tuple[type, ...],
        namespace: dict[str, Any],
        discriminator: Any = None,
    ) -> None:
        super().__init__(name, bases, namespace, discriminator)
        cls._series_layout = _configure(cls)


def hot_count(cls: Any, entity: str) -> int:
    """The sub-partitions ``Meta.hot_entities`` declares for ``entity`` (1: none)."""
    hot = getattr(cls.Meta, "hot_entities", None)
    if hot is None:
        return 1
    if not isinstance(hot, Mapping):
        raise ShardConfigurationError(
            f"{cls.__name__}.Meta.hot_entities = {hot!r}: give a dict of entity to "
            'sub-partitions, e.g. {"sensor-hot": 4}'
        )
    count = hot.get(entity, 1)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_SHARDS:
        raise ShardConfigurationError(
            f"{cls.__name__}.Meta.hot_entities[{entity!r}] = {count!r}: give an int from 1 "
            f"to {MAX_SHARDS}, and never lower it (readers look only as far as it says)"
        )
    return count


def _configure(cls: Any) -> SeriesLayout | None:
    attributes: dict[str, Attribute[Any]] = cls.get_attributes()
    partitions = [(n, a) for n, a in attributes.items() if isinstance(a, BucketKeyAttribute)]
    sorts = [(n, a) for n, a in attributes.items() if isinstance(a, SeriesKeyAttribute)]
    model = cls.__name__
    if not partitions and not sorts:
        return None  # an abstract base
    if len(partitions) != 1 or len(sorts) != 1:
        raise ShardConfigurationError(
            f"{model}: a time-series model declares one BucketKeyAttribute(hash_key=True, "
            "strategy=[...]) and one SeriesKeyAttribute(range_key=True, entity=..., time=...)"
            f"; found {len(partitions)} and {len(sorts)}"
        )
    (partition_name, partition), (sort_name, sort) = partitions[0], sorts[0]
    if not partition.is_hash_key or not sort.is_range_key:
        raise ShardConfigurationError(
            f"{model}: the BucketKeyAttribute must be the partition key (hash_key=True) and "
            "the SeriesKeyAttribute the sort key (range_key=True)"
        )
    entity = attributes.get(sort.entity)
    if entity is None or entity.attr_type != STRING or entity.is_hash_key or entity.is_range_key:
        raise ShardConfigurationError(
            f"{model}: SeriesKeyAttribute(entity={sort.entity!r}) must name a UnicodeAttribute "
            f"of the model that is not a key; add {sort.entity} = UnicodeAttribute()"
        )
    if not isinstance(attributes.get(sort.time), SeriesTimeAttribute):
        raise ShardConfigurationError(
            f"{model}: SeriesKeyAttribute(time={sort.time!r}) must name a SeriesTimeAttribute "
            f"of the model; add {sort.time} = SeriesTimeAttribute()"
        )
    if not isinstance(sort.separator, str) or not sort.separator:
        raise ShardConfigurationError(
            f"{model}: SeriesKeyAttribute(separator={sort.separator!r}): give a non-empty "
            "string such as '#'"
        )
    clash = sorted(set(sort.separator) & TIME_CHARACTERS)
    if clash:
        raise ShardConfigurationError(
            f"{model}: SeriesKeyAttribute(separator={sort.separator!r}) contains "
            f"{''.join(clash)!r}, which a time text holds, so the time could not be split off "
            "the sort key; use a separator such as '#' or '|'"
        )
    layout = partition.layout
    for strategy in layout.strategies:
        strategy.check(model, attributes, layout.separator)
        unknown = [a for a in strategy.attributes if a not in (sort.entity, sort.time)]
        if unknown or not strategy.deterministic:
            raise ShardConfigurationError(
                f"{model}: BucketKeyAttribute(strategy={strategy!r}) must follow from the "
                f"entity {sort.entity!r} and the time {sort.time!r} alone, so a reading's key "
                f"is known from the reading; use HashShards(n, on={sort.entity!r}) and "
                f"TimeBuckets({sort.time!r}, 'hour')"
            )
    series = SeriesLayout((partition, sort), partition_name, sort_name)
    positions = series.counted()
    if positions is None:
        if partition.counts_before is not None:
            raise ShardConfigurationError(
                f"{model}: BucketKeyAttribute(counts_before=...) needs one HashShards and "
                "one TimeBuckets in its strategy (the count of each bucket)"
            )
        return series
    count = layout.strategies[positions[0]].n  # type: ignore[attr-defined]
    schedule = check_counts_before(model, partition.counts_before, series.bucket_format(), count)
    return evolve(series, schedule=schedule)
