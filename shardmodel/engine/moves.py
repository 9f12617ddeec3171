"""Moving one item to its new key during a layout change, fenced, so it never has two owners.

A move fences the item's old copy (``moving:<token>``: old-key writes now fail their
condition and go to the new key), reads the old copy again (its content is frozen from
the fence on), copies it to the new key (marked with the token), turns the old copy into
a tombstone (``moved``) and unmarks the new copy. Any process may finish a move another
began: every step repeats the same frozen content under the same token, and a copy only
replaces a marked copy, so once the move has ended a late copy from a stalled helper
finds the item (or the tombstone a delete left) and changes nothing. A write to a new key
first fences the item's old keys (:meth:`Mover.fence_old`): a tombstone where nothing is
stored, else the item's move, finished.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from attrs import frozen
from botocore.exceptions import ClientError

from shardmodel.errors import ItemSizeError, ShardModelError
from shardmodel.keyspace.phases import (
    COPY_MARKER,
    FENCED,
    MOVE_MARKER,
    MOVE_RESERVE_BYTES,
    MOVED,
    is_tombstone,
    state_of,
)
from shardmodel.sizing import item_size

__all__ = ["MOVE_ROUNDS", "MoveError", "Mover", "is_condition_failure"]

#: How often a move is retried when other processes keep changing the item under it.
MOVE_ROUNDS = 8

_RawItem = dict[str, dict[str, Any]]


class MoveError(ShardModelError, RuntimeError):
    """An item could not be moved: other writers kept changing it; retry the call."""


def is_condition_failure(error: ClientError) -> bool:
    """True when a request failed its condition (the item is not as the request assumed)."""
    code = error.response.get("Error", {}).get("Code", "")
    return code in ("ConditionalCheckFailedException", "TransactionCanceledException")


def _too_large(error: ClientError) -> bool:
    """True when DynamoDB refused a write for the item's size (a ValidationException)."""
    failure = error.response.get("Error", {})
    message = str(failure.get("Message", "")).lower()
    return (
        failure.get("Code") == "ValidationException" and "size" in message and ("exceed" in message)
    )


