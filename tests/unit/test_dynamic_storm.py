"""A dynamic key in a storm: on-demand 5xx grow it (bounded), the metadata item stays cool."""

from __future__ import annotations

import contextlib
import math
import random
from collections.abc import Callable, Iterator

import pytest
from pynamodb.attributes import NumberAttribute
from pynamodb.exceptions import PynamoDBException

from shardmodel import DynamicShards, ShardedKeyAttribute, ShardedModel
from shardmodel.engine import sharding_of
from shardmodel.engine.growth import FIVE_XX_SHARDS
from shardmodel.testing import CapacityLimits, CapacitySimulator, Faults, SimulatedClock

CLOCK = SimulatedClock(start=1_800_000_000)


class Surge(ShardedModel):
    """An on-demand table's dynamic key: 60 s cooldown, as DynamicShards defaults to."""

    class Meta:
        table_name = "dynamic-surge"
        region = "us-east-1"

    key = ShardedKeyAttribute(
        hash_key=True,
        strategy=DynamicShards(cooldown=60, jitter=0, max_shards=64, clock=CLOCK),
        rng=random.Random(1),  # the shards the storm's writes pick, the same in every run
    )
    seq = NumberAttribute(range_key=True)


class Outage(ShardedModel):
    """The same with no cooldown: only the 5xx bound stops its growth."""

    class Meta:
        table_name = "dynamic-outage"
        region = "us-east-1"
        max_retry_attempts = 0

    key = ShardedKeyAttribute(
        hash_key=True,
        strategy=DynamicShards(cooldown=0, jitter=0, max_shards=64, clock=CLOCK),
    )
    seq = NumberAttribute(range_key=True)


@pytest.fixture
def tables(dynamodb_tables: Callable[..., None]) -> Iterator[None]:
    dynamodb_tables(Surge, Outage)
    for model in (Surge, Outage):
        directory = sharding_of(model).directory
        assert directory is not None
        directory.clear_cache()
    yield


def _metadata_reads(simulator: CapacitySimulator, model: type[ShardedModel]) -> int:
    directory = sharding_of(model).directory
    assert directory is not None
    return simulator.table_usage(directory.table().Meta.table_name).reads


@pytest.mark.usefixtures("tables")
def test_internal_server_errors_grow_a_dynamic_key() -> None:
    """The issue's case: Faults(internal_error=0.9) used to fail 24 of 30 writes, no growth."""
    simulator = CapacitySimulator(clock=CLOCK, faults=Faults(internal_error=0.9), seed=3)
    with simulator.attach(Outage):
        for seq in range(30):
            with contextlib.suppress(PynamoDBException):  # a write may still fail
                Outage("hot", seq).save()
    assert simulator.injected["internal_error"] > 0
    grown = Outage.shard_metadata("hot")
    assert grown is not None and 1 < grown.number_of_shards <= FIVE_XX_SHARDS


@pytest.mark.usefixtures("tables")
def test_a_server_fault_grows_a_key_no_further_than_the_bound() -> None:
    """Every attempt a 5xx: the key stops at FIVE_XX_SHARDS, not at max_shards (64)."""
    simulator = CapacitySimulator(clock=CLOCK, faults=Faults(internal_error=1.0), seed=3)
    with simulator.attach(Outage):
        for seq in range(40):
            with pytest.raises(Exception, match="InternalServerError"):
                Outage("down", seq).save()
    stuck = Outage.shard_metadata("down")
    assert stuck is not None and stuck.latest == FIVE_XX_SHARDS


@pytest.mark.usefixtures("tables")
def test_metadata_reads_in_a_storm_are_one_per_cooldown() -> None:
    """The issue's storm: 60 throttled writes in 3 s used to read the item 60 times."""
    directory = sharding_of(Surge).directory
    assert directory is not None
    Surge("storm", 0).save()  # the item exists before the storm
    began = CLOCK.now()
    simulator = CapacitySimulator(clock=CLOCK, limits=CapacityLimits(partition_wcu=5), seed=1)
    with simulator.attach(Surge, directory.table()):
        for seq in range(1, 61):
            Surge("storm", seq).save()
            CLOCK.advance(0.05)  # 60 writes in 3 simulated seconds
    throttles = simulator.table_usage("dynamic-surge").write_throttles
    reads = _metadata_reads(simulator, Surge)
    # the throttle count moves with the retries' jitter (botocore draws it): 20 to 36 in
    # runs; ten or more throttled writes, each a chance to read the item, make the point
    assert throttles >= 10, throttles
    # the retries' sleeps stretch the storm to 9 to 11 simulated seconds: the writer's
    # lookup is one read per writer_cache_seconds window it spans, and the first grow
    # reads once more (a bound of 2 failed whenever the storm outlasted two windows)
    elapsed = CLOCK.now() - began
    cache = Surge.key.layout.strategies[0].writer_cache_seconds
    assert reads <= math.floor(elapsed / cache) + 2, (throttles, reads, elapsed)
    assert Surge.count("storm") == 61
