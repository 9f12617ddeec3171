"""--abort from any phase: removed before backfill, else taken to done and back.

From backfill on items live at their new keys. An aborted change goes on to done (its
sweep included) and then returns to the old layout by the same phases, a change in the
other direction that the code declaring the old layout follows; --finish then removes
the state. These tests check every read path in every phase of both, writes in each, a
cursor and a scan crossing from the change into its return, and what is refused.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from shardmodel import HashShards, ShardConfigurationError
from shardmodel.cli import main
from shardmodel.engine import sharding_of
from shardmodel.engine.items import instance_key_values
from shardmodel.errors import CursorError
from shardmodel.keyspace.phases import MARKERS, key_in, shard_count
from shardmodel.migration import (
    COPY_MARKER,
    MOVE_MARKER,
    MigrationConflictError,
    Phase,
    Reshard,
    ScanJob,
    follow,
    unfollow,
)
from shardmodel.migration.reshard import JOBS
from shardmodel.testing import SimulatedClock, bind_models, create_tables, mock_dynamodb
from tests.interleavings import Plan, Scheduler, every_schedule, scheduled
from tests.migration_models import (
    Click,
    OrderedReading,
    Reading,
    Tagged,
    Views,
    WideClick,
    WideReading,
)
from tests.tier import sized
from tests.unit.test_migration import expect, index_reads, migration_tables
from tests.unit.test_phase_interleavings import (
    Case,
    Snapshot,
    World,
    _check,
    _expected,
    _observed,
    _operation,
    _outcomes,
    _pair,
    _raw_items,
)

pytestmark = pytest.mark.slow

__all__ = ["migration_tables"]  # a fixture used by name

KEY = "k"


def rows(model: Any) -> list[dict[str, Any]]:
    client = model._get_connection().connection.client
    found: list[dict[str, Any]] = client.scan(TableName=model.Meta.table_name, ConsistentRead=True)[
        "Items"
    ]
    return found


def at_declared_keys(model: Any, reference: dict[int, str]) -> None:
    """Every row is a live item at its key under the declared layout (a random shard
    below the declared count): no tombstone, no marker, no copy elsewhere; and the rows
    are the reference."""
    attr = sharding_of(model).key()
    count = shard_count(model.__name__, attr.layout)
    found = {}
    for row in rows(model):
        assert MOVE_MARKER not in row and COPY_MARKER not in row, row
        item = model.from_raw_data(row)
        physical = row[attr.attr_name]["S"]
        assert key_in(attr.layout, instance_key_values(item), physical) == physical, row
        assert int(physical.rsplit("#", 1)[1]) < count, row
        found[item.seq] = item.value
    assert found == reference


class Writes:
    """A writer following the migration: each phase it updates, deletes and creates."""

    def __init__(self, model: Any, reference: dict[int, str]) -> None:
        self.model, self.reference, self.serial = model, reference, 1000

    def __call__(self, phase: str) -> None:
        model, reference = self.model, self.reference
        live = sorted(reference)
        changed, gone = live[len(live) // 3], live[len(live) // 2]
        model.get(KEY, changed).update(actions=[model.value.set(f"in {phase}")])
        reference[changed] = f"in {phase}"
        model.get(KEY, gone).delete()
        del reference[gone]
        self.serial += 1
        model(sensor=KEY, seq=self.serial, value=f"born in {phase}").save()
        reference[self.serial] = f"born in {phase}"
        if phase != "prepare":  # a key deleted earlier is written again
            model(sensor=KEY, seq=gone, value=f"again in {phase}").save()
            reference[gone] = f"again in {phase}"


def every_read(model: Any, reference: dict[int, str]) -> None:
    """get, batch_get, query, count (expect) and scan see exactly the reference."""
    expect(model, KEY, reference)
    assert sorted((i.seq, i.value) for i in model.scan()) == sorted(reference.items())


def _abort_in(
    model: Any,
    to: Any,
    phase: Phase,
    clock: SimulatedClock,
    check: Callable[[str], None],
    partial: bool = False,
) -> list[str]:
    """Start ``model``'s change to ``to``, abort it in ``phase`` (``partial``: with one of
    its backfill's two segments run) and take it and its return to done; ``check(phase)``
    after each step; the phases passed."""
    operator = Reshard(model, clock=clock)
    state = operator.start(to, settle_seconds=5, segments=2)
    check(state.phase.value)
    while state.phase != phase:
        clock.advance(state.settle_seconds)
        if state.phase in JOBS:
            operator.run_job()
        state = operator.advance()
        check(state.phase.value)
    if partial:
        operator.run_job(segment=0)
        check(state.phase.value)
    aborted = operator.abort()
    assert aborted.phase == phase and not aborted.aborted
    assert operator.status().aborted  # type: ignore[union-attr]
    with pytest.raises(MigrationConflictError, match="aborted"):
        operator.finish()
    passed: list[str] = []
    for state in operator.resume():
        check(state.phase.value)
        passed.append(("back:" if state.returning else "") + state.phase.value)
    assert state.returning and state.phase == Phase.DONE
    return passed


@pytest.mark.parametrize(
    ("model", "to", "phase", "partial"),
    [
        (Reading, 32, Phase.BACKFILL, True),
        (Reading, 32, Phase.READ_NEW, False),
        (WideReading, 16, Phase.NEW_ONLY, False),
        (Click, 32, Phase.READ_NEW, False),
        (WideClick, 16, Phase.BACKFILL, True),
        (OrderedReading, None, Phase.CLEANUP, False),
        (Reading, HashShards(8, on=["seq"], algorithm="sha256"), Phase.READ_NEW, False),
    ],
    ids=[
        "grow-backfill",
        "grow-read_new",
        "shrink-new_only",
        "random-grow-read_new",
        "random-shrink-backfill",
        "ordered-cleanup",
        "swap-read_new",
    ],
)
def test_an_aborted_change_returns_every_item_to_the_declared_layout(
    migration_tables: SimulatedClock, model: Any, to: Any, phase: Phase, partial: bool
) -> None:
    """A writer saves, updates and deletes in every phase; every read is exact in every
    phase of the change and its return; at the end each item is at its declared key
    alone, and --finish from the unchanged code removes the state."""
    if model is OrderedReading:
        to = ["", "000000000020", "000000000040"]
    reference = {seq: f"v{seq}" for seq in range(sized(60, 12))}
    with model.batch_write() as batch:
        for seq, value in reference.items():
            batch.save(model(sensor=KEY, seq=seq, value=value))
    follow(model, cache_seconds=0, clock=migration_tables)
    writes = Writes(model, reference)

    def check(phase: str) -> None:
        writes(phase)
        every_read(model, reference)

    passed = _abort_in(model, to, phase, migration_tables, check, partial)
    forward = [p.value for p in Phase]
    assert passed == [phase.value, *forward[forward.index(phase.value) + 1 :]] + [
        f"back:{p}" for p in forward
    ]
    Reshard(model).finish()  # the code never changed
    every_read(model, reference)
    at_declared_keys(model, reference)


def test_a_cursor_and_a_scan_crossing_into_the_return(migration_tables: SimulatedClock) -> None:
    """A query cursor taken in the change resumes in every later phase of the return
    (each item once); a scan begun in the change raises CursorError once the return
    began (it may have passed keys the return moves items to)."""
    reference = {seq: f"v{seq}" for seq in range(sized(40, 20))}
    for seq, value in reference.items():
        Reading(sensor=KEY, seq=seq, value=value).save()
    follow(Reading, cache_seconds=0, clock=migration_tables)
    cursors: list[tuple[Any, list[int]]] = []
    scans: list[tuple[str, Any]] = []

    def take(phase: str) -> None:
        page = Reading.query(KEY, limit=7)
        seen = [i.seq for i in page]
        cursors.append((page.last_evaluated_key, seen))
        scan = Reading.scan(page_size=5)
        next(iter(scan))
        scans.append((phase, scan))
        for token, first in cursors:  # every earlier cursor resumes here, exactly
            rest = [i.seq for i in Reading.query(KEY, last_evaluated_key=token)]
            assert first + rest == sorted(reference), phase

    _abort_in(Reading, 32, Phase.READ_NEW, migration_tables, take)
    scan = next(scan for phase, scan in scans if phase == "done")  # the change's done
    with pytest.raises(CursorError, match="another began"):
        list(scan)
    Reshard(Reading).finish()


def test_index_reads_and_their_cursors_through_the_change_and_its_return(
    migration_tables: SimulatedClock,
) -> None:
    """A model with a plain and a sharded index, aborted in read_new: both indexes and
    their counts show each item once in every phase of the change and its return, and
    index cursors taken one step earlier resume with none twice, deleted or missed."""
    reference = {s: ("red" if s % 2 else "blue", f"v{s}") for s in range(40)}
    for seq, (color, value) in reference.items():  # enough for a deletion in every step
        Tagged(sensor=KEY, seq=seq, value=value, color=color, team="t").save()
    follow(Tagged, cache_seconds=0, clock=migration_tables)
    cursors: list[tuple[Any, Any, set[int]]] = []
    fresh = iter(range(100, 1000))

    def each(phase: str) -> None:
        index_reads(Tagged, reference)
        for sharded, token, then in cursors:
            red = {s for s, (c, _) in reference.items() if c == "red"}
            for query, want in (
                (Tagged.by_team.query("t", last_evaluated_key=sharded), set(reference)),
                (Tagged.by_color.query("red", last_evaluated_key=token), red),
            ):
                rest = [i.seq for i in query]
                assert rest == sorted(set(rest)), phase  # none twice
                assert set(rest) <= {s for s in want if s > 3}, phase  # none deleted
                assert {s for s in then & want if s > 3 and s != 5} <= set(rest), phase
        first = Tagged.by_team.query("t", limit=4)
        assert [i.seq for i in first] == sorted(reference)[:4]
        second = Tagged.by_color.query("red", limit=2)
        assert [i.seq for i in second] == [1, 3]
        cursors[:] = [(first.last_evaluated_key, second.last_evaluated_key, set(reference))]
        seq = next(fresh)  # a new item, a recolored one, a deleted one
        Tagged(sensor=KEY, seq=seq, value="new", color="red", team="t").save()
        reference[seq] = ("red", "new")
        item = Tagged.get(KEY, 5)
        color = "blue" if item.color == "red" else "red"
        item.update(actions=[Tagged.color.set(color), Tagged.value.set(phase)])
        reference[5] = (color, phase)
        victim = max(s for s in reference if s < 100 and s != 5)
        Tagged.get(KEY, victim).delete()
        del reference[victim]
        index_reads(Tagged, reference)

    _abort_in(Tagged, 32, Phase.READ_NEW, migration_tables, each)
    Reshard(Tagged).finish()
    index_reads(Tagged, reference)


def test_a_counter_grow_in_backfill_is_removed_and_refused_after(
    migration_tables: SimulatedClock,
) -> None:
    """Growing RandomShards moves nothing and writes only old shards until read_new: an
    abort in backfill removes the state (the counts stay); from read_new the return
    would shrink the counters' shards, which is refused before anything is written."""
    follow(Views, cache_seconds=0, clock=migration_tables)
    Views(page="home").save()
    operator = Reshard(Views, clock=migration_tables)
    operator.start(32, settle_seconds=0)
    for _ in range(2):
        Views.add("home", views=3)
        operator.advance()
        Views.add("home", views=3)
    assert operator.status().phase == Phase.BACKFILL  # type: ignore[union-attr]
    operator.abort()
    assert operator.status() is None
    assert Views.get("home").views == 12
    operator.start(32, settle_seconds=0)
    for _ in range(3):
        operator.run_job() if operator.status().phase in JOBS else None  # type: ignore[union-attr]
        operator.advance()
    state = operator.status()
    with pytest.raises(ShardConfigurationError, match="shrink a counter model's RandomShards"):
        operator.abort()
    assert operator.status() == state


