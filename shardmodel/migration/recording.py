"""Giving a table laid out before layout records its record: ``reshard --record``.

A table whose layout never changed through :class:`~shardmodel.migration.Reshard` has no
record, and every process reads it with its own declaration. Recording the declared
layout makes every process refuse code that declares another. Since a wrong record would
refuse the right code, the command first checks a sample of the stored items: each must
sit at a key the declared layout gives it.
"""

from __future__ import annotations

from typing import Any

from pynamodb.models import Model

from shardmodel.engine import sharding_of
from shardmodel.engine.items import instance_key_values
from shardmodel.errors import ShardConfigurationError
from shardmodel.keyspace.layout_record import LayoutRecord, finished
from shardmodel.migration.rules import ReshardWatch, is_series
from shardmodel.migration.state import MigrationConflictError, MigrationStore

__all__ = ["SAMPLE", "record_layout"]

#: Stored items checked against the declared layout before it is recorded.
SAMPLE = 200


def record_layout(
    model: type[Model],
    store: MigrationStore,
    watch: ReshardWatch,
    now: float,
    sample: int = SAMPLE,
) -> LayoutRecord:
    """Record ``model``'s declared layout as its table's; returns the record.

    Raises:
        MigrationConflictError: a change is in progress (its ``--finish`` records it).
        ShardConfigurationError: the table's record says otherwise, or a sampled item is
            stored where the declared layout never puts it (nothing is written).
    """
    name = model.__name__
    state = store.read()
    if state is not None:
        raise MigrationConflictError(
            f"{name}: a change is in progress ({state.change}); its --finish records the "
            "layout (nothing was written)"
        )
    watch.refresh()  # a record that disagrees with the declaration is refused by name
    series = model._series_layout if is_series(model) else None  # type: ignore[attr-defined]
    layout = series.pk().layout if series is not None else sharding_of(model).key().layout
    schedule = None if series is None else series.schedule
    for item in model.scan(limit=sample, consistent_read=True):
        _check_stored(model, item, series, schedule)
    store.ensure_table()
    previous, version = store.layout()
    record = finished(name, store.table, layout, schedule, previous, "recorded", now)
    store.write_layout(record, version)
    return record


def _check_stored(model: type[Model], item: Any, series: Any, schedule: Any) -> None:
    """Refuse the record when ``item`` is not where the declared layout puts it."""
    if series is not None:
        loaded = item._loaded_keys
        if loaded is None or model.Meta.__dict__.get("hot_entities"):
            return  # a hot entity's sub-partitions: its bucket is checked by the reads
        entity = getattr(item, series.entity)
        moment = getattr(item, series.time)
        expected = [series.partition_key(entity, moment, schedule)]
        stored = loaded[0]
    else:
        layout = sharding_of(model).key().layout
        stored = item._physical_key
        expected = layout.candidates(instance_key_values(item))
    if stored not in expected:
        raise ShardConfigurationError(
            f"{model.__name__}: the stored item at {stored!r} is not where the declared "
            f"layout puts it ({', '.join(map(repr, expected[:3]))}"
            f"{', ...' if len(expected) > 3 else ''}): the table was laid out otherwise; "
            "declare the layout its items have, then record it (nothing was written)"
        )
