"""The table throttle policy: UpdateTable on table-level throttles only, within limits."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import DynamicShards, ShardedKeyAttribute, ShardedModel
from shardmodel.engine import sharding_of
from shardmodel.ops import TableThrottlePolicy
from shardmodel.testing import CapacityLimits, CapacitySimulator, SimulatedClock

DAY_START = 19675 * 86400  # a UTC midnight
CLOCK = SimulatedClock(start=DAY_START + 3600)


class Metered(ShardedModel):
    """A provisioned table (10 RCU, 10 WCU) with a dynamic key and the policy."""

    class Meta:
        table_name = "policy-metered"
        region = "us-east-1"
        read_capacity_units = 10
        write_capacity_units = 10
        table_throttle_policy: TableThrottlePolicy | None = None

    key = ShardedKeyAttribute(
        hash_key=True, strategy=DynamicShards(cooldown=0, jitter=0, clock=CLOCK)
    )
    seq = NumberAttribute(range_key=True)
    note = UnicodeAttribute(null=True)


class Metered2(ShardedModel):
    """An on-demand table with the policy."""

    class Meta:
        table_name = "policy-on-demand"
        region = "us-east-1"
        table_throttle_policy: TableThrottlePolicy | None = None

    key = ShardedKeyAttribute(
        hash_key=True, strategy=DynamicShards(cooldown=0, jitter=0, clock=CLOCK)
    )
    seq = NumberAttribute(range_key=True)


@pytest.fixture
def policy(dynamodb_tables: Callable[..., None]) -> Iterator[TableThrottlePolicy]:
    dynamodb_tables(Metered, Metered2)
    made = TableThrottlePolicy(
        max_wcu=40, max_rcu=20, cooldown=60, lower_after=600, on_demand_5xx=True, clock=CLOCK
    )
    for model in (Metered, Metered2):
        model.Meta.table_throttle_policy = made
        assert sharding_of(model).directory is not None
        sharding_of(model).directory.clear_cache()
    yield made
    for model in (Metered, Metered2):
        model.Meta.table_throttle_policy = None


def _simulator(limits: CapacityLimits) -> CapacitySimulator:
    simulator = CapacitySimulator(clock=CLOCK, limits=limits)
    assert sharding_of(Metered).directory is not None
    return simulator.attach(Metered, sharding_of(Metered).directory.table())


def _provisioned(model: Any = Metered) -> tuple[float, float]:
    throughput = model._get_connection().describe_table()["ProvisionedThroughput"]
    return throughput["ReadCapacityUnits"], throughput["WriteCapacityUnits"]


def _throttle(reason: str, resource: str = "") -> ClientError:
    return ClientError(
        {
            "Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"},
            "ThrottlingReasons": [{"reason": reason, "resource": resource}],
        },
        "PutItem",
    )


def _kinds(policy: TableThrottlePolicy) -> list[str]:
    return [a.kind for a in policy.actions]


def test_a_table_throttle_raises_provisioned_capacity_and_the_table_takes_more(
    policy: TableThrottlePolicy, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="shardmodel.ops.policy")
    with _simulator(CapacityLimits(partition_wcu=1e9, table_wcu=10)) as simulator:
        for seq in range(30):  # one simulated instant: 10 fit, the rest throttle
            Metered("k", seq).save()
        assert simulator.throttles["TableWriteProvisionedThroughputExceeded"] > 0
        raises = [a for a in policy.actions if a.kind == "raise"]
        assert [(a.side, a.old, a.new) for a in raises] == [("write", 10, 15)]
        assert set(_kinds(policy)) <= {"raise", "cooling"}
        assert _provisioned() == (10, 15)
        assert "raised write capacity from 10 to 15" in caplog.text
        CLOCK.advance(120)
        before = sum(simulator.throttles.values())
        for seq in range(30, 45):  # the simulator follows the UpdateTable: 15 fit now
            Metered("k", seq).save()  # (new keys would write the metadata table too)
        assert sum(simulator.throttles.values()) == before
    assert Metered.count("k") == 45
    assert Metered.shard_metadata("k").number_of_shards == 1  # type: ignore[union-attr]


def test_a_partition_throttle_grows_the_key_and_leaves_the_table_alone(
    policy: TableThrottlePolicy,
) -> None:
    with _simulator(CapacityLimits(partition_wcu=5)) as simulator:
        for seq in range(20):
            Metered("hot", seq).save()
    assert simulator.throttles["TableWriteKeyRangeThroughputExceeded"] > 0
    assert set(_kinds(policy)) == {"partition"}
    assert _provisioned() == (10, 10)
    assert Metered.shard_metadata("hot").number_of_shards > 1  # type: ignore[union-attr]
    assert Metered.count("hot") == 20


def test_the_policy_waits_out_its_cooldown_and_stops_at_its_ceiling(
    policy: TableThrottlePolicy,
) -> None:
    table = _throttle("TableWriteProvisionedThroughputExceeded")
    assert policy.observe(Metered, table, "table").new == 15  # type: ignore[union-attr]
    assert policy.observe(Metered, table, "table").kind == "cooling"  # type: ignore[union-attr]
    for expected in (23, 35, 40):  # x1.5 each, capped at max_wcu
        CLOCK.advance(61)
        assert policy.observe(Metered, table, "table").new == expected  # type: ignore[union-attr]
    CLOCK.advance(61)
    at_limit = policy.observe(Metered, table, "table")
    assert (
        at_limit is not None and at_limit.kind == "at-limit" and "ceiling is 40" in at_limit.reason
    )
    assert _provisioned() == (10, 40)


def test_read_throttles_raise_reads(policy: TableThrottlePolicy) -> None:
    error = _throttle("TableReadProvisionedThroughputExceeded")
    action = policy.observe(Metered, error, "table")
    assert action is not None and (action.side, action.old, action.new) == ("read", 10, 15)
    assert _provisioned() == (15, 10)


def test_relax_lowers_within_dynamodbs_decreases_a_day(policy: TableThrottlePolicy) -> None:
    table = _throttle("TableWriteProvisionedThroughputExceeded")
    for _ in range(4):  # four decreases at any time of the day
        policy.observe(Metered, table, "table")
        assert policy.relax(Metered) == []  # not quiet long enough
        CLOCK.advance(600)
        (action,) = policy.relax(Metered)
        assert (action.kind, action.old, action.new) == ("lower", 15, 10)
    policy.observe(Metered, table, "table")
    CLOCK.advance(600)
    (refused,) = policy.relax(Metered)
    assert refused.kind == "at-limit" and "decreases" in refused.reason
    assert _provisioned() == (10, 15)
    CLOCK.advance(3600)  # then one more for an hour without a decrease
    (action,) = policy.relax(Metered)
    assert action.kind == "lower" and _provisioned() == (10, 10)


def test_on_demand_throttles_and_5xx_are_classified_not_provisioned(
    policy: TableThrottlePolicy,
) -> None:
    table = _throttle("TableWriteMaxOnDemandThroughputExceeded")
    action = policy.observe(Metered2, table, "table")
    assert (
        action is not None and action.kind == "on-demand" and "OnDemandThroughput" in action.reason
    )
    busy = ClientError({"Error": {"Code": "InternalServerError", "Message": "x"}}, "PutItem")
    action = policy.observe(Metered2, busy, None)
    assert (
        action is not None and action.kind == "on-demand" and "InternalServerError" in action.reason
    )
    assert policy.observe(Metered, busy, None) is None  # a provisioned table's 5xx: not capacity
    other = ClientError({"Error": {"Code": "ValidationException", "Message": "x"}}, "PutItem")
    assert policy.observe(Metered2, other, None) is None
    quiet = TableThrottlePolicy(max_wcu=10, clock=CLOCK)
    assert quiet.observe(Metered2, busy, None) is None  # 5xx only when opted in


def test_a_refused_update_is_recorded_not_raised(policy: TableThrottlePolicy) -> None:
    error = _throttle(
        "IndexWriteProvisionedThroughputExceeded", "arn:x:table/policy-metered/index/nope"
    )
    action = policy.observe(Metered, error, "table")
    assert action is not None and action.index == "nope"
    assert action.kind in ("at-limit", "failed")


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({}, "max_wcu and/or max_rcu"),
        ({"max_wcu": 0}, "max_wcu"),
        ({"max_rcu": 1.5}, "max_rcu"),
        ({"max_wcu": 10, "factor": 0.5}, "factor"),
        ({"max_wcu": 10, "step": 0}, "step"),
        ({"max_wcu": 10, "cooldown": -1}, "cooldown"),
        ({"max_wcu": 10, "lower_after": "1"}, "lower_after"),
    ],
)
def test_bad_settings_name_the_setting(options: dict[str, Any], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        TableThrottlePolicy(**options)


def test_a_failure_to_act_is_recorded_and_never_masks_the_throttle(
    policy: TableThrottlePolicy,
) -> None:
    class Broken:
        class Meta:
            table_name = "policy-broken"

        @staticmethod
        def _get_connection() -> Any:
            raise ConnectionError("endpoint unreachable")

    action = policy.observe(Broken, _throttle("TableWriteProvisionedThroughputExceeded"), "table")
    assert action is not None and action.kind == "failed" and "unreachable" in action.reason
