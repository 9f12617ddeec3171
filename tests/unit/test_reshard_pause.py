"""``reshard --pause`` / ``--resume``: a paused change's jobs stop at their next page with
their checkpoints kept, its phase does not advance, reads and writes go on; resumed, the
jobs go on from their checkpoints and the change ends with every item exact."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shardmodel.cli import main
from shardmodel.migration import Phase, Reshard, backfill, follow
from shardmodel.migration.state import ChangePausedError
from shardmodel.testing import SimulatedClock
from tests.migration_models import Reading
from tests.unit.test_migration import migration_tables

__all__ = ["migration_tables"]

MODEL = "tests.migration_models:Reading"
ITEMS = {seq: f"v{seq}" for seq in range(60)}


def _to_backfill(clock: SimulatedClock) -> Reshard:
    follow(Reading, cache_seconds=0, clock=clock)  # this process reads through the change
    for seq, value in ITEMS.items():
        Reading(sensor="s", seq=seq, value=value).save()
    operator = Reshard(Reading, clock=clock)
    operator.start(32, settle_seconds=0)
    while operator.status().phase != Phase.BACKFILL:  # type: ignore[union-attr]
        operator.advance()
    return operator


def test_a_pause_from_another_host_stops_the_job_at_its_next_page(
    migration_tables: SimulatedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state is read before every page here (at most once a second in production)."""
    monkeypatch.setattr(backfill, "PAUSE_CHECK_SECONDS", 0.0)
    operator = _to_backfill(migration_tables)
    pages = []

    def other_host_pauses(point: str) -> None:
        if point == "page":
            pages.append(point)
            if len(pages) == 2:
                Reshard(Reading).pause()  # another process, another operator

    with pytest.raises(ChangePausedError, match="segment 0 of the backfill stopped at 20 items"):
        operator.run_job(page_size=10, fault=other_host_pauses)
    assert len(pages) == 2  # no page after the pause was read
    (segment,) = operator.job_progress(operator.status())  # type: ignore[arg-type]
    assert (segment.scanned, segment.done) == (20, False)
    with pytest.raises(ChangePausedError, match="paused in phase backfill; run reshard --resume"):
        operator.advance()
    with pytest.raises(ChangePausedError):
        operator.run_job(page_size=10)  # nothing moves while paused
    assert operator.job_progress(operator.status())[0].scanned == 20  # type: ignore[arg-type]
    Reading(sensor="s", seq=100, value="written while paused").save()
    assert {r.seq: r.value for r in Reading.query("s")} == {**ITEMS, 100: "written while paused"}
    assert operator.pause().paused  # pausing a paused change changes nothing
    operator.unpause()
    starts: list[bool] = []
    events = Reading._get_connection().connection.client.meta.events

    def scanned(params: dict[str, Any], **_: Any) -> None:
        starts.append("ExclusiveStartKey" in params)

    events.register("provide-client-params.dynamodb.Scan", scanned)
    try:
        (segment,) = operator.run_job(page_size=10)
    finally:
        events.unregister("provide-client-params.dynamodb.Scan", scanned)
    assert starts and all(starts)  # on from the checkpoint: no scan from the beginning
    assert segment.done and segment.scanned > len(ITEMS)
    list(operator.resume())
    state = operator.status()
    assert state is not None and state.phase == Phase.DONE and not state.paused
    assert {r.seq: r.value for r in Reading.query("s")} == {**ITEMS, 100: "written while paused"}


def test_the_command_line_pauses_holds_and_resumes(
    migration_tables: SimulatedClock, capsys: pytest.CaptureFixture[str]
) -> None:
    for seq, value in ITEMS.items():
        Reading(sensor="s", seq=seq, value=value).save()
    assert main(["reshard", MODEL, "--step", "--to", "32", "--settle", "0"]) == 0
    assert main(["reshard", MODEL, "--pause"]) == 0
    assert "PAUSED (reshard --resume lets it go on)" in capsys.readouterr().out
    assert main(["reshard", MODEL, "--step"]) == 75  # a wait, not an error
    assert "hold: the change is paused; run reshard --resume first" in capsys.readouterr().out
    assert main(["reshard", MODEL]) == 75  # every remaining step: held at once
    assert "paused in phase prepare" in capsys.readouterr().out
    assert main(["reshard", MODEL, "--status", "--json"]) == 0
    status: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert status["paused"] is True and status["command"] == f"shardmodel reshard {MODEL} --resume"
    assert main(["reshard", MODEL, "--pause", "--resume"]) == 2
    assert "give --pause or --resume, not both" in capsys.readouterr().err
    assert main(["reshard", MODEL, "--resume"]) == 0
    assert "PAUSED" not in capsys.readouterr().out
    assert main(["reshard", MODEL]) == 0  # to done and its sweep
    assert capsys.readouterr().out.rstrip().splitlines()[-1].startswith("swept: deploy")


def test_pause_needs_a_change_in_progress(
    migration_tables: SimulatedClock, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["reshard", MODEL, "--pause"]) == 1
    assert "no migration in progress" in capsys.readouterr().err


def test_the_state_is_read_for_a_pause_at_most_once_a_second(
    migration_tables: SimulatedClock,
) -> None:
    """A backfill of 61 pages within a second reads the state once, before its first page."""
    operator = _to_backfill(migration_tables)
    reads: list[str] = []
    store = operator.store
    plain = store.read

    def counted() -> Any:
        reads.append("read")
        return plain()

    store.read = counted  # type: ignore[method-assign]
    try:
        (segment,) = operator.run_job(page_size=1)
    finally:
        store.read = plain  # type: ignore[method-assign]
    assert segment.done and segment.scanned > len(ITEMS)
    assert 1 <= len(reads) <= 3, reads  # one, plus one a second on a slow machine
