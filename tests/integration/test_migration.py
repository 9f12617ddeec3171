"""A shard count change under concurrent load: writers, readers and the migration at once.

Runs on a moto server and on dynalite. Every phase is crossed while writers save, update
and delete, readers get, query and count, and a slow reader pages through a key with
cursors that cross phases; the backfill is killed mid-way and resumed once. A change
aborted mid-backfill or in read_new goes to done and back under the same load.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pytest

from shardmodel import OrderedShards
from shardmodel.migration import MigrationConflictError, Phase, Reshard, follow, unfollow
from shardmodel.migration import rules as watch_rules
from shardmodel.migration.reshard import JOBS
from shardmodel.testing import bind_models, dynalite_server
from tests.integration.conftest import CREDENTIALS, DYNALITE, empty_tables, unbind
from tests.migration_models import (
    CLICK_HASH,
    MIGRATION_MODELS,
    Click,
    ClickHashed,
    OrderedReading,
    Reading,
    Tagged,
    Views,
    WideClick,
    WideReading,
    WideTagged,
    redeployed,
    stranger,
)
from tests.tier import STRESS, stress_only

#: The load's size: ``make test`` moves items in every phase under a writer, a reader and
#: a pager on dynalite in seconds; ``make stress`` runs the full size on both servers.
KEYS = ("a", "b", "c") if STRESS else ("a", "b")


def drifted_boundaries() -> tuple[str, ...]:
    """OrderedReading's ranges redrawn from a sample that drifted: the stable items are
    few, the writers' many (each writer numbers from 1,000,000 times its number + 1)."""
    numbers = [*range(40), *range(1_000_001, 1_000_080), *range(2_000_001, 2_000_080)]
    sample = [f"{n:012d}" for n in numbers]
    return OrderedShards.from_sample(sample, shards=4, on="seq").boundaries


def _number(raw: dict[str, Any]) -> int:
    """A raw item's sort key as a number (stored as one, or as OrderedReading's digits)."""
    return int(raw["seq"].get("N") or raw["seq"]["S"])


STABLE = range(40) if STRESS else range(12)
#: Each writer numbers its items in its own range: the ledger tells items apart by key
#: and number, so two writers must never write the same number.
WRITER_SEQS = 1_000_000
#: Every phase lasts at least this long: above the processes' 0.2 s state cache. The
#: protocol also assumes no request outlives a settle time; on a loaded machine a thread
#: can stall longer than any fixed time, so the test's clock (SettleClock) makes each
#: settle also wait for the operations in flight.
SETTLE = 1.0 if STRESS else 0.5
#: The jobs' scan page: moto reads the whole table for every page of a segmented scan, so
#: a small page makes its migration minutes longer; 25 still gives each segment's backfill
#: a dozen pages to be killed after.
JOB_PAGE = 25 if STRESS else 5
#: A writer's pause between rounds: the table grows by two items a round, and readers
#: list whole keys, so unpaced writers outran a slow migration (24,000 items in 14 min).
WRITE_PAUSE = 0.1
#: Writers and readers of the load (each besides the pager).
WRITERS = READERS = 2 if STRESS else 1
#: The most a run may take on a loaded machine before the test gives up.
DEADLINE = 900.0


@pytest.fixture(params=["moto", "dynalite"])
def server(request: pytest.FixtureRequest) -> Iterator[str]:
    """The migration models bound to one server with fresh tables."""
    url = request.getfixturevalue(f"{request.param}_url")
    yield from _bound(url, str(request.param))


@pytest.fixture(params=["moto", "dynalite"])
def killable_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """Like ``server``, but the dynalite is the test's own.

    dynalite exits when a client's connection is reset mid-request, as a SIGKILLed
    process's is: the worker's shared dynalite (and every later test on it) would go.
    """
    if request.param == "moto":
        yield from _bound(request.getfixturevalue("moto_url"), "moto")
        return
    with dynalite_server(DYNALITE, timeout=120) as url:
        yield from _bound(url, "dynalite")


def _bound(url: str, name: str) -> Iterator[str]:
    bind_models(MIGRATION_MODELS, host=url, **CREDENTIALS)
    empty_tables(MIGRATION_MODELS, url)
    try:
        yield name
    finally:
        for model in MIGRATION_MODELS:
            unfollow(model)
            state = Reshard(model).store.items()
            if state.exists():
                state.delete_table()
        unbind(MIGRATION_MODELS)


