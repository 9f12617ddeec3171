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


@pytest.mark.usefixtures("tables")
def test_cli_lists_grown_keys_then_shrinks_and_compacts_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`shardmodel shards module:Model` lists hot keys; --key --shrink-to --compact fixes one."""
    from tests.models import DynamicEvent

    directory = DynamicEvent._shard_directory
    assert directory is not None
    DynamicEvent("cold", 1).save()
    DynamicEvent("hot", 0).save()
    directory.grow("hot", directory.lookup("hot"))  # type: ignore[arg-type]
    for n in range(1, 20):
        DynamicEvent("hot", n).save()
    assert main(["shards", "tests.models:DynamicEvent"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 1 and listed[0].startswith("hot ") and "live    2" in listed[0]
    args = ["shards", "tests.models:DynamicEvent", "--key", "hot", "--shrink-to", "1"]
    assert main([*args, "--compact", "--grace", "0"]) == 0
    printed = capsys.readouterr().out
    assert "moved" in printed and "readable    1" in printed
    assert DynamicEvent.count("hot") == 20


def test_cli_shards_explains_bad_models() -> None:
    with pytest.raises(SystemExit, match="module:Class"):
        main(["shards", "tests.models.DynamicEvent"])
    with pytest.raises(SystemExit, match="count is fixed"):
        main(["shards", "tests.models:RandomEvent"])
    with pytest.raises(SystemExit, match="need --key"):
        main(["shards", "tests.models:DynamicEvent", "--compact"])
