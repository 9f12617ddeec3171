"""Hypothesis: from_sample gives valid boundaries for any text, and shards hold their ranges."""

from __future__ import annotations

import math
import warnings
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from shardmodel import OrderedShards
from shardmodel.keyspace.normalization import default_normalize, normalized
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
    """from_sample cuts every ceil(n / shards)-th value; the command reports the same.

    The boundaries are '' then every step-th normalized value of the sorted sample, cut
    to ``prefix`` characters, each kept once (a repeat is skipped); the command's sizes
    are how many sample values each shard of the strategy takes, and its overflow names
    every value that fills more than a shard, with the sub-shards it needs.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        strategy = OrderedShards.from_sample(values, shards, prefix=prefix, on="title_key")
    bounds = strategy.boundaries
    ordered = sorted(normalized(default_normalize, v) for v in values)
    step = max(1, math.ceil(len(ordered) / shards))
    expected = [""]
    for value in ordered[step::step]:
        cut = normalized(default_normalize, value[:prefix])
        if cut > expected[-1]:
            expected.append(cut)
    assert bounds == tuple(expected)
    assert len(bounds) <= shards

    report = boundary_report(values, shards, prefix)
    assert report.boundaries == bounds
    taken = Counter(strategy.shard_of(value) for value in values)
    assert report.sizes == tuple(taken[shard] for shard in range(len(bounds)))
    for value in values:
        shard = strategy.shard_of(value)
        stored = normalized(default_normalize, value)
        assert bounds[shard] <= stored
        assert shard + 1 == len(bounds) or stored < bounds[shard + 1]
    counts = Counter(ordered)
    assert dict(report.overflow) == {
        value: max(2, math.ceil(count / step)) for value, count in counts.items() if count > step
    }