class InFlight:
    """Counts each load thread's finished operations (a loop round, or a page)."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.done: dict[int, int] = {}
        self.threads: list[threading.Thread] = []

    def finished(self) -> None:
        with self.changed:
            ident = threading.get_ident()
            self.done[ident] = self.done.get(ident, 0) + 1
            self.changed.notify_all()

    def wait(self) -> None:
        """Until every live load thread has finished the operation it is in now."""
        deadline = time.monotonic() + DEADLINE
        with self.changed:
            before = {t.ident: self.done.get(t.ident or 0, 0) for t in self.threads}

            def passed() -> bool:
                return all(
                    not t.is_alive() or self.done.get(t.ident or 0, 0) > before[t.ident]
                    for t in self.threads
                )

            while not passed():
                assert time.monotonic() < deadline, "a load thread hung"
                self.changed.wait(0.1)


class SettleClock:
    """The system clock, whose sleeps also wait out every load operation in flight.

    The operator and the cleanup sleep a settle time so that no process still acts on a
    phase older than the current one; the operations in flight when it ends are waited
    for too, so the assumption holds however slowly the machine runs them.
    """

    def __init__(self, inflight: InFlight) -> None:
        self.inflight = inflight

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))
        self.inflight.wait()


class Ledger:
    """When each writer item's save and delete started and ended (monotonic seconds)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.saved: dict[tuple[str, int], tuple[float, float]] = {}
        self.deleted: dict[tuple[str, int], tuple[float, float | None]] = {}
        self.longest = 0.0  # the longest save or delete (both keys), against SETTLE

    def bounds(self, key: str, start: float, end: float) -> tuple[set[int], set[int]]:
        """Items surely present during [start, end], and items possibly present."""
        surely, possibly = set(STABLE), set(STABLE)
        with self.lock:
            for (k, seq), (s0, s1) in self.saved.items():
                if k != key:
                    continue
                d0, d1 = self.deleted.get((k, seq), (float("inf"), float("inf")))
                if s1 < start and d0 > end:
                    surely.add(seq)
                if s0 < end and (d1 is None or d1 > start):
                    possibly.add(seq)
        return surely, possibly


def writer(
    model: Any,
    number: int,
    ledger: Ledger,
    stop: threading.Event,
    errors: list[str],
    inflight: InFlight,
) -> None:
    rng = random.Random(number)
    mine: list[tuple[str, int]] = []
    serial = 0
    try:
        while not stop.is_set():
            key = rng.choice(KEYS)
            serial += 1
            seq = WRITER_SEQS * (number + 1) + serial  # each writer's own range
            assert serial < WRITER_SEQS, "a writer ran out of its sequence numbers"
            began = time.monotonic()
            with ledger.lock:
                ledger.saved[(key, seq)] = (began, float("inf"))
            model(sensor=key, seq=seq, value=f"w{number}").save()
            with ledger.lock:
                ledger.saved[(key, seq)] = (began, time.monotonic())
                ledger.longest = max(ledger.longest, time.monotonic() - began)
            mine.append((key, seq))
            if serial % 3 == 0:  # delete one of its own earlier items
                gone = mine.pop(rng.randrange(len(mine)))
                item = model.get(*gone)
                with ledger.lock:
                    ledger.deleted[gone] = (time.monotonic(), None)
                item.delete()
                with ledger.lock:
                    ledger.deleted[gone] = (ledger.deleted[gone][0], time.monotonic())
                    ledger.longest = max(ledger.longest, time.monotonic() - ledger.deleted[gone][0])
            if serial % 4 == 0:  # rewrite a stable item with the same value
                stable = model.get(rng.choice(KEYS), rng.choice(STABLE))
                stable.update(actions=[model.value.set("stable")])
            inflight.finished()
            time.sleep(WRITE_PAUSE)
    except Exception as error:  # reported by the test
        errors.append(f"writer {number}: {error!r}")


