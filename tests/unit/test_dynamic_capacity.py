"""DynamicShards proofs on the capacity simulator: a hot key grows, a cold key stays small."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import (
    DynamicShards,
    ShardChange,
    ShardedKeyAttribute,
    ShardedModel,
)
from shardmodel.engine import sharding_of
from shardmodel.testing import (
    CapacityLimits,
    CapacitySimulator,
    SimulatedClock,
    run_load,
)

RATE = 500  # writes per simulated second, on one logical key: 5x a partition
COOLDOWN = 1.0  # simulated seconds
READER_CACHE = 0.5  # simulated seconds; with the clock margin, a growth's settle time
CLOCK_MARGIN = 0.5
#: the most between two growths: the cooldown, or the settle time (effective times are
#: whole seconds, so up to one more)
STEP = max(COOLDOWN, READER_CACHE + CLOCK_MARGIN + 1)
THREADS = 16

CLOCK = SimulatedClock(start=1_800_000_000)
CHANGES: list[ShardChange] = []


class HotEvents(ShardedModel):
    """Events of one very hot key: 1 KB or less each, so one write unit per write."""

    class Meta:
        table_name = "dynamic-hot"
        region = "us-east-1"

    key = ShardedKeyAttribute(
        hash_key=True,
        strategy=DynamicShards(
            cooldown=COOLDOWN,
            jitter=0.1,
            writer_cache_seconds=0.5,
            reader_cache_seconds=READER_CACHE,
            clock_margin_seconds=CLOCK_MARGIN,
            max_shards=32,
            clock=CLOCK,
            on_change=CHANGES.append,
        ),
    )
    seq = NumberAttribute(range_key=True)
    body = UnicodeAttribute()


@pytest.fixture
def hot(dynamodb_tables: Callable[..., None]) -> Iterator[CapacitySimulator]:
    """HotEvents' tables, with the simulator on both its table and its metadata table.

    The metadata client is simulated too: the simulator applies one request at a time,
    as DynamoDB applies each conditional update atomically (bare moto does not).
    """
    dynamodb_tables(HotEvents)
    CHANGES.clear()
    directory = sharding_of(HotEvents).directory
    assert directory is not None
    directory.clear_cache()
    simulator = CapacitySimulator(
        clock=CLOCK, limits=CapacityLimits(partition_wcu=100), buffer_writes=True, seed=7
    )
    simulator.attach(HotEvents, directory.table())
    yield simulator
    simulator.detach()


def test_a_hot_key_grows_to_its_load_and_loses_nothing(hot: CapacitySimulator) -> None:
    """16 threads, 500 writes/s on one key, 100 WCU/s per partition (DynamoDB's 1,000 / 10).

    Within three steps (a step: the cooldown, or the settle time of a growth announced
    ahead) the count grows from 1 to at least 5; afterwards at least 99% of writes
    succeed at once; every write is stored exactly once; the history
    holds one entry per growth.
    """
    start = CLOCK.now()

    def write(number: int) -> None:
        HotEvents("hot", number, body="x" * 200).save()

    growth = run_load(CLOCK, RATE, 3 * STEP, write, threads=THREADS)
    settled = run_load(CLOCK, RATE, 1.0, lambda n: write(growth.calls + n), threads=THREADS)
    throttles_before = hot.table_usage("dynamic-hot").write_throttles
    steady = run_load(
        CLOCK, RATE, 2.0, lambda n: write(growth.calls + settled.calls + n), threads=THREADS
    )
    hot.flush()
    steady_throttles = hot.table_usage("dynamic-hot").write_throttles - throttles_before
    grows = [c for c in CHANGES if c.kind == "grow"]
    assert [(c.old_count, c.new_count) for c in grows[:3]] == [(1, 2), (2, 4), (4, 8)]
    reached = next(c.at for c in grows if c.new_count >= 5)
    print(
        hot.report(),
        f"\ngrowths {[(c.new_count, round(c.at - start, 2)) for c in grows]}; steady: "
        f"{steady_throttles} throttles / {steady.calls} writes",
    )
    assert reached - start <= 3 * STEP
    assert growth.failures == settled.failures == steady.failures == 0
    # after the growth, at most 1% of writes meet a throttle even once
    assert steady_throttles <= 0.01 * steady.calls

    total = growth.calls + settled.calls + steady.calls
    items = list(HotEvents.query("hot", consistent_read=True))
    assert sorted(e.seq for e in items) == list(range(total))  # none lost, none twice
    metadata = HotEvents.shard_metadata("hot")
    assert metadata is not None
    assert len(metadata.history) == 1 + len(grows)  # creation + one entry per growth
    counts = [e.count for e in sorted(metadata.history)]
    assert counts == sorted(counts) and counts[-1] == metadata.latest
    assert len({e.logical_key for e in CHANGES}) == 1


def test_a_cold_key_stays_on_one_shard_and_one_query(hot: CapacitySimulator) -> None:
    """50 writes a second never throttle: one shard, and a read is one Query."""
    run_load(CLOCK, 50, 4.0, lambda n: HotEvents("cold", n, body="x").save(), threads=4)
    hot.flush()
    metadata = HotEvents.shard_metadata("cold")
    assert metadata is not None and metadata.number_of_shards == 1
    assert metadata.readable == 1
    query = HotEvents.query("cold")
    assert len(list(query)) == 200
    assert query.requests == 1  # type: ignore[attr-defined]
    assert CHANGES == []
