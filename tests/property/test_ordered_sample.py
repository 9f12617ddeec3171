"""Hypothesis: from_sample gives valid boundaries for any text, and shards hold their ranges."""

from __future__ import annotations

import warnings

from hypothesis import given
from hypothesis import strategies as st

from shardmodel import OrderedShards
from shardmodel.keyspace.ordered import default_normalize, normalized
from shardmodel.ordered_sample import boundary_report

#: Any text DynamoDB stores: every character but surrogates.
texts = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)


@given(
    values=st.lists(texts | st.sampled_from(["Greatest Hits", "greatest hits"]), max_size=80),
    shards=st.integers(1, 30),
    prefix=st.integers(1, 25),
)
def test_from_sample_boundaries_are_valid_and_match_the_command(
    values: list[str], shards: int, prefix: int
) -> None:
    """Sorted, unique, normalized, first ''; at most ``shards``; the command agrees."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        strategy = OrderedShards.from_sample(values, shards, prefix=prefix, on="title_key")
    bounds = strategy.boundaries
    assert bounds[0] == "" and list(bounds) == sorted(set(bounds)) and len(bounds) <= shards
    report = boundary_report(values, shards, prefix)
    assert report.boundaries == bounds and sum(report.sizes) == len(values)
    for value in values:
        shard = strategy.shard_of(value)
        stored = normalized(default_normalize, value)
        assert bounds[shard] <= stored
        assert shard + 1 == len(bounds) or stored < bounds[shard + 1]
    step = -(-len(values) // shards) if values else 1
    for value, count in report.overflow:
        assert sum(1 for v in values if normalized(default_normalize, v) == value) > step
        assert count >= 2
