"""Running two processes' operations one request at a time, in every order that differs.

A :class:`Scheduler` runs each process's operation on a thread of its own and lets
exactly one request through at a time, at botocore's ``before-send`` event (which the
lean path emits too, so point reads are scheduled like writes). Which waiting process
goes next is the schedule's choice (a :class:`Plan`, followed by a :class:`Chooser`).

:func:`every_schedule` explores the orders by stateless model checking with dynamic
partial-order reduction and sleep sets (Flanagan and Godefroid, POPL 2005): two requests
that touch different items (or only read) give the same state and answers in either
order, so only the order of requests that do not commute matters. After each run, every
race (a request and an earlier one of the other process it does not commute with, with
no chain of conflicts between them) marks a point where the other order must be tried
too. A process whose next request was already explored at a point, and commutes with
what runs instead, sleeps until a request it does not commute with runs: so two finished
runs are never the same order of conflicting requests. A run in which every waiting
process sleeps repeats an explored one; it is finished unchecked (``Run.blocked``).

A process is the thread its operation runs on; requests from any other thread (a merged
query's workers, the test's own checks) pass unscheduled.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from attrs import define, frozen

__all__ = ["Chooser", "Plan", "Run", "Scheduler", "Step", "every_schedule", "scheduled"]

_UNIQUE_ID = "tests-interleavings"
#: A process neither requesting nor finishing for this long is stuck (a lock held by the
#: process whose request waits its turn); generous, so a loaded machine never trips it.
DEADLOCK_SECONDS = 120
_READS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan"})
#: What a Query or Scan touches: every item of its table.
_EVERY_ITEM = "*"


@frozen
class Step:
    """One request: by which process, which operation, on which table's which items."""

    process: int
    operation: str
    table: str
    items: frozenset[str]

    @property
    def reads(self) -> bool:
        return self.operation in _READS

    def commutes(self, other: Step) -> bool:
        """True when running the two in either order leaves the same state and answers."""
        if self.table != other.table or (self.reads and other.reads):
            return True
        if _EVERY_ITEM in self.items or _EVERY_ITEM in other.items:
            return False
        return not self.items & other.items


@frozen
class Plan:
    """Where a run goes: the processes to let through first, one request each, and the
    processes asleep after them."""

    prefix: tuple[int, ...] = ()
    asleep: frozenset[int] = frozenset()


@frozen
class Run:
    """What one schedule did: the steps in order, at each who waited with what and who
    slept, and where every waiting process slept (the rest repeats an explored order)."""

    steps: tuple[Step, ...]
    waiting: tuple[Mapping[int, Step], ...]
    asleep: tuple[frozenset[int], ...]
    blocked_at: int | None = None

    @property
    def order(self) -> tuple[int, ...]:
        return tuple(step.process for step in self.steps)

    @property
    def blocked(self) -> bool:
        return self.blocked_at is not None


class Chooser:
    """Picks the next process of a run: the plan's prefix, then the lowest awake one.

    After the prefix, a sleeping process wakes when a request it does not commute with
    runs. When every waiting process sleeps, the run is blocked: it goes on with the
    lowest waiting process, as a repeat of an explored order.
    """

    def __init__(self, plan: Plan) -> None:
        self._plan = plan
        self._asleep = set(plan.asleep)
        self.steps: list[Step] = []
        self.waiting: list[Mapping[int, Step]] = []
        self.asleep: list[frozenset[int]] = []
        self.blocked_at: int | None = None

    def choose(self, ready: Mapping[int, Step]) -> int:
        """The process to let through now, of those ``ready`` (each with its request)."""
        position = len(self.steps)
        prefix = self._plan.prefix
        asleep = frozenset()
        if position < len(prefix):
            choice = prefix[position]
            if choice not in ready:  # pragma: no cover - a run that is not replayable
                raise AssertionError(
                    f"schedule {prefix}: process {choice} is not waiting at step {position} "
                    f"(waiting: {sorted(ready)}); the operations are not deterministic"
                )
        else:
            asleep = frozenset(self._asleep)
            awake = [p for p in ready if p not in asleep]
            if not awake and self.blocked_at is None:
                self.blocked_at = position
            choice = min(awake or ready)
            chosen = ready[choice]
            self._asleep = {
                q for q in self._asleep if q != choice and q in ready and ready[q].commutes(chosen)
            }
        self.steps.append(ready[choice])
        self.waiting.append(dict(ready))
        self.asleep.append(asleep)
        return choice

    def run(self) -> Run:
        return Run(tuple(self.steps), tuple(self.waiting), tuple(self.asleep), self.blocked_at)


