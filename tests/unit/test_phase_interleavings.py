"""Every interleaving of two processes' requests during a shard count change (exhaustive).

Two processes (two model classes on one table) follow one migration; one may lag the
other by a phase (the settle time allows no more). For every phase, both processes in it
or the second one a phase ahead, for every pair of operations on one item (create,
overwrite, update, delete; the backfill or cleanup job itself where the phase has one)
and for every order of their requests (:mod:`tests.interleavings` lets one request
through at a time), the test then checks:

* linearizable: the item's value is the outcome of some order of the operations'
  logical steps (a read at its one request, a write anywhere from its first request to
  its last) in which every read saw what it really returned, as one DynamoDB item;
* both processes' get, batch_get, query and count agree on that outcome, and keep
  agreeing in every later phase through ``done``;
* at ``done`` each live item is stored once, under its key in the new layout.

Counter models run increments (plain and with a token, a token reused by the other
process being a retry) and check the summed total the same way.

A query cursor taken before or in any phase is resumed in every later phase (counter
models included): each item once, in order.

"""

from __future__ import annotations

import itertools
import json
import os
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from attrs import define, frozen
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import (
    CounterAttribute,
    HashShards,
    RandomShards,
    ShardedKeyAttribute,
    ShardedModel,
)
from shardmodel.keyspace.phases import MARKERS
from shardmodel.migration import PHASES, Phase, Reshard, follow, unfollow
from shardmodel.migration.reshard import JOBS
from shardmodel.testing import SimulatedClock, bind_models, create_tables, mock_dynamodb
from tests.interleavings import Plan, Run, Scheduler, every_schedule, scheduled
from tests.tier import STRESS, run_seed

pytestmark = pytest.mark.slow

#: The logical key every item is under; the item the operations contend for; a bystander.
KEY = "k"
TARGET = 5
BYSTANDER = 2


def _pair(name: str, table: str, strategy: Callable[[], Any], counter: bool = False) -> Any:
    """Two model classes of one table: the two processes (each with its own random source)."""
    models = []
    for process in (0, 1):
        meta = type("Meta", (), {"table_name": table, "region": "us-east-1"})
        namespace: dict[str, Any] = {
            "__module__": __name__,
            "__qualname__": f"{name}{process}",
            "Meta": meta,
            "sensor": ShardedKeyAttribute(
                hash_key=True, strategy=strategy(), rng=random.Random(process)
            ),
            "seq": NumberAttribute(range_key=True),
            "value": UnicodeAttribute(null=True),
        }
        if counter:
            namespace["views"] = CounterAttribute(default=0)
        models.append(type(f"{name}{process}", (ShardedModel,), namespace))
    return tuple(models)


@frozen
class Case:
    """One migration: the two processes' models, the new count (or the HashShards a
    strategy swap moves to), and whether counters."""

    models: tuple[Any, Any]
    to: int | HashShards
    counter: bool = False

    @property
    def count(self) -> int:
        return self.to.n if isinstance(self.to, HashShards) else self.to


CASES = {
    "grow hash 2 -> 3": Case(_pair("HashGrow", "il-hash-grow", lambda: HashShards(2, on="seq")), 3),
    "shrink hash 3 -> 2": Case(
        _pair("HashShrink", "il-hash-shrink", lambda: HashShards(3, on="seq")), 2
    ),
    "grow random 2 -> 3": Case(_pair("RandomGrow", "il-random-grow", lambda: RandomShards(2)), 3),
    "shrink random 3 -> 2": Case(
        _pair("RandomShrink", "il-random-shrink", lambda: RandomShards(3)), 2
    ),
    # the target item's new shard is beyond the old ones (md5 of "5" % 5 is 3): an item
    # born there is fenced on both old shards, and the first returns it to a scan ...
    "swap random 2 -> hash 5": Case(
        _pair("RandomSwap", "il-random-swap", lambda: RandomShards(2)), HashShards(5, on="seq")
    ),
    # ... and with three old shards, a new-key write fences the other two (one batch read)
    "swap random 3 -> hash 3": Case(
        _pair("RandomSwapThree", "il-random-swap-three", lambda: RandomShards(3)),
        HashShards(3, on="seq"),
    ),
    "grow counters 2 -> 3": Case(
        _pair("CounterGrow", "il-counter-grow", lambda: RandomShards(2), counter=True), 3, True
    ),
}

