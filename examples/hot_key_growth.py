"""A key turns hot: DynamicShards grows it on throttling, then a shrink and a compaction.

Runs on in-process moto with the testing toolkit's capacity simulator (50 write units
per second per partition, simulated time): `python examples/hot_key_growth.py`.
"""

from __future__ import annotations

from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import (
    DynamicShards,
    ShardChange,
    ShardedKeyAttribute,
    ShardedModel,
    sharding_of,
)
from shardmodel.testing import (
    CapacityLimits,
    CapacitySimulator,
    SimulatedClock,
    create_tables,
    mock_dynamodb,
    run_load,
)

CLOCK = SimulatedClock(start=1_800_000_000)


def report(change: ShardChange) -> None:
    at = change.at - 1_800_000_000
    counts = f"{change.old_count} -> {change.new_count}"
    print(f"  t={at:>2}s {change.kind:<6} {change.logical_key}: {counts}")


class Orders(ShardedModel):
    class Meta:
        table_name = "orders"
        region = "us-east-1"

    # seconds scaled down with the partitions: a growth takes effect once readers'
    # cached counts (0.5 s here, 2 s by default) and the clock margin have passed
    shop = ShardedKeyAttribute(
        hash_key=True,
        strategy=DynamicShards(
            cooldown=1,
            jitter=0.1,
            writer_cache_seconds=0.5,
            reader_cache_seconds=0.5,
            clock_margin_seconds=0.5,
            clock=CLOCK,
            on_change=report,
        ),
    )
    order_id = NumberAttribute(range_key=True)
    item = UnicodeAttribute()


def main() -> None:
    with mock_dynamodb():
        create_tables([Orders])
        directory = sharding_of(Orders).directory  # the metadata table of DynamicShards
        assert directory is not None
        simulator = CapacitySimulator(
            clock=CLOCK, limits=CapacityLimits(partition_wcu=50), buffer_writes=True
        )
        simulator.attach(Orders, directory.table())
        print("a flash sale: 250 orders a second on one shop, 8 writer threads")
        load = run_load(
            CLOCK, 250, 4, lambda n: Orders("flash-shop", n, item="t-shirt").save(), threads=8
        )
        for n in range(20):
            Orders("quiet-shop", n, item="mug").save()
        simulator.detach()

        hot = Orders.shard_metadata("flash-shop")
        cold = Orders.shard_metadata("quiet-shop")
        assert hot is not None and cold is not None
        print(f"flash-shop: {hot.latest} shards, history {[str(e) for e in hot.history]}")
        print(f"quiet-shop: {cold.number_of_shards} shard")
        print(f"orders failed: {load.failures} of {load.calls}")
        stored = [o.order_id for o in Orders.query("flash-shop")]
        assert stored == list(range(load.calls)), "every order, once, in order"
        assert cold.number_of_shards == 1 and hot.latest >= 5

        print("the sale is over: shrink to 1 shard, then compact")
        Orders.shrink_shards("flash-shop", 1)
        print("  readable while retired shards hold items:", Orders.count("flash-shop"))
        moved = Orders.compact_shards("flash-shop", grace=0)
        after = Orders.shard_metadata("flash-shop")
        assert after is not None and after.readable == 1
        print(f"  moved {moved} orders; every read now touches {after.readable} shard")
        assert Orders.count("flash-shop") == load.calls


if __name__ == "__main__":
    main()
