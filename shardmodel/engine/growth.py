"""Growing a dynamic key when its partition throttles, and its operator's changes.

A dynamic key's write goes to a live shard of the count its writer read; on a
partition-throttling error the key's count grows (a conditional update of its metadata
item) and the write is sent again to the larger space. Nothing is lost: a write that may
have been applied goes again only to the same key, or (if it is not idempotent) not at
all.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from pynamodb.exceptions import PynamoDBException

from shardmodel.core.tables import wait_until_active
from shardmodel.core.times import SystemClock
from shardmodel.dynamic.directory import ShardDirectory
from shardmodel.dynamic.metadata import ShardMetadata
from shardmodel.engine.items import check_logical, key_values, range_values, sharded
from shardmodel.engine.sharding import sharding_of
from shardmodel.errors import UnsupportedOperationError
from shardmodel.keyspace.strategies import ShardCount
from shardmodel.request_bound import request_bound
from shardmodel.retry import (
    THROTTLE_CODES,
    TRANSIENT_CODES,
    attempt_log,
    failing_fast,
    surely_unapplied,
    watch_attempts,
)
from shardmodel.throttles import CloudWatchCapacity, Side, ThrottleScope, throttle_scope

__all__ = [
    "FIVE_XX_SHARDS",
    "directory_of",
    "grow_shards",
    "grown_keys",
    "is_capacity_5xx",
    "save_growing",
    "shard_metadata",
    "shrink_shards",
    "throttle_scope_of",
    "watch_table_throttles",
    "write_counter_growing",
]

_T = TypeVar("_T")

#: An on-demand table answers a traffic jump with ``InternalServerError`` (and its kin)
#: while it adapts: such an error grows a dynamic key like a partition throttle, but only
#: up to this many shards (16,000 WCU a second), so that a real server fault, which
#: answers the same way, does not grow a key without end.
FIVE_XX_SHARDS = 16


def is_capacity_5xx(error: BaseException) -> bool:
    """An on-demand capacity 5xx: ``InternalServerError``, ``ServiceUnavailable``..."""
    cause = getattr(error, "cause", None) or error
    response = getattr(cause, "response", None) or {}
    return response.get("Error", {}).get("Code") in TRANSIENT_CODES


def directory_of(model: type[Any]) -> ShardDirectory:
    """The metadata table access of a dynamic model, or a clear refusal."""
    directory = sharding_of(model).directory
    if directory is None:
        raise UnsupportedOperationError(
            f"{model.__name__}: its partition key does not use DynamicShards, so its shard "
            "count is fixed; declare strategy=DynamicShards() to grow and shrink it"
        )
    return directory


def shard_metadata(model: type[Any], hash_key: str) -> ShardMetadata | None:
    """A dynamic key's metadata item, read strongly consistent (None: never written)."""
    return directory_of(model).lookup(check_logical(model, hash_key), consistent=True)


def grown_keys(model: type[Any], min_shards: int = 2) -> list[ShardMetadata]:
    """Keys whose reads touch at least ``min_shards`` shards, most first: the hot ones."""
    return [m for m in directory_of(model).every_key() if m.readable >= min_shards]


def grow_shards(model: type[Any], hash_key: str, to: int) -> ShardMetadata:
    """Raise a dynamic key's live count to ``to`` ahead of a known burst."""
    return directory_of(model).grow_to(check_logical(model, hash_key), to)


def shrink_shards(model: type[Any], hash_key: str, count: int) -> ShardMetadata:
    """Lower a dynamic key's live count: new writes spread over ``count`` shards."""
    return directory_of(model).shrink(check_logical(model, hash_key), count)


def throttle_scope_of(model: type[Any], error: BaseException) -> ThrottleScope | None:
    """Whether ``error`` throttled a partition or the table (None: not a throttle).

    An opt-in ``Meta.table_throttle_policy`` observes every classified error.
    """
    engine = sharding_of(model)
    if engine.cloudwatch is None:
        directory = engine.directory
        engine.cloudwatch = CloudWatchCapacity(
            region=getattr(model.Meta, "region", None),
            clock=directory.settings.clock if directory is not None else SystemClock(),
        )
    scope = throttle_scope(
        error, model.Meta.table_name, lambda side: _provisioned(model, side), engine.cloudwatch
    )
    policy = getattr(model.Meta, "table_throttle_policy", None)
    if policy is not None:  # opt-in: a TableThrottlePolicy (shardmodel.ops)
        policy.observe(model, error, scope)
    return scope


#: The models whose policy watches each botocore client (weakly: clients come and go).
_watched: weakref.WeakKeyDictionary[Any, set[int]] = weakref.WeakKeyDictionary()


def watch_table_throttles(model: type[Any], connection: Any) -> None:
    """Let ``Meta.table_throttle_policy`` see every throttle of ``model``'s requests.

    Reads, writes, batches, index queries, on the lean path or botocore's: every attempt
    answered with a throttle (or, for the policy's ``on_demand_5xx``, a 5xx) is classified
    and observed. A dynamic write growing its key classifies its own throttles
    (:func:`growing`), so those are not observed twice. Idempotent and cheap per call.
    """
    if getattr(model.Meta, "table_throttle_policy", None) is None:
        return
    client = connection.connection.client
    models = _watched.setdefault(client, set())
    if id(model) in models:
        return
    client.meta.events.register(
        "needs-retry.dynamodb",
        _PolicyWatch(model),
        unique_id=f"shardmodel-table-policy-{id(model)}",
    )
    models.add(id(model))