#: The cases whose every lag ``make test`` runs (one operation pair per lag, a different
#: one at each lag), beside :data:`DRAWN` cases drawn from all of them by the run's seed
#: (printed in the header; ``SHARDMODEL_SEED`` replays a draw); ``make stress``
#: (SHARDMODEL_STRESS=1) runs every case. Shrinking hash shards and growing random ones
#: (no item moves) repeat the rules these three exercise.
EVERY_RUN = ["grow counters 2 -> 3", "grow hash 2 -> 3", "shrink random 3 -> 2"]
EXHAUSTIVE = STRESS or os.environ.get("SHARDMODEL_EXHAUSTIVE") == "1"
#: ... and of the strategy swap, the lags where an old-key writer meets the backfill and
#: a new-key writer (the fences of every old shard): every write beside the backfill job,
#: and every create.
SWAP = "swap random 3 -> hash 3"
SWAP_LAGS = [(Phase.DUAL_WRITE, Phase.BACKFILL), (Phase.BACKFILL, Phase.READ_NEW)]
#: How many more cases ``make test`` draws from the whole set, interleavings and cursors.
DRAWN = 16

#: The phases a process can be in while the other is in the same one or the next.
LAGS = list(
    dict.fromkeys(
        (phase, PHASES[min(number + step, len(PHASES) - 1)])
        for number, phase in enumerate(PHASES)
        for step in (0, 1)
    )
)


# -- the operations and their logical meaning ------------------------------------------


@define
class Done:
    """What one operation did: the value its read returned (if it read), what it wrote."""

    read: bool = False
    seen: Any = None
    wrote: bool = False
    value: Any = None


def _operation(kind: str, model: Any, process: int) -> tuple[Callable[[], None], Done]:
    """The operation ``kind`` of ``process`` on the target item, and its record."""
    done = Done()
    mark = f"{kind[0]}{process}"

    def load() -> Any:
        done.read = True
        try:
            item = model.get(KEY, TARGET, consistent_read=True)
        except model.DoesNotExist:
            return None
        done.seen = item.value
        return item

    def run() -> None:
        if kind == "create":
            model(sensor=KEY, seq=TARGET, value=mark).save()
        elif kind == "increment":
            model.add(KEY, TARGET, views=1 + process)
        elif kind == "tokened":
            model.add(KEY, TARGET, token="t", views=10)
        else:
            item = load()
            if item is None:
                return
            if kind == "overwrite":
                item.value = mark
                item.save()
            elif kind == "update":
                item.update(actions=[model.value.set(mark)])
            elif kind == "delete":
                item.delete()
                done.wrote, done.value = True, None
                return
        done.wrote, done.value = True, mark

    return run, done


def _outcomes(run: Run, records: Sequence[Done], initial: Any, kinds: Sequence[str]) -> set[Any]:
    """The item's values some linearization of the operations ends with.

    Each operation's read takes effect at its one request; its write at one moment from
    its first request after the read to its last. A valid order keeps real time (a step
    that ended before another began comes first) and has every read return what it
    really returned: the item behaves as one DynamoDB item would, though a write may reach
    it through two keys.
    """
    spans: dict[int, list[int]] = {}
    for position, step in enumerate(run.steps):
        spans.setdefault(step.process, []).append(position)
    steps: list[tuple[int, str, int, int]] = []  # (process, read or write, first, last)
    for process, done in enumerate(records):
        if kinds[process] == "job":
            continue
        mine = spans.get(process, [])
        if done.read and mine:
            steps.append((process, "read", mine[0], mine[0]))
        rest = mine[1:] if done.read else mine
        if done.wrote and rest:
            steps.append((process, "write", rest[0], rest[-1]))
    outcomes: set[Any] = set()
    for order in itertools.permutations(steps):
        at = {step: number for number, step in enumerate(order)}
        if any(a[3] < b[2] and at[a] > at[b] for a in steps for b in steps):
            continue  # a step that ended before another began comes first
        value, valid = initial, True
        for process, what, _, _ in order:
            if what == "read" and records[process].seen != value:
                valid = False
                break
            if what == "write":
                value = records[process].value
        if valid:
            outcomes.add(value)
    assert outcomes, f"no linearization explains what the reads returned: {run}"
    return outcomes


# -- one run --------------------------------------------------------------------------


def _raw_items(model: Any) -> list[dict[str, Any]]:
    client = model._get_connection().connection.client
    found: list[dict[str, Any]] = client.scan(TableName=model.Meta.table_name, ConsistentRead=True)[
        "Items"
    ]
    return found