def reader(
    model: Any,
    number: int,
    ledger: Ledger,
    stop: threading.Event,
    errors: list[str],
    inflight: InFlight,
) -> None:
    rng = random.Random(100 + number)
    try:
        while not stop.is_set():
            key = rng.choice(KEYS)
            start = time.monotonic()
            seqs = [item.seq for item in model.query(key)]
            counted = model.count(key)
            got = model.get(key, rng.choice(STABLE))
            end = time.monotonic()
            surely, possibly = ledger.bounds(key, start, end)
            if len(seqs) != len(set(seqs)):
                errors.append(f"reader {number}: query of {key} returned duplicates")
            if not surely <= set(seqs) <= possibly:
                errors.append(
                    f"reader {number}: query of {key} missed {sorted(surely - set(seqs))} "
                    f"or returned deleted {sorted(set(seqs) - possibly)}"
                )
            if not len(surely) <= counted <= len(possibly):
                errors.append(
                    f"reader {number}: count {counted} not in [{len(surely)}, {len(possibly)}]"
                )
            if got.value != "stable":
                errors.append(f"reader {number}: get returned {got.value!r}")
            inflight.finished()
    except Exception as error:
        errors.append(f"reader {number}: {error!r}")


def pager(
    model: Any, stop: threading.Event, errors: list[str], pages: list[int], inflight: InFlight
) -> None:
    """Pages through key 'a' five items at a time, slowly, so cursors cross phases."""
    try:
        while not stop.is_set():
            token, seen = None, []
            while True:
                page = model.query("a", limit=5, last_evaluated_key=token)
                seen.extend(item.seq for item in page)
                token = page.last_evaluated_key
                pages.append(1)
                inflight.finished()
                if token is None:
                    break
                time.sleep(0.3)
            stable = [s for s in seen if s in STABLE]
            if stable != list(STABLE) or len(seen) != len(set(seen)):
                errors.append(
                    f"pager: stable items {stable} (duplicates: {len(seen) - len(set(seen))})"
                )
    except Exception as error:
        errors.append(f"pager: {error!r}")


class Killed(Exception):
    """The backfill process dies."""


def kill_at(page: int) -> Any:
    """A fault hook that kills the scan after its ``page``-th page."""
    seen = {"pages": 0}

    def fault(point: str) -> None:
        seen["pages"] += point == "page"
        if seen["pages"] == page:
            raise Killed(f"killed after page {page}")

    return fault


def migrate(
    model: Any,
    to: int,
    phases: list[Phase],
    errors: list[str],
    clock: SettleClock,
    when: list[float] | None = None,
) -> None:
    """Every phase, killing the backfill once mid-way and resuming it.

    ``when``: the monotonic time each phase began, in step with ``phases``.
    """
    when = [] if when is None else when
    try:
        operator = Reshard(model, clock=clock)
        state = operator.start(to, settle_seconds=SETTLE, segments=2)
        when.append(time.monotonic())
        phases.append(state.phase)
        killed = False
        while state.phase != Phase.DONE:
            clock.sleep(operator.settle_left(state))
            if state.phase in JOBS:
                if not killed:
                    with pytest.raises(Killed):
                        operator.run_job(segment=0, page_size=JOB_PAGE, fault=kill_at(2))
                    killed = True  # resumed from segment 0's checkpoint below
                operator.run_job(page_size=JOB_PAGE)
            state = operator.advance()
            when.append(time.monotonic())
            phases.append(state.phase)
        clock.sleep(operator.settle_left(state))  # the sweep waits until no process drains
        operator.run_job(page_size=JOB_PAGE)
    except Exception as error:
        errors.append(f"migration: {error!r}")


def diagnose(
    model: Any, errors: list[str], ledger: Ledger, phases: list[Phase], when: list[float]
) -> str:
    """For items a reader returned after their delete: their copies and their timeline."""
    seqs = sorted(
        {
            int(n)
            for e in errors
            for n in re.findall(r"deleted \[([\d, ]+)\]", e)
            for n in n.split(",")
        }
    )
    client = model._get_connection().connection.client
    raw = client.scan(TableName=model.Meta.table_name, ConsistentRead=True)["Items"]

    def phase_at(moment: float | None) -> str:
        if moment is None:
            return "?"
        started = [p.value for p, t in zip(phases, when, strict=False) if t <= moment]
        return started[-1] if started else "before"

    lines = []
    for seq in seqs[:3]:
        copies = [(i["sensor"]["S"], sorted(i)) for i in raw if _number(i) == seq]
        saved = [v for (k, q), v in ledger.saved.items() if q == seq]
        gone = [v for (k, q), v in ledger.deleted.items() if q == seq]
        lines.append(
            f"{seq}: copies now {copies}; saved in {[phase_at(a) for a, _ in saved]}, delete "
            f"began in {[phase_at(a) for a, _ in gone]} ended in {[phase_at(b) for _, b in gone]}"
        )
    return "; ".join(lines)


