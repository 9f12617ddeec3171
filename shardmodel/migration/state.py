"""The migration state table: one item per resharded table, one per backfill segment.

Every process reads the same item, so every writer and reader switches phase together
(within its cache time). Items are ``{id: S, body: S (JSON), version: N}``; the body is
a frozen attrs value (un)structured with cattrs, and every change is a conditional write
on the version read, so two operators cannot advance one migration twice.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import cattrs
from attrs import evolve, frozen
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import GetError, PutError, TableDoesNotExist
from pynamodb.models import Model

from shardmodel.core.tables import create_table
from shardmodel.dynamic.metadata import MIRRORED_META
from shardmodel.errors import ShardModelError
from shardmodel.keyspace.layout_record import LayoutRecord
from shardmodel.keyspace.phases import PHASES, MigrationState, Phase
from shardmodel.lean.context import AsyncAwareModel
from shardmodel.retry import is_condition_failure

__all__ = [
    "PHASES",
    "ChangePausedError",
    "LayoutRecord",
    "MigrationConflictError",
    "MigrationState",
    "MigrationStore",
    "Phase",
    "SegmentProgress",
]


class MigrationConflictError(ShardModelError, RuntimeError):
    """Another process changed the migration state first, or the step is not allowed now."""


class ChangePausedError(MigrationConflictError):
    """The change is paused (``reshard --pause``): a job stopped at a page boundary with
    its checkpoint kept, or a step was refused; ``reshard --resume`` lets it go on."""


@frozen
class SegmentProgress:
    """One scan segment's progress in a backfill or cleanup job.

    Attributes:
        job: ``"backfill"`` or ``"cleanup"``.
        segments: the total segments of the scan.
        segment: this segment's number (0-based).
        checkpoint: the ExclusiveStartKey to resume after (None: from the start).
        scanned: items read so far.
        changed: items copied (backfill) or deleted (cleanup) so far.
        done: True once the segment's scan has finished.
        updated_at: epoch seconds of the last checkpoint.
    """

    job: str
    segments: int
    segment: int
    checkpoint: dict[str, dict[str, Any]] | None = None
    scanned: int = 0
    changed: int = 0
    done: bool = False
    updated_at: float = 0.0


_converter = cattrs.Converter()

#: Per state table, how many times this process changed its state or layout record: a
#: model following the table without follow() reads it again at once after a change made
#: here (a test, or an operator's script, that changes a phase and then reads).
_changes: dict[str, int] = {}


def changes_made_here(table_name: str) -> int:
    """How often this process changed the state or layout record in ``table_name``."""
    return _changes.get(table_name, 0)


def _changed(table_name: str) -> None:
    _changes[table_name] = _changes.get(table_name, 0) + 1


#: One state item model per state table and endpoint: every watch and operator of that
#: table shares its connection (a botocore client each would cost megabytes).
_state_models: dict[tuple[Any, ...], type[Model]] = {}
_state_lock = threading.Lock()


def state_model(table_name: str, meta: Any) -> type[Model]:
    """The PynamoDB model of a migration state table; ``meta`` lends endpoint and keys
    (one class per table and endpoint settings, made on first use)."""
    mirrored = tuple((o, getattr(meta, o)) for o in MIRRORED_META if hasattr(meta, o))
    key = (table_name, *((o, repr(v)) for o, v in mirrored))
    found = _state_models.get(key)
    if found is None:
        with _state_lock:
            found = _state_models.get(key)
            if found is None:
                found = _state_models[key] = _new_state_model(table_name, dict(mirrored))
    return found


def _new_state_model(table_name: str, mirrored: dict[str, Any]) -> type[Model]:
    settings: dict[str, Any] = {"table_name": table_name, "billing_mode": "PAY_PER_REQUEST"}
    settings.update(mirrored)
    namespace: dict[str, Any] = {
        "Meta": type("Meta", (), settings),
        "id": UnicodeAttribute(hash_key=True),
        "body": UnicodeAttribute(),
        "version": NumberAttribute(),
    }
    return type("MigrationStateItem", (AsyncAwareModel,), namespace)


def _no_table(error: GetError) -> bool:
    """A read of a state table that does not exist (no change ever started here)."""
    return getattr(error, "cause_response_code", None) == "ResourceNotFoundException"


def _stored(item: Any) -> tuple[dict[str, Any], int]:
    """A state table item's body and version."""
    return json.loads(item.body), int(item.version)


def _state(body: dict[str, Any], version: int) -> MigrationState:
    return evolve(_converter.structure(body, MigrationState), version=version)