class Table:
    """One table's items as a run last saw them, so a restore writes only what differs."""

    def __init__(self, model: Any, keys: Sequence[str]) -> None:
        self.model = model
        self.keys = tuple(keys)
        self.known: list[dict[str, Any]] | None = None

    def scan(self) -> list[dict[str, Any]]:
        self.known = _raw_items(self.model)
        return self.known

    def make(self, items: Sequence[dict[str, Any]]) -> None:
        """Make the table hold exactly ``items`` (raw): delete, then put what differs."""
        client = self.model._get_connection().connection.client
        table = self.model.Meta.table_name
        now = {self._id(raw): raw for raw in (self.scan() if self.known is None else self.known)}
        wanted = {self._id(raw): raw for raw in items}
        for ident, raw in now.items():
            if ident not in wanted:
                client.delete_item(TableName=table, Key={k: raw[k] for k in self.keys})
        for ident, raw in wanted.items():
            if now.get(ident) != raw:
                client.put_item(TableName=table, Item=raw)
        self.known = list(items)

    def _id(self, raw: dict[str, Any]) -> str:
        return json.dumps([raw[k] for k in self.keys], sort_keys=True)


@frozen
class Snapshot:
    """The tables as a setup left them: main items, and the state behind and ahead."""

    items: tuple[Any, ...]
    behind: tuple[Any, ...]
    ahead: tuple[Any, ...]


class World:
    """The tables, both processes following the migration, and the operator.

    Setting up a phase pair takes a dozen phase changes and scans; it is done once per
    pair of operations and kept as a :class:`Snapshot` that every schedule starts from.
    """

    def __init__(self, case: Case) -> None:
        self.case = case
        self.clock = SimulatedClock(start=1_700_000_000.0)
        self.models = case.models
        self.watches = [follow(m, cache_seconds=10**9, clock=self.clock) for m in self.models]
        self.operator = Reshard(self.models[0], clock=self.clock)
        self.operator.store.ensure_table()
        self.state_model = self.operator.store.items()
        self.phase = Phase.PREPARE
        self.main = Table(self.models[0], ("sensor", "seq"))
        self.state = Table(self.state_model, ("id",))
        self._views: tuple[Any, ...] | None = None  # the setup both processes' views are of
        self._snapshots: dict[tuple[Any, ...], Snapshot] = {}
        #: the outcome every read showed to the end, by the state the operations left
        self.verified: dict[tuple[Any, ...], Any] = {}

    def tables_now(self) -> tuple[frozenset[str], frozenset[str]]:
        """The main table's and the state table's items (progress without its clock)."""
        items = frozenset(json.dumps(raw, sort_keys=True) for raw in self.main.scan())
        states = []
        for raw in self.state.scan():
            body = json.loads(raw["body"]["S"])
            body.pop("updated_at", None)  # a checkpoint's wall clock time
            states.append(json.dumps([raw["id"], body], sort_keys=True))
        return items, frozenset(states)

    def sync(self, *processes: int) -> None:
        """The processes read the migration state again (the views no longer a setup's)."""
        self._views = None
        for process in processes:
            self.watches[process].refresh()

    def advance(self, *synced: int) -> Phase:
        """Finish this phase's job, wait out the settle time, advance; sync ``synced``."""
        self.main.known = self.state.known = self._views = None
        if self.phase in JOBS:
            self.operator.run_job(page_size=10)
        self.clock.advance(1)
        self.phase = self.operator.advance().phase
        self.sync(*synced)
        return self.phase

    def sweep(self) -> None:
        """At done, once it settled: the sweep deletes the tombstones."""
        self.main.known = self.state.known = self._views = None
        self.clock.advance(1)
        self.operator.run_job(page_size=10)

    def clients(self) -> list[Any]:
        found = [m._get_connection().connection.client for m in self.models]
        found.append(self.state_model._get_connection().connection.client)
        return list({id(c): c for c in found}.values())

    def start(self, lag: tuple[Phase, Phase], present: bool) -> None:
        """Both processes in ``lag``'s phases, the item written before the start or not."""
        behind, ahead = lag
        found = self._snapshots.get((lag, present))
        if found is None:
            found = self._snapshots[(lag, present)] = self._build(behind, ahead, present)
        if self._views != (lag, present):
            self.state.make(found.behind)
            self.sync(0, 1)
            if ahead != behind:
                self.state.make(found.ahead)
                self.sync(1)
        self._views = (lag, present)
        self.state.make(found.ahead)
        self.main.make(found.items)
        for process, model in enumerate(self.models):
            model.sensor.rng.seed(process)
        self.phase = ahead

    def started(self, present: bool) -> None:
        """Empty tables, the bystander (and the item, if ``present``), the change started
        and seen by both processes."""
        self.main.make([])
        self.state.make([])
        self._views = None
        self.sync(0, 1)
        model = self.models[0]
        if self.case.counter:
            if present:
                model.add(KEY, TARGET, views=5)
        else:
            model(sensor=KEY, seq=BYSTANDER, value="b").save()
            if present:
                _aim_last_shard(model)
                model(sensor=KEY, seq=TARGET, value="i").save()
        self.phase = self.operator.start(self.case.to, settle_seconds=1).phase
        self.main.known = self.state.known = None
        self.sync(0, 1)

    def _build(self, behind: Phase, ahead: Phase, present: bool) -> Snapshot:
        self.started(present)
        while self.phase != behind:
            self.advance(0, 1)
        state_behind = self.state.scan()
        if ahead != behind:
            self.advance(1)
        return Snapshot(tuple(self.main.scan()), tuple(state_behind), tuple(self.state.scan()))


