"""shardmodel.capacity: the partitioning guide's arithmetic, unit rounding, bad input."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import PutError
from pynamodb.models import Model

from shardmodel.capacity import (
    PartitionCapacity,
    initial_partitions,
    per_partition,
    query_units,
    shards_for,
    write_units,
)
from shardmodel.testing import CapacityLimits, CapacitySimulator, throttling_reasons


@pytest.mark.parametrize(
    ("rcu", "wcu", "size_gb", "expected"),
    [
        (3000, 1000, 0, 2),  # 1 + 1
        (1500, 500, 0, 1),  # 0.5 + 0.5
        (2500, 1000, 0, 2),  # 0.83 + 1, rounded up
        (10000, 1000, 0, 5),  # 3.33 + 1
        (1000, 500, 0, 1),
        (3000, 1000, 45, 5),  # 45 GB needs 5 partitions of 10 GB
        (0, 0, 0, 1),
        (0.1, 0.2, 0, 1),
    ],
)
def test_initial_partitions_follow_the_published_rule(
    rcu: float, wcu: float, size_gb: float, expected: int
) -> None:
    assert initial_partitions(rcu, wcu, size_gb) == expected


def test_provisioned_capacity_is_divided_not_shared() -> None:
    assert per_partition(rcu=300, wcu=150, partitions=3) == PartitionCapacity(rcu=100, wcu=50)
    assert per_partition(3000, 1000, initial_partitions(3000, 1000)) == PartitionCapacity(1500, 500)


def test_units_round_like_dynamodb() -> None:
    assert [write_units(b) for b in (1, 1024, 1025, 3500)] == [1, 1, 2, 4]
    assert query_units(3500, consistent=True) == 1
    assert query_units(3500) == 0.5
    assert query_units(1000, items_per_read=10, consistent=True) == 3  # 10,000 bytes
    assert query_units(4097, items_per_read=1) == 1  # two 4 KB units, halved


def test_shards_for_a_write_heavy_key() -> None:
    """5,000 writes/s of 1.5 KB: 2 WCU each, 10 partitions' worth, 20 shards with 2x headroom.

    Units are rounded per item, not over the byte rate: 7,500 writes/s of 1 KB carry the
    same 7,680,000 bytes/s and need 7,500 WCU.
    """
    plan = shards_for(item_bytes=1536, writes_per_second=5000)
    assert (plan.write_units, plan.write_shards, plan.read_shards) == (10000, 20, 1)
    assert plan.shards == 20 and plan.binding == "writes" and plan.headroom == 2
    assert plan.suggestion == "random"
    same_bytes = shards_for(item_bytes=1024, writes_per_second=7500, headroom=1)
    assert (same_bytes.write_units, same_bytes.write_shards) == (7500, 8)


def test_shards_for_a_read_heavy_key() -> None:
    """Queries of 25 items of 800 bytes: 20,000 bytes round up to 20 KB, 5 RCU strong."""
    strong = shards_for(800, reads_per_second=2000, items_per_read=25, consistent=True)
    assert (strong.read_units, strong.read_shards, strong.write_shards) == (10000, 7, 1)
    assert strong.binding == "reads" and strong.suggestion == "hashed"
    eventual = shards_for(800, reads_per_second=2000, items_per_read=25, headroom=1)
    assert (eventual.read_units, eventual.read_shards) == (5000, 2)


def test_headroom_is_twice_by_default_and_bounded() -> None:
    """The guides' 2x: the default; 1 (none) to 10 accepted, anything else named."""
    assert shards_for(1024, writes_per_second=1000).write_shards == 2
    assert shards_for(1024, writes_per_second=1000, headroom=1).write_shards == 1
    assert shards_for(1024, writes_per_second=1000, headroom=10).write_shards == 10
    for bad in (0.5, 11, float("nan"), True):
        with pytest.raises(ValueError, match=r"^headroom="):
            shards_for(1024, writes_per_second=1000, headroom=bad)


def test_writes_that_bind_still_suggest_hashing_when_whole_key_queries_would_throttle() -> None:
    """RandomShards makes every Query read every shard: a shard pays each Query's minimum.

    3,000 writes/s of 1 KB want 6 shards; 4,000 Queries a second of one item each cost
    every shard 0.5 RCU per Query, 2,000 RCU/s, over 3,000 / 2: hash on what reads fix.
    """
    plan = shards_for(1024, reads_per_second=4000, writes_per_second=3000)
    assert (plan.write_shards, plan.shards, plan.fan_out_units) == (6, 8, 2000)
    assert plan.suggestion == "hashed"
    assert shards_for(1024, reads_per_second=100, writes_per_second=3000).suggestion == "random"
    assert shards_for(1024, writes_per_second=100).suggestion == "none"


