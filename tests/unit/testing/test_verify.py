"""Advice holds in our own simulator: a planned layout takes the planned rate, unthrottled."""

from __future__ import annotations

import pytest

from shardmodel.testing import verify, verify_plan
from tests.tier import sized


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
    assert run.plan.suggestion == "random" and run.strategy == "RandomShards(5)"
    assert (run.writes, run.reads) == (2000, 100)  # 20 Queries, each of 5 shards
    assert run.passed


def test_items_of_400_kb_take_the_planned_rate_with_no_throttle() -> None:
    """A partition takes two 400 KB writes a second: the plan counts the third one too.

    10 writes a second of 409,600 bytes are 4,000 WCU: 8 shards with 2x headroom on the
    mean, where RandomShards(8) refuses a write in most seconds (a shard draws three).
    """
    run = verify_plan(409_600, writes_per_second=10)
    assert run.plan.write_units == 4000 and run.strategy == "RandomShards(76)"
    assert (run.writes, run.throttles) == (20, 0)
    # planned for at most 0.02 refused writes a second: 40 such runs refuse about 1.6
    refused = sum(verify_plan(409_600, writes_per_second=10, seed=n).throttles for n in range(40))
    assert refused <= 5
    mean_only = verify_plan(409_600, writes_per_second=10, seconds=10, shards=8)
    assert mean_only.write_throttles >= 5


def test_reads_and_writes_run_at_once_and_share_each_partition() -> None:
    """2,000 RCU of reads and 600 WCU of writes on one partition: neither alone throttles."""
    mixed = {"reads_per_second": 2000, "writes_per_second": 150, "consistent": True}
    alone = verify_plan(4096, **mixed, shards=1)  # type: ignore[arg-type]
    assert alone.throttles > 0
    assert verify_plan(4096, reads_per_second=2000, consistent=True, shards=1).passed
    assert verify_plan(4096, writes_per_second=150, shards=1).passed
    assert verify_plan(4096, **mixed).passed  # type: ignore[arg-type]


def test_any_accepted_rate_is_verified_by_following_a_sample_of_the_shards(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Millions of shard requests: a sample of the shards is charged, throttles scaled.

    make test samples a tenth of the product's (100,000 charges, not 1,000,000): the same
    sampling, in a tenth of the time; make stress the product's."""
    monkeypatch.setattr(verify, "MAX_VERIFY_REQUESTS", sized(1_000_000, 100_000))
    run = verify_plan(100, reads_per_second=2_000_000, writes_per_second=100_000, seconds=1)
    assert run.strategy == "HashShards(867)" and 0 < run.sampled < 867
    assert (run.reads, run.writes, run.throttles) == (2_000_000, 100_000, 0)
    bare = verify_plan(100, writes_per_second=600_000, seconds=2, shards=400)
    assert bare.sampled < 400 and bare.write_throttles > 1000


@pytest.mark.parametrize(
    ("kwargs", "phrase"),
    [
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
