"""The worker threads every merged query and count of a process shares.

A query hands each shard request to these threads and receives it, finished, on a queue
of its own. Lighter per request than a ``ThreadPoolExecutor``: no ``Future`` (a
``Condition`` each), no waiter installed on every pending future at every wake, no
shutdown lock per submit; at 16 shards that bookkeeping was a fifth of a latest-100
read's caller-thread CPU. Threads start on demand, up to :data:`SHARED_WORKERS`, and then
stay: starting a thread waits for the GIL behind the others' work (milliseconds).

Inside an async call (:mod:`shardmodel.core.bridge`) :func:`workers` gives
:class:`LoopWorkers` instead: the same ``submit`` and replies, each call a task of the
running event loop (in a greenlet of its own), no thread. A sync query's executor may
choose :class:`DrivenLoopWorkers` (:func:`loop_fanout`): tasks of the calling thread's
kept loop (:mod:`shardmodel.core.thread_loop`), which it runs while it waits for a reply.
Set ``SHARDMODEL_SYNC_FANOUT=threads`` to keep sync callers on the threads.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import sys
import threading
from collections import deque
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, Generic, Protocol, TypeVar

from shardmodel.core.bridge import await_, call, has_greenlet, in_async
from shardmodel.core.thread_loop import run_until, thread_loop

__all__ = [
    "DRIVEN_WORKERS",
    "LOOP_WORKERS",
    "SHARED_WORKERS",
    "DrivenLoopWorkers",
    "LoopWorkers",
    "Replies",
    "Runner",
    "Task",
    "Workers",
    "loop_fanout",
    "shared_workers",
    "usable_here",
    "workers",
]

_R = TypeVar("_R")

#: The most threads the shared workers start.
SHARED_WORKERS = 64


class Replies(Protocol[_R]):
    """Where finished tasks arrive: ``SimpleQueue`` for threads, a loop queue for tasks."""

    def put(self, item: Task[_R]) -> None: ...

    def get(self) -> Task[_R]: ...

    def empty(self) -> bool: ...


class Task(Generic[_R]):
    """One call handed to the workers; put on its ``replies`` queue once, run or skipped."""

    __slots__ = ("args", "call", "cancelled", "context", "error", "replies", "result", "tag")

    def __init__(
        self,
        call: Callable[..., _R],
        args: tuple[Any, ...],
        replies: Replies[_R],
        tag: Any = None,
    ) -> None:
        self.call = call
        self.args = args
        self.replies = replies
        self.tag = tag  # the caller's: which request this is
        self.cancelled = False
        self.context: contextvars.Context | None = None  # a thread's task: the caller's
        self.result: _R | None = None
        self.error: BaseException | None = None

    def cancel(self) -> None:
        """Skip the call if no worker has started it yet (it is still put on ``replies``)."""
        self.cancelled = True

    def value(self) -> _R:
        """The call's result, or its exception raised here."""
        if self.error is not None:
            raise self.error
        return self.result  # type: ignore[return-value]


class Workers:
    """Daemon threads running :class:`Task` calls in the order they are submitted."""

    def __init__(self, limit: int, name: str) -> None:
        self._limit = limit
        self._name = name
        self._jobs: SimpleQueue[Task[Any]] = SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0

    def submit(
        self,
        call: Callable[..., _R],
        args: tuple[Any, ...],
        replies: Replies[_R],
        tag: Any = None,
    ) -> Task[_R]:
        """Run ``call(*args)`` on a worker; the task goes to ``replies`` when done.

        The call runs in a copy of the caller's context, as a loop task does: what the
        caller's code set in context variables (the current span of a tracer, such as
        OpenTelemetry's, whose botocore instrumentation makes each request's span a
        child of it) holds in the request it hands to a thread.
        """
        task = Task(call, args, replies, tag)
        task.context = contextvars.copy_context()
        with self._lock:
            if self._idle:
                self._idle -= 1  # an idle thread takes it
            elif self._threads < self._limit:
                self._threads += 1
                name = f"{self._name}-{self._threads}"
                threading.Thread(target=self._work, name=name, daemon=True).start()
        self._jobs.put(task)
        return task

    def replies(self) -> Replies[Any]:
        """A queue for this pool's finished tasks."""
        return SimpleQueue()

    def _work(self) -> None:
        jobs = self._jobs
        while True:
            task = jobs.get()
            if not task.cancelled:
                try:
                    task.result = task.context.run(task.call, *task.args)  # type: ignore[union-attr]
                except BaseException as error:  # handed to the caller's thread
                    task.error = error
            task.replies.put(task)
            del task  # a finished task holds its result; do not keep it while idle
            with self._lock:
                self._idle += 1


_lock = threading.Lock()
_workers: Workers | None = None


def _forget() -> None:
    global _workers
    _workers = None  # a forked child has none of the parent's threads


os.register_at_fork(after_in_child=_forget)


def shared_workers() -> Workers:
    """The process's workers (created on first use)."""
    global _workers
    if _workers is None:
        with _lock:
            if _workers is None:
                _workers = Workers(SHARED_WORKERS, "shardmodel-query")
    return _workers