class Scheduler:
    """Lets one request through at a time, as a :class:`Chooser` of ``plan`` picks.

    Args:
        plan: the processes to let through first, and those asleep after them.
        tables: the tables whose requests are scheduled (others pass at once, e.g. a
            migration's state table, whose requests no other process contends for).
        keys: per table, the key attribute names (what a PutItem's item is known by).
    """

    def __init__(
        self, plan: Plan, tables: frozenset[str], keys: Mapping[str, Sequence[str]]
    ) -> None:
        self._chooser = Chooser(plan)
        self._tables = tables
        self._keys = keys
        self._cond = threading.Condition()
        self._owner: dict[int, int] = {}
        self._waiting: dict[int, Step] = {}
        self._finished: set[int] = set()
        self._granted: int | None = None

    def before_send(self, request: Any = None, event_name: str = "", **_: Any) -> None:
        """botocore's ``before-send``: wait for this process's turn (None: send as usual)."""
        process = self._owner.get(threading.get_ident())
        if process is None:
            return
        step = self._step(process, event_name.rsplit(".", 1)[-1], request)
        if step is None:
            return
        with self._cond:
            self._waiting[process] = step
            self._cond.notify_all()
            while self._granted != process:
                self._cond.wait()
            self._granted = None
            del self._waiting[process]

    def _step(self, process: int, operation: str, request: Any) -> Step | None:
        try:
            body = json.loads(getattr(request, "body", b"") or b"{}")
        except ValueError:
            return None
        table = body.get("TableName") or next(iter(body.get("RequestItems") or {}), "")
        if table not in self._tables:
            return None
        names = self._keys.get(table, ())
        if operation in ("Query", "Scan"):
            items = [_EVERY_ITEM]
        elif operation == "PutItem":
            items = [_item_id({n: body["Item"][n] for n in names if n in body["Item"]})]
        elif operation == "BatchGetItem":
            items = [_item_id(key) for key in body["RequestItems"][table]["Keys"]]
        else:
            items = [_item_id(body.get("Key", {}))]
        return Step(process, operation, table, frozenset(items))

    def run(self, operations: Mapping[int, Callable[[], None]]) -> Run:
        """Run every process's operation to its end; raise the first error one raised."""
        errors: dict[int, BaseException] = {}

        def body(process: int, operation: Callable[[], None]) -> None:
            self._owner[threading.get_ident()] = process
            try:
                operation()
            except BaseException as error:  # re-raised in the test's thread
                errors[process] = error
            finally:
                with self._cond:
                    self._finished.add(process)
                    self._cond.notify_all()

        threads = [
            threading.Thread(target=body, args=(p, op), daemon=True) for p, op in operations.items()
        ]
        for thread in threads:
            thread.start()
        with self._cond:
            self._schedule(set(operations))
        for thread in threads:
            thread.join()
        for process in sorted(errors):
            raise errors[process]
        return self._chooser.run()

    def _schedule(self, processes: set[int]) -> None:
        while True:
            settled = self._cond.wait_for(
                lambda: (
                    self._granted is None
                    and all(p in self._waiting or p in self._finished for p in processes)
                ),
                timeout=DEADLOCK_SECONDS,
            )
            if not settled:  # pragma: no cover - a lock held across a request
                raise AssertionError(
                    f"after {DEADLOCK_SECONDS}s a process neither sent its next request nor "
                    f"finished (waiting: {sorted(self._waiting)}, finished: "
                    f"{sorted(self._finished)}): it waits for something another holds"
                )
            ready = dict(self._waiting)
            if not ready:
                return
            self._granted = self._chooser.choose(ready)
            self._cond.notify_all()