def test_refused_aborts_leave_the_state(
    migration_tables: SimulatedClock, capsys: pytest.CaptureFixture[str]
) -> None:
    """A swap back to RandomShards, a random shrink on an indexed model, a second abort,
    an abort of the return, and steps() of an aborted change: each refused, the state
    unchanged."""
    clock = migration_tables
    for seq in range(10):
        Click(sensor=KEY, seq=seq, value="v").save()
        Tagged(sensor=KEY, seq=seq, value="v").save()
    swap = Reshard(Click, clock=clock)
    swap.start(HashShards(8, on=["seq"]), settle_seconds=0)
    for _ in range(2):
        swap.advance()
    state = swap.status()
    with pytest.raises(ShardConfigurationError, match="swap back to RandomShards"):
        swap.abort()
    assert swap.status() == state

    tagged = Reshard(Tagged, clock=clock)
    tagged.start(32, settle_seconds=0)
    for _ in range(2):
        tagged.advance()
    tagged.run_job()
    tagged.abort()  # HashShards: its return is a hash shrink, made online
    with pytest.raises(MigrationConflictError, match="aborted already"):
        tagged.abort()
    with pytest.raises(MigrationConflictError, match="resume"):
        next(iter(tagged.steps(32, settle_seconds=0)))
    states = list(tagged.resume())
    assert states[-1].returning and states[-1].phase == Phase.DONE
    assert main(["reshard", "tests.migration_models:Tagged", "--abort"]) == 1
    assert "takes the items back" in capsys.readouterr().err
    tagged.finish()
    assert sorted(i.seq for i in Tagged.query(KEY)) == list(range(10))