def _aim_last_shard(model: Any) -> None:
    """Make a random key's next pick its last shard (when shrinking: a retired one)."""
    strategy = model.sensor.layout.strategies[0]
    if isinstance(strategy, RandomShards):
        seed = next(
            s for s in itertools.count() if random.Random(s).randrange(strategy.n) == strategy.n - 1
        )
        model.sensor.rng.seed(seed)


def _expected(case: Case, outcome: Any) -> dict[int, Any]:
    if case.counter:
        return {} if not outcome else {TARGET: outcome}
    found = {BYSTANDER: "b"}
    if outcome is not None:
        found[TARGET] = outcome
    return found


def _observed(world: World, process: int) -> Any:
    """The target's value (a counter's total) as ``process`` reads it now."""
    model = world.models[process]
    try:
        item = model.get(KEY, TARGET, consistent_read=True)
    except model.DoesNotExist:
        return 0 if world.case.counter else None
    return item.views if world.case.counter else item.value


def _check(world: World, process: int, expected: dict[int, Any], when: str) -> None:
    """get, batch_get, query and count of ``process`` see exactly ``expected``."""
    model = world.models[process]
    where = f"process {process} ({when})"
    field = "views" if world.case.counter else "value"
    listed = [(i.seq, getattr(i, field)) for i in model.query(KEY)]
    assert listed == sorted(expected.items()), f"{where}: query {listed}"
    assert model.count(KEY) == len(expected), f"{where}: count"
    keys = [(KEY, TARGET)] if world.case.counter else [(KEY, TARGET), (KEY, BYSTANDER)]
    batch = {i.seq: getattr(i, field) for i in model.batch_get(keys)}
    assert batch == expected, f"{where}: batch_get {batch}"
    scanned = sorted((i.seq, getattr(i, field)) for i in model.scan())
    assert scanned == sorted(expected.items()), f"{where}: scan {scanned}"
    if not world.case.counter:
        value = _observed(world, process)
        assert value == expected.get(TARGET), f"{where}: get = {value!r}"


def _left_over(world: World, expected: dict[int, Any]) -> None:
    """After the sweep: every live item stored once, under a key of the new layout, and
    no tombstone or bookkeeping left."""
    raw = _raw_items(world.models[0])
    for item in raw:
        assert not set(item) & set(MARKERS), f"{item} still carries a migration marker"
        shard = int(item["sensor"]["S"].rsplit("#", 1)[1])
        assert shard < world.case.count, f"{item} is on a shard the new layout does not have"
        if isinstance(world.case.to, HashShards):  # a swap: on the shard its sort key hashes to
            assert world.case.to.shard_of([item["seq"]["N"]]) == shard, item
    if not world.case.counter:
        assert sorted(int(i["seq"]["N"]) for i in raw) == sorted(expected), raw


def _initial(case: Case, present: bool) -> Any:
    if case.counter:
        return 5 if present else 0
    return "i" if present else None


def _counter_total(kinds: Sequence[str], initial: int) -> int:
    """The total after the increments: a token reused by the other process counts once."""
    plain = sum(1 + process for process, kind in enumerate(kinds) if kind == "increment")
    return initial + plain + (10 if "tokened" in kinds else 0)


