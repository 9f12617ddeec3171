"""OrderedShards on the capacity simulator: 10,000 writes/s of titles, 21 shards, no throttle.

One partition takes 1,000 WCU/s. The same load on one listing key throttles; spread over
21 ordered shards whose boundaries come from a sample of the same title distribution,
no shard passes its limit, every write lands once, and the listing stays in order.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import pytest
from pynamodb.attributes import UnicodeAttribute
from pynamodb.models import Model

from shardmodel import NormalizedAttribute, OrderedShards, ShardedKeyAttribute, ShardedModel
from shardmodel.testing import CapacityLimits, CapacitySimulator, SimulatedClock, run_load
from shardmodel.testing.titles import generate_titles

RATE = 10_000  # writes per simulated second, all on one logical listing
CLOCK = SimulatedClock(start=1_900_000_000)
STRATEGY = OrderedShards.from_sample(generate_titles(20_000, seed=11), 21, on="title_key")
TITLES = list(itertools.islice(generate_titles(RATE, seed=12), RATE))


class ListedAlbum(ShardedModel):
    """Albums in one alphabetical listing over 21 ordered shards (1 KB or less each)."""

    class Meta:
        table_name = "listed-albums"
        region = "us-east-1"

    listing = ShardedKeyAttribute(hash_key=True, strategy=STRATEGY)
    title_key = NormalizedAttribute(range_key=True)
    title = UnicodeAttribute()


class OneListing(Model):
    """The same albums under one partition key."""

    class Meta:
        table_name = "one-listing"
        region = "us-east-1"

    listing = UnicodeAttribute(hash_key=True)
    title_key = UnicodeAttribute(range_key=True)
    title = UnicodeAttribute()


@pytest.fixture
def simulator(dynamodb_tables: Callable[..., None]) -> Iterator[CapacitySimulator]:
    dynamodb_tables(ListedAlbum, OneListing)
    simulator = CapacitySimulator(
        clock=CLOCK, limits=CapacityLimits(partition_wcu=1000), buffer_writes=True, seed=3
    )
    simulator.attach(ListedAlbum, OneListing)
    yield simulator
    simulator.detach()


def test_ten_thousand_writes_a_second_spread_over_ordered_shards(
    simulator: CapacitySimulator,
) -> None:
    def sharded(n: int) -> None:
        title = TITLES[n % RATE]
        ListedAlbum("albums", f"{title}#{n:05d}", title=title).save()

    def unsharded(n: int) -> None:
        title = TITLES[n % RATE]
        OneListing(listing="albums", title_key=f"{title}#{n:05d}".lower(), title=title).save()

    spread = run_load(CLOCK, RATE, 1.0, sharded, threads=8)
    simulator.flush()
    one = run_load(CLOCK, RATE, 0.3, unsharded, threads=8)
    simulator.flush()
    print(simulator.report(limit=25))
    assert spread.calls == RATE and spread.failures == 0
    assert simulator.table_usage("listed-albums").write_throttles == 0
    # one partition: too hot (botocore's retries may still land every write, later)
    assert one.calls == RATE * 3 // 10
    assert simulator.table_usage("one-listing").write_throttles > 0
    busiest = max(
        use.write_units for part, use in simulator.usage().items() if part.table == "listed-albums"
    )
    assert busiest < 1000
    listing = [a.title_key for a in ListedAlbum.query("albums", consistent_read=True)]
    assert len(listing) == RATE and listing == sorted(listing)  # all there, in order
