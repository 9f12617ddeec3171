"""Dynamic keys on ShardedModel: growth on throttling, shrink, compaction, the metadata table."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Any, TypeVar

from pynamodb.exceptions import PynamoDBException
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.operand import Path, Value

from shardmodel._counting import Counting
from shardmodel._queries import Queries
from shardmodel.directory import ShardDirectory
from shardmodel.errors import ShardKeyError, UnsupportedOperationError
from shardmodel.metadata import ShardMetadata
from shardmodel.retry import (
    Backoff,
    attempt_log,
    is_condition_failure,
    surely_unapplied,
    watch_attempts,
)
from shardmodel.strategies import DynamicShards, ShardCount
from shardmodel.throttles import CloudWatchCapacity, ThrottleScope, throttle_scope

_T = TypeVar("_T")
_RawItem = dict[str, dict[str, Any]]

#: Compaction rounds: a round re-copies items updated in place while it ran.
COMPACTION_ROUNDS = 5


class Resharding(Queries, Counting):
    """What only dynamic keys have: a metadata table, growth, shrink and compaction."""

    _cloudwatch_capacity: CloudWatchCapacity | None = None

    @classmethod
    def _dynamic(cls) -> ShardDirectory:
        directory = cls._shard_directory
        if directory is None:
            raise UnsupportedOperationError(
                f"{cls.__name__}: its partition key does not use DynamicShards, so its shard "
                "count is fixed; declare strategy=DynamicShards() to grow and shrink it"
            )
        return directory

    @classmethod
    def _settings(cls) -> DynamicShards:
        return cls._dynamic().settings

    # -- the metadata table -------------------------------------------------------------

    @classmethod
    def create_table(cls, *args: Any, **kwargs: Any) -> Any:
        """Create the table and, for a dynamic key, its metadata table (on-demand)."""
        result = super().create_table(*args, **kwargs)
        if cls._shard_directory is not None:
            table = cls._shard_directory.table()
            if not table.exists():
                table.create_table(
                    wait=bool(kwargs.get("wait", False)), billing_mode="PAY_PER_REQUEST"
                )
        return result

    @classmethod
    def delete_table(cls, *, wait: bool = False) -> Any:
        """Delete the table and, for a dynamic key, its metadata table."""
        result = super().delete_table(wait=wait)
        directory = cls._shard_directory
        if directory is not None and directory.table().exists():
            directory.table_model.delete_table()
            directory.clear_cache()
        return result

    @classmethod
    def shard_metadata(cls, hash_key: str) -> ShardMetadata | None:
        """A dynamic key's metadata item, read strongly consistent (None: never written)."""
        return cls._dynamic().lookup(cls._check_logical(hash_key), consistent=True)

    @classmethod
    def grown_keys(cls, min_shards: int = 2) -> list[ShardMetadata]:
        """Keys whose reads touch at least ``min_shards`` shards, most first: the hot ones.

        Scans the metadata table (one item per key ever written).
        """
        return [m for m in cls._dynamic().every_key() if m.readable >= min_shards]

    # -- growth -------------------------------------------------------------------------

    @classmethod
    def _throttle_scope(cls, error: BaseException) -> ThrottleScope | None:
        if cls._cloudwatch_capacity is None:
            cls._cloudwatch_capacity = CloudWatchCapacity(
                region=getattr(cls.Meta, "region", None), clock=cls._settings().clock
            )
        scope = throttle_scope(
            error, cls.Meta.table_name, cls._provisioned_wcu, cls._cloudwatch_capacity
        )
        policy = getattr(cls.Meta, "table_throttle_policy", None)
        if policy is not None:  # opt-in: a TableThrottlePolicy (shardmodel.ops)
            policy.observe(cls, error, scope)
        return scope

    @classmethod
    def _provisioned_wcu(cls) -> float:
        table = cls._get_connection().describe_table()
        if table.get("BillingModeSummary", {}).get("BillingMode") == "PAY_PER_REQUEST":
            return 0.0
        return float(table.get("ProvisionedThroughput", {}).get("WriteCapacityUnits") or 0)

    @classmethod
    def _growing(
        cls, logical: str, write: Callable[[ShardMetadata, bool], _T], resend_unknown: bool
    ) -> _T:
        """Run ``write(metadata, move)``; grow the key and run it again on partition throttles.

        Throttles fail fast (botocore does not retry them here): the first one may grow
        the key, and the backoff between resends is this loop's. ``move`` is False when
        an earlier attempt may have been applied (a timeout before the throttle): the
        write must then go to the same physical key again, or, if it is not idempotent
        (``resend_unknown`` False), not at all.
        """
        directory = cls._dynamic()
        watch_attempts(cls._get_connection().connection.client)
        backoff = getattr(cls.Meta, "shard_backoff", None)
        if not isinstance(backoff, Backoff):
            backoff = Backoff(sleep=directory.settings.clock.sleep)
        waits = backoff.waits()
        seen = directory.for_write(logical)
        move = True
        while True:
            with attempt_log(fail_fast=True) as kinds:
                try:
                    return write(seen, move)
                except PynamoDBException as error:
                    failure: PynamoDBException = error
            scope = cls._throttle_scope(failure)  # outside the log: it may call the table
            if scope is None:
                raise failure
            move = move and surely_unapplied(kinds)  # once maybe applied, stay on that key
            if not move and not resend_unknown:
                raise failure
            if move and scope == "partition":
                grown = directory.grow(logical, seen)
                more = grown.number_of_shards > seen.number_of_shards
                seen = grown
                if more:
                    continue  # a bigger space: retry at once
            if next(waits, None) is None:
                raise failure

    def _save_growing(self, put: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """A new item of a dynamic key: written to a live shard, growing the key if hot."""
        logical = self._check_logical(getattr(self, self._sharded().attr_name))

        def write(seen: ShardMetadata, move: bool) -> dict[str, Any]:
            if move:
                self._physical_key = None
                self._write_counts = seen
            return put()

        return self._growing(logical, write, resend_unknown=True)

    @classmethod
    def _write_counter(cls, hash_key: Any, range_key: Any, update: Callable[[str], Any]) -> None:
        """An untokened ``add`` on a dynamic key: a live shard, growing the key if hot."""
        if cls._shard_directory is None:
            super()._write_counter(hash_key, range_key, update)
            return
        logical = cls._check_logical(hash_key)
        values = {} if cls._range_keyname is None else {cls._range_keyname: range_key}
        layout = cls._sharded().layout
        rng = cls._sharded().rng

        def write(seen: ShardMetadata, move: bool) -> None:
            live = ShardCount(seen.number_of_shards, seen.number_of_shards)
            targets = layout.candidates(cls._key_values(logical, values, counts=live))
            update(targets[rng.randrange(len(targets))])

        cls._growing(logical, write, resend_unknown=False)

    # -- shrink and compaction -----------------------------------------------------------

    @classmethod
    def grow_shards(cls, hash_key: str, to: int) -> ShardMetadata:
        """Raise a dynamic key's live count to ``to`` ahead of a known burst.

        The same conditional update and history entry as a growth on throttling; a no-op
        when the key already has ``to`` shards.
        """
        return cls._dynamic().grow_to(cls._check_logical(hash_key), to)

    @classmethod
    def shrink_shards(cls, hash_key: str, count: int) -> ShardMetadata:
        """Lower a dynamic key's live count: new writes spread over ``count`` shards.

        Reads keep reading every shard the key had until :meth:`compact_shards` has moved
        the retired shards' items into the live ones, so no item is hidden meanwhile.
        """
        return cls._dynamic().shrink(cls._check_logical(hash_key), count)

    @classmethod
    def compact_shards(cls, hash_key: str, grace: float = 5.0) -> int:
        """Move the items of a key's retired shards into its live shards; returns how many.

        It starts once writers' cached counts from before the shrink have expired
        (``writer_cache_seconds`` after it). Each item is copied to a live shard, then
        (after ``grace`` seconds, longer than any read in flight takes) deleted from the
        retired shard with a condition that it is unchanged. Meanwhile reads see both
        copies and return one; an item updated in place meanwhile is copied again. Once
        the retired shards are empty the history is pruned and reads stop touching them.
        """
        directory = cls._dynamic()
        logical = cls._check_logical(hash_key)
        if cls._counter_names:
            raise UnsupportedOperationError(
                f"{cls.__name__}.compact_shards(): counter items are summed over every "
                "shard, so a copy would count twice; after a shrink they stay readable "
                "where they are"
            )
        layout = cls._sharded().layout
        if len(layout.strategies) != 1:
            raise UnsupportedOperationError(
                f"{cls.__name__}.compact_shards(): the key composes DynamicShards with other "
                "strategies, whose segments a compaction cannot enumerate; compact is "
                "available when DynamicShards is the only strategy"
            )
        seen = directory.lookup(logical, consistent=True)
        if seen is None or seen.readable == seen.number_of_shards:
            return 0
        live = seen.number_of_shards
        retired = [layout.compose(logical, [s]) for s in range(live, seen.readable)]
        targets = [layout.compose(logical, [s]) for s in range(live)]
        clock = directory.settings.clock
        # writers may use a cached count from before the shrink for writer_cache_seconds:
        # read the retired shards only once no writer can still be adding to them
        settled = seen.last_updated + directory.settings.writer_cache_seconds + 1
        clock.sleep(max(0.0, settled - clock.now()))
        moved = 0
        pending = [raw for key in retired for raw in cls._all_items(key)]
        for _ in range(COMPACTION_ROUNDS):
            copies = [(raw, cls._copy_to(raw, targets)) for raw in pending]
            clock.sleep(grace)
            pending = [raw for raw, target in copies if not cls._delete_if_unchanged(raw, target)]
            moved += len(copies) - len(pending)
            reread = [cls._reread(raw) for raw in pending]
            pending = [raw for raw in reread if raw is not None]
            if not pending:  # a last look: anything written there meanwhile moves too
                pending = [raw for key in retired for raw in cls._all_items(key)]
            if not pending:
                break
        if pending:
            raise ShardKeyError(
                f"{cls.__name__}.compact_shards({logical!r}): {len(pending)} items kept "
                "changing on retired shards; run the compaction again"
            )
        current = directory.lookup(logical, consistent=True)
        while current is not None and current.number_of_shards >= live:
            if directory.prune(current) is not None:
                break
            current = directory.lookup(logical, consistent=True)
        return moved

    @classmethod
    def _all_items(cls, physical: str) -> list[_RawItem]:
        connection = cls._get_connection()
        items: list[_RawItem] = []
        start = None
        while True:
            page = connection.query(physical, exclusive_start_key=start, consistent_read=True)
            items.extend(page.get("Items", []))
            start = page.get("LastEvaluatedKey")
            if not start:
                return items

    @classmethod
    def _split_raw(cls, raw: _RawItem) -> tuple[Any, _RawItem]:
        """The serialized sort key of a raw item and its other attributes."""
        range_attr = cls._range_key_attribute()
        rest = {k: v for k, v in raw.items() if k != cls._sharded().attr_name}
        if range_attr is None:
            return None, rest
        value = rest.pop(range_attr.attr_name)
        return value[range_attr.attr_type], rest

    @classmethod
    def _copy_to(cls, raw: _RawItem, targets: list[str]) -> str:
        """Copy an item to its live shard (chosen by its sort key, so a rerun finds it)."""
        range_value, rest = cls._split_raw(raw)
        digest = hashlib.md5(str(range_value).encode("utf-8"), usedforsecurity=False).digest()
        target = targets[int.from_bytes(digest[:8], "big") % len(targets)]
        connection = cls._get_connection()
        hash_path = Path([cls._sharded().attr_name])
        try:
            connection.put_item(
                target, range_key=range_value, attributes=rest, condition=hash_path.does_not_exist()
            )
        except PynamoDBException as error:
            if not is_condition_failure(error):
                raise
            # copied by an earlier round: bring the copy up to date with the retired item
            connection.put_item(target, range_key=range_value, attributes=rest)
        return target

    @classmethod
    def _delete_if_unchanged(cls, raw: _RawItem, target: str) -> bool:
        """Delete a retired item if nobody changed it since it was copied."""
        range_value, rest = cls._split_raw(raw)
        present = set(rest)
        conditions: list[Condition] = [Path([name]) == Value(value) for name, value in rest.items()]
        for attr in cls.get_attributes().values():
            if attr.attr_name not in present and not attr.is_hash_key and not attr.is_range_key:
                conditions.append(Path([attr.attr_name]).does_not_exist())
        condition = functools.reduce(lambda a, b: a & b, conditions) if conditions else None
        physical = raw[cls._sharded().attr_name]["S"]
        try:
            cls._get_connection().delete_item(physical, range_key=range_value, condition=condition)
        except PynamoDBException as error:
            if not is_condition_failure(error):
                raise
            return False
        return True

    @classmethod
    def _reread(cls, raw: _RawItem) -> _RawItem | None:
        range_value, _ = cls._split_raw(raw)
        physical = raw[cls._sharded().attr_name]["S"]
        response = cls._get_connection().get_item(
            physical, range_key=range_value, consistent_read=True
        )
        item: _RawItem | None = response.get("Item")
        return item
