"""Interleavings of two processes, the phases and a crashing backfill (hypothesis).

Two processes read and write the same table; each sees the migration state only when
it syncs, so one may lag a phase behind (the settle time guarantees no more: a phase
advances only once every process has seen the current one). A process may also sync in
the middle of a write, right after its first request (a cache expiring then). The
backfill, cleanup and sweep run page by page and may crash between any two steps. After
every step each process's get, query (with a cursor resumed later), count, batch_get and
scan must return exactly the logical items.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardmodel import HashShards
from shardmodel.engine import sharding_of
from shardmodel.migration import COPY_MARKER, MOVE_MARKER, Phase, Reshard, follow, unfollow
from shardmodel.migration.reshard import JOBS
from shardmodel.testing import SimulatedClock, bind_models, create_tables, mock_dynamodb
from tests.migration_models import (
    Click,
    Reading,
    Tagged,
    Views,
    WideClick,
    WideReading,
)
from tests.tier import sized

pytestmark = pytest.mark.slow


class ReadingElsewhere(Reading):
    """Reading as a second process sees it."""


class WideReadingElsewhere(WideReading):
    """WideReading as a second process sees it."""


class ClickElsewhere(Click):
    """Click as a second process sees it."""


class WideClickElsewhere(WideClick):
    """WideClick as a second process sees it."""


class TaggedElsewhere(Tagged):  # type: ignore[misc,valid-type]
    """Tagged (two global secondary indexes) as a second process sees it."""


class ViewsElsewhere(Views):
    """Views (counters) as a second process sees it."""


#: The strategy Click's RandomShards(16) is swapped for.
SWAP = HashShards(16, on="seq")

CASES = {
    "grow hash 16 -> 32": (Reading, ReadingElsewhere, 32),
    "shrink hash 32 -> 16": (WideReading, WideReadingElsewhere, 16),
    "grow random 16 -> 32": (Click, ClickElsewhere, 32),
    # a strategy swap (a process declaring the new strategy reads and writes as one
    # declaring the old while it follows: tests/unit/test_strategy_swap.py runs both)
    "swap random 16 -> hash 16": (Click, ClickElsewhere, SWAP),
    # ... to more shards: an item born at a new shard beyond the old ones is fenced on all
    "swap random 16 -> hash 24": (Click, ClickElsewhere, HashShards(24, on="seq")),
}


def fields(model: Any, seq: int) -> dict[str, Any]:
    """The index attributes of an indexed model's item (none for the others)."""
    if not getattr(model, "_indexes", None):
        return {}
    return {"color": "red" if seq % 2 else "blue", "team": "t"}


