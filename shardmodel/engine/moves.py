"""Moving one item to its new key during a layout change, fenced, so it never has two owners.

A move fences the item's old copy (``moving:<g>``: old-key writes now fail their condition
and go to the new key), reads the old copy again (its content is frozen from the fence
on), copies it to the new key (marked with the generation ``g``), turns the old copy into a
tombstone (``moved:<g>``) and unmarks the new copy. Any process may finish a move another
began, by taking it over as generation ``g + 1``: each step is conditional on its
generation, a copy only replaces an earlier generation's, and a reader ignores a copy
whose generation no tombstone names (a superseded move's late copy). A write to a new key
first fences the item's old keys (:meth:`Mover.fence_old`): a tombstone where nothing is
stored, else the item's move, finished.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen
from botocore.exceptions import ClientError

from shardmodel.errors import ShardModelError
from shardmodel.keyspace.phases import (
    COPY_MARKER,
    MOVE_MARKER,
    copy_generation,
    generation_of,
    is_moved,
    moved,
    moving,
    state_of,
)

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

    def move(self, old_key: _RawItem, new_physical: str) -> None:
        """Move the item at ``old_key`` to ``new_physical`` (same sort key); idempotent.

        Returns once the old key holds a tombstone: the item moved (by this call or
        another process), or the old key held nothing and is now fenced.

        Raises:
            MoveError: after :data:`MOVE_ROUNDS` rounds of other writers changing it.
        """
        range_value = old_key.get(self.range_name) if self.range_name else None
        new_key = self.key(new_physical, range_value)
        for _ in range(MOVE_ROUNDS):
            old = self.get(old_key)
            state = state_of(old)
            if old is None:
                if self.tombstone(old_key, {}):
                    return
                continue
            if is_moved(state):
                return
            generation = generation_of(state) + 1
            if state is None:
                condition = "attribute_exists(#k) AND attribute_not_exists(#m)"
                names, values = {"#k": self.hash_name}, {}
            else:
                condition, names, values = "#m = :was", {}, {":was": {"S": state}}
            if not self._conditional(
                self.client.update_item,
                Key=old_key,
                UpdateExpression="SET #m = :m",
                ConditionExpression=condition,
                ExpressionAttributeNames={"#m": MOVE_MARKER, **names},
                ExpressionAttributeValues={":m": {"S": moving(generation)}, **values},
            ):
                continue
            frozen_copy = self.get(old_key)  # what every read of the old copy sees from now
            if frozen_copy is None or state_of(frozen_copy) != moving(generation):
                continue
            if not self._copy(frozen_copy, old_key, new_key, generation):
                continue
            kept = {name: frozen_copy[name] for name in self.inputs if name in frozen_copy}
            tombstoned = self._conditional(
                self.client.put_item,
                Item={**old_key, **kept, MOVE_MARKER: {"S": moved(generation)}},
                ConditionExpression="#m = :m",
                ExpressionAttributeNames={"#m": MOVE_MARKER},
                ExpressionAttributeValues={":m": {"S": moving(generation)}},
            )
            if tombstoned or state_of(self.get(old_key)) == moved(generation):
                self.unmark(new_key, generation)
                return
            self.drop_copy(new_key, generation)  # superseded: this generation never holds it
        raise MoveError(
            f"{self.table}: the item at {old_key} kept changing while it was moved to "
            f"{new_physical!r}; run the step again (a move is idempotent)"
        )

    def _copy(
        self, frozen_copy: _RawItem, old_key: _RawItem, new_key: _RawItem, generation: int
    ) -> bool:
        """Write the frozen old copy at the new key, marked with the move's generation.

        False when the new key holds a later generation's copy (this move was taken
        over) or a confirmed item (the move finished elsewhere and the item was written).
        """
        content = {k: v for k, v in frozen_copy.items() if k != MOVE_MARKER}
        content.update(new_key)
        content[COPY_MARKER] = {"N": str(generation)}
        if self._conditional(
            self.client.put_item,
            Item=content,
            ConditionExpression="attribute_not_exists(#k) OR #c < :g",
            ExpressionAttributeNames={"#k": self.hash_name, "#c": COPY_MARKER},
            ExpressionAttributeValues={":g": {"N": str(generation)}},
        ):
            return True
        there = self.get(new_key)
        if there is not None and copy_generation(there) is None:
            if state_of(self.get(old_key)) == moving(generation):
                raise MoveError(
                    f"{self.table}: the new key {new_key} holds an item no move wrote while "
                    "its old copy is being moved; was it written outside the migration?"
                )
        return False

    def unmark(self, new_key: _RawItem, generation: int) -> bool:
        """Confirm generation ``generation``'s copy at ``new_key`` (its old copy moved)."""
        return self._conditional(
            self.client.update_item,
            Key=new_key,
            UpdateExpression="REMOVE #c",
            ConditionExpression="#c = :g",
            ExpressionAttributeNames={"#c": COPY_MARKER},
            ExpressionAttributeValues={":g": {"N": str(generation)}},
        )

    def drop_copy(self, new_key: _RawItem, generation: int) -> bool:
        """Delete generation ``generation``'s copy at ``new_key``: no tombstone names it."""
        return self._conditional(
            self.client.delete_item,
            Key=new_key,
            ConditionExpression="#c = :g",
            ExpressionAttributeNames={"#c": COPY_MARKER},
            ExpressionAttributeValues={":g": {"N": str(generation)}},
        )

    def settle_copy(
        self, new_key: _RawItem, old_keys: Sequence[_RawItem], new_physical: str
    ) -> bool:
        """Confirm or drop the marked copy at ``new_key``, by its old keys' tombstones.

        A copy whose generation a tombstone names is the item (its move ended before the
        copy was unmarked); one no tombstone names is a superseded move's late copy. An
        old key that still holds the item is moved first (which settles the copy). False
        when the new key held no marked copy.
        """
        found = False
        for _ in range(MOVE_ROUNDS):
            generation = copy_generation(self.get(new_key))
            if generation is None:
                return found
            found = True
            named: set[int] = set()
            for key in old_keys:
                there = self.get(key)
                if there is not None and not is_moved(state_of(there)):
                    self.move(key, new_physical)
                    break
                if there is not None:
                    named.add(generation_of(state_of(there)))
            else:
                if generation in named:
                    self.unmark(new_key, generation)
                else:
                    self.drop_copy(new_key, generation)
        raise MoveError(f"{self.table}: the new copy {new_key} kept changing; run the step again")

    def tombstone(self, key: _RawItem, inputs: Mapping[str, Any]) -> bool:
        """Fence ``key`` with a tombstone where nothing is stored (True: a tombstone is
        there now). False when an item is there (it must be moved instead). ``inputs``:
        the item's values of :attr:`inputs`."""
        if self._conditional(
            self.client.put_item,
            Item={**key, **inputs, MOVE_MARKER: {"S": moved(0)}},
            ConditionExpression="attribute_not_exists(#k)",
            ExpressionAttributeNames={"#k": self.hash_name},
        ):
            return True
        return is_moved(state_of(self.get(key)))

    def fence_old(
        self,
        old_keys: Sequence[str],
        range_value: Mapping[str, Any] | None,
        inputs: Mapping[str, Any],
        new_physical: str,
        tombstones: bool = True,
    ) -> None:
        """Before a write at ``new_physical``: no old key may hold the item any more.

        An item still at an old key is moved to the new key first (finishing a move
        another process began). With ``tombstones``, an empty old key is fenced too, so
        a process still writing old keys cannot put the item there later.
        """
        for physical in old_keys:
            key = self.key(physical, range_value)
            if tombstones:
                if not self.tombstone(key, inputs):
                    self.move(key, new_physical)
            else:
                there = self.get(key)
                if there is not None and not is_moved(state_of(there)):
                    self.move(key, new_physical)

    def fenced(self, key: _RawItem) -> bool:
        """True when the copy at ``key`` is fenced (a move holds it, or it moved)."""
        return state_of(self.get(key)) is not None
