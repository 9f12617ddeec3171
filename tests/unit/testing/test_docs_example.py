"""The examples of docs/testing.rst ("Testing your sharding"), included there: they run in CI."""

from __future__ import annotations

import random
from collections.abc import Callable

from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import Backoff, RandomShards, ShardedKeyAttribute, ShardedModel
from shardmodel.testing import (
    CapacityLimits,
    CapacitySimulator,
    Faults,
    Latency,
    SimulatedClock,
    run_load,
)


class Click(ShardedModel):
    """Clicks on one very popular page, spread over 4 random shards."""

    class Meta:
        table_name = "doc-clicks"
        region = "us-east-1"

    page_id = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(4), rng=random.Random(42))
    clicked_at = NumberAttribute(range_key=True)
    referrer = UnicodeAttribute()


def test_our_peak_of_2500_clicks_a_second_fits(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
    sim_clock: SimulatedClock,
) -> None:
    """At our peak, 2,500 small writes a second for 2 seconds, no click is throttled.

    One partition takes 1,000 WCU/s: four shards give 4,000, so the peak fits with room.
    """
    dynamodb_tables(Click)  # creates the table on in-process moto, drops it afterwards
    sim = capacity_simulator(
        Click,
        limits=CapacityLimits(partition_wcu=1000),  # DynamoDB's own limit, the default
        buffer_writes=True,  # store puts 25 at a time: a faster test, the same capacity math
    )

    def click(n: int) -> None:
        Click(page_id="home", clicked_at=n, referrer="search").save()

    result = run_load(sim_clock, rate=2500, seconds=2, operation=click)

    assert result.failures == 0, sim.report()
    assert sim.table_usage("doc-clicks").write_throttles == 0
    busiest = max(u.write_units for u in sim.usage().values())
    assert busiest / 2 < 1000 * 0.8  # every shard stays under 80% of its partition
    assert Click.count("home") == 5000


def test_clicks_survive_faults_and_latency(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
    sim_clock: SimulatedClock,
) -> None:
    """Faults and latency on every kind of call; botocore and shardmodel resend, none lost."""
    dynamodb_tables(Click)
    Click.Meta.shard_backoff = Backoff(sleep=sim_clock.sleep)  # batch resends wait simulated
    sim = capacity_simulator(
        Click,
        faults=Faults(
            connection_error=0.025, internal_error=0.025, throttle=0.025, unprocessed=0.025
        ),
        latency=Latency(fixed=0.010, jitter=0.005),
        seed=3,
    )
    try:
        with Click.batch_write() as batch:
            for n in range(200):
                batch.save(Click(page_id="home", clicked_at=n, referrer="search"))
        assert Click.count("home") == 200, sim.report()
        assert sum(sim.injected.values()) > 0  # faults were injected, and overcome
    finally:
        del Click.Meta.shard_backoff
