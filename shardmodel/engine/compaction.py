"""Moving the items of a dynamic key's retired shards into its live shards.

After a shrink, reads keep touching the retired shards until a compaction has moved
their items; then the key's history is pruned and reads stop touching them.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

from pynamodb.exceptions import PynamoDBException
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.operand import Path, Value

from shardmodel.engine.growth import directory_of
from shardmodel.engine.items import check_logical, sharded
from shardmodel.engine.sharding import sharding_of
from shardmodel.errors import ShardKeyError, UnsupportedOperationError
from shardmodel.retry import is_condition_failure

__all__ = ["COMPACTION_ROUNDS", "compact_shards"]

#: Compaction rounds: a round re-copies items updated in place while it ran.
COMPACTION_ROUNDS = 5

_RawItem = dict[str, dict[str, Any]]


def compact_shards(model: type[Any], hash_key: str, grace: float = 5.0) -> int:
    """Move the items of a key's retired shards into its live shards; returns how many.

    It starts once writers' cached counts from before the shrink have expired
    (``writer_cache_seconds`` after it). Each item is copied to a live shard, then
    (after ``grace`` seconds, longer than any read in flight takes) deleted from the
    retired shard with a condition that it is unchanged. Meanwhile reads see both copies
    and return one; an item updated in place meanwhile is copied again. Once the retired
    shards are empty the history is pruned and reads stop touching them.
    """
    directory = directory_of(model)
    logical = check_logical(model, hash_key)
    engine = sharding_of(model)
    if engine.spec.counters:
        raise UnsupportedOperationError(
            f"{model.__name__}.compact_shards(): counter items are summed over every "
            "shard, so a copy would count twice; after a shrink they stay readable "
            "where they are"
        )
    layout = sharded(model).layout
    if len(layout.strategies) != 1:
        raise UnsupportedOperationError(
            f"{model.__name__}.compact_shards(): the key composes DynamicShards with other "
            "strategies, whose segments a compaction cannot enumerate; compact is "
            "available when DynamicShards is the only strategy"
        )
    seen = directory.lookup(logical, consistent=True)
    if seen is None or seen.readable == seen.latest:
        return 0
    live = seen.latest
    placement = engine.placement()
    retired = placement.dynamic_keys(logical, range(live, seen.readable))
    targets = placement.dynamic_keys(logical, range(live))
    clock = directory.settings.clock
    # writers may use a cached count from before the shrink for writer_cache_seconds:
    # read the retired shards only once no writer can still be adding to them
    settled = seen.last_updated + directory.settings.writer_cache_seconds + 1
    clock.sleep(max(0.0, settled - clock.now()))
    executor = engine.executor
    moved = 0
    pending = [raw for key in retired for raw in executor.query_all(key)]
    for _ in range(COMPACTION_ROUNDS):
        copies = [(raw, _copy_to(model, raw, targets)) for raw in pending]
        clock.sleep(grace)
        pending = [raw for raw, target in copies if not _delete_if_unchanged(model, raw)]
        moved += len(copies) - len(pending)
        reread = [_reread(model, raw) for raw in pending]
        pending = [raw for raw in reread if raw is not None]
        if not pending:  # a last look: anything written there meanwhile moves too
            pending = [raw for key in retired for raw in executor.query_all(key)]
        if not pending:
            break
    if pending:
        raise ShardKeyError(
            f"{model.__name__}.compact_shards({logical!r}): {len(pending)} items kept "
            "changing on retired shards; run the compaction again"
        )
    current = directory.lookup(logical, consistent=True)
    while current is not None and current.latest >= live:
        if directory.prune(current) is not None:
            break
        current = directory.lookup(logical, consistent=True)
    return moved


def _split_raw(model: type[Any], raw: _RawItem) -> tuple[Any, _RawItem]:
    """The serialized sort key of a raw item and its other attributes."""
    range_attr = model._range_key_attribute()
    rest = {k: v for k, v in raw.items() if k != sharded(model).attr_name}
    if range_attr is None:
        return None, rest
    value = rest.pop(range_attr.attr_name)
    return value[range_attr.attr_type], rest


def _copy_to(model: type[Any], raw: _RawItem, targets: list[str]) -> str:
    """Copy an item to its live shard (chosen by its sort key, so a rerun finds it)."""
    range_value, rest = _split_raw(model, raw)
    digest = hashlib.md5(str(range_value).encode("utf-8"), usedforsecurity=False).digest()
    target = targets[int.from_bytes(digest[:8], "big") % len(targets)]
    connection = sharding_of(model).executor.connection()
    hash_path = Path([sharded(model).attr_name])
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


def _delete_if_unchanged(model: type[Any], raw: _RawItem) -> bool:
    """Delete a retired item if nobody changed it since it was copied."""
    range_value, rest = _split_raw(model, raw)
    present = set(rest)
    conditions: list[Condition] = [Path([name]) == Value(value) for name, value in rest.items()]
    for attr in model.get_attributes().values():
        if attr.attr_name not in present and not attr.is_hash_key and not attr.is_range_key:
            conditions.append(Path([attr.attr_name]).does_not_exist())
    condition = functools.reduce(lambda a, b: a & b, conditions) if conditions else None
    physical = raw[sharded(model).attr_name]["S"]
    try:
        sharding_of(model).executor.connection().delete_item(
            physical, range_key=range_value, condition=condition
        )
    except PynamoDBException as error:
        if not is_condition_failure(error):
            raise
        return False
    return True


def _reread(model: type[Any], raw: _RawItem) -> _RawItem | None:
    range_value, _ = _split_raw(model, raw)
    physical = raw[sharded(model).attr_name]["S"]
    response = (
        sharding_of(model)
        .executor.connection()
        .get_item(physical, range_key=range_value, consistent_read=True)
    )
    item: _RawItem | None = response.get("Item")
    return item
