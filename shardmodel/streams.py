"""DynamoDB Streams records as the application's changes: logical keys, moves dropped.

A layout change moves items: it marks an item's old row, copies it to its new key,
turns the old row into a tombstone, unmarks the copy, and its sweep deletes the
tombstones. On the table's stream each of those is an INSERT, MODIFY or REMOVE of an
item nobody changed. :func:`changes` keeps what the application did (a save, an update,
a delete, a TTL expiry) and gives each as a :class:`Change` of model instances, whose
keys are logical. It needs the stream's ``NEW_AND_OLD_IMAGES`` view: a record's images
are what tell a move from a write.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Generic, Literal, TypeVar

from attrs import frozen

from shardmodel.errors import UnsupportedOperationError
from shardmodel.keyspace.phases import COPY_MARKER, DELETED, state_of, unmarked

__all__ = ["Change", "ChangeKind", "changes"]

_M = TypeVar("_M")
_RawItem = Mapping[str, Mapping[str, Any]]
#: DynamoDB's event names, kept: a logical change is one of the three.
ChangeKind = Literal["INSERT", "MODIFY", "REMOVE"]


@frozen
class Change(Generic[_M]):
    """One change the application made to one item.

    Attributes:
        kind: ``INSERT`` (the item did not exist), ``MODIFY`` or ``REMOVE``.
        old: the item before (None for an insert), logical keys.
        new: the item after (None for a remove), logical keys.
        record: the stream record it came from.
    """

    kind: ChangeKind
    old: _M | None
    new: _M | None
    record: Mapping[str, Any]

    @property
    def item(self) -> _M:
        """The item as it is now, or as it was before its removal."""
        found = self.new if self.new is not None else self.old
        assert found is not None
        return found


def changes(model: type[_M], records: Iterable[Mapping[str, Any]]) -> Iterator[Change[_M]]:
    """The application's changes among stream ``records`` of ``model``'s table.

    ``records``: a Lambda event's ``Records``, or ``GetRecords``' ``Records`` (each has
    ``eventName`` and ``dynamodb`` with ``NewImage`` and ``OldImage``). Records a layout
    change writes, and records of no change to an item (a delete of nothing), yield
    nothing.

    Raises:
        UnsupportedOperationError: a record without the images it needs (the stream's
            view type is not ``NEW_AND_OLD_IMAGES``), before anything is yielded for it.
    """
    for record in records:
        found = change_of(model, record)
        if found is not None:
            yield found


def change_of(model: type[_M], record: Mapping[str, Any]) -> Change[_M] | None:
    """The application's change in one stream record (None: a move's bookkeeping)."""
    body = record.get("dynamodb", {})
    name = record.get("eventName")
    wanted = {"INSERT": ("NewImage",), "MODIFY": ("NewImage", "OldImage")}
    for image in wanted.get(str(name), ("OldImage",)):
        if image not in body:
            raise UnsupportedOperationError(
                f"{getattr(model, '__name__', model)}: a stream record ({name}) without "
                f"{image}: a move cannot be told from a write; set the table's "
                "StreamViewType to NEW_AND_OLD_IMAGES"
            )
    before = _held(body.get("OldImage"))
    after = _held(body.get("NewImage"))
    if before is None and after is None:
        return None  # tombstones written, swept, or deleted twice
    if _bookkeeping(body.get("OldImage"), body.get("NewImage"), before, after):
        return None
    old = None if before is None else model.from_raw_data(dict(before))  # type: ignore[attr-defined]
    new = None if after is None else model.from_raw_data(dict(after))  # type: ignore[attr-defined]
    kind: ChangeKind = "INSERT" if old is None else "REMOVE" if new is None else "MODIFY"
    return Change(kind, old, new, record)


def _held(raw: _RawItem | None) -> _RawItem | None:
    """The item a row holds, without bookkeeping (None: no row, or a tombstone)."""
    if raw is None:
        return None
    state = state_of(raw)
    if state is not None and not state.startswith("moving:"):
        return None
    return unmarked(raw)


def _bookkeeping(
    old_raw: _RawItem | None,
    new_raw: _RawItem | None,
    before: _RawItem | None,
    after: _RawItem | None,
) -> bool:
    """True for a row a move wrote: a fence, a copy, a tombstone, a confirmation."""
    if new_raw is not None and state_of(new_raw) not in (None, DELETED):
        # a fence (``moving:``), the tombstone a move leaves (``moved``) or an empty old
        # key fenced: the item is where it was, or at its new key
        return True
    if new_raw is not None and COPY_MARKER in new_raw:
        return True  # a move's copy at the new key, before its confirmation
    # the confirmation: the copy's marker removed, nothing else
    return old_raw is not None and COPY_MARKER in old_raw and before == after