def under_load(
    model: Any, operate: Callable[[list[str], SettleClock], None], progress: list[Any]
) -> tuple[Ledger, list[str], list[int]]:
    """Stable items in every key, then two writers, two readers and a pager on ``model``
    while ``operate(errors, clock)`` changes its layout on a thread of its own.

    Returns the ledger, every error, and the pager's pages once the load has stopped.
    ``progress``: what ``operate`` reached, for the message if it does not finish.
    """
    with model.batch_write() as batch:
        for key in KEYS:
            for seq in STABLE:
                batch.save(model(sensor=key, seq=seq, value="stable"))
    follow(model, cache_seconds=0.2)
    # and a writer and a reader of the same table whose code never calls follow() (another
    # service, a cron job): before the table knew its layout, such a writer left 2,663 of
    # its 9,118 writes at old keys
    other = stranger(model, cache_seconds=0.2)
    ledger, stop, errors, inflight = Ledger(), threading.Event(), [], InFlight()
    pages: list[int] = []
    work = (ledger, stop, errors, inflight)
    load = [
        *(threading.Thread(target=writer, args=(model, i, *work)) for i in range(WRITERS)),
        *(threading.Thread(target=reader, args=(model, i, *work)) for i in range(READERS)),
        threading.Thread(target=writer, args=(other, WRITERS, *work)),
        threading.Thread(target=reader, args=(other, READERS, *work)),
        threading.Thread(target=pager, args=(model, stop, errors, pages, inflight)),
    ]
    inflight.threads = load
    with mock.patch.object(watch_rules, "changes_made_here", lambda table_name: 0):
        for thread in load:
            thread.start()
        migration = threading.Thread(target=operate, args=(errors, SettleClock(inflight)))
        migration.start()
        migration.join(DEADLINE)
        stop.set()
        for thread in load:
            thread.join(DEADLINE)
    assert not migration.is_alive(), f"the migration did not finish in {DEADLINE}s: {progress}"
    return ledger, errors, pages


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "to"),
    [
        (Reading, 32),
        pytest.param(WideReading, 16, marks=stress_only("the grow crosses every phase")),
        pytest.param(
            OrderedReading, drifted_boundaries(), marks=stress_only("the grow crosses every phase")
        ),
    ],
    ids=["grow", "shrink", "ordered"],
)
def test_a_migration_under_load_loses_and_duplicates_nothing(
    server: str, model: Any, to: Any
) -> None:
    """Every phase crossed under writes, deletes, updates, reads and paging cursors.

    Nothing is lost, returned twice or returned after its delete ended, and at the end
    each item is at its new key only.
    """
    if server == "moto" and not STRESS:
        pytest.skip("make stress runs it on moto's server (minutes there): dynalite here")
    if server == "moto" and model is OrderedReading:
        pytest.skip("about 3 minutes on moto: OrderedShards boundaries change on dynalite")
    if server == "moto" and model is Reading:
        # A run takes about three minutes on the moto server. The shrink runs there; the
        # grow, the same protocol in the other direction, runs on dynalite.
        #
        # The shrink on moto was skipped for returning a deleted item (1 failure in 10
        # reruns), blamed on moto's non-atomic conditional writes. Nothing tied the two:
        # a delete landing inside that gap of the backfill's writes does not come back
        # (test_a_delete_inside_moto_s_conditional_write_gap_does_not_come_back in
        # tests/unit/test_migration.py), and the failures were recorded before the fix
        # of a write that re-read the phase between its requests, which returned deleted
        # items on every server (test_a_write_spanning_a_phase_change_follows_the_phase_
        # it_began_in). On the current code 9 shrink runs on moto passed. A failure
        # prints each returned item's copies and the phases of its save and delete.
        pytest.skip("about 3 minutes on moto: the shrink runs on moto, the grow on dynalite")
    phases: list[Phase] = []
    when: list[float] = []
    ledger, errors, pages = under_load(
        model, lambda errors, clock: migrate(model, to, phases, errors, clock, when), phases
    )
    # the phase rules assume no operation spans more than SETTLE (one phase of lag)
    assert errors == [], (
        f"longest write {ledger.longest:.1f}s (settle {SETTLE}s); "
        f"{diagnose(model, errors, ledger, phases, when)}; {errors[:5]}"
    )
    assert phases == list(Phase)
    assert len(pages) > 10
    unfollow(model)  # the code now declares the new count: read with the new layout only
    count, declares = (to, f"{to}") if isinstance(to, int) else (len(to), f"the {len(to)} new")
    with pytest.raises(MigrationConflictError, match=f"deploy the code that declares {declares}"):
        Reshard(model).finish()
    Reshard(redeployed(model, to)).finish()
    client = model._get_connection().connection.client
    raw = client.scan(TableName=model.Meta.table_name, ConsistentRead=True)["Items"]
    for item in raw:
        assert int(item["sensor"]["S"].rsplit("#", 1)[1]) < count, item
        if not isinstance(to, int):  # on the range its number falls in
            assert OrderedShards(to, on="seq").shard_of(item["seq"]["S"]) == int(
                item["sensor"]["S"].rsplit("#", 1)[1]
            ), item
    expected = {(key, seq) for key in KEYS for seq in STABLE} | {
        k for k in ledger.saved if k not in ledger.deleted
    }
    assert {(i["sensor"]["S"].rsplit("#", 1)[0], _number(i)) for i in raw} == expected
    assert len(raw) == len(expected)  # no copy left behind


