"""``shardmodel reshard --status --json``: the change's status as one JSON object a
script parses, read in every phase of a change run step by step."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shardmodel.cli import main
from shardmodel.migration import Reshard
from shardmodel.migration.state import Phase
from shardmodel.testing import SimulatedClock
from tests.migration_models import Reading
from tests.unit.test_migration import migration_tables

__all__ = ["migration_tables"]

MODEL = "tests.migration_models:Reading"
FIELDS = [
    "model", "table", "change", "phase", "aborted", "returning", "paused", "wait_seconds", "job",
    "segments", "scanned", "changed", "next", "command",
]  # fmt: skip


def status(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["reshard", MODEL, "--status", "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one line: one object
    parsed: dict[str, Any] = json.loads(out)
    assert list(parsed) == FIELDS
    return parsed


def test_the_json_status_in_every_phase_of_a_change(
    migration_tables: SimulatedClock, capsys: pytest.CaptureFixture[str]
) -> None:
    for seq in range(40):
        Reading(sensor="s", seq=seq, value=f"v{seq}").save()
    none = status(capsys)
    assert none["phase"] is None and none["command"] is None
    assert (
        none["next"] == f"no change in progress: start one with shardmodel reshard {MODEL} --to N"
    )
    assert main(["reshard", MODEL, "--step", "--to", "32", "--settle", "0", "--segments", "2"]) == 0
    seen = []
    while True:
        state = Reshard(Reading).status()
        assert state is not None
        now = status(capsys)
        seen.append(now["phase"])
        assert (now["table"], now["change"], now["phase"]) == (
            Reading.Meta.table_name,
            "16 -> 32 shards",
            state.phase.value,
        )
        assert now["wait_seconds"] == 0 and now["aborted"] is False
        if now["job"] is not None:
            assert [s["segment"] for s in now["segments"]] == [0, 1]
            assert now["scanned"] == sum(s["scanned"] for s in now["segments"])
        if (
            state.phase == Phase.DONE
            and now["segments"]
            and all(s["done"] for s in now["segments"])
        ):
            assert now["command"] == f"shardmodel reshard {MODEL} --finish"
            assert now["next"].startswith("swept: deploy the code that declares 32 shards")
            assert now["scanned"] >= 40
            break
        assert now["command"] == f"shardmodel reshard {MODEL} --step"
        if now["segments"] and not all(s["done"] for s in now["segments"]):
            assert now["next"].startswith(f"run the {now['job']}")
        assert main(["reshard", MODEL, "--step"]) == 0
    assert seen[0] == "prepare" and seen[-1] == "done"
    assert {p.value for p in Phase} <= set(seen)


def test_the_json_status_says_how_long_to_wait(
    migration_tables: SimulatedClock, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["reshard", MODEL, "--step", "--to", "32", "--settle", "60"]) == 0
    now = status(capsys)
    assert now["phase"] == "prepare" and 55 <= now["wait_seconds"] <= 60
    assert now["next"].startswith("wait ") and now["command"].endswith("--step")


def test_json_without_status_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reshard", MODEL, "--json"]) == 2
    assert "--json goes with --status" in capsys.readouterr().err
