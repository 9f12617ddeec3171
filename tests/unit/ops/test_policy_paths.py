"""The table throttle policy on every path: reads, writes, index queries, every strategy."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import PynamoDBException

from shardmodel import HashShards, RandomShards, ShardedKeyAttribute, ShardedModel
from shardmodel.ops import TableThrottlePolicy
from shardmodel.testing import CapacityLimits, CapacitySimulator, SimulatedClock

CLOCK = SimulatedClock(start=19675 * 86400 + 3600)


class Feed(ShardedModel):
    """A provisioned table (10 RCU, 10 WCU), a RandomShards key: no dynamic growth here."""

    class Meta:
        table_name = "policy-feed"
        region = "us-east-1"
        read_capacity_units = 10
        write_capacity_units = 10
        max_retry_attempts = 0  # every throttle reaches the caller
        table_throttle_policy: TableThrottlePolicy | None = None

    key = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(4))
    seq = NumberAttribute(range_key=True)
    note = UnicodeAttribute(null=True)


class Ledger(ShardedModel):
    """The same under HashShards on the sort key."""

    class Meta:
        table_name = "policy-ledger"
        region = "us-east-1"
        read_capacity_units = 10
        write_capacity_units = 10
        max_retry_attempts = 0
        table_throttle_policy: TableThrottlePolicy | None = None

    key = ShardedKeyAttribute(hash_key=True, strategy=HashShards(4, on="seq"))
    seq = NumberAttribute(range_key=True)


@pytest.fixture
def policy(dynamodb_tables: Callable[..., None]) -> Iterator[TableThrottlePolicy]:
    dynamodb_tables(Feed, Ledger)
    made = TableThrottlePolicy(max_wcu=40, max_rcu=40, cooldown=60, clock=CLOCK)
    for model in (Feed, Ledger):
        model.Meta.table_throttle_policy = made
    yield made
    for model in (Feed, Ledger):
        model.Meta.table_throttle_policy = None


def _provisioned(model: Any) -> tuple[float, float]:
    throughput = model._get_connection().describe_table()["ProvisionedThroughput"]
    return throughput["ReadCapacityUnits"], throughput["WriteCapacityUnits"]


def _attempt(call: Callable[[], object]) -> bool:
    """True when the call went through, False when it was throttled to the caller."""
    try:
        call()
    except PynamoDBException:
        return False
    return True


def test_read_throttles_on_a_random_shards_query_raise_rcu(policy: TableThrottlePolicy) -> None:
    """The issue's case: table-level read throttles on Queries, no dynamic key: RCU grows."""
    for seq in range(8):
        Feed("k", seq).save()
    limits = CapacityLimits(table_rcu=10, table_wcu=10, partition_rcu=1e9, partition_wcu=1e9)
    with CapacitySimulator(clock=CLOCK, limits=limits).attach(Feed) as simulator:
        done = [_attempt(lambda: list(Feed.query("k", consistent_read=True))) for _ in range(10)]
    assert simulator.throttles["TableReadProvisionedThroughputExceeded"] > 0 and not all(done)
    raises = [a for a in policy.actions if a.kind == "raise"]
    assert [(a.table, a.side, a.old, a.new) for a in raises] == [("policy-feed", "read", 10, 15)]
    assert {a.kind for a in policy.actions} <= {"raise", "cooling"}
    assert _provisioned(Feed) == (15, 10)


def test_coroutines_throttled_at_once_raise_once_and_never_stop_the_loop(
    policy: TableThrottlePolicy,
) -> None:
    """Many async reads throttled together on one loop: the policy decides one raise
    while the others record it as being decided; none waits on a lock the loop's thread
    would block on (the loop is watched from another thread, so a hang fails here)."""
    import asyncio
    import threading

    for seq in range(8):
        Feed("k", seq).save()
    limits = CapacityLimits(table_rcu=10, table_wcu=10, partition_rcu=1e9, partition_wcu=1e9)

    async def read() -> bool:
        try:
            return len([f async for f in Feed.aquery("k", consistent_read=True)]) == 8
        except PynamoDBException:
            return False

    async def reads() -> list[bool]:
        return list(await asyncio.gather(*(read() for _ in range(10))))

    done: list[list[bool]] = []
    with CapacitySimulator(clock=CLOCK, limits=limits).attach(Feed):
        runner = threading.Thread(target=lambda: done.append(asyncio.run(reads())), daemon=True)
        runner.start()
        runner.join(120)
    assert not runner.is_alive(), "the event loop stopped on the policy's lock"
    assert not all(done[0])
    raises = [a for a in policy.actions if a.kind == "raise"]
    assert [(a.table, a.side, a.old, a.new) for a in raises] == [("policy-feed", "read", 10, 15)]
    assert _provisioned(Feed) == (15, 10)


def test_write_throttles_on_a_random_shards_model_raise_wcu(policy: TableThrottlePolicy) -> None:
    """400 table-level write throttles used to go unanswered outside DynamicShards."""
    limits = CapacityLimits(table_rcu=10, table_wcu=10, partition_rcu=1e9, partition_wcu=1e9)
    with CapacitySimulator(clock=CLOCK, limits=limits).attach(Feed) as simulator:
        saved = [_attempt(lambda n=n: Feed("k", n).save()) for n in range(30)]
    assert simulator.throttles["TableWriteProvisionedThroughputExceeded"] > 0
    assert saved.count(True) == 15  # 10, then 5 more once the policy raised it (simulated)
    raises = [a for a in policy.actions if a.kind == "raise"]
    assert [(a.side, a.old, a.new) for a in raises] == [("write", 10, 15)]
    assert _provisioned(Feed) == (10, 15)


def test_hashed_gets_raise_rcu_and_partition_throttles_leave_the_table_alone(
    policy: TableThrottlePolicy,
) -> None:
    for seq in range(20):
        Ledger("k", seq).save()
    table_only = CapacityLimits(table_rcu=10, partition_rcu=1e9, partition_wcu=1e9)
    with CapacitySimulator(clock=CLOCK, limits=table_only).attach(Ledger):
        for seq in range(20):
            _attempt(lambda seq=seq: Ledger.get("k", seq, consistent_read=True))
    assert [(a.side, a.new) for a in policy.actions if a.kind == "raise"] == [("read", 15)]
    CLOCK.advance(120)
    policy.actions.clear()
    hot_partition = CapacityLimits(partition_rcu=1)
    with CapacitySimulator(clock=CLOCK, limits=hot_partition).attach(Ledger):
        for _ in range(5):
            _attempt(lambda: Ledger.get("k", 3, consistent_read=True))
    assert {a.kind for a in policy.actions} == {"partition"}
    assert _provisioned(Ledger) == (15, 10)


def test_without_a_policy_nothing_watches(dynamodb_tables: Callable[..., None]) -> None:
    dynamodb_tables(Feed)
    limits = CapacityLimits(table_rcu=10, partition_rcu=1e9)
    with CapacitySimulator(clock=CLOCK, limits=limits).attach(Feed):
        for _ in range(10):
            _attempt(lambda: list(Feed.query("k", consistent_read=True)))
    assert _provisioned(Feed) == (10, 10)
