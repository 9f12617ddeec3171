"""The backfill and the cleanup: parallel scan segments, checkpointed after every page.

Each segment (``Segment i`` of ``TotalSegments N``) keeps its own checkpoint in the
migration state table, so a crashed run resumes where its last page ended, and many
processes or hosts can each take their own segments.

The backfill moves each item from its old key to its new key (a fenced move,
:mod:`shardmodel.engine.moves`: from the fence on, writes of the item go to its new key,
and its old copy becomes a tombstone). The cleanup moves what is left (items written to
old keys after the backfill passed them) and deletes the tombstones. Both are
idempotent: a crashed run resumes from its checkpoint, and a move another process began
is finished, not begun again.
"""

from __future__ import annotations

import logging
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
    MOVED,
    ActiveMigration,
    is_moved,
    state_of,
)
from shardmodel.migration.state import MigrationStore, Phase, SegmentProgress

__all__ = ["Progress", "ScanJob"]

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

    def line(self, scanned: int, changed: int, now: float) -> str:
        """The status text at ``now``: items, rate and ETA."""
        elapsed = max(now - self.started, 1e-9)
        rate = scanned / elapsed
        text = f"{self.label}: {scanned:,} items scanned, {changed:,} changed, {rate:,.0f}/s"
        if self.total:
            left = max(self.total - scanned, 0)
            eta = left / rate if rate > 0 else float("inf")
            eta_text = "?" if eta == float("inf") else time.strftime("%H:%M:%S", time.gmtime(eta))
            text += f", {min(scanned / self.total, 1.0):.0%} of ~{self.total:,}, ETA {eta_text}"
        return text

    def update(self, scanned: int, changed: int, final: bool = False) -> None:
        """Report the counts so far."""
        now = self.clock()
        if self.tty:
            width = 30
            filled = width if not self.total else int(width * min(scanned / self.total, 1.0))
            bar = "#" * filled + "-" * (width - filled)
            end = "\n" if final else ""
            self.stream.write(f"\r[{bar}] {self.line(scanned, changed, now)}{end}")
            self.stream.flush()
            return
        if final or now - self._last_line >= self.interval:
            self._last_line = now
            log.info("%s", self.line(scanned, changed, now))


def _condition_failed(error: ClientError) -> bool:
    code = error.response.get("Error", {}).get("Code", "")
    return code in ("ConditionalCheckFailedException", "TransactionCanceledException")


class ScanJob:
    """One segment of the backfill (phase backfill) or the cleanup (phase cleanup).

    Args:
        model: the model being resharded.
        migration: the migration as read at the start of the job.
        store: the migration state table access.
        job: ``"backfill"`` or ``"cleanup"``.
        segment: this job's segment number, below ``migration.state.segments``.
        page_size: items per Scan page (and per checkpoint).
        progress: where progress goes (None: nowhere).
        fault: test hook called with a point name (``"page"``, ``"moved"``); raising from
            it simulates a crash there.
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
        attr = sharding_of(model).key()
        self.hash_name: str = attr.attr_name
        range_attr = model._range_key_attribute()  # type: ignore[no-untyped-call]
        self.range_name: str | None = range_attr.attr_name if range_attr is not None else None
        self.client = model._get_connection().connection.client
        self.table = model.Meta.table_name
        self.mover = mover_of(model)

    def run(self) -> SegmentProgress:
        """Scan the segment to its end from its checkpoint; returns the final progress."""
        expected = Phase.BACKFILL if self.job == "backfill" else Phase.CLEANUP
        if self.migration.state.phase != expected:
            from shardmodel.migration.state import MigrationConflictError

            raise MigrationConflictError(
                f"the {self.job} runs in phase {expected.value}, but the migration is in "
                f"phase {self.migration.state.phase.value}; advance it first"
            )
        progress, version = self.store.segment(self.job, self.segments, self.segment)
        while not progress.done:
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

    def _handle(self, raw: _RawItem) -> int:
        physical = raw[self.hash_name]["S"]
        key = instance_key_values(self.model.from_raw_data(raw))
        target = self.migration.new_key(key, physical)
        range_value = raw.get(self.range_name) if self.range_name else None
        if target == physical:
            if self.job == "cleanup" and COPY_MARKER in raw:
                self._settle(key, target, range_value)
            return 0  # at its new key (or the same key in both layouts)
        old_key = self.mover.key(physical, range_value)
        moved_already = is_moved(state_of(raw))
        if self.job == "backfill":
            if moved_already:
                return 0
            self.mover.move(old_key, target)
            self.fault("moved")
            return 1
        if not moved_already:  # written after the backfill passed it: move it first
            self.mover.move(old_key, target)
            self.fault("moved")
        self._settle(key, target, range_value)
        return int(self._delete_tombstone(old_key))

    def _settle(self, key: Any, target: str, range_value: Any) -> None:
        """Confirm the new copy a move left marked, or drop a superseded move's late copy,
        while the tombstones that decide it are still there."""
        olds = [self.mover.key(k, range_value) for k in self.migration.other_old_keys(key, target)]
        self.mover.settle_copy(self.mover.key(target, range_value), olds, target)

    def _delete_tombstone(self, key: _RawItem) -> bool:
        """Delete an old key's tombstone (its item lives at the new key)."""
        try:
            self.client.delete_item(
                TableName=self.table,
                Key=key,
                ConditionExpression="begins_with(#m, :moved)",
                ExpressionAttributeNames={"#m": MOVE_MARKER},
                ExpressionAttributeValues={":moved": {"S": MOVED}},
            )
        except ClientError as error:
            if _condition_failed(error):
                return False
            raise
        return True