class _PolicyWatch:
    """A ``needs-retry`` observer: hands each throttled attempt to the model's policy."""

    def __init__(self, model: type[Any]) -> None:
        self.model = model

    def __call__(self, response: Any = None, operation: Any = None, **_: Any) -> None:
        if response is None or failing_fast():
            return None
        parsed = response[1]
        code = parsed.get("Error", {}).get("Code") if isinstance(parsed, dict) else None
        if code not in THROTTLE_CODES and code not in TRANSIENT_CODES:
            return None
        if getattr(self.model.Meta, "table_throttle_policy", None) is None:
            return None
        from botocore.exceptions import ClientError

        error = ClientError(parsed, getattr(operation, "name", "Unknown"))
        try:
            throttle_scope_of(self.model, error)  # observes it; never blocks the retry
        except Exception:
            return None
        return None


def _provisioned(model: type[Any], side: Side) -> float:
    """The table's provisioned units of ``side`` (0 for an on-demand table)."""
    table = sharding_of(model).executor.connection().describe_table()
    if table.get("BillingModeSummary", {}).get("BillingMode") == "PAY_PER_REQUEST":
        return 0.0
    units = "ReadCapacityUnits" if side == "read" else "WriteCapacityUnits"
    return float(table.get("ProvisionedThroughput", {}).get(units) or 0)


def growing(
    model: type[Any],
    logical: str,
    write: Callable[[ShardMetadata, bool], _T],
    resend_unknown: bool,
) -> _T:
    """Run ``write(metadata, move)``; grow the key and run it again on partition throttles.

    Throttles fail fast (botocore does not retry them here): the first one may grow the
    key, and the backoff between resends is this loop's. ``move`` is False when an
    earlier attempt may have been applied (a timeout before the throttle): the write must
    then go to the same physical key again, or, if it is not idempotent
    (``resend_unknown`` False), not at all.
    """
    directory = directory_of(model)
    watch_attempts(sharding_of(model).executor.connection().connection.client)
    waits = sharding_of(model).executor.backoff(directory.settings.clock.sleep).waits()
    seen = directory.for_write(logical)
    move = True
    while True:
        with attempt_log(fail_fast=True) as kinds:
            try:
                return write(seen, move)
            except PynamoDBException as error:
                failure: PynamoDBException = error
        scope = throttle_scope_of(model, failure)  # outside the log: it may call the table
        capacity_5xx = scope is None and is_capacity_5xx(failure)
        if scope is None and not capacity_5xx:
            raise failure
        move = move and surely_unapplied(kinds)  # once maybe applied, stay on that key
        if not move and not resend_unknown:
            raise failure
        if scope == "partition" or (capacity_5xx and seen.latest < FIVE_XX_SHARDS):
            # a 5xx may have been applied: the key grows, but this write stays put
            clock = directory.settings.clock
            live = seen.live_at(clock.now())
            seen = directory.grow(logical, seen)
            if seen.latest > live and move:
                # a bigger space, announced ahead: retry on it once it takes effect
                clock.sleep(_until_effective(seen, clock.now()))
                if seen.live_at(clock.now()) > live:
                    continue
        if next(waits, None) is None:
            raise failure


def _until_effective(metadata: ShardMetadata, now: float) -> float:
    """Seconds until ``metadata``'s announced growth takes effect (0: it has)."""
    announced = metadata.announced
    return 0.0 if announced is None else max(0.0, announced.epoch - now)


def save_growing(item: Any, put: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """A new item of a dynamic key: written to a live shard, growing the key if hot."""
    model = type(item)
    logical = check_logical(model, getattr(item, sharded(model).attr_name))

    def write(seen: ShardMetadata, move: bool) -> dict[str, Any]:
        if move:
            item._physical_key = None
            item._write_counts = seen
        return put()

    return growing(model, logical, write, resend_unknown=True)


def write_counter_growing(
    model: type[Any], hash_key: Any, range_key: Any, update: Callable[[str], Any]
) -> None:
    """An untokened ``add`` on a dynamic key: a live shard, growing the key if hot."""
    logical = check_logical(model, hash_key)
    rng = sharded(model).rng
    engine = sharding_of(model)
    what, bound = f"{model.__name__}.get({logical!r})", request_bound(model)

    def write(seen: ShardMetadata, move: bool) -> None:
        count = seen.live_at(directory_of(model).settings.clock.now())
        live = ShardCount(count, count)
        placement = engine.placement(counts={logical: live})
        key = key_values(model, logical, range_values(model, range_key))
        targets = placement.increment_keys(key, False, what=what, bound=bound)
        update(targets[rng.randrange(len(targets))])

    growing(model, logical, write, resend_unknown=False)


def create_metadata_table(model: type[Any], wait: bool) -> None:
    """Create a dynamic model's metadata table (on-demand) if it does not exist."""
    directory = sharding_of(model).directory
    if directory is not None:
        table = directory.table()
        if not table.exists():
            table.create_table(wait=False, billing_mode="PAY_PER_REQUEST")
        if wait:
            wait_until_active([table])


def delete_metadata_table(model: type[Any]) -> None:
    """Delete a dynamic model's metadata table if it exists, and forget cached counts."""
    directory = sharding_of(model).directory
    if directory is not None and directory.table().exists():
        directory.table_model.delete_table()
        directory.clear_cache()