@frozen
class Mover:
    """Moves the items of one table during a layout change (a raw botocore client).

    Attributes:
        client: the botocore DynamoDB client.
        table: the table.
        hash_name: the partition key's name.
        range_name: the sort key's name (None: no sort key).
        inputs: the other attributes the key is computed from: a tombstone keeps them, so
            a read can tell which layout's key it sits at.
    """

    client: Any
    table: str
    hash_name: str
    range_name: str | None
    inputs: tuple[str, ...] = ()

    # -- requests -------------------------------------------------------------------------

    def key(self, physical: str, range_value: Mapping[str, Any] | None) -> _RawItem:
        found: _RawItem = {self.hash_name: {"S": physical}}
        if self.range_name is not None and range_value is not None:
            found[self.range_name] = dict(range_value)
        return found

    def get(self, key: _RawItem) -> _RawItem | None:
        item: _RawItem | None = self.client.get_item(
            TableName=self.table, Key=key, ConsistentRead=True
        ).get("Item")
        return item

    def tombstoned(self, keys: Sequence[_RawItem]) -> set[str]:
        """The partition keys of ``keys`` (one item's keys) whose rows are tombstones,
        read consistently in batches of 100."""
        names = {"#k": self.hash_name, "#m": MOVE_MARKER}
        found: set[str] = set()
        for start in range(0, len(keys), 100):
            request: dict[str, Any] = {
                self.table: {
                    "Keys": list(keys[start : start + 100]),
                    "ConsistentRead": True,
                    "ProjectionExpression": "#k, #m",
                    "ExpressionAttributeNames": names,
                }
            }
            while request:
                answer = self.client.batch_get_item(RequestItems=request)
                for row in answer.get("Responses", {}).get(self.table, []):
                    if is_tombstone(row):
                        found.add(row[self.hash_name]["S"])
                request = answer.get("UnprocessedKeys") or {}
        return found

    def _conditional(self, call: Any, **request: Any) -> bool:
        """A conditional request; False when its condition failed."""
        try:
            call(TableName=self.table, **request)
        except ClientError as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    # -- moving ---------------------------------------------------------------------------

    def move(
        self,
        old_key: _RawItem,
        new_physical: str,
        fault: Callable[[str], None] | None = None,
        seen: _RawItem | None = None,
    ) -> None:
        """Move the item at ``old_key`` to ``new_physical`` (same sort key); idempotent.

        Returns once the old key holds a tombstone: the item moved (by this call or
        another process), or the old key held nothing and is now fenced.

        ``fault``: a test hook called at ``"fenced"``, ``"copied"`` and ``"tombstoned"``
        (raising there stands for a crash between two requests). ``seen``: the old row
        as a scan just read it, used instead of reading it first (a stale row only
        fails a condition, and the next round reads it again).

        Raises:
            MoveError: after :data:`MOVE_ROUNDS` rounds of other writers changing it.
        """
        step = fault or (lambda point: None)
        range_value = old_key.get(self.range_name) if self.range_name else None
        new_key = self.key(new_physical, range_value)
        for _ in range(MOVE_ROUNDS):
            old, seen = (self.get(old_key) if seen is None else seen), None
            if old is None:
                if self.tombstone(old_key, {}):
                    return
                continue
            if is_tombstone(old):
                return
            state = state_of(old)
            if state is None:
                token = uuid.uuid4().hex
                fenced = self._fence(old_key, token)
                if fenced is None:
                    continue
                step("fenced")
                frozen_copy = fenced  # what every read of the old copy sees from now on
            else:
                token, frozen_copy = state.split(":", 1)[1], old  # helping a move under way
            if frozen_copy is None or state_of(frozen_copy) != f"moving:{token}":
                continue
            if not self._copy(frozen_copy, old_key, new_key, token):
                continue
            step("copied")
            kept = {name: frozen_copy[name] for name in self.inputs if name in frozen_copy}
            tombstoned = self._conditional(
                self.client.put_item,
                Item={**old_key, **kept, MOVE_MARKER: {"S": MOVED}},
                ConditionExpression="#m = :m",
                ExpressionAttributeNames={"#m": MOVE_MARKER},
                ExpressionAttributeValues={":m": {"S": f"moving:{token}"}},
            )
            step("tombstoned")
            if tombstoned or is_tombstone(self.get(old_key)):
                self._conditional(
                    self.client.update_item,
                    Key=new_key,
                    UpdateExpression="REMOVE #c",
                    ConditionExpression="#c = :t",
                    ExpressionAttributeNames={"#c": COPY_MARKER},
                    ExpressionAttributeValues={":t": {"S": token}},
                )
                return
        raise MoveError(
            f"{self.table}: the item at {old_key} kept changing while it was moved to "
            f"{new_physical!r}; run the step again (a move is idempotent)"
        )

    def _fence(self, old_key: _RawItem, token: str) -> _RawItem | None:
        """Fence the item at ``old_key`` for a move; its frozen content (None: it was
        gone or fenced already)."""
        try:
            response = self.client.update_item(
                TableName=self.table,
                Key=old_key,
                UpdateExpression="SET #m = :m",
                ConditionExpression="attribute_exists(#k) AND attribute_not_exists(#m)",
                ExpressionAttributeNames={"#m": MOVE_MARKER, "#k": self.hash_name},
                ExpressionAttributeValues={":m": {"S": f"moving:{token}"}},
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if is_condition_failure(error):
                return None
            if _too_large(error):
                raise self._no_room(old_key) from error
            raise
        frozen: _RawItem = response["Attributes"]
        return frozen

    def _no_room(self, key: _RawItem) -> ItemSizeError:
        """The error for an item a move cannot mark or copy (left as it is)."""
        found = self.get(key)
        size = f"{item_size(found):,} bytes" if found is not None else "too large"
        return ItemSizeError(
            f"{self.table}: the item at {key} is {size}, too close to DynamoDB's 400 KB "
            f"for a move to mark it and write it at its new key (a move needs "
            f"{MOVE_RESERVE_BYTES} bytes; save() refuses such items, an update or a write "
            "before this version may have made it). It was left unchanged: store fewer "
            "bytes in it (an update), then run the step again"
        )

    def _copy(
        self, frozen_copy: _RawItem, old_key: _RawItem, new_key: _RawItem, token: str
    ) -> bool:
        """Write the frozen old copy at the new key, marked with the move's token.

        Only where nothing is stored or a move's marked copy is: False when the new key
        holds an item or a tombstone (the move ended elsewhere; the caller checks).
        """
        content = {k: v for k, v in frozen_copy.items() if k != MOVE_MARKER}
        content.update(new_key)
        content[COPY_MARKER] = {"S": token}
        try:
            copied = self._conditional(
                self.client.put_item,
                Item=content,
                ConditionExpression="attribute_not_exists(#k) OR attribute_exists(#c)",
                ExpressionAttributeNames={"#k": self.hash_name, "#c": COPY_MARKER},
            )
        except ClientError as error:
            if _too_large(error):
                raise self._no_room(old_key) from error
            raise
        if copied:
            return True
        if state_of(self.get(old_key)) == f"moving:{token}":
            raise MoveError(
                f"{self.table}: the new key {new_key} holds an item no move wrote while "
                "its old copy is being moved; was it written outside the migration?"
            )
        return False

    def confirm(self, new_key: _RawItem, token: str) -> bool:
        """Unmark the copy a move left at ``new_key`` (its old key holds a tombstone)."""
        return self._conditional(
            self.client.update_item,
            Key=new_key,
            UpdateExpression="REMOVE #c",
            ConditionExpression="#c = :t",
            ExpressionAttributeNames={"#c": COPY_MARKER},
            ExpressionAttributeValues={":t": {"S": token}},
        )

    def tombstone(self, key: _RawItem, inputs: Mapping[str, Any]) -> bool:
        """Fence ``key`` where nothing is stored (True: a tombstone is there now).

        False when an item is there (it must be moved instead). ``inputs``: the item's
        values of :attr:`inputs`.
        """
        if self._conditional(
            self.client.put_item,
            Item={**key, **inputs, MOVE_MARKER: {"S": FENCED}},
            ConditionExpression="attribute_not_exists(#k)",
            ExpressionAttributeNames={"#k": self.hash_name},
        ):
            return True
        return is_tombstone(self.get(key))

    def fence_old(
        self,
        old_keys: Sequence[str],
        range_value: Mapping[str, Any] | None,
        inputs: Mapping[str, Any],
        new_physical: str,
    ) -> None:
        """Before a write at ``new_physical``: no old key may hold the item any more.

        An item still at an old key is moved to the new key first (finishing a move
        another process began); an empty old key is fenced with a tombstone, so a
        process still writing old keys cannot put the item there later, and a scan
        meets the item at its old key. With several old keys (a RandomShards shrink or
        swap) one batch read skips those holding a tombstone already: a moved or fenced
        old key stays one until the sweep, which starts once no process fences.
        """
        keys = [self.key(physical, range_value) for physical in old_keys]
        if len(keys) > 1:
            done = self.tombstoned(keys)
            keys = [key for key in keys if key[self.hash_name]["S"] not in done]
        for key in keys:
            if not self.tombstone(key, inputs):
                self.move(key, new_physical)

    def fenced(self, key: _RawItem) -> bool:
        """True when the copy at ``key`` is fenced (a move holds it, or a tombstone)."""
        return state_of(self.get(key)) is not None