def _one_run(
    world: World,
    lag: tuple[Phase, Phase],
    kinds: tuple[str, str],
    present: bool,
    plan: Plan,
) -> Run:
    """Set up, run the two operations in the order ``plan`` starts, check to the end."""
    case = world.case
    world.start(lag, present)
    table = world.models[0].Meta.table_name

    def job() -> None:
        if world.phase == Phase.DONE:
            world.clock.advance(1)  # the sweep waits until no process is in drain
        world.operator.run_job(page_size=1)

    made = [
        _operation(kind, world.models[p], p) if kind != "job" else (job, Done())
        for p, kind in enumerate(kinds)
    ]
    scheduler = Scheduler(plan, frozenset({table}), {table: ("sensor", "seq")})
    undo = scheduled(world.clients(), scheduler)
    try:
        run = scheduler.run({p: operation for p, (operation, _) in enumerate(made)})
    finally:
        undo()
    initial = _initial(case, present)
    if case.counter:
        outcomes = {_counter_total(kinds, initial)}
    else:
        outcomes = _outcomes(run, [record for _, record in made], initial, kinds)
    # what follows depends only on the tables and the two views (the phase pair): a
    # state some other schedule left was checked to the end already
    state = (lag, world.tables_now())
    observed = world.verified.get(state)
    if observed is None:
        observed = _observed(world, 0)
        _check_to_the_end(world, lag, observed)
        world.verified[state] = observed
    assert observed in outcomes, f"{observed!r} is no order {outcomes} of the writes in {run}"
    return run


def _check_to_the_end(world: World, lag: tuple[Phase, Phase], observed: Any) -> None:
    """Both processes agree on ``observed`` now and in every later phase; at done each
    live item is stored once, under its new key."""
    expected = _expected(world.case, observed)
    for process in (0, 1):
        _check(world, process, expected, f"after the operations in {lag}")
    world.sync(0, 1)
    while world.phase != Phase.DONE:  # both now see one phase: one reads for both
        phase = world.advance(0, 1)
        assert _observed(world, 0) == observed, f"the outcome changed in {phase.value}"
    _check(world, 0, expected, "at done")
    world.sweep()
    _check(world, 0, expected, "after the sweep")
    _left_over(world, expected)


def _pairs(case: Case, lag: tuple[Phase, Phase]) -> Iterator[tuple[tuple[str, str], bool]]:
    """The operation pairs (first process lags) and whether the item exists at the start."""
    if case.counter:
        kinds = ["increment", "tokened"]
        for pair in itertools.product(kinds, kinds):
            yield pair, True
        return
    writes = ["overwrite", "update", "delete"]
    for pair in itertools.product(writes, writes):
        yield pair, True
    hashed = isinstance(case.models[0].sensor.layout.strategies[0], HashShards)
    creates = [("create", "create")] if hashed else []
    for pair in [*creates, ("create", "delete"), ("delete", "create")]:
        yield pair, False
    if lag[1] in JOBS and (lag[1] != Phase.DONE or lag[0] == Phase.DONE):
        # the sweep starts once no process is in drain: never beside one
        for kind in [*writes, "create"]:
            yield (kind, "job"), kind != "create"


_WORLDS: dict[str, World] = {}


def _world(name: str) -> World:
    """One world per case for the module's tables (its setups are kept as snapshots)."""
    if name not in _WORLDS:
        _WORLDS[name] = World(CASES[name])
    return _WORLDS[name]


@pytest.fixture(scope="module")
def tables() -> Iterator[None]:
    """The cases' tables on in-process moto, for the whole module."""
    models = [m for case in CASES.values() for m in case.models]
    with mock_dynamodb():
        bind_models(models, host=None)
        create_tables([case.models[0] for case in CASES.values()])
        yield
        for model in models:
            unfollow(model)
        _WORLDS.clear()


def _interleaving_cases() -> Iterator[Any]:
    """Every case under ``make stress``; under ``make test`` the fixed slice (see
    :data:`EVERY_RUN`) and :data:`DRAWN` more drawn by the run's seed."""
    every = []
    chosen = []
    for name in sorted(CASES):
        case = CASES[name]
        for number, lag in enumerate(LAGS):
            pairs = list(_pairs(case, lag))
            for index, (kinds, present) in enumerate(pairs):
                ident = f"{name}-{lag[0].value}+{lag[1].value}-{'+'.join(kinds)}"
                param = pytest.param(name, lag, kinds, present, id=ident)
                every.append(param)
                rotated = name in EVERY_RUN and index == number % len(pairs)
                fenced = name == SWAP and lag in SWAP_LAGS and ("job" in kinds or "create" in kinds)
                if rotated or fenced:
                    chosen.append(param)
    if EXHAUSTIVE:
        return iter(every)
    return iter(_with_drawn(chosen, every))


