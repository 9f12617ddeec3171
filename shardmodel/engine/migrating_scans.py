"""Scans during a layout change: each logical item once, while items move.

Outside a migration a scan is :func:`shardmodel.engine.counting.scan` (counters summed, a
filter on a sharded key tested on logical keys). During one, a scan returns each item at
its old key until the sweep (see :func:`_holders`); filters see the copy that holds the
item (applied on the client), and parallel segments together return each item once.
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
from shardmodel.errors import CursorError, UnsupportedOperationError
from shardmodel.expressions.conditions import check_flag, check_paging
from shardmodel.expressions.filters import matches
from shardmodel.keyspace.phases import (
    DELETED,
    FENCED,
    ActiveMigration,
    Phase,
    is_tombstone,
    state_of,
    unmarked,
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
    check_paging(limit, page_size)
    check_flag("consistent_read", consistent_read)
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
        emit=lambda rows: _holders(model, _still(model, migration), rows),
        keep=keep,
        build=build,
        limit=limit,
        page_size=page_size if page_size is not None else limit,
        start=last_evaluated_key,
    )


def _still(model: type[Any], migration: ActiveMigration) -> ActiveMigration:
    """The scan's migration, checked before each page: a scan that returns items at their
    old keys cannot go on once a process may write an item without fencing its old key."""
    now = sharding_of(model).migration()
    if now is not None and not now.state.same_change(migration.state):
        raise CursorError(
            f"{model.__name__}.scan: the layout change this scan began in ended and "
            f"another began ({now.state.change}), which moves items between keys this "
            "scan has passed; scan again from the start"
        )
    # a process in done writes a new key without fencing the old one
    if migration.rules.scan_old and (now is None or now.state.at(Phase.DONE)):
        phase = "finished" if now is None else f"in phase {now.state.phase.value}"
        raise CursorError(
            f"{model.__name__}.scan: the layout change this scan began in is now {phase}, "
            "so the tombstones it reads items at may be gone; scan again from the start"
        )
    return migration


def _holders(
    model: type[Any], migration: ActiveMigration, rows: list[_RawItem]
) -> list[_RawItem | None]:
    """For each scanned row, the item a scan returns there, else None.

    Until the sweep (``scan_old``), every item whose key changes keeps a row at its old
    key (the item, a move's frozen copy, or a tombstone), and the scan returns the item
    there: the row itself while it holds the item, else the copy at its new key, read
    consistently. Rows at new keys are skipped, so a move between two pages can neither
    hide an item nor show it twice. After it (phase done) every live row is returned.
    """
    if not migration.rules.scan_old:
        return [None if state_of(row) is not None else unmarked(row) for row in rows]
    attr = sharded(model)
    hash_name = attr.attr_name
    range_attr = model._range_key_attribute()
    range_name = range_attr.attr_name if range_attr is not None else None
    shrink = migration.many_old_keys
    decided: list[_RawItem | None] = []
    asks: dict[int, list[str]] = {}  # row number -> keys whose rows decide it
    follow: set[int] = set()  # rows whose item is the copy at the asked (new) key
    first: set[int] = set()  # first old keys fenced: the new copy, if no other old key has it
    for number, row in enumerate(rows):
        physical = row[hash_name]["S"]
        state = state_of(row)
        decided.append(None)
        if state == DELETED:
            continue
        key = instance_key_values(model.from_raw_data(row))
        new_key = migration.new_key(key, physical)
        olds = migration.old_keys(key, physical)
        if state is not None and is_tombstone(row):  # moved or fenced: the item is new
            if physical == new_key or (
                shrink and state == FENCED and new_key in migration.old_keys(key, new_key)
            ):
                continue  # a random shrink returns the item at its new key, an old key too
            if shrink and state == FENCED:
                # a swap to a new shard beyond the old ones: an item born at its new key is
                # fenced on every old key, so the first returns it unless another old key
                # holds it (or its move's tombstone does, which returns it there)
                if physical != olds[0]:
                    continue
                asks[number] = [new_key, *olds[1:]]
                first.add(number)
                continue
            asks[number] = [new_key]
            follow.add(number)
            continue
        if physical not in olds:
            continue  # a new key only: its old key's row returns the item
        decided[number] = unmarked(row)
        if shrink and physical == new_key:
            others = [k for k in olds if k != physical]
            if others:
                asks[number] = others
    if asks:
        found = _consistent(model, rows, asks, hash_name, range_name, range_attr)
        for number, keys in asks.items():
            row = rows[number]
            ident = str(row.get(range_name)) if range_name else None
            copies = [found[(k, ident)] for k in keys if (k, ident) in found]
            if number in first:
                born = found.get((keys[0], ident))
                rest = copies if born is None else copies[1:]
                alone = all(state_of(c) == FENCED for c in rest)
                if born is not None and not is_tombstone(born) and alone:
                    decided[number] = unmarked(born)
            elif number in follow:
                decided[number] = next(
                    (unmarked(c) for c in copies if state_of(c) is None or not is_tombstone(c)),
                    None,
                )
            elif any(state_of(c) != FENCED for c in copies):
                decided[number] = None  # another old key holds it, or its tombstone does
    return decided


def _consistent(
    model: type[Any],
    rows: list[_RawItem],
    asks: dict[int, list[str]],
    hash_name: str,
    range_name: str | None,
    range_attr: Any,
) -> dict[tuple[str, str | None], _RawItem]:
    """The rows stored at the asked keys (with each row's sort key), read consistently."""
    requests = []
    seen: set[tuple[str, str | None]] = set()
    for number, keys in asks.items():
        for physical in keys:
            request: dict[str, Any] = {hash_name: physical}
            ident = str(rows[number].get(range_name)) if range_name else None
            if (physical, ident) in seen:
                continue
            seen.add((physical, ident))
            if range_name is not None and range_attr is not None:
                request[range_name] = rows[number][range_name][range_attr.attr_type]
            requests.append(request)
    found = sharding_of(model).executor.batch_get(requests, True, None)
    return {
        (raw[hash_name]["S"], str(raw.get(range_name)) if range_name else None): raw
        for raw in found
    }
