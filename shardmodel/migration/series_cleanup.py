"""A time series' count change cleanup: readings written with the old count past the cutover.

From the cutover bucket on, every process that follows the change writes the new count's
partitions. A process that had not seen the change yet (within its cache time) may still
have written a reading dated from the cutover on, and so in the future, with the old
count; once every process follows, this scan moves each such reading to its new
partition: a put where nothing is stored yet (a newer save there wins), then the delete
of the old row. No process writes those old rows any more, so a crashed run resumes from
its checkpoint and finishes the same moves.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError
from pynamodb.models import Model

from shardmodel.errors import ShardModelError
from shardmodel.keyspace.bucket_counts import CountSchedule
from shardmodel.keyspace.phases import ActiveMigration, Phase
from shardmodel.migration.backfill import Progress, ScanJob, condition_failed
from shardmodel.migration.state import MigrationConflictError, MigrationStore, SegmentProgress

__all__ = ["SeriesCleanup"]

log = logging.getLogger("shardmodel.reshard")

_RawItem = dict[str, dict[str, Any]]


class SeriesCleanup(ScanJob):
    """One segment of a time series' count change cleanup (phase cleanup).

    Args:
        model: the time-series model.
        migration: the count change as read at the start of the job.
        store: the migration state table access.
        segment: this job's segment number.
        page_size: items per Scan page (and per checkpoint).
        progress: where progress goes (None: nowhere).
        fault: test hook called with ``"page"`` and ``"copied"``; raising from it
            simulates a crash there.
    """

    def __init__(
        self,
        model: type[Model],
        migration: ActiveMigration,
        store: MigrationStore,
        segment: int,
        page_size: int = 100,
        progress: Progress | None = None,
        fault: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(model, migration, store, "cleanup", segment, page_size, progress, fault)

    def _setup(self) -> None:
        self.series = self.model._series_layout  # type: ignore[attr-defined]
        self.hash_name = self.series.pk().attr_name
        self.sort_name: str = self.series.sk().attr_name
        self.range_name = self.sort_name
        state = self.migration.state
        assert state.cutover is not None
        self.cutover: str = state.cutover
        self.old = CountSchedule((), state.old_count)
        self.new = CountSchedule((), state.new_count)

    def run(self) -> SegmentProgress:
        """Scan the segment to its end from its checkpoint; returns the final progress."""
        if self.migration.state.phase != Phase.CLEANUP:
            raise MigrationConflictError(
                "the cleanup runs in phase cleanup, but the count change is in phase "
                f"{self.migration.state.phase.value}; advance it first"
            )
        return self._scan()

    def _handle(self, raw: _RawItem) -> int:
        """Move a reading stored with the old count past the cutover; 1 when moved."""
        stored = raw[self.hash_name]["S"]
        with contextlib.suppress(ShardModelError):  # a key of no bucket: read below
            if self.series.bucket_of(stored) < self.cutover:
                return 0  # an earlier bucket keeps its count: not worth loading the row
        try:
            reading = self.model.from_raw_data(raw)
        except ShardModelError as error:
            log.warning("cleanup: row %r is not a reading of this layout, left: %s", stored, error)
            return 0
        entity = getattr(reading, self.series.entity)
        moment = getattr(reading, self.series.time)
        old = self.series.partition_key(entity, moment, self.old)
        new = self.series.partition_key(entity, moment, self.new)
        separator = self.series.pk().layout.separator
        if old == new or not (stored == old or stored.startswith(old + separator)):
            return 0
        target = new + stored[len(old) :]  # a hot entity's sub-partition keeps its number
        try:
            self.client.put_item(
                TableName=self.table,
                Item={**raw, self.hash_name: {"S": target}},
                ConditionExpression="attribute_not_exists(#k)",
                ExpressionAttributeNames={"#k": self.hash_name},
            )
        except ClientError as error:
            if not condition_failed(error):
                raise
        self.fault("copied")
        self.client.delete_item(
            TableName=self.table,
            Key={self.hash_name: {"S": stored}, self.sort_name: raw[self.sort_name]},
        )
        return 1