class _LoopReplies(Generic[_R]):
    """Finished tasks of one caller, put by loop tasks, taken in the caller's greenlet."""

    __slots__ = ("_items", "_loop", "_waiter")

    def __init__(self) -> None:
        self._items: deque[Task[_R]] = deque()
        self._waiter: Any = None  # the future the caller waits on, while it waits
        self._loop = asyncio.get_running_loop()

    def usable(self) -> bool:
        """True inside an async call on the loop the tasks run on."""
        return in_async() and asyncio._get_running_loop() is self._loop

    def put(self, item: Task[_R]) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def get(self) -> Task[_R]:
        items = self._items
        while not items:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await_(waiter)
            finally:
                self._waiter = None
        return items.popleft()

    def empty(self) -> bool:
        return not self._items


class LoopWorkers:
    """Runs :class:`Task` calls as tasks of the running event loop, each in a greenlet.

    For code inside an async call: what it submits runs concurrently on the loop (a
    merged query's shard requests), and waiting for a reply suspends only the caller.
    """

    def submit(
        self,
        call: Callable[..., _R],
        args: tuple[Any, ...],
        replies: Replies[_R],
        tag: Any = None,
    ) -> Task[_R]:
        """Run ``call(*args)`` as a loop task; the task goes to ``replies`` when done."""
        task = Task(call, args, replies, tag)
        self._loop().create_task(_run_task(task))
        return task

    def _loop(self) -> Any:
        return asyncio.get_running_loop()

    def replies(self) -> Replies[Any]:
        """A queue for finished tasks, waited on in the caller's greenlet."""
        return _LoopReplies()


async def _run_task(task: Task[Any]) -> None:
    if not task.cancelled:
        try:
            task.result = await call(task.call, *task.args)
        except BaseException as error:  # handed to the caller's greenlet
            task.error = error
    task.replies.put(task)


class _DrivenReplies(Generic[_R]):
    """Finished tasks of one sync caller, put by tasks of its thread's kept loop.

    ``get`` runs that loop until a task is here; a ``put`` while the caller waits stops it.
    """

    __slots__ = ("_items", "_loop", "_thread", "_waiting")

    def __init__(self, loop: Any) -> None:
        self._items: deque[Task[_R]] = deque()
        self._loop = loop
        self._waiting = False
        self._thread = threading.get_ident()

    def usable(self) -> bool:
        """True in the thread whose kept loop runs the tasks, outside any running loop.

        The tasks' greenlets belong to that thread, and its loop closes when it ends.
        """
        return (
            threading.get_ident() == self._thread
            and not self._loop.is_closed()
            and asyncio._get_running_loop() is None
        )

    def put(self, item: Task[_R]) -> None:
        self._items.append(item)
        if self._waiting:
            self._waiting = False
            self._loop.stop()

    def get(self) -> Task[_R]:
        items = self._items
        if not items:
            self._waiting = True
            try:
                run_until(self._loop, items.__len__)
            finally:
                self._waiting = False
        return items.popleft()

    def empty(self) -> bool:
        return not self._items


class DrivenLoopWorkers(LoopWorkers):
    """Runs a sync caller's :class:`Task` calls as tasks of its thread's kept loop.

    Each call runs as an async call does (a greenlet; its requests on the async path),
    so many wait on their sockets at once in the caller's thread, which runs the loop
    only in :meth:`_DrivenReplies.get` (a task starts once the caller waits).
    """

    def _loop(self) -> Any:
        return thread_loop()

    def replies(self) -> Replies[Any]:
        """A queue for finished tasks; waiting on it runs the thread's loop."""
        return _DrivenReplies(thread_loop())


class Runner(Protocol):
    """What :func:`workers` gives: threads, or the running loop's tasks."""

    def submit(
        self,
        call: Callable[..., _R],
        args: tuple[Any, ...],
        replies: Replies[_R],
        tag: Any = None,
    ) -> Task[_R]: ...

    def replies(self) -> Replies[Any]: ...


#: an async call's runner
LOOP_WORKERS = LoopWorkers()
#: a sync caller's runner on its thread's kept loop
DRIVEN_WORKERS = DrivenLoopWorkers()


def usable_here(replies: Replies[Any]) -> bool:
    """True when the caller can wait on ``replies`` where it runs now.

    A thread pool's queue can be waited on from any thread. A loop's replies only where
    that loop runs its tasks: a sync iterator handed to another thread, or continued
    inside a coroutine, must send its next requests elsewhere (see
    :meth:`shardmodel.engine.merge.MergedQuery.close` and its hand-off).
    """
    if isinstance(replies, _LoopReplies | _DrivenReplies):
        return replies.usable()
    return True


def loop_fanout() -> bool:
    """True when a sync caller's concurrent calls go on its thread's kept loop.

    That needs greenlet (the ``async`` extra), no event loop running in the thread (a
    sync call made from a coroutine keeps to the threads), no gevent monkey-patching,
    and ``SHARDMODEL_SYNC_FANOUT`` not ``threads``.
    """
    if not has_greenlet() or os.environ.get("SHARDMODEL_SYNC_FANOUT") == "threads":
        return False
    monkey = sys.modules.get("gevent.monkey")
    if monkey is not None and monkey.is_module_patched("threading"):
        return False  # gevent's threads are greenlets already; its loop is not asyncio's
    return asyncio._get_running_loop() is None


def workers() -> Runner:
    """Where the caller's concurrent calls run: the loop's tasks inside an async call,
    else the shared threads (a query's executor may choose the thread's kept loop)."""
    if in_async():
        return LOOP_WORKERS
    return shared_workers()
