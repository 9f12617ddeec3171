"""Capacity arithmetic holds for any traffic DynamoDB could see."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from shardmodel.capacity import (
    CHUNKY_EXCESS,
    _excess,
    initial_partitions,
    per_partition,
    query_units,
    shards_for,
)

ITEM = st.integers(min_value=1, max_value=400 * 1024)
RATE = st.floats(min_value=0, max_value=1e6, allow_nan=False)
UNITS = st.integers(min_value=0, max_value=10**6)


HEADROOM = st.floats(min_value=1, max_value=10, allow_nan=False)


@given(
    item=ITEM,
    reads=RATE,
    items=st.integers(1, 1000),
    writes=RATE,
    strong=st.booleans(),
    headroom=HEADROOM,
)
def test_the_count_is_the_fewest_partitions_that_hold_the_units_with_the_headroom(
    item: int, reads: float, items: int, writes: float, strong: bool, headroom: float
) -> None:
    plan = shards_for(item, reads, items, writes, strong, headroom)
    assert plan.write_units == writes * math.ceil(item / 1024)
    assert plan.read_units == reads * query_units(item, items, strong)
    mean_writes = max(1, math.ceil(round(plan.write_units * headroom / 1000, 9)))
    chunky = plan.write_shards > mean_writes
    for units, limit, count in (
        (plan.write_units, 1000, mean_writes),
        (plan.read_units, 3000, plan.read_shards),
    ):
        assert count >= 1
        assert count * limit >= units * headroom * (1 - 1e-9)  # enough
        assert count == 1 or (count - 1) * limit < units * headroom * (1 + 1e-9)  # no more
    if chunky:  # more shards only where the mean count refuses writes of this size
        fits = 1000 // math.ceil(item / 1024)
        assert headroom > 1
        assert _excess(math.ceil(writes), plan.write_shards, fits) <= CHUNKY_EXCESS
        assert _excess(math.ceil(writes), plan.write_shards - 1, fits) > CHUNKY_EXCESS
    both = (plan.read_units / 3000 + plan.write_units / 1000) * headroom
    mixed = plan.mixed_shards
    assert mixed >= 1 and mixed >= both * (1 - 1e-9)  # a partition's sides share its limit
    assert mixed == 1 or mixed - 1 < both * (1 + 1e-9)
    assert plan.shards == max(plan.read_shards, plan.write_shards, mixed)


@given(item=ITEM, items=st.integers(1, 1000))
def test_eventual_reads_cost_half(item: int, items: int) -> None:
    assert query_units(item, items, consistent=False) * 2 == query_units(item, items, True)
    # a Query sums before rounding: never more than rounding each item
    assert query_units(item, items, True) <= items * math.ceil(item / 4096)


@given(rcu=UNITS, wcu=UNITS, size=st.integers(0, 10**5), parts=st.integers(1, 10**4))
def test_partitions_hold_the_throughput_and_the_data(
    rcu: int, wcu: int, size: int, parts: int
) -> None:
    count = initial_partitions(rcu, wcu, size)
    assert count * 10 >= size and count >= 1
    share = per_partition(rcu, wcu, count)
    assert share.rcu / 3000 + share.wcu / 1000 <= 1 + 1e-9  # each partition can serve its share
    assert math.isclose(per_partition(rcu, wcu, parts).wcu * parts, wcu, abs_tol=1e-6)
