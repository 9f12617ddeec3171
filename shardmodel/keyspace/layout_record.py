"""The layout a table holds, as the table records it once a layout change has finished.

A layout change ends with ``reshard --finish``, which writes a :class:`LayoutRecord` beside
the migration state: the count (or boundaries, or strategy) the table's items now have
and, for a time series, the count of each bucket before the changes. Every process reads
it with the migration state (no ``follow()`` needed), so code that declares another
layout is refused by name before it reads or writes a key (:func:`disagreement`), and a
time series declared without ``counts_before`` reads its earlier buckets with the counts
the table recorded (:func:`recorded_schedule`).

Pure values, no I/O: the migration state table stores it (``shardmodel.migration``).
"""

from __future__ import annotations

from attrs import evolve, frozen

from shardmodel.errors import ShardConfigurationError
from shardmodel.keyspace.bucket_counts import CountSchedule
from shardmodel.keyspace.keys import KeyLayout
from shardmodel.keyspace.ordered import OrderedShards
from shardmodel.keyspace.phases import StrategySpec, numbered_position

__all__ = ["LayoutRecord", "disagreement", "finished", "record_of", "recorded_schedule"]


@frozen
class LayoutRecord:
    """A table's layout after its last finished change.

    Attributes:
        table: the main table.
        count: the numbered strategy's shard count (an OrderedShards key: its ranges).
        boundaries: an OrderedShards key's boundaries (None otherwise).
        strategy: a RandomShards or HashShards key's strategy, without its count (None for
            OrderedShards, or a hash algorithm given as a function, which no record names).
        counts_before: a time series: ``(label, count)`` pairs, the count of the buckets
            before each label (its ``counts_before``); None for other models.
        change: the change that wrote it (``4 -> 8 shards``).
        recorded_at: epoch seconds of ``--finish``.
    """

    table: str
    count: int
    boundaries: tuple[str, ...] | None = None
    strategy: StrategySpec | None = None
    counts_before: tuple[tuple[str, int], ...] | None = None
    change: str = ""
    recorded_at: float = 0.0

    def describe(self) -> str:
        """The declaration this record names: ``HashShards(8, on=user_id)`` and, for a
        series, its ``counts_before``."""
        if self.boundaries is not None:
            text = f"OrderedShards with {self.count} ranges ({_boundaries(self.boundaries)})"
        elif self.strategy is not None:
            text = self.strategy.describe(self.count)
        else:
            text = f"{self.count} shards"
        if self.counts_before:
            text += " with counts_before=" + CountSchedule(self.counts_before, 0).describe()
        return text


def record_of(
    model_name: str,
    table: str,
    layout: KeyLayout,
    schedule: CountSchedule | None = None,
    change: str = "",
    recorded_at: float = 0.0,
) -> LayoutRecord:
    """The record of a declared layout (and a time series' declared schedule)."""
    strategy = layout.strategies[numbered_position(model_name, layout)]
    counts = None if schedule is None else schedule.changes
    if isinstance(strategy, OrderedShards):
        return LayoutRecord(
            table, strategy.shard_count, strategy.boundaries, None, counts, change, recorded_at
        )
    try:
        spec: StrategySpec | None = StrategySpec.of(strategy)
    except ShardConfigurationError:
        spec = None  # a hash algorithm given as a function: its count is still recorded
    count = int(strategy.n) if schedule is None else schedule.last  # type: ignore[attr-defined]
    return LayoutRecord(table, count, None, spec, counts, change, recorded_at)


def finished(
    model_name: str,
    table: str,
    layout: KeyLayout,
    schedule: CountSchedule | None,
    previous: LayoutRecord | None,
    change: str,
    recorded_at: float,
) -> LayoutRecord:
    """The record ``--finish`` writes: the finishing code's layout, and for a time series
    the table's earlier history with the declared entries (the code may leave out what
    the table already recorded)."""
    if schedule is not None:
        earlier = recorded_schedule(previous)
        held = dict(earlier.changes if earlier is not None else ())
        held.update(schedule.changes)
        schedule = CountSchedule(tuple(sorted(held.items())), schedule.last)
    return record_of(model_name, table, layout, schedule, change, recorded_at)


def disagreement(
    record: LayoutRecord,
    model_name: str,
    layout: KeyLayout,
    schedule: CountSchedule | None = None,
) -> str | None:
    """Why a declaration disagrees with the table's record (None: it agrees).

    A time series may leave out the record's history (``counts_before``): its buckets
    are read with the recorded counts. It may not declare another current count, nor a
    history entry the table does not hold.
    """
    declared = record_of(model_name, record.table, layout, schedule)
    where = (
        f"{model_name} declares {_declared(declared, schedule)}, but table {record.table!r} "
        f"holds {record.describe()} since its change {record.change or '(recorded)'}"
    )
    if declared.count != record.count or declared.boundaries != record.boundaries:
        return f"{where}; declare {_declare(record)}"
    if (
        declared.strategy is not None
        and record.strategy is not None
        and declared.strategy != record.strategy
    ):
        return f"{where}; declare {_declare(record)}"
    if schedule is not None:
        held = dict(record.counts_before or ())
        extra = [(b, c) for b, c in schedule.changes if held.get(b) != c]
        if extra:
            return (
                f"{where}: its counts_before entries {dict(extra)!r} are not the table's; "
                "leave counts_before out (the table's history is read) or declare "
                f"counts_before={CountSchedule(record.counts_before or (), 0).describe()}"
            )
    return None


def recorded_schedule(record: LayoutRecord | None) -> CountSchedule | None:
    """A time series' schedule as the table records it (None: no record, or not a series)."""
    if record is None or record.counts_before is None:
        return None
    return CountSchedule(record.counts_before, record.count)


def _declare(record: LayoutRecord) -> str:
    """What to declare to agree with ``record``: a series may leave its history out."""
    if not record.counts_before:
        return record.describe()
    bare = evolve(record, counts_before=None).describe()
    return f"{bare} (counts_before may be left out: the table's history is read)"


def _declared(declared: LayoutRecord, schedule: CountSchedule | None) -> str:
    text = declared.describe()
    if schedule is not None and not schedule.changes:
        text += " (no counts_before)"
    return text


def _boundaries(boundaries: tuple[str, ...]) -> str:
    shown = ", ".join(repr(b) for b in boundaries[:3])
    return shown + (", ..." if len(boundaries) > 3 else "")