def test_an_item_over_400_kb_is_refused() -> None:
    assert write_units(400 * 1024) == 400
    with pytest.raises(ValueError, match=r"^item_bytes=409601: DynamoDB caps an item at 400 KB"):
        shards_for(400 * 1024 + 1)


def test_an_idle_key_needs_one_shard() -> None:
    assert shards_for(100).shards == 1


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: initial_partitions(-1, 0), "rcu"),
        (lambda: initial_partitions(0, "5"), "wcu"),  # type: ignore[arg-type]
        (lambda: initial_partitions(0, 0, float("nan")), "size_gb"),
        (lambda: per_partition(1, 1, 0), "partitions"),
        (lambda: per_partition(1, 1, 1.5), "partitions"),  # type: ignore[arg-type]
        (lambda: shards_for(0), "item_bytes"),
        (lambda: shards_for(100, items_per_read=0), "items_per_read"),
        (lambda: shards_for(100, reads_per_second=-1), "reads_per_second"),
        (lambda: shards_for(100, writes_per_second=True), "writes_per_second"),
        (lambda: shards_for(100, writes_per_second=float("inf")), "writes_per_second"),
        (lambda: shards_for(100, consistent="yes"), "consistent"),  # type: ignore[arg-type]
        (lambda: shards_for(100, headroom=0), "headroom"),
        (lambda: shards_for(500_000), "item_bytes"),
    ],
)
def test_bad_input_names_the_argument(call: Callable[[], object], name: str) -> None:
    with pytest.raises(ValueError, match=f"^{name}="):
        call()


# -- the simulator's provisioned partitions ----------------------------------------------


class Ledger(Model):
    """A plain PynamoDB model whose throttles are not retried, to see each one."""

    class Meta:
        table_name = "capacity-ledger"
        region = "us-east-1"
        max_retry_attempts = 0

    pk = UnicodeAttribute(hash_key=True)
    sk = NumberAttribute(range_key=True)


def test_limits_divide_a_provisioned_table_over_its_partitions() -> None:
    limits = CapacityLimits(table_wcu=150, table_rcu=300, partitions=3)
    assert (limits.partition_wcu, limits.partition_rcu) == (50, 100)
    assert CapacityLimits(table_wcu=150, partitions=3, partition_wcu=80).partition_wcu == 80
    assert CapacityLimits(table_wcu=150).partition_wcu == 1000  # no partition count: on-demand
    assert CapacityLimits().partition_rcu == 3000
    provisioned = CapacityLimits.provisioned(rcu=3000, wcu=1000)
    assert (provisioned.partitions, provisioned.partition_wcu) == (2, 500)


def test_a_hot_key_throttles_at_its_partitions_share(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
) -> None:
    """150 WCU over 3 partitions: one key gets 50 WCU/s while the table uses a third."""
    dynamodb_tables(Ledger)
    sim = capacity_simulator(Ledger, limits=CapacityLimits(table_wcu=150, partitions=3))
    for n in range(50):
        Ledger(pk="hot", sk=n).save()
    with pytest.raises(PutError) as refused:
        Ledger(pk="hot", sk=50).save()
    assert throttling_reasons(refused.value) == ("TableWriteKeyRangeThroughputExceeded",)
    hot = sim.ledger.partition("capacity-ledger", None, "hot")
    cold = next(
        key
        for key in (f"cold-{n}" for n in range(100))
        if sim.ledger.partition("capacity-ledger", None, key) != hot
    )
    Ledger(pk=cold, sk=0).save()  # another partition still has its own 50
    assert sim.table_usage("capacity-ledger").write_units == 51 < 150


def test_reads_and_writes_of_one_key_share_each_partition_linearly() -> None:
    """A partition takes 3,000 RCU or 1,000 WCU or a mix: 2,000 RCU + 600 WCU is 1.27 of one.

    Neither side alone needs a second partition; together they do, and with the default
    2x headroom they need ceil(2.53) = 3, where the larger side alone asks for 2.
    """
    bare = shards_for(4096, reads_per_second=2000, writes_per_second=150, headroom=1,
                      consistent=True)  # fmt: skip
    assert (bare.read_units, bare.write_units) == (2000, 600)
    assert (bare.read_shards, bare.write_shards, bare.shards) == (1, 1, 2)
    assert bare.binding == "both"
    planned = shards_for(4096, reads_per_second=2000, writes_per_second=150, consistent=True)
    assert (planned.read_shards, planned.write_shards, planned.shards) == (2, 2, 3)
    # RandomShards(3) would read every shard on every Query: 2,000 RCU each, too much
    assert planned.shard_load > 1 and planned.suggestion == "hashed"