SEQS = st.integers(min_value=0, max_value=11)
#: examples per case: 4 under make test, 18 under make stress (the deep profile)
EXAMPLES = sized(max(8, settings.default.max_examples // 8), 4)
#: the most steps an interleaving takes after the migration starts
STEPS_MAX = sized(25, 15)
# a phase advance is drawn often, so most runs cross several phases before finish()
PROCESS = st.integers(min_value=0, max_value=1)
STEPS = st.one_of(
    st.tuples(st.just("save"), PROCESS, SEQS),
    st.tuples(st.just("delete"), PROCESS, SEQS),
    st.tuples(st.just("update"), PROCESS, SEQS),
    st.tuples(st.just("sync"), PROCESS),
    st.tuples(st.just("advance")),
    st.tuples(st.just("advance")),
    st.tuples(st.just("scan"), st.integers(min_value=1, max_value=3), st.booleans()),
    st.tuples(st.just("page"), PROCESS),
    st.tuples(st.just("resume"), PROCESS),
    st.tuples(st.just("midsync"), PROCESS, SEQS, st.sampled_from(["save", "delete", "update"])),
)


class Killed(Exception):
    """The scan process dies."""


class Run:
    """One interleaving: the reference items, both processes and the operator."""

    def __init__(self, models: tuple[Any, Any], to: Any) -> None:
        self.clock = SimulatedClock(start=1_700_000_000.0)
        self.models = models
        self.to = to
        self.watches = [follow(m, cache_seconds=10**9, clock=self.clock) for m in models]
        self.operator = Reshard(models[0], clock=self.clock)
        self.reference: dict[int, str] = {}
        self.synced = [True, True]
        self.version = 0
        self.cursors: list[tuple[str, int, set[int]] | None] = [None, None]

    def start(self) -> None:
        self.operator.start(self.to, settle_seconds=1)
        self.sync(0)
        self.sync(1)

    def sync(self, process: int) -> None:
        self.watches[process].refresh()
        self.synced[process] = True

    def step(self, step: tuple[Any, ...]) -> None:
        kind = step[0]
        if kind == "save":
            _, process, seq = step
            self.version += 1
            model = self.models[process]
            if seq in self.reference:  # an overwrite of a loaded item (random keys need it)
                item = model.get("k", seq)
                item.value = f"v{self.version}"
            else:
                item = model(sensor="k", seq=seq, value=f"v{self.version}", **fields(model, seq))
            item.save()
            self.reference[seq] = f"v{self.version}"
        elif kind == "delete":
            _, process, seq = step
            if seq in self.reference:
                self.models[process].get("k", seq).delete()
                del self.reference[seq]
        elif kind == "update":
            _, process, seq = step
            if seq in self.reference:
                self.version += 1
                item = self.models[process].get("k", seq)
                item.update(actions=[self.models[process].value.set(f"u{self.version}")])
                self.reference[seq] = f"u{self.version}"
        elif kind == "sync":
            self.sync(step[1])
        elif kind == "advance":
            self.advance()
        elif kind == "scan":
            self.scan(pages=step[1], crash=step[2])
        elif kind == "page":
            process = step[1]
            page = self.models[process].query("k", limit=3)
            seen = [item.seq for item in page]
            token = page.last_evaluated_key
            self.cursors[process] = (
                None if token is None else (token, seen[-1], set(self.reference))
            )
        elif kind == "resume":
            self.resume(step[1])
        elif kind == "midsync":
            _, process, seq, write = step
            with self.synced_mid_write(process):
                self.step((write, process, seq))
        for process in (0, 1):
            self.check(process)

    @contextlib.contextmanager
    def synced_mid_write(self, process: int) -> Iterator[None]:
        """The process reads the migration state again right after a write's first request."""
        connection = self.models[process]._get_connection()
        names = ("put_item", "update_item", "delete_item")
        originals = {name: getattr(connection, name) for name in names}
        synced = {"done": False}

        def after(call: Any) -> Any:
            def run(*args: Any, **kwargs: Any) -> Any:
                result = call(*args, **kwargs)
                if not synced["done"]:
                    synced["done"] = True
                    self.sync(process)
                return result

            return run

        for name, call in originals.items():
            setattr(connection, name, after(call))
        try:
            yield
        finally:
            for name in names:
                delattr(connection, name)  # the class's methods again

    def advance(self) -> bool:
        state = self.operator.status()
        assert state is not None
        unfinished = any(not p.done for p in self.operator.job_progress(state))
        if state.phase == Phase.DONE or not all(self.synced) or unfinished:
            return False  # the settle rule: no process may lag two phases
        self.clock.advance(state.settle_seconds)
        self.operator.advance()
        self.synced = [False, False]
        return True

    def scan(self, pages: int, crash: bool) -> None:
        state = self.operator.status()
        assert state is not None
        if state.phase not in JOBS:
            return
        if state.phase == Phase.DONE:
            if not all(self.synced):
                return  # the sweep waits until no process is in drain
            self.clock.advance(self.operator.settle_left(state))
        seen = {"pages": 0}

        def fault(point: str) -> None:
            seen["pages"] += point == "page"
            if crash and seen["pages"] == pages:
                raise Killed

        with contextlib.suppress(Killed):
            self.operator.run_job(page_size=2, fault=fault)

    def resume(self, process: int) -> None:
        cursor = self.cursors[process]
        if cursor is None:
            return
        self.cursors[process] = None
        token, last, then = cursor
        rest = [item.seq for item in self.models[process].query("k", last_evaluated_key=token)]
        assert rest == sorted(set(rest)), "a resumed cursor returned an item twice"
        assert set(rest) <= {s for s in self.reference if s > last}, "a deleted item returned"
        assert {s for s in then if s in self.reference and s > last} <= set(rest), "one missed"

    def check(self, process: int) -> None:
        model = self.models[process]
        got = [(item.seq, item.value) for item in model.query("k")]
        assert got == sorted(self.reference.items()), f"process {process} query"
        assert model.count("k") == len(self.reference), f"process {process} count"
        for seq in (0, 5, 11):  # one-key gets; batch_get below reads every key
            try:
                value = model.get("k", seq).value
            except model.DoesNotExist:
                value = None
            assert value == self.reference.get(seq), f"process {process} get {seq}"
        batch = {item.seq: item.value for item in model.batch_get([("k", s) for s in range(12)])}
        assert batch == self.reference, f"process {process} batch_get"
        scanned = sorted((item.seq, item.value) for item in model.scan())
        assert scanned == sorted(self.reference.items()), f"process {process} scan"
        if getattr(model, "_indexes", None):
            red = sorted(s for s in self.reference if s % 2)
            assert [i.seq for i in model.by_color.query("red")] == red, f"process {process} red"
            assert model.count("red", index_name="by-color") == len(red)
            team = [(i.seq, i.value) for i in model.by_team.query("t")]
            assert team == sorted(self.reference.items()), f"process {process} index by-team"

    def finish(self) -> None:
        """Drive the migration to its end; nothing may be left on an old key."""
        while True:
            self.sync(0)
            self.sync(1)
            self.scan(pages=0, crash=False)
            if not self.advance():
                break
            self.check(0)
            self.check(1)
        state = self.operator.status()
        assert state is not None and state.phase == Phase.DONE
        self.scan(pages=0, crash=False)  # the sweep
        self.check(0)
        self.check(1)
        self.left_over()

    def left_over(self) -> None:
        """After the sweep: each item once, on a key of the new layout, no tombstone left."""
        client = self.models[0]._get_connection().connection.client
        raw = client.scan(TableName=self.models[0].Meta.table_name, ConsistentRead=True)["Items"]
        assert not [i for i in raw if MOVE_MARKER in i or COPY_MARKER in i], "a marker left"
        assert sorted(int(i["seq"]["N"]) for i in raw) == sorted(self.reference)
        shards = [int(i["sensor"]["S"].rsplit("#", 1)[1]) for i in raw]
        if isinstance(self.to, HashShards):  # a swap: each on the shard its sort key hashes to
            assert shards == [self.to.shard_of([i["seq"]["N"]]) for i in raw]
        else:
            assert all(shard < self.to for shard in shards)


def interleave(first: Any, second: Any, to: Any, before: list[Any], steps: list[Any]) -> None:
    """Run one interleaving of two processes of ``first``'s table to ``to`` shards."""
    with mock_dynamodb():
        bind_models([first, second], host=None)
        create_tables([first])
        try:
            run = (CounterRun if sharding_of(first).spec.counters else Run)((first, second), to)
            for step in before:  # written before the migration starts
                run.step(step)
            run.start()
            for step in steps:
                run.step(step)
            run.finish()
        finally:
            for model in (first, second):
                unfollow(model)


@pytest.mark.parametrize("case", sorted(CASES))
# The exhaustive test covers the phase rules; this one, long sequences with crashes
# (more under the ci profile).
@settings(max_examples=EXAMPLES)
@given(
    before=st.lists(st.tuples(st.just("save"), st.just(0), SEQS), max_size=8),
    steps=st.lists(STEPS, min_size=5, max_size=STEPS_MAX),
)
def test_every_interleaving_returns_exactly_the_logical_items(
    case: str, before: list[Any], steps: list[Any]
) -> None:
    first, second, to = CASES[case]
    interleave(first, second, to, before, steps)


class CounterRun(Run):
    """Increments (some tokened, some retried) instead of saves; reads sum the shards."""

    def __init__(self, models: tuple[Any, Any], to: Any) -> None:
        super().__init__(models, to)
        self.total = 0
        self.tokens: dict[str, int] = {}

    def step(self, step: tuple[Any, ...]) -> None:
        kind = step[0]
        if kind in ("save", "update", "delete"):
            _, process, seq = step
            token = None if kind == "save" else f"t{seq}"  # a token's reuse is a retry
            self.models[process].add("p", views=seq + 1, token=token)
            if token is None or token not in self.tokens:
                self.total += seq + 1
                if token is not None:
                    self.tokens[token] = seq + 1
        elif kind == "page" or kind == "resume":
            pass
        else:
            super().step(step)
            return
        for process in (0, 1):
            self.check(process)

    def check(self, process: int) -> None:
        model = self.models[process]
        try:
            views = model.get("p").views
        except model.DoesNotExist:
            views = 0
        assert views == self.total, f"process {process} get"
        assert [i.views for i in model.query("p")] == ([self.total] if self.total else [])
        assert model.count("p") == (1 if self.total else 0), f"process {process} count"

    def left_over(self) -> None:
        """Counter items are not copied: nothing to look for."""


# the newer kinds, fewer and shorter interleavings each (index and counter reads cost
# more per check); run with HYPOTHESIS_PROFILE=deep and a larger max_examples to dig
@pytest.mark.parametrize(
    ("first", "second", "to"),
    [
        (Tagged, TaggedElsewhere, 32),
        (Views, ViewsElsewhere, 32),
        (WideClick, WideClickElsewhere, 16),
    ],
    ids=["indexes", "counters", "shrink random"],
)
@settings(max_examples=max(2, EXAMPLES // 4))
@given(
    before=st.lists(st.tuples(st.just("save"), st.just(0), SEQS), max_size=4),
    steps=st.lists(STEPS, min_size=5, max_size=12),
)
def test_newer_kinds_in_every_interleaving(
    first: Any, second: Any, to: Any, before: list[Any], steps: list[Any]
) -> None:
    interleave(first, second, to, before, steps)
