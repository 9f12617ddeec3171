"""The backfill and the cleanup: parallel scan segments, checkpointed after every page.

Each segment (``Segment i`` of ``TotalSegments N``) keeps its own checkpoint in the
migration state table, so a crashed run resumes where its last page ended, and many
processes or hosts can each take their own segments.

The backfill moves each item from its old key to its new key (a fenced move,
:mod:`shardmodel.engine.moves`: from the fence on, writes of the item go to its new key,
and its old copy becomes a tombstone). The cleanup moves what is left (items written to
old keys after the backfill passed them) and confirms the copies moves left marked. The
sweep, once no process can still be moving an item, deletes the tombstones. All are
idempotent: a crashed run resumes from its checkpoint, and a move another process began
is finished, not begun again.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from attrs import evolve
from botocore.exceptions import ClientError
from pynamodb.models import Model

from shardmodel.engine import sharding_of
from shardmodel.engine.items import instance_key_values
from shardmodel.engine.writes import mover_of
from shardmodel.keyspace.phases import (
    COPY_MARKER,
    MOVE_MARKER,
    RULES,
    ActiveMigration,
    is_tombstone,
    state_of,
)
from shardmodel.migration.state import (
    ChangePausedError,
    MigrationConflictError,
    MigrationStore,
    SegmentProgress,
)

__all__ = ["Progress", "ScanJob", "condition_failed"]

log = logging.getLogger("shardmodel.reshard")


_RawItem = dict[str, dict[str, Any]]


class Progress:
    """Items, rate and ETA: a progress bar on a terminal, log lines otherwise.

    Args:
        label: what is counted (``"backfill"``).
        total: the expected items (None: unknown, no ETA).
        stream: where the bar goes (default stderr); a non-terminal gets log lines.
        interval: seconds between log lines.
        clock: monotonic seconds.
    """

    def __init__(
        self,
        label: str,
        total: int | None,
        stream: TextIO | None = None,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self._last_line = float("-inf")
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._base = 0  # a resumed segment's count at its checkpoint (see begin)

    def begin(self, scanned: int) -> None:
        """A segment's scan starts now, ``scanned`` items counted at its checkpoint."""
        self._base = scanned
        self.started = self.clock()

    def line(self, scanned: int, changed: int, now: float) -> str:
        """The status text at ``now``: items, rate and ETA.

        The rate counts this run's items only (a resumed scan starts from its checkpoint's
        count). Past the estimate (a change's scans read its tombstones and copies too,
        which an estimate of the items before the change leaves out) no percent or ETA is
        claimed.
        """
        elapsed = max(now - self.started, 1e-9)
        rate = (scanned - self._base) / elapsed
        text = f"{self.label}: {scanned:,} items scanned, {changed:,} changed, {rate:,.0f}/s"
        if self.total and scanned < self.total:
            left = self.total - scanned
            eta = left / rate if rate > 0 else float("inf")
            eta_text = "?" if eta == float("inf") else time.strftime("%H:%M:%S", time.gmtime(eta))
            text += f", {scanned / self.total:.0%} of ~{self.total:,}, ETA {eta_text}"
        elif self.total:
            text += f", past the estimate of ~{self.total:,} (tombstones and copies are rows too)"
        return text

    def update(self, scanned: int, changed: int, final: bool = False) -> None:
        """Report the counts so far."""
        now = self.clock()
        if self.tty:
            width = 30
            if self.total and scanned >= self.total and not final:
                bar = "?" * width  # past the estimate: the end is not known
            else:
                filled = width if not self.total else int(width * min(scanned / self.total, 1.0))
                bar = "#" * filled + "-" * (width - filled)
            end = "\n" if final else ""
            self.stream.write(f"\r[{bar}] {self.line(scanned, changed, now)}{end}")
            self.stream.flush()
            return
        if final or now - self._last_line >= self.interval:
            self._last_line = now
            log.info("%s", self.line(scanned, changed, now))


#: The most seconds a job scans between two reads of the state for a pause.
PAUSE_CHECK_SECONDS = 1.0


def condition_failed(error: ClientError) -> bool:
    code = error.response.get("Error", {}).get("Code", "")
    return code in ("ConditionalCheckFailedException", "TransactionCanceledException")


