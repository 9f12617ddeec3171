"""Advice holds in our own simulator: a planned layout takes the planned rate, unthrottled."""

from __future__ import annotations

import pytest

from shardmodel.testing import MAX_VERIFY_REQUESTS, verify_plan


def test_the_planned_write_layout_takes_the_planned_rate_with_no_throttle() -> None:
    """The issue's case: 5,000 writes/s of 400 bytes. The bare count (5) throttles; 2x not."""
    planned = verify_plan(item_bytes=400, writes_per_second=5000, seconds=1)
    assert planned.strategy == "RandomShards(10)" and planned.plan.headroom == 2
    assert (planned.writes, planned.throttles, planned.failures) == (5000, 0, 0)
    assert planned.passed
    bare = verify_plan(item_bytes=400, writes_per_second=5000, seconds=1, headroom=1)
    assert bare.strategy == "RandomShards(5)"
    assert bare.write_throttles > 0 and not bare.passed


def test_the_planned_read_layout_hashes_and_takes_the_planned_rate() -> None:
    """Reads bind: HashShards, each Query reading one shard's 25 items, strongly consistent."""
    run = verify_plan(800, reads_per_second=600, items_per_read=25, consistent=True, seconds=1)
    assert run.plan.suggestion == "hashed" and run.strategy == "HashShards(2)"
    assert (run.reads, run.read_throttles, run.write_throttles, run.failures) == (600, 0, 0, 0)


def test_writes_with_whole_key_queries_take_the_planned_rate() -> None:
    """Writes bind and whole-key Queries fit every shard: RandomShards, both sides clean."""
    traffic = {"reads_per_second": 20, "items_per_read": 8, "writes_per_second": 2000}
    run = verify_plan(1024, **traffic, seconds=1)  # type: ignore[arg-type]
    assert run.plan.suggestion == "random" and run.strategy == "RandomShards(4)"
    assert (run.writes, run.reads) == (2000, 80)  # 20 Queries, each of 4 shards
    assert run.passed


@pytest.mark.parametrize(
    ("kwargs", "phrase"),
    [
        ({"item_bytes": 500, "writes_per_second": 150_000}, f"{MAX_VERIFY_REQUESTS:,}"),
        ({"item_bytes": 500, "writes_per_second": 10**6}, "2,000 shards, over the 1,000"),
        ({"item_bytes": 500, "writes_per_second": 10, "seconds": 0}, "seconds=0"),
        ({"item_bytes": 500, "writes_per_second": 10, "shards": 0}, "shards=0"),
        ({"item_bytes": 500_000, "writes_per_second": 10}, "400 KB"),
    ],
)
def test_bad_arguments_are_refused_before_any_table_is_made(
    kwargs: dict[str, float], phrase: str
) -> None:
    with pytest.raises(ValueError, match=phrase):
        verify_plan(**kwargs)  # type: ignore[arg-type]