def migrate_and_abort(
    model: Any, to: int, abort_in: Phase, passed: list[str], errors: list[str], clock: SettleClock
) -> None:
    """Every phase to ``abort_in`` (in backfill: segment 0 killed mid-way, the other left
    to do), --abort, then the change and its return to done, the jobs run as they come."""
    try:
        operator = Reshard(model, clock=clock)
        state = operator.start(to, settle_seconds=SETTLE, segments=2)
        passed.append(state.phase.value)
        while state.phase != abort_in:
            clock.sleep(operator.settle_left(state))
            if state.phase in JOBS:
                operator.run_job(page_size=JOB_PAGE)
            state = operator.advance()
            passed.append(state.phase.value)
        if abort_in in JOBS:
            with pytest.raises(Killed):
                operator.run_job(segment=0, page_size=JOB_PAGE, fault=kill_at(2))
        operator.abort()
        states = operator.resume(page_size=JOB_PAGE)
        next(states)  # the phase it was aborted in
        for state in states:
            passed.append(("back:" if state.returning else "") + state.phase.value)
    except Exception as error:
        errors.append(f"migration: {error!r}")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "to", "abort_in"),
    [
        (Reading, 32, Phase.BACKFILL),
        pytest.param(
            WideReading,
            16,
            Phase.READ_NEW,
            marks=stress_only("the grow aborted mid-backfill crosses every phase and back"),
        ),
    ],
    ids=["grow-aborted-in-backfill", "shrink-aborted-in-read_new"],
)
def test_an_aborted_change_under_load_returns_and_loses_nothing(
    server: str, model: Any, to: int, abort_in: Phase
) -> None:
    """Aborted mid-backfill (a segment killed) or in read_new, under writers, readers and a
    paging cursor: the change goes to done and back; nothing is lost, repeated or returned
    after its delete, and at the end each item is once at its key in the declared layout,
    with --finish from the code that never changed."""
    if server == "moto":
        # moto's server reads the whole table for every page of a segmented scan, and an
        # aborted change runs sixteen phases' scans: over 15 minutes on a loaded machine.
        # The same aborts run on in-process moto in tests/unit/test_abort.py.
        pytest.skip("over 15 minutes on moto's server: dynalite here, moto in the unit tests")
    passed: list[str] = []
    ledger, errors, pages = under_load(
        model,
        lambda errors, clock: migrate_and_abort(model, to, abort_in, passed, errors, clock),
        passed,
    )
    assert errors == [], f"longest write {ledger.longest:.1f}s (settle {SETTLE}s); {errors[:5]}"
    every = [p.value for p in Phase]
    assert passed == every + [f"back:{p}" for p in every]
    assert len(pages) > 10
    Reshard(model).finish()  # the code never changed
    count = int(model.sensor.layout.strategies[0].n)
    client = model._get_connection().connection.client
    raw = client.scan(TableName=model.Meta.table_name, ConsistentRead=True)["Items"]
    for item in raw:
        assert set(item) == {"sensor", "seq", "value"}, item  # no tombstone, no marker
        assert int(item["sensor"]["S"].rsplit("#", 1)[1]) < count, item
    expected = {(key, seq) for key in KEYS for seq in STABLE} | {
        k for k in ledger.saved if k not in ledger.deleted
    }
    assert {(i["sensor"]["S"].rsplit("#", 1)[0], _number(i)) for i in raw} == expected
    assert len(raw) == len(expected)
    for key in KEYS:  # and the declared layout alone finds them
        unfollow(model)
        assert sorted(i.seq for i in model.query(key)) == sorted(s for k, s in expected if k == key)