def _with_drawn(chosen: list[Any], every: list[Any]) -> list[Any]:
    """``chosen`` and :data:`DRAWN` more of ``every``, drawn by the run's seed."""
    rest = [param for param in every if param not in chosen]
    drawn = random.Random(run_seed()).sample(rest, min(DRAWN, len(rest)))
    return chosen + sorted(drawn, key=every.index)


@pytest.mark.parametrize(("name", "lag", "kinds", "present"), list(_interleaving_cases()))
def test_every_interleaving_ends_in_one_order_that_stays(
    tables: None, name: str, lag: tuple[Phase, Phase], kinds: tuple[str, str], present: bool
) -> None:
    """Every order of two operations' requests ends as one order of their writes, which
    both processes read now, in every later phase, and stored once at done."""
    world = _world(name)
    runs = list(every_schedule(lambda plan: _one_run(world, lag, kinds, present, plan)))
    assert runs


# -- cursors across phases -----------------------------------------------------------

#: Where a cursor can be taken or resumed: before the migration starts, then each phase.
MOMENTS: list[Phase | None] = [None, *PHASES]
CURSOR_ITEMS = range(6)


def _cursor_run(world: World, taken: Phase | None, resumed: Phase | None, forward: bool) -> None:
    """A page taken at ``taken`` and the rest read at ``resumed``: every item once."""
    case = world.case
    model = world.models[0]
    world.main.make([])
    world.state.make([])
    world.sync(0, 1)
    for seq in CURSOR_ITEMS:
        if case.counter:
            model.add(KEY, seq, views=seq + 1)
        else:
            _aim_last_shard(model)
            model(sensor=KEY, seq=seq, value=f"v{seq}").save()
    world.main.known = None
    field = "views" if case.counter else "value"
    expected = [(seq, seq + 1 if case.counter else f"v{seq}") for seq in CURSOR_ITEMS]
    if not forward:
        expected.reverse()
    moments = iter(MOMENTS)
    now = next(moments)

    def reach(moment: Phase | None) -> None:
        nonlocal now
        while now != moment:
            now = next(moments)
            if now == Phase.PREPARE:
                world.phase = world.operator.start(case.to, settle_seconds=1).phase
                world.main.known = world.state.known = None
                world.sync(0, 1)
            else:
                world.advance(0, 1)

    reach(taken)
    page = model.query(KEY, limit=2, scan_index_forward=forward)
    seen = [(item.seq, getattr(item, field)) for item in page]
    cursor = page.last_evaluated_key
    assert cursor is not None
    reach(resumed)
    rest = model.query(KEY, last_evaluated_key=cursor, scan_index_forward=forward)
    got = seen + [(item.seq, getattr(item, field)) for item in rest]
    assert got == expected, f"taken {taken}, resumed {resumed}: {got}"


def _cursor_cases() -> Iterator[Any]:
    """Every case under ``make stress``; under ``make test``, of the :data:`EVERY_RUN`
    cases each moment's cursor resumed in the same moment and in the next (the direction
    turning with the moment), and :data:`DRAWN` more drawn by the run's seed."""
    every = []
    chosen = []
    for name in sorted(CASES):
        for number, taken in enumerate(MOMENTS):
            for resumed in MOMENTS[number:]:
                for forward in (True, False):
                    ident = (
                        f"{name}-{taken.value if taken else 'before'}-"
                        f"{resumed.value if resumed else 'before'}-"
                        f"{'ascending' if forward else 'descending'}"
                    )
                    param = pytest.param(name, taken, resumed, forward, id=ident)
                    every.append(param)
                    step = MOMENTS.index(resumed) - number
                    if name in EVERY_RUN and step <= 1 and forward == (number % 2 == step):
                        chosen.append(param)
    if EXHAUSTIVE:
        return iter(every)
    return iter(_with_drawn(chosen, every))


@pytest.mark.parametrize(("name", "taken", "resumed", "forward"), list(_cursor_cases()))
def test_a_cursor_taken_in_one_phase_resumes_in_any_later_one(
    tables: None, name: str, taken: Phase | None, resumed: Phase | None, forward: bool
) -> None:
    """A query's cursor, taken before or during a migration, resumes in any later phase:
    every item once, in order (counters summed), until the migration is finished."""
    _cursor_run(_world(name), taken, resumed, forward)