class ScanJob:
    """One segment of a phase's job: the backfill, the cleanup or the sweep (phase done).

    Args:
        model: the model being resharded.
        migration: the migration as read at the start of the job.
        store: the migration state table access.
        job: ``"backfill"``, ``"cleanup"`` or ``"sweep"``.
        segment: this job's segment number, below ``migration.state.segments``.
        page_size: items per Scan page (and per checkpoint).
        progress: where progress goes (None: nowhere).
        fault: test hook called with a point name (``"page"``, ``"moved"``, and a move's
            ``"fenced"``, ``"copied"``, ``"tombstoned"``); raising from it simulates a crash
            there.
        sleep: unused (kept for callers that pass it).
    """

    def __init__(
        self,
        model: type[Model],
        migration: ActiveMigration,
        store: MigrationStore,
        job: str,
        segment: int,
        page_size: int = 100,
        progress: Progress | None = None,
        fault: Callable[[str], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model = model
        self.sleep = sleep
        self.migration = migration
        self.store = store
        self.job = job
        self.segments = migration.state.segments
        self.segment = segment
        self.page_size = page_size
        self.progress = progress
        self.fault = fault or (lambda point: None)
        self.client = model._get_connection().connection.client
        self.table = model.Meta.table_name
        self._pause_checked = -math.inf
        self._setup()

    def _setup(self) -> None:
        """The model's key names and the mover of its items."""
        attr = sharding_of(self.model).key()
        self.hash_name: str = attr.attr_name
        range_attr = self.model._range_key_attribute()  # type: ignore[no-untyped-call]
        self.range_name: str | None = range_attr.attr_name if range_attr is not None else None
        self.mover = mover_of(self.model)

    def run(self) -> SegmentProgress:
        """Scan the segment to its end from its checkpoint; returns the final progress."""
        expected = next(phase for phase, rules in RULES.items() if rules.job == self.job)
        if self.migration.state.phase != expected:
            raise MigrationConflictError(
                f"the {self.job} runs in phase {expected.value}, but the migration is in "
                f"phase {self.migration.state.phase.value}; advance it first"
            )
        return self._scan()

    def _scan(self) -> SegmentProgress:
        """The segment's scan from its checkpoint, each row to :meth:`_handle`."""
        progress, version = self.store.segment(self.job, self.segments, self.segment)
        if self.progress is not None:
            self.progress.begin(progress.scanned)
        while not progress.done:
            self._check_paused(progress)
            request: dict[str, Any] = {
                "TableName": self.table,
                "Segment": self.segment,
                "TotalSegments": self.segments,
                "Limit": self.page_size,
                "ConsistentRead": True,
            }
            if progress.checkpoint is not None:
                request["ExclusiveStartKey"] = progress.checkpoint
            page = self.client.scan(**request)
            items = page.get("Items", [])
            changed = sum(self._handle(raw) for raw in items)
            self.fault("page")
            following = page.get("LastEvaluatedKey")
            progress = evolve(
                progress,
                checkpoint=following,
                scanned=progress.scanned + len(items),
                changed=progress.changed + changed,
                done=following is None,
                updated_at=time.time(),
            )
            version = self.store.save_segment(progress, version)
            if self.progress is not None:
                self.progress.update(progress.scanned, progress.changed, final=progress.done)
        return progress

    def _check_paused(self, progress: SegmentProgress) -> None:
        """Stop before the next page while the change is paused: the state is read
        (strongly consistent) before the first page and then at most once every
        :data:`PAUSE_CHECK_SECONDS`, so a pause stops every worker within about a second
        for one read a second (not one a page: small pages would pay it per few items)."""
        now = time.monotonic()
        if now - self._pause_checked < PAUSE_CHECK_SECONDS:
            return
        self._pause_checked = now
        current = self.store.read()
        if current is not None and current.paused:
            raise ChangePausedError(
                f"{self.model.__name__}: the change is paused; segment {self.segment} of the "
                f"{self.job} stopped at {progress.scanned:,} items scanned, its checkpoint "
                "kept: run reshard --resume, then run this again"
            )

    def _handle(self, raw: _RawItem) -> int:
        """Do this job's part for one row; 1 when it changed the row."""
        physical = raw[self.hash_name]["S"]
        range_value = raw.get(self.range_name) if self.range_name else None
        row_key = self.mover.key(physical, range_value)
        state = state_of(raw)
        if self.job == "sweep":
            return int(
                state is not None and is_tombstone(raw) and self._delete_tombstone(row_key, state)
            )
        key = instance_key_values(self.model.from_raw_data(raw))
        target = self.migration.new_key(key, physical)
        if target != physical:  # an old key
            if is_tombstone(raw):
                return 0  # moved or fenced; the sweep deletes it
            self.mover.move(row_key, target, self.fault, seen=raw)
            self.fault("moved")
            return 1
        if self.job == "cleanup" and COPY_MARKER in raw:
            # a move's copy, unconfirmed: finish every move that may have made it, then
            # confirm it (a stalled helper's late copy can no longer replace it)
            for old in self.migration.other_old_keys(key, target):
                self.mover.move(self.mover.key(old, range_value), target)
            return int(self.mover.confirm(row_key, str(raw[COPY_MARKER]["S"])))
        return 0  # at its new key (or the same key in both layouts)

    def _delete_tombstone(self, key: _RawItem, state: str) -> bool:
        """Delete a tombstone (moved, fenced or deleted), unless it changed since read."""
        try:
            self.client.delete_item(
                TableName=self.table,
                Key=key,
                ConditionExpression="#m = :state",
                ExpressionAttributeNames={"#m": MOVE_MARKER},
                ExpressionAttributeValues={":state": {"S": state}},
            )
        except ClientError as error:
            if condition_failed(error):
                return False
            raise
        return True