def test_a_backfill_process_killed_mid_way_resumes(killable_server: str) -> None:
    """SIGKILL the CLI's backfill after a few checkpoints; a second run finishes it."""
    if killable_server == "dynalite":
        # dynalite exits when a client's connection is reset mid-request (reproduced by
        # hand: half a request body, then a reset), and a SIGKILL mid-page does that, so
        # the server is gone before the resume (seen on a fresh clone with its own
        # dynalite). The kill-and-resume on dynalite is the under-load test's (a fault
        # at a page boundary) and test_backfill_resumes_after_a_crash_at_any_point's.
        pytest.skip("dynalite exits on a connection reset mid-request; SIGKILL runs on moto")
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    with Reading.batch_write() as batch:
        for seq in range(400):
            batch.save(Reading(sensor="k", seq=seq, value=str(seq)))
    follow(Reading, cache_seconds=0)
    operator = Reshard(Reading)
    operator.start(32, settle_seconds=0)
    operator.advance()
    operator.advance()  # backfill
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "AWS_ACCESS_KEY_ID": CREDENTIALS["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": CREDENTIALS["aws_secret_access_key"],
        "AWS_DEFAULT_REGION": CREDENTIALS["region"],
    }
    command = [sys.executable, "-m", "shardmodel", "reshard", "tests.migration_models:Reading"]
    command += ["--segments", "1", "--segment", "0", "--page-size", "2"]
    command += ["--host", Reading.Meta.host]
    process = subprocess.Popen(command, env=env, cwd=root, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    progress, _ = operator.store.segment("backfill", 1, 0)
    while progress.scanned < 20 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
        progress, _ = operator.store.segment("backfill", 1, 0)
    process.send_signal(signal.SIGKILL)
    process.wait(60)
    assert process.returncode == -signal.SIGKILL
    progress, _ = operator.store.segment("backfill", 1, 0)
    assert 20 <= progress.scanned < 400 and not progress.done
    (resumed,) = operator.run_job(page_size=50)
    assert resumed.done and resumed.scanned >= 400
    for _ in operator.steps(32, settle_seconds=0):
        assert Reading.count("k") == 400
    assert [i.seq for i in Reading.query("k")] == list(range(400))
    client = Reading._get_connection().connection.client
    raw = client.scan(TableName=Reading.Meta.table_name, ConsistentRead=True)["Items"]
    assert len(raw) == 400 and all(int(i["sensor"]["S"].rsplit("#", 1)[1]) < 32 for i in raw)


def test_index_reads_and_counters_through_every_phase(server: str) -> None:
    """A model with a plain and a sharded index, and a counter model, each grow 16 -> 32."""
    reference = {seq: "red" if seq % 2 else "blue" for seq in range(10)}
    for seq, color in reference.items():
        Tagged(sensor="k", seq=seq, color=color, team="t").save()
    for _ in range(10):
        Views.add("p", views=1)
    total = 10
    for model in (Tagged, Views):
        follow(model, cache_seconds=0)
    fresh = iter(range(100, 1000))
    for model in (Tagged, Views):
        for state in Reshard(model).steps(32, settle_seconds=0, page_size=4):
            if model is Views:
                Views.add("p", views=2)
                Views.add("p", views=3, token=state.phase.value)
                Views.add("p", views=3, token=state.phase.value)  # a retry
                total += 5
                assert Views.get("p", consistent_read=True).views == total, state.phase
                assert Views.count("p") == 1
                continue
            seq = next(fresh)
            Tagged(sensor="k", seq=seq, color="red", team="t").save()
            reference[seq] = "red"
            victim = min(reference)
            Tagged.get("k", victim).delete()
            del reference[victim]
            red = sorted(s for s, c in reference.items() if c == "red")
            assert [i.seq for i in Tagged.by_color.query("red")] == red, state.phase
            assert Tagged.count("red", index_name="by-color") == len(red)
            assert [i.seq for i in Tagged.by_team.query("t")] == sorted(reference), state.phase
            assert Tagged.count("t", index_name="by-team") == len(reference)
    client = Tagged._get_connection().connection.client
    raw = client.scan(TableName=Tagged.Meta.table_name, ConsistentRead=True)["Items"]
    assert sorted(int(i["seq"]["N"]) for i in raw) == sorted(reference)  # no copy left


def test_a_random_shrink_through_every_phase(server: str) -> None:
    """RandomShards 32 -> 16: retired shards move to shard mod 16, nothing lost or doubled."""
    reference = {seq: "v" for seq in range(20)}
    for seq in reference:
        WideClick(sensor="k", seq=seq, value="v").save()
    follow(WideClick, cache_seconds=0)
    fresh = iter(range(100, 1000))
    for state in Reshard(WideClick).steps(16, settle_seconds=0, page_size=4):
        seq = next(fresh)
        WideClick(sensor="k", seq=seq, value=state.phase.value).save()
        reference[seq] = state.phase.value
        victim = min(reference)
        WideClick.get("k", victim).delete()
        del reference[victim]
        item = WideClick.get("k", max(s for s in reference if s < 100))
        item.update(actions=[WideClick.value.set(state.phase.value)])
        reference[item.seq] = state.phase.value
        got = {i.seq: i.value for i in WideClick.query("k")}
        assert got == reference, state.phase
        assert WideClick.count("k") == len(reference)
        assert WideClick.get("k", item.seq).value == state.phase.value
    client = WideClick._get_connection().connection.client
    raw = client.scan(TableName=WideClick.Meta.table_name, ConsistentRead=True)["Items"]
    assert sorted(int(i["seq"]["N"]) for i in raw) == sorted(reference)
    assert all(int(i["sensor"]["S"].rsplit("#", 1)[1]) < 16 for i in raw)


def test_random_shards_swapped_for_hash_shards_through_every_phase(server: str) -> None:
    """RandomShards(16) -> HashShards(8, on=seq), written by a process declaring each:
    every read exact in every phase; at the end each item once, where its hash says."""
    if server == "moto" and not STRESS:
        pytest.skip("make stress runs it on moto's server too (25 s there): dynalite here")
    bind_models([ClickHashed], host=Click.Meta.host, **CREDENTIALS)
    try:
        reference = {seq: "v" for seq in range(20)}
        for seq in reference:
            Click(sensor="k", seq=seq, value="v").save()
        follow(Click, cache_seconds=0)
        follow(ClickHashed, cache_seconds=0)
        fresh = iter(range(100, 1000))
        for state in Reshard(Click).steps(CLICK_HASH, settle_seconds=0, page_size=4):
            for writer in (Click, ClickHashed):
                seq = next(fresh)
                writer(sensor="k", seq=seq, value=state.phase.value).save()
                reference[seq] = state.phase.value
                victim = min(reference)
                writer.get("k", victim).delete()
                del reference[victim]
                item = writer.get("k", max(s for s in reference if s < 100))
                item.update(actions=[writer.value.set(f"{state.phase.value} {writer.__name__}")])
                reference[item.seq] = item.value
            for reader in (Click, ClickHashed):
                got = {i.seq: i.value for i in reader.query("k")}
                assert got == reference, state.phase
                assert reader.count("k") == len(reference)
                assert sorted((i.seq, i.value) for i in reader.scan()) == sorted(reference.items())
                batch = reader.batch_get([("k", s) for s in reference])
                assert {i.seq: i.value for i in batch} == reference, state.phase
        Reshard(ClickHashed).finish()
        unfollow(ClickHashed)
        assert {i.seq: i.value for i in ClickHashed.query("k")} == reference
        client = Click._get_connection().connection.client
        raw = client.scan(TableName=Click.Meta.table_name, ConsistentRead=True)["Items"]
        assert sorted(int(i["seq"]["N"]) for i in raw) == sorted(reference)
        for row in raw:
            assert int(row["sensor"]["S"].rsplit("#", 1)[1]) == CLICK_HASH.shard_of(
                [row["seq"]["N"]]
            )
    finally:
        unfollow(ClickHashed)
        unbind([ClickHashed])


@pytest.mark.xfail(strict=True, reason="moto checks a condition and writes without a lock")
def test_moto_conditional_writes_are_not_atomic(moto_url: str) -> None:
    """Two concurrent creates of one key (attribute_not_exists): DynamoDB lets one win.

    moto's Table.put_item reads the current item, evaluates the condition, then stores
    the new one, with no lock between: a server that takes a moment between the two
    (here: its item lookup pauses) lets both creates pass their condition.
    """
    import boto3
    from moto.dynamodb.models.table import Table

    settings = {**CREDENTIALS, "region_name": CREDENTIALS["region"]}
    del settings["region"]
    client = boto3.client("dynamodb", endpoint_url=moto_url, **settings)
    client.create_table(
        TableName="moto-atomicity",
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    lookup = Table.get_item
    both = threading.Barrier(2)
    created: list[int] = []

    def slow_lookup(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = lookup(self, *args, **kwargs)
        time.sleep(1.0)  # a slow server: the other request runs meanwhile
        return found

    def create(writer: int) -> None:
        mine = boto3.client("dynamodb", endpoint_url=moto_url, **settings)
        both.wait()
        try:
            mine.put_item(
                TableName="moto-atomicity",
                Item={"k": {"S": "one"}, "writer": {"N": str(writer)}},
                ConditionExpression="attribute_not_exists(k)",
            )
            created.append(writer)
        except mine.exceptions.ConditionalCheckFailedException:
            pass

    Table.get_item = slow_lookup  # type: ignore[method-assign]
    try:
        threads = [threading.Thread(target=create, args=(w,)) for w in (1, 2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        Table.get_item = lookup  # type: ignore[method-assign]
        client.delete_table(TableName="moto-atomicity")
    assert len(created) == 1, f"both conditional creates succeeded: writers {created}"


#: The reads whose cursors are taken and resumed: table or index, filtered or not.
CURSOR_READS: dict[str, Any] = {
    "table": lambda m, **kw: m.query("k", **kw),
    "table filtered": lambda m, **kw: m.query("k", filter_condition=m.color == "red", **kw),
    "index": lambda m, **kw: m.by_team.query("t", **kw),
    "index filtered": lambda m, **kw: m.by_team.query("t", filter_condition=m.color == "red", **kw),
}


@pytest.mark.slow
@pytest.mark.parametrize(("model", "to"), [("grow", 32), ("shrink", 16)])
def test_cursors_resume_in_every_later_phase_and_scans_see_each_item_once(
    server: str, model: str, to: int
) -> None:
    """A cursor of each read taken before the start and in every phase is resumed in every
    later phase through done (and after the sweep): the rest of the items, each once, in
    order. A scan in every phase returns every live item once with its current value."""
    if model == "shrink" and not STRESS:
        pytest.skip("make stress runs the shrink (84 s on moto's server): the grow runs here")
    if server == "moto" and not STRESS:
        pytest.skip("make stress runs it on moto's server too (81 s there): dynalite here")
    kind = Tagged if model == "grow" else WideTagged
    values = {seq: "v0" for seq in range(24)}
    for seq in values:
        kind(sensor="k", seq=seq, value="v0", color="red" if seq % 3 else "blue", team="t").save()
    follow(kind, cache_seconds=0)
    taken: list[tuple[str, str, bool, Any, list[int]]] = []  # (moment, read, forward, ...)

    def expected(read: str, forward: bool) -> list[int]:
        seqs = [s for s in sorted(values) if read.endswith("table") or read == "index" or s % 3]
        return seqs if forward else seqs[::-1]

    def take(moment: str) -> None:
        for read, query in CURSOR_READS.items():
            for forward in (True, False):
                page = query(kind, limit=5, scan_index_forward=forward)
                first = [item.seq for item in page]
                assert first == expected(read, forward)[:5], (moment, read, forward)
                taken.append((moment, read, forward, page.last_evaluated_key, first))

    def resume_all(moment: str) -> None:
        for when, read, forward, cursor, first in taken:
            rest = [
                i.seq
                for i in CURSOR_READS[read](
                    kind, last_evaluated_key=cursor, scan_index_forward=forward
                )
            ]
            assert first + rest == expected(read, forward), (when, moment, read, forward)

    def scan_all(moment: str) -> None:
        scanned = sorted((i.seq, i.value) for i in kind.scan())
        assert scanned == sorted(values.items()), moment
        segments = [
            (i.seq, i.value) for part in range(3) for i in kind.scan(segment=part, total_segments=3)
        ]
        assert sorted(segments) == sorted(values.items()), moment

    take("before")
    for state in Reshard(kind).steps(to, settle_seconds=0, page_size=5):
        moment = state.phase.value
        changed = 5 + len(taken) % 7  # an update in every phase: scans see current values
        kind.get("k", changed).update(actions=[kind.value.set(moment)])
        values[changed] = moment
        resume_all(moment)
        scan_all(moment)
        take(moment)
    resume_all("after the sweep")
    scan_all("after the sweep")
    client = kind._get_connection().connection.client
    raw = client.scan(TableName=kind.Meta.table_name, ConsistentRead=True)["Items"]
    assert sorted(int(i["seq"]["N"]) for i in raw) == sorted(values)  # no tombstone left
