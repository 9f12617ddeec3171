"""A time series' shard count by bucket: the count changes at a bucket boundary.

A time-series key holds its bucket (``7#2023-10-27T15``), so a bucket's shard count
never has to change: a count change takes effect from a bucket that has not begun yet,
and each earlier bucket keeps the count it was written with. A :class:`CountSchedule`
says which count each bucket label has; a model declares its past changes with
``BucketKeyAttribute(counts_before={"2026-11-25T04": 16})`` (the buckets before that label
had 16 shards), and a count change in progress adds its own cutover.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from attrs import frozen

from shardmodel.core.times import bucket_label
from shardmodel.errors import ShardConfigurationError
from shardmodel.keyspace.phases import MigrationState
from shardmodel.keyspace.strategies import MAX_SHARDS
from shardmodel.keyspace.time_buckets import label_step

__all__ = ["CountSchedule", "check_counts_before", "during", "first_bucket_after"]


@frozen
class CountSchedule:
    """The shard count of each bucket label.

    Attributes:
        changes: ``(label, count)`` pairs in ascending label order: buckets whose label
            sorts before ``label`` (and after the previous pair's) have ``count`` shards.
        last: the count of every bucket from the last change's label on.
    """

    changes: tuple[tuple[str, int], ...]
    last: int

    def count(self, label: str) -> int:
        """The shard count of the bucket ``label``."""
        for boundary, count in self.changes:
            if label < boundary:
                return count
        return self.last

    def with_cutover(self, label: str, old: int, new: int) -> CountSchedule:
        """This schedule (ending at ``old``) with ``new`` shards from bucket ``label`` on."""
        kept = tuple((b, c) for b, c in self.changes if b < label)
        return CountSchedule((*kept, (label, old)), new)

    def declares(self, label: str, old: int, new: int) -> bool:
        """True when it already holds the change to ``new`` shards at ``label``."""
        return self.last == new and (label, old) in self.changes

    def without(self, label: str) -> CountSchedule:
        """This schedule as it was before a change at ``label`` (the one it ends with):
        that change's old count for every bucket from the previous change on."""
        kept = tuple((b, c) for b, c in self.changes if b < label)
        old = dict(self.changes).get(label, self.last)
        return CountSchedule(kept, old)

    def before(self, label: str, count: int) -> bool:
        """True when it gives ``count`` shards from its last change on and changes
        nothing at ``label`` (the code from before a change at ``label``)."""
        return self.last == count and all(b != label for b, _ in self.changes)

    def describe(self) -> str:
        """``{'2026-11-25T04': 16}``: the ``counts_before`` that declares it."""
        return "{" + ", ".join(f"{b!r}: {c}" for b, c in self.changes) + "}"


def check_counts_before(model: str, value: Any, fmt: str, last: int) -> CountSchedule:
    """A declared ``counts_before`` as a schedule, or an error naming the fix.

    Each key is a bucket label of the layout's format (``2026-11-25T04`` for hourly
    buckets), each value the shard count of the buckets before it.
    """
    where = f"{model}: BucketKeyAttribute(counts_before={value!r})"
    if value is None:
        return CountSchedule((), last)
    if not isinstance(value, Mapping):
        raise ShardConfigurationError(
            f"{where}: give a dict of bucket label to the shard count before it, e.g. "
            f"{{{_example(fmt)!r}: 16}}"
        )
    changes: list[tuple[str, int]] = []
    for label, count in value.items():
        if not isinstance(label, str) or not _is_label(label, fmt):
            raise ShardConfigurationError(
                f"{where}: {label!r} is not a bucket label of format {fmt!r} (like "
                f"{_example(fmt)!r}); name the first bucket of the new count"
            )
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_SHARDS:
            raise ShardConfigurationError(
                f"{where}: the count before {label!r} is {count!r}; give an int from 1 to "
                f"{MAX_SHARDS}"
            )
        changes.append((label, count))
    changes.sort()
    return CountSchedule(tuple(changes), last)


def first_bucket_after(fmt: str, moment: datetime) -> str:
    """The label of the first bucket that begins at or after ``moment`` (UTC)."""
    moment = moment.astimezone(timezone.utc)
    current = bucket_label(moment, fmt)
    if bucket_label(moment - timedelta(microseconds=1), fmt) != current:
        return current  # ``moment`` is a bucket's first instant
    step = label_step(fmt)  # the smallest unit a label shows: no bucket is skipped
    probe = moment + step
    while bucket_label(probe, fmt) == current:
        probe += step
    return bucket_label(probe, fmt)


def _is_label(label: str, fmt: str) -> bool:
    try:
        parsed = datetime.strptime(label, fmt)
    except ValueError:
        try:
            datetime.strptime(_example(fmt), fmt)
        except ValueError:  # a format strptime cannot read back (ISO weeks): its shape
            return len(label) == len(_example(fmt))
        return False
    return bucket_label(parsed, fmt) == label


def _example(fmt: str) -> str:
    return bucket_label(datetime(2026, 11, 25, 4, tzinfo=timezone.utc), fmt)


def during(schedule: CountSchedule, state: MigrationState | None) -> CountSchedule:
    """The schedule a process follows: the declared one, with the cutover of a count
    change in progress (once it is set) where the code does not declare it yet; during
    the return of an aborted change, the schedule from before it."""
    if state is None or state.cutover is None:
        return schedule
    if state.returning:  # back to the counts from before the aborted change
        if schedule.declares(state.cutover, state.new_count, state.old_count):
            return schedule.without(state.cutover)
        return schedule
    if schedule.declares(state.cutover, state.old_count, state.new_count):
        return schedule
    return schedule.with_cutover(state.cutover, state.old_count, state.new_count)
