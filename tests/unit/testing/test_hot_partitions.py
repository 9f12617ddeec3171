"""The headline: the simulator tells a hot partition from a sharded one under the same load.

2,000 writes of 1 KB items per simulated second for 10 simulated seconds, through
PynamoDB's own retries, against a 1,000 WCU/s partition limit.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from shardmodel import HashShards, RandomShards, ShardedKeyAttribute, ShardedModel
from shardmodel.testing import (
    CapacityLimits,
    CapacitySimulator,
    SimulatedClock,
    item_size,
    run_load,
    write_units,
)

RATE = 2000  # writes per simulated second
SECONDS = 4
PAYLOAD = "x" * 980  # with the key attributes, just under 1 KB: one WCU per write


class HotEvent(Model):
    """A plain PynamoDB model: every event of a user in one partition."""

    class Meta:
        table_name = "sim-hot-events"
        region = "us-east-1"

    user_id = UnicodeAttribute(hash_key=True)
    timestamp = NumberAttribute(range_key=True)
    payload = UnicodeAttribute()


class SpreadEvent(ShardedModel):
    """The same events spread over ten random shards."""

    class Meta:
        table_name = "sim-spread-events"
        region = "us-east-1"

    user_id = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(10), rng=random.Random(11))
    timestamp = NumberAttribute(range_key=True)
    payload = UnicodeAttribute()


class SkewedEvent(ShardedModel):
    """Events hashed on their region, when nearly every event comes from one region."""

    class Meta:
        table_name = "sim-skewed-events"
        region = "us-east-1"

    user_id = ShardedKeyAttribute(hash_key=True, strategy=HashShards(10, on=["region"]))
    timestamp = NumberAttribute(range_key=True)
    region = UnicodeAttribute()
    payload = UnicodeAttribute()


def _stored(model: type[Model]) -> int:
    """How many items the table holds (moto keeps DescribeTable's ItemCount exact)."""
    return int(model.describe_table()["ItemCount"])


def test_items_are_one_write_unit() -> None:
    """The load's items are 1 KB: one write unit each, so the load offers 2,000 WCU/s."""
    for item in (
        HotEvent(user_id="user-1", timestamp=10**12 + 19_999, payload=PAYLOAD),
        SpreadEvent(user_id="user-1", timestamp=10**12 + 19_999, payload=PAYLOAD),
        SkewedEvent(user_id="user-1", timestamp=5999, region="eu-west-1", payload=PAYLOAD[:950]),
    ):
        size = item_size(item.serialize())
        assert 1000 - 50 < size <= 1024
        assert write_units(size) == 1


def test_an_unsharded_hot_key_throttles_about_half(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
    sim_clock: SimulatedClock,
) -> None:
    """2,000 WCU/s at one key of a 1,000 WCU/s partition: about half the writes fail.

    PynamoDB's retries (botocore standard mode) cannot help: the partition accepts 1,000
    units a second whatever the retries do, so what it refuses is what is offered over
    the limit. The refusals name the hot partition, not the table.
    """
    dynamodb_tables(HotEvent)
    sim = capacity_simulator(HotEvent, buffer_writes=True)

    def write(n: int) -> None:
        HotEvent(user_id="user-1", timestamp=10**12 + n, payload=PAYLOAD).save()

    result = run_load(sim_clock, RATE, SECONDS, write)
    sim.flush()

    limit = CapacityLimits().partition_wcu
    expected = 1 - limit / RATE
    assert abs(result.failure_fraction - expected) < 0.05, sim.report()
    assert set(result.errors) == {"PutError"}
    usage = sim.table_usage("sim-hot-events")
    assert usage.write_throttles >= result.failures  # every failure was refused at least once
    assert set(sim.throttles) == {"TableWriteKeyRangeThroughputExceeded"}
    assert usage.writes == result.calls - result.failures
    # no second accepted more than the partition limit, retries included
    assert usage.write_units <= limit * (sim_clock.now() + 20)
    assert _stored(HotEvent) == result.calls - result.failures


def test_random_shards_take_the_same_load_without_a_throttle(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
    sim_clock: SimulatedClock,
) -> None:
    """The same 2,000 WCU/s on RandomShards(10): ten partitions, no throttle, nothing lost."""
    dynamodb_tables(SpreadEvent)
    sim = capacity_simulator(SpreadEvent, buffer_writes=True)

    def write(n: int) -> None:
        SpreadEvent(user_id="user-1", timestamp=10**12 + n, payload=PAYLOAD).save()

    result = run_load(sim_clock, RATE, SECONDS, write)
    sim.flush()

    assert result.failures == 0, sim.report()
    assert not sim.throttles
    partitions = {p.partition: u for p, u in sim.usage().items() if p.table == "sim-spread-events"}
    assert sorted(partitions) == [f"user-1#{shard}" for shard in range(10)]
    assert sum(u.write_units for u in partitions.values()) == RATE * SECONDS
    assert _stored(SpreadEvent) == RATE * SECONDS


def test_a_badly_skewed_hash_shard_key_is_caught(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
    sim_clock: SimulatedClock,
) -> None:
    """HashShards on a region that 90% of events share: that region's shard throttles.

    Ten shards give no headroom when the ``on`` attribute has one dominant value; the
    simulator shows which physical partition is hot, and that the others are not.
    """
    dynamodb_tables(SkewedEvent)
    sim = capacity_simulator(SkewedEvent, buffer_writes=True)
    rng = random.Random(5)

    def write(n: int) -> None:
        region = "eu-west-1" if rng.random() < 0.9 else f"region-{n % 7}"
        SkewedEvent(user_id="user-1", timestamp=n, region=region, payload=PAYLOAD[:950]).save()

    result = run_load(sim_clock, RATE, 3, write)

    hot_key = SkewedEvent(user_id="user-1", timestamp=0, region="eu-west-1", payload="")
    hot_key.save()
    usage = {p.partition: u for p, u in sim.usage().items() if p.table == "sim-skewed-events"}
    hottest = max(usage, key=lambda key: usage[key].write_units + usage[key].write_throttles)
    assert hottest == hot_key.get_physical_key()
    assert result.failures > 0
    assert usage[hottest].write_throttles > 0
    assert all(u.write_throttles == 0 for key, u in usage.items() if key != hottest), sim.report()
