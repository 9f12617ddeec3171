"""The backfill and the cleanup: parallel scan segments, checkpointed after every page.

Each segment (``Segment i`` of ``TotalSegments N``) keeps its own checkpoint in the
migration state table, so a crashed run resumes where its last page ended, and many
processes or hosts can each take their own segments.

The backfill copies an item from its old key to its new key with a conditional write
that never overwrites a newer write, then checks the old copy again: if the item was
deleted meanwhile the copy is removed, if it changed the copy is refreshed. The copy
carries a marker attribute while it is checked, so the application's own writes (a put
replaces the whole item) always win.
"""

from __future__ import annotations

import logging
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any, TextIO

from attrs import evolve
from botocore.exceptions import ClientError
from pynamodb.models import Model

from shardmodel.engine import sharding_of
from shardmodel.engine.items import instance_key_values
from shardmodel.keyspace.phases import COPY_MARKER, ActiveMigration, key_in
from shardmodel.migration.state import MigrationStore, Phase, SegmentProgress

__all__ = ["Progress", "ScanJob"]

log = logging.getLogger("shardmodel.reshard")

#: How often a copy is refreshed while the application keeps changing the old item.
COPY_ROUNDS = 5

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
        fault: test hook called with a point name (``"page"``, ``"copied"``,
            ``"checked"``); raising from it simulates a crash there.
        sleep: how the cleanup waits out the settle time before judging an old copy
            whose new copy is missing.
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
        self._suspects: list[tuple[_RawItem, str]] = []
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
            changed = sum(self._handle(raw) for raw in items) + self._settle_suspects()
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
        item = self.model.from_raw_data(raw)
        key = instance_key_values(item)
        target = key_in(self.migration.new, key, physical, retire=True)
        if target == physical:
            return 0  # already at its new key (or the same key in both layouts)
        if self.job == "backfill":
            if key_in(self.migration.old, key, physical) != physical:
                return 0  # a copy at a new key, not an original
            return self._copy(raw, target)
        return self._clean(raw, target)

    def _key(self, raw: _RawItem, physical: str) -> _RawItem:
        key = {self.hash_name: {"S": physical}}
        if self.range_name is not None:
            key[self.range_name] = raw[self.range_name]
        return key

    def _put(self, item: _RawItem, condition: str, values: dict[str, Any]) -> bool:
        """A conditional PutItem; False when its condition failed."""
        names = {"#k": self.hash_name, "#m": COPY_MARKER}
        try:
            self.client.put_item(
                TableName=self.table,
                Item=item,
                ConditionExpression=condition,
                ExpressionAttributeNames={n: v for n, v in names.items() if n in condition},
                **({"ExpressionAttributeValues": values} if values else {}),
            )
        except ClientError as error:
            if _condition_failed(error):
                return False
            raise
        return True

    def _if_marked(self, call: Callable[..., Any], token: str, **request: Any) -> None:
        """A write conditioned on the copy still carrying this job's marker."""
        try:
            call(
                TableName=self.table,
                ConditionExpression="#m = :t",
                ExpressionAttributeNames={"#m": COPY_MARKER},
                ExpressionAttributeValues={":t": {"S": token}},
                **request,
            )
        except ClientError as error:
            if not _condition_failed(error):
                raise

    def _copy(self, raw: _RawItem, target: str) -> int:
        """Copy one item to its new key without ever replacing a newer write."""
        old_key = self._key(raw, raw[self.hash_name]["S"])
        new_key = self._key(raw, target)
        token = uuid.uuid4().hex
        source = raw
        copy = {**source, self.hash_name: {"S": target}, COPY_MARKER: {"S": token}}
        if not self._put(copy, "attribute_not_exists(#k)", {}):
            found = self.client.get_item(TableName=self.table, Key=new_key, ConsistentRead=True)
            left = found.get("Item")
            if left is None or COPY_MARKER not in left:
                return 0  # the application wrote the new key: its write is newer
            # a crashed run's unchecked copy: check it now, as that run would have
            token = left[COPY_MARKER]["S"]
            source = {k: v for k, v in left.items() if k != COPY_MARKER}
            source[self.hash_name] = old_key[self.hash_name]
        self.fault("copied")
        for _ in range(COPY_ROUNDS):
            current = self.client.get_item(TableName=self.table, Key=old_key, ConsistentRead=True)
            now = current.get("Item")
            self.fault("checked")
            if now is None:  # deleted meanwhile: the copy must not resurrect it
                self._if_marked(self.client.delete_item, token, Key=new_key)
                return 0
            if now == source:
                break
            source = now  # changed meanwhile: copy the newer version unless replaced
            copy = {**now, self.hash_name: {"S": target}, COPY_MARKER: {"S": token}}
            if not self._put(copy, "#m = :t", {":t": {"S": token}}):
                return 1
        self._if_marked(self.client.update_item, token, Key=new_key, UpdateExpression="REMOVE #m")
        return 1

    def _clean(self, raw: _RawItem, target: str) -> int:
        """Delete an old copy whose new copy exists; set aside one whose new copy is gone."""
        physical = raw[self.hash_name]["S"]
        new_key = self._key(raw, target)
        found = self.client.get_item(TableName=self.table, Key=new_key, ConsistentRead=True)
        if "Item" not in found:
            self._suspects.append((raw, target))  # being deleted, or a lost copy
            return 0
        self.client.delete_item(TableName=self.table, Key=self._key(raw, physical))
        return 1

    def _settle_suspects(self) -> int:
        """Old copies whose new copy was missing, looked at again after the settle time.

        From ``new_only`` on an application delete removes the old key first, so a
        delete in flight, however slow, never leaves an old copy without its new one: a
        missing new copy was lost (a crash between a write's two keys in an earlier
        phase), or a ``read_new`` delete (new key first) is still finishing. So the
        settle time is waited out, and if the old copy is still there it is copied back
        by the backfill's checked protocol before it goes.
        """
        if not self._suspects:
            return 0
        self.sleep(self.migration.state.settle_seconds)
        changed = 0
        for raw, target in self._suspects:
            old_key = self._key(raw, raw[self.hash_name]["S"])
            found = self.client.get_item(TableName=self.table, Key=old_key, ConsistentRead=True)
            current = found.get("Item")
            if current is None:
                continue  # the application deleted it
            log.warning("cleanup: %s had no new copy; copying it first", old_key)
            self._copy(current, target)
            self.client.delete_item(TableName=self.table, Key=old_key)
            changed += 1
        self._suspects = []
        return changed
