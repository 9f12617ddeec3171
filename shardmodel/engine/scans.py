"""Scans of sharded tables: each logical item once.

A counter model's scan sums each item's shares (:func:`shardmodel.engine.counting.scan`).
During a layout change a scan meets an item under its old key, its new key or both
(and tombstones): of each item it returns only the copy that holds it
(:func:`~shardmodel.keyspace.phases.authority`), asking the table about an item's old
keys when it meets the new copy. Filters see that copy (applied on the client), and
parallel segments together return each item once: each copy is judged on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from pynamodb.expressions.condition import Condition

from shardmodel.engine import counting
from shardmodel.engine.codec import logical_raw
from shardmodel.engine.counter_reads import CounterScan
from shardmodel.engine.items import instance_key_values, sharded, with_keys
from shardmodel.engine.sharding import sharding_of
from shardmodel.errors import UnsupportedOperationError
from shardmodel.expressions.filters import matches
from shardmodel.keyspace.phases import (
    COPY_MARKER,
    MOVE_MARKER,
    is_moved,
    ActiveMigration,
    authority,
    state_of,
)

__all__ = ["scan"]

_M = TypeVar("_M")
_RawItem = dict[str, dict[str, Any]]


def scan(
    model: type[_M],
    filter_condition: Condition | None,
    segment: int | None,
    total_segments: int | None,
    limit: int | None,
    last_evaluated_key: dict[str, dict[str, Any]] | None,
    page_size: int | None,
    consistent_read: bool | None,
    index_name: str | None,
    rate_limit: float | None,
    attributes_to_get: Sequence[str] | None,
    plain: Callable[..., Iterator[_M]],
) -> Iterator[_M]:
    """Scan: each logical item once (counters summed; during a migration, one copy).

    ``plain`` is PynamoDB's own ``scan``.
    """
    engine = sharding_of(model)
    arguments = (
        filter_condition,
        segment,
        total_segments,
        limit,
        last_evaluated_key,
        page_size,
        consistent_read,
        index_name,
        rate_limit,
        attributes_to_get,
    )
    migration = engine.migration() if engine.spec.table_key() is not None else None
    if engine.spec.counters or migration is None or index_name is not None:
        return counting.scan(model, *arguments, plain)
    if rate_limit is not None:
        raise UnsupportedOperationError(
            f"{model.__name__}.scan(rate_limit=...): during a layout change a scan asks the "
            "table about the items it meets, which rate_limit cannot bound; scan without it"
        )
    connection = engine.executor.connection()

    def page(start: _RawItem | None, size: int | None) -> dict[str, Any]:
        response: dict[str, Any] = connection.scan(
            exclusive_start_key=start,
            segment=segment,
            total_segments=total_segments,
            limit=size,
            consistent_read=consistent_read,
        )
        return response

    projection = with_keys(model, attributes_to_get)

    def keep(raw: _RawItem) -> bool:
        return filter_condition is None or matches(filter_condition, logical_raw(model, raw)[0])

    def build(raw: _RawItem) -> Any:
        if projection is not None:
            raw = {k: v for k, v in raw.items() if k in projection}
        return model.from_raw_data(raw)  # type: ignore[attr-defined]

    return CounterScan(
        page=page,
        emit=lambda rows: _holders(model, migration, rows),
        keep=keep,
        build=build,
        limit=limit,
        page_size=page_size if page_size is not None else limit,
        start=last_evaluated_key,
    )


def _holders(
    model: type[Any], migration: ActiveMigration, rows: list[_RawItem]
) -> list[_RawItem | None]:
    """For each scanned copy, the item if this copy holds it, else None."""
    attr = sharded(model)
    hash_name = attr.attr_name
    range_attr = model._range_key_attribute()
    range_name = range_attr.attr_name if range_attr is not None else None
    decided: list[_RawItem | None] = []
    asks: dict[int, list[str]] = {}
    for number, row in enumerate(rows):
        physical = row[hash_name]["S"]
        if is_moved(state_of(row)):
            decided.append(None)
            continue
        key = instance_key_values(model.from_raw_data(row))
        new_key = migration.new_key(key, physical)
        if physical != new_key:  # an old copy: it holds the item unless it moved
            decided.append(_unmarked(row))
            continue
        olds = migration.other_old_keys(key, physical)
        decided.append(_unmarked(row))
        if olds:
            asks[number] = olds
    if asks:  # a new copy holds the item unless an old copy still does
        requests = []
        for number, olds in asks.items():
            for physical in olds:
                request: dict[str, Any] = {hash_name: physical}
                if range_name is not None and range_attr is not None:
                    request[range_name] = rows[number][range_name][range_attr.attr_type]
                requests.append(request)
        names = [hash_name, MOVE_MARKER, *([range_name] if range_name else [])]
        found = sharding_of(model).executor.batch_get(requests, True, names)
        stored = {
            (raw[hash_name]["S"], str(raw.get(range_name)) if range_name else None): raw
            for raw in found
        }
        for number, olds in asks.items():
            row = rows[number]
            ident = str(row.get(range_name)) if range_name else None
            old = [stored[(k, ident)] for k in olds if (k, ident) in stored]
            if authority(old, row) is not row:
                decided[number] = None
    return decided


def _unmarked(raw: _RawItem) -> _RawItem:
    if MOVE_MARKER not in raw and COPY_MARKER not in raw:
        return raw
    return {k: v for k, v in raw.items() if k not in (MOVE_MARKER, COPY_MARKER)}
