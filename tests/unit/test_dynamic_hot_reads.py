"""Gets of one hot dynamic key on the capacity simulator: its metadata item stays cool.

Every read of a dynamic key needs the key's shard count. Read strongly on every read
(the default before reader caching), the metadata item took one RCU per get: at 4,000
gets a second of one key it passed a partition's 3,000 RCU and gets failed. With the
default reader cache (coalesced within the process) the item is read about once per
window, whatever the rate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from pynamodb.attributes import NumberAttribute

from shardmodel import DynamicShards, ShardedKeyAttribute, ShardedModel
from shardmodel.engine import sharding_of
from shardmodel.testing import CapacityLimits, CapacitySimulator, SimulatedClock, run_load
from tests.tier import sized

CLOCK = SimulatedClock(start=1_800_000_000)
#: simulated seconds of load at each rate: 3 under make stress (as docs/dynamic.rst
#: quotes); make test runs 10,000 gets at 4,000/s (past one cache window) and 4,000 at
#: 40,000/s (before the fix nine in ten of them failed, each reading the metadata)
SECONDS = {4_000: sized(3000, 2500) / 1000, 40_000: sized(3000, 100) / 1000}


class HotReads(ShardedModel):
    """A dynamic key with DynamicShards' defaults, on the simulated clock."""

    class Meta:
        table_name = "dynamic-hot-reads"
        region = "us-east-1"

    key = ShardedKeyAttribute(hash_key=True, strategy=DynamicShards(clock=CLOCK))
    seq = NumberAttribute(range_key=True)


@pytest.fixture
def metadata_table(dynamodb_tables: Callable[..., None]) -> Iterator[str]:
    """HotReads' tables with one item of key "hot"; the metadata table's name."""
    dynamodb_tables(HotReads)
    directory = sharding_of(HotReads).directory
    assert directory is not None
    directory.clear_cache()
    HotReads("hot", 1).save()
    directory.clear_cache()
    yield str(directory.table().Meta.table_name)


@pytest.mark.parametrize("rate", [4_000, 40_000])
def test_gets_of_one_hot_key_read_its_metadata_once_per_window(
    metadata_table: str, rate: int
) -> None:
    """``rate`` gets a simulated second of one key for 3 s, DynamoDB's 3,000 RCU/s a
    partition on the metadata table: no get fails, and the metadata item is read about
    once per reader cache window (2 s by default), not once per get.

    Before (the metadata read strongly on every get), 3 s at 4,000 gets/s: 2,652 of
    12,000 gets failed (9,348 metadata reads, 4,161 refused); at 40,000 gets/s: 110,870
    of 120,000 failed (9,130 reads, 111,425 refused). After: none failed, 2 metadata
    reads at either rate (docs/dynamic.rst quotes both). The gets' own item is on a
    simulator without limits: 40,000 gets/s of one item exceed its partition by
    themselves, whatever the metadata costs.
    """
    directory = sharding_of(HotReads).directory
    assert directory is not None
    metadata = CapacitySimulator(clock=CLOCK, limits=CapacityLimits(), seed=1)
    data = CapacitySimulator(
        clock=CLOCK, limits=CapacityLimits(partition_rcu=1e9, partition_wcu=1e9), seed=2
    )
    with metadata.attach(directory.table()), data.attach(HotReads):
        result = run_load(CLOCK, rate, SECONDS[rate], lambda n: HotReads.get("hot", 1))
    usage = metadata.table_usage(metadata_table)
    print(
        f"\n{rate} gets/s for {SECONDS[rate]:g} s: {result.failures} of {result.calls} failed "
        f"{dict(result.errors)}; metadata reads {usage.reads}, refused {usage.read_throttles}"
    )
    assert result.failures == 0
    assert usage.read_throttles == 0
    assert usage.reads <= SECONDS[rate] / directory.settings.reader_cache + 1