class MigrationStore:
    """Reads and writes one model's migration state (table ``<main table>-reshard``).

    Its items: the change in progress (id ``<table>``), each segment's progress
    (``<table>#<job>#<segments>#<segment>``) and the layout record the last finished
    change left (``<table>@layout``), read with the state in one request.
    """

    def __init__(self, model: type[Model], table_name: str | None = None) -> None:
        self.model = model
        self.table = model.Meta.table_name
        self.table_name = table_name or f"{self.table}-reshard"
        self.item_model = state_model(self.table_name, model.Meta)

    def items(self) -> type[Model]:
        """The state item model, following the main model's endpoint and credentials."""
        self.item_model = state_model(self.table_name, self.model.Meta)
        return self.item_model

    def ensure_table(self) -> None:
        """Create the state table (on-demand) if it does not exist."""
        create_table(self.items())

    @property
    def layout_key(self) -> str:
        """The id of the table's layout record."""
        return f"{self.table}@layout"

    def _get(self, key: str) -> tuple[dict[str, Any], int] | None:
        items = self.items()
        try:
            item = items.get(key, consistent_read=True)
        except (items.DoesNotExist, TableDoesNotExist):  # no table: no migration
            return None
        except GetError as error:
            if _no_table(error):
                return None
            raise
        return _stored(item)

    def read_current(self) -> tuple[MigrationState | None, LayoutRecord | None]:
        """The change in progress and the layout record, in one strongly consistent read."""
        items = self.items()
        try:
            found = {
                item.id: _stored(item)  # type: ignore[attr-defined]
                for item in items.batch_get([self.table, self.layout_key], consistent_read=True)
            }
        except TableDoesNotExist:
            return None, None
        except GetError as error:
            if _no_table(error):
                return None, None
            raise
        state = found.get(self.table)
        record = found.get(self.layout_key)
        return (
            None if state is None else _state(*state),
            None if record is None else _converter.structure(record[0], LayoutRecord),
        )

    def layout(self) -> tuple[LayoutRecord | None, int]:
        """The layout record the last finished change left, and its version (none: 0)."""
        found = self._get(self.layout_key)
        if found is None:
            return None, 0
        return _converter.structure(found[0], LayoutRecord), found[1]

    def read_layout(self) -> LayoutRecord | None:
        """The layout record the last finished change left (None: no change finished)."""
        return self.layout()[0]

    def write_layout(self, record: LayoutRecord, version: int) -> None:
        """Store the table's layout record if it is still at ``version`` (from
        :meth:`layout`: two operators cannot record over each other)."""
        self._put(self.layout_key, _converter.unstructure(record), version)
        _changed(self.table_name)

    def _put(self, key: str, body: dict[str, Any], version: int) -> None:
        """Write ``body`` at ``version + 1`` if the stored version is still ``version``."""
        items = self.items()
        item = items(key, body=json.dumps(body, sort_keys=True), version=version + 1)
        condition = (
            items.id.does_not_exist()  # type: ignore[attr-defined]
            if version == 0
            else items.version == version  # type: ignore[attr-defined]
        )
        try:
            item.save(condition=condition)
        except PutError as error:
            if is_condition_failure(error):
                raise MigrationConflictError(
                    f"the migration state {key!r} changed since it was read (another "
                    "operator or process); read it again and retry the step"
                ) from None
            raise

    def read(self) -> MigrationState | None:
        """The table's migration state, read strongly consistent (None: no migration)."""
        found = self._get(self.table)
        return None if found is None else _state(*found)

    def write(self, state: MigrationState) -> MigrationState:
        """Store ``state`` if nobody changed it since it was read; returns the stored one."""
        body = _converter.unstructure(evolve(state, version=0))
        self._put(self.table, body, state.version)
        _changed(self.table_name)
        return evolve(state, version=state.version + 1)

    def remove(self) -> None:
        """Delete the migration state and every segment's progress."""
        self._delete(keep_state=False)

    def clear_progress(self) -> None:
        """Delete every segment's progress, keeping the migration state (a new change
        follows in the same state item: its jobs start from the beginning)."""
        self._delete(keep_state=True)

    def _delete(self, keep_state: bool) -> None:
        for item in self.items().scan():
            key: str = item.id  # type: ignore[attr-defined]
            if key.startswith(f"{self.table}#") or (key == self.table and not keep_state):
                item.delete()
        if not keep_state:
            _changed(self.table_name)

    def _segment_id(self, job: str, segments: int, segment: int) -> str:
        return f"{self.table}#{job}#{segments}#{segment}"

    def segment(self, job: str, segments: int, segment: int) -> tuple[SegmentProgress, int]:
        """A segment's progress and its version (a fresh one at version 0)."""
        found = self._get(self._segment_id(job, segments, segment))
        if found is None:
            return SegmentProgress(job=job, segments=segments, segment=segment), 0
        body, version = found
        return _converter.structure(body, SegmentProgress), version

    def save_segment(self, progress: SegmentProgress, version: int) -> int:
        """Checkpoint a segment; returns its new version."""
        key = self._segment_id(progress.job, progress.segments, progress.segment)
        self._put(key, _converter.unstructure(progress), version)
        return version + 1

    def progress(self, job: str, segments: int) -> list[SegmentProgress]:
        """Every segment's progress of a job (segments never started read as fresh)."""
        return [self.segment(job, segments, i)[0] for i in range(segments)]
