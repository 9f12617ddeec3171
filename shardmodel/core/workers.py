"""The worker threads every merged query and count of a process shares.

A query hands each shard request to these threads and receives it, finished, on a queue
of its own. Lighter per request than a ``ThreadPoolExecutor``: no ``Future`` (a
``Condition`` each), no waiter installed on every pending future at every wake, no
shutdown lock per submit; at 16 shards that bookkeeping was a fifth of a latest-100
read's caller-thread CPU. Threads start on demand, up to :data:`SHARED_WORKERS`, and then
stay: starting a thread waits for the GIL behind the others' work (milliseconds).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, Generic, TypeVar

__all__ = ["SHARED_WORKERS", "Task", "Workers", "shared_workers"]

_R = TypeVar("_R")

#: The most threads the shared workers start.
SHARED_WORKERS = 64


class Task(Generic[_R]):
    """One call handed to the workers; put on its ``replies`` queue once, run or skipped."""

    __slots__ = ("args", "call", "cancelled", "error", "replies", "result", "tag")

    def __init__(
        self,
        call: Callable[..., _R],
        args: tuple[Any, ...],
        replies: SimpleQueue[Task[_R]],
        tag: Any = None,
    ) -> None:
        self.call = call
        self.args = args
        self.replies = replies
        self.tag = tag  # the caller's: which request this is
        self.cancelled = False
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
        replies: SimpleQueue[Task[_R]],
        tag: Any = None,
    ) -> Task[_R]:
        """Run ``call(*args)`` on a worker; the task goes to ``replies`` when done."""
        task = Task(call, args, replies, tag)
        with self._lock:
            if self._idle:
                self._idle -= 1  # an idle thread takes it
            elif self._threads < self._limit:
                self._threads += 1
                name = f"{self._name}-{self._threads}"
                threading.Thread(target=self._work, name=name, daemon=True).start()
        self._jobs.put(task)
        return task

    def _work(self) -> None:
        jobs = self._jobs
        while True:
            task = jobs.get()
            if not task.cancelled:
                try:
                    task.result = task.call(*task.args)
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
