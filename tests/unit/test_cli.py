"""The command line and the demo it runs."""

from __future__ import annotations

import pytest

from shardmodel.cli import main
from shardmodel.demo import HOT_KEY, run_demo


def test_demo_spreads_a_hot_key_evenly() -> None:
    """Unsharded, a burst hits one physical key; sharded, it spreads over every shard."""
    lines: list[str] = []
    counts = run_demo(writes=400, shards=8, seed=1, out=lines.append)
    assert dict(counts["unsharded"]) == {HOT_KEY: 400}
    sharded = counts["sharded"]
    assert set(sharded) == {f"{HOT_KEY}#{n}" for n in range(8)}
    assert sum(sharded.values()) == 400
    assert max(sharded.values()) < 400 * 0.25
    assert any("seq=399" in line for line in lines)  # newest first in the merged read-back


def test_cli_runs_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    """`shardmodel demo` prints both tables."""
    assert main(["demo", "--writes", "50", "--shards", "4"]) == 0
    printed = capsys.readouterr().out
    assert "Unsharded" in printed and "RandomShards(4)" in printed


def test_cli_rejects_bad_arguments() -> None:
    """A non-positive burst is a usage error."""
    with pytest.raises(SystemExit):
        main(["demo", "--writes", "0"])