def test_the_command_line_aborts_and_steps_through_the_return(
    migration_tables: SimulatedClock,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--abort in read_new says what happens; --step goes to done, into the return and
    to its done; --finish with the unchanged model removes the state."""
    for seq in range(30):
        Reading(sensor=KEY, seq=seq, value=f"v{seq}").save()
    model = "tests.migration_models:Reading"
    args = ["--settle", "0", "--segments", "1"]
    assert main(["reshard", model, "--step", "--to", "32", *args]) == 0
    while Reshard(Reading).status().phase != Phase.READ_NEW:  # type: ignore[union-attr]
        assert main(["reshard", model, "--step"]) == 0
    capsys.readouterr()
    assert main(["reshard", model, "--abort"]) == 0
    out = capsys.readouterr().out
    assert "is aborted in phase read_new" in out and "back to 16" in out
    assert main(["reshard", model, "--finish"]) == 1
    assert "was aborted" in capsys.readouterr().err
    while not Reshard(Reading).status().returning:  # type: ignore[union-attr]
        assert main(["reshard", model, "--step"]) == 0
    while Reshard(Reading).status().phase != Phase.BACKFILL:  # type: ignore[union-attr]
        assert main(["reshard", model, "--step"]) == 0
    capsys.readouterr()

    def interrupted(self: Any, raw: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(ScanJob, "_handle", interrupted)
    assert main(["reshard", model, "--step"]) == 130  # Ctrl-C in the return's backfill
    err = capsys.readouterr().err
    assert "the return of an aborted change, phase backfill" in err
    assert f"resume with: shardmodel reshard {model}   (every step of the return; or" in err
    monkeypatch.undo()
    assert main(["reshard", model]) == 0  # no --to: every step of the return, to done
    out = capsys.readouterr().out
    assert out.rstrip().splitlines()[-1].startswith("swept: every item is back under 16 shards")
    state = Reshard(Reading).status()
    assert state is not None and state.returning and state.change.startswith("32 -> 16")
    assert main(["reshard", "tests.migration_models:Reading", "--finish"]) == 0
    at_declared_keys(Reading, {seq: f"v{seq}" for seq in range(30)})


# -- the one new transition, every interleaving -------------------------------------

#: Two processes on one table (HashShards(2) on the sort key): the change grows it to 3.
ABORT_CASE = Case(_pair("AbortGrow", "il-abort-grow", lambda: HashShards(2, on="seq")), 3)


class AbortWorld(World):
    """The interleavings' world where the change is aborted in read_new: the processes
    stand one in the change's swept done, the other in its return's prepare."""

    def _build(self, behind: Phase, ahead: Phase, present: bool) -> Snapshot:
        self.started(present)
        while self.phase != Phase.READ_NEW:
            self.advance(0, 1)
        self.operator.abort()
        while self.phase != Phase.DONE:
            self.advance(0, 1)
        self.sweep()
        self.sync(0, 1)
        state_behind = self.state.scan()
        self.advance(1)  # the return's prepare, which only process 1 has seen
        assert self.operator.status().returning  # type: ignore[union-attr]
        return Snapshot(tuple(self.main.scan()), tuple(state_behind), tuple(self.state.scan()))


def _return_run(world: AbortWorld, kinds: tuple[str, str], present: bool, plan: Plan) -> Any:
    lag = (Phase.DONE, Phase.PREPARE)
    world.start(lag, present)
    table = world.models[0].Meta.table_name
    made = [_operation(kind, world.models[p], p) for p, kind in enumerate(kinds)]
    scheduler = Scheduler(plan, frozenset({table}), {table: ("sensor", "seq")})
    undo = scheduled(world.clients(), scheduler)
    try:
        run = scheduler.run({p: operation for p, (operation, _) in enumerate(made)})
    finally:
        undo()
    outcomes = _outcomes(run, [record for _, record in made], "i" if present else None, kinds)
    state = (lag, world.tables_now())
    observed = world.verified.get(state)
    if observed is None:
        observed = _observed(world, 0)
        expected = _expected(world.case, observed)
        for process in (0, 1):
            _check(world, process, expected, "after the operations")
        world.sync(0, 1)
        while world.phase != Phase.DONE:  # the return, to its done
            phase = world.advance(0, 1)
            assert _observed(world, 0) == observed, f"the outcome changed in {phase.value}"
        world.sweep()
        _check(world, 0, expected, "after the return's sweep")
        for raw in _raw_items(world.models[0]):  # each live item once, at its old key
            assert not set(raw) & set(MARKERS), raw
            assert int(raw["sensor"]["S"].rsplit("#", 1)[1]) < 2, raw
        world.verified[state] = observed
    assert observed in outcomes, f"{observed!r} is no order {outcomes} of the writes in {run}"
    return run


@pytest.fixture(scope="module")
def abort_world() -> Iterator[AbortWorld]:
    with mock_dynamodb():
        bind_models(ABORT_CASE.models, host=None)
        create_tables([ABORT_CASE.models[0]])
        yield AbortWorld(ABORT_CASE)
        for model in ABORT_CASE.models:
            unfollow(model)


_WRITES = ["overwrite", "update", "delete"]


@pytest.mark.parametrize(
    ("kinds", "present"),
    [
        *((pair, True) for pair in itertools.product(_WRITES, _WRITES)),
        *(
            (pair, False)
            for pair in [("create", "create"), ("create", "delete"), ("delete", "create")]
        ),
    ],
    ids=lambda value: "+".join(value) if isinstance(value, tuple) else str(value),
)
def test_every_interleaving_across_the_start_of_the_return(
    abort_world: AbortWorld, kinds: tuple[str, str], present: bool
) -> None:
    """One process in the aborted change's swept done, the other in its return's prepare:
    every order of two operations' requests on one item ends as one order of their
    writes, which both read, which stays through the return, stored once at its old key."""
    runs = list(every_schedule(lambda plan: _return_run(abort_world, kinds, present, plan)))
    assert len(runs) > 1