def _item_id(key: Mapping[str, Any]) -> str:
    return json.dumps(key, sort_keys=True)


def scheduled(clients: Sequence[Any], scheduler: Scheduler) -> Callable[[], None]:
    """Route ``clients``' requests through ``scheduler``; returns the undo."""
    for client in clients:
        events = client.meta.events
        events.register_first("before-send.dynamodb", scheduler.before_send, unique_id=_UNIQUE_ID)

    def undo() -> None:
        for client in clients:
            client.meta.events.unregister("before-send.dynamodb", unique_id=_UNIQUE_ID)

    return undo


@define
class _Point:
    """A point of the explored tree: who waited with what, who slept, what to try."""

    waiting: Mapping[int, Step]
    asleep: frozenset[int]
    explored: set[int]
    backtrack: set[int]


def every_schedule(run: Callable[[Plan], Run]) -> Iterator[Run]:
    """One run of every order of the processes' conflicting requests.

    ``run(plan)`` runs one schedule (a :class:`Scheduler` of ``plan``). Runs are yielded
    unless blocked; a blocked run repeats an explored order and needs no check.
    """
    points: dict[tuple[int, ...], _Point] = {}
    plan: Plan | None = Plan()
    while plan is not None:
        done = run(plan)
        if not done.blocked:
            yield done
        order = done.order
        end = len(order) if done.blocked_at is None else done.blocked_at
        for position in range(len(plan.prefix), end):
            chosen = {order[position]}
            points[order[:position]] = _Point(
                done.waiting[position], done.asleep[position], chosen, set(chosen)
            )
        for position, process in _races(done, end):
            point = points[order[:position]]
            point.backtrack |= {process} if process in point.waiting else set(point.waiting)
        plan = _next_plan(points, order, end)


def _races(done: Run, end: int) -> Iterator[tuple[int, int]]:
    """``(position, process)``: a request of ``process``, pending at some later point of
    the run (to ``end``), races with the request run at ``position``: another process's,
    conflicting, and no chain of conflicts or program order leads from it to
    ``process``'s requests before that point."""
    steps = done.steps[:end]
    before: list[set[int]] = []  # the positions that happen before each step, and itself
    last: dict[int, int] = {}  # each process's latest position so far
    for at in range(end + 1):
        pending = done.waiting[at] if at < len(done.waiting) else {}
        for process, request in pending.items():
            known = before[last[process]] if process in last else set()
            race = next(
                (
                    i
                    for i in range(at - 1, -1, -1)
                    if steps[i].process != process
                    and not steps[i].commutes(request)
                    and i not in known
                ),
                None,
            )
            if race is not None:
                yield race, process
        if at == end:
            break
        step = steps[at]
        mine = {at} | (before[last[step.process]] if step.process in last else set())
        for i in range(at):
            if not steps[i].commutes(step) and steps[i].process != step.process:
                mine |= before[i]
        before.append(mine)
        last[step.process] = at


def _next_plan(
    points: dict[tuple[int, ...], _Point], order: tuple[int, ...], end: int
) -> Plan | None:
    """The deepest point of this run with a process still to try (awake there)."""
    for position in range(end - 1, -1, -1):
        point = points[order[:position]]
        todo = sorted(point.backtrack - point.explored - point.asleep)
        if todo:
            process = todo[0]
            request = point.waiting[process]
            asleep = {
                q
                for q in point.asleep | point.explored
                if q in point.waiting and point.waiting[q].commutes(request)
            }
            point.explored.add(process)
            return Plan((*order[:position], process), frozenset(asleep))
    return None
