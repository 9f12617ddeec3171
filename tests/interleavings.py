"""Running two processes' operations one request at a time, in every order that differs.

A :class:`Scheduler` runs each process's operation on a thread of its own and lets
exactly one request through at a time, at botocore's ``before-send`` event (which the
lean path emits too, so point reads are scheduled like writes). Which waiting process
goes next is the schedule's choice.

:func:`every_schedule` explores the orders by stateless model checking with dynamic
partial-order reduction: two requests that touch different items (or only read) give
the same state and answers in either order, so only the order of requests that do not
commute matters. After each run, for every request, the last earlier request of the
other process it does not commute with marks a point where the other order must be
tried too; each such point becomes a prefix to replay, until none is left.

A process is the thread its operation runs on; requests from any other thread (a merged
query's workers, the test's own checks) pass unscheduled.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from attrs import frozen

__all__ = ["Run", "Scheduler", "Step", "every_schedule", "scheduled"]

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
class Run:
    """What one schedule did: the steps in order, and at each who waited with what."""

    steps: tuple[Step, ...]
    waiting: tuple[Mapping[int, Step], ...]

    @property
    def order(self) -> tuple[int, ...]:
        return tuple(step.process for step in self.steps)


class Scheduler:
    """Lets one request through at a time: ``prefix``'s choices, then the lowest waiting.

    Args:
        prefix: the processes to let through first, one request each.
        tables: the tables whose requests are scheduled (others pass at once, e.g. a
            migration's state table, whose requests no other process contends for).
        keys: per table, the key attribute names (what a PutItem's item is known by).
    """

    def __init__(
        self, prefix: Sequence[int], tables: frozenset[str], keys: Mapping[str, Sequence[str]]
    ) -> None:
        self._prefix = tuple(prefix)
        self._tables = tables
        self._keys = keys
        self._cond = threading.Condition()
        self._owner: dict[int, int] = {}
        self._waiting: dict[int, Step] = {}
        self._finished: set[int] = set()
        self._granted: int | None = None
        self._steps: list[Step] = []
        self._seen: list[Mapping[int, Step]] = []

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
        return Run(tuple(self._steps), tuple(self._seen))

    def _schedule(self, processes: set[int]) -> None:
        prefix = self._prefix
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
            position = len(self._steps)
            choice = prefix[position] if position < len(prefix) else min(ready)
            if choice not in ready:  # pragma: no cover - a run that is not replayable
                raise AssertionError(
                    f"schedule {prefix}: process {choice} is not waiting at step {position} "
                    f"(waiting: {sorted(ready)}); the operations are not deterministic"
                )
            self._steps.append(ready[choice])
            self._seen.append(ready)
            self._granted = choice
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


def every_schedule(run: Callable[[Sequence[int]], Run]) -> Iterator[Run]:
    """Every order of the processes' requests up to swapping commuting ones.

    ``run(prefix)`` runs one schedule: the processes in ``prefix`` first, one request
    each, then the lowest waiting process. A prefix is run once.
    """
    tried: set[tuple[int, ...]] = set()
    pending: list[tuple[int, ...]] = [()]
    while pending:
        prefix = pending.pop()
        if prefix in tried:
            continue
        done = run(prefix)
        yield done
        order = done.order
        for length in range(len(order) + 1):
            tried.add(order[:length])
        for later, step in enumerate(done.steps):
            race = next(
                (
                    earlier
                    for earlier in range(later - 1, -1, -1)
                    if done.steps[earlier].process != step.process
                    and not done.steps[earlier].commutes(step)
                ),
                None,
            )
            if race is not None and step.process in done.waiting[race]:
                branch = (*order[:race], step.process)
                if branch not in tried:
                    pending.append(branch)
