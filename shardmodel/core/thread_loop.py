"""Each thread's own event loop, kept between calls, for sync callers' concurrent requests.

A sync merged query (or count) with the ``async`` extra installed sends its shard
requests as tasks of this loop, and runs the loop only while it waits for a page
(:class:`~shardmodel.core.workers.DrivenLoopWorkers`). One thread, sockets read as they
are ready: no worker thread woken per response (at 64 shards that hand-off was a third of
the read's CPU; see ``docs/benchmark_notes.rst``).

The loop is made on first use in a thread, never while another loop runs in it, and
closed when the thread ends (its sockets first). A forked child makes its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable

__all__ = ["run_until", "thread_loop"]


class _Kept(threading.local):
    """The calling thread's loop, and the process it was made in."""

    def __init__(self) -> None:
        self.holder: _Holder | None = None


class _Holder:
    """Owns one thread's loop; closes it, and the sockets on it, when dropped."""

    __slots__ = ("loop", "pid")

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()

    def __del__(self) -> None:
        loop = self.loop
        try:
            if loop.is_closed():
                return
            if self.pid == os.getpid() and asyncio._get_running_loop() is None:
                # requests of a query left unfinished are cancelled (as asyncio.run's
                # end cancels what is left), then the pools' closers close the sockets
                pending = asyncio.all_tasks(loop)
                for task in pending:
                    task.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
        except Exception:  # a thread's or the interpreter's end: best effort
            pass
        with contextlib.suppress(Exception):  # the interpreter's end: modules may be gone
            loop.close()


_kept = _Kept()


def thread_loop() -> asyncio.AbstractEventLoop:
    """The calling thread's kept event loop (made on first use; a fresh one after a fork)."""
    holder = _kept.holder
    if holder is None or holder.pid != os.getpid() or holder.loop.is_closed():
        holder = _kept.holder = _Holder()
    return holder.loop


def run_until(loop: asyncio.AbstractEventLoop, ready: Callable[[], object]) -> None:
    """Run ``loop`` until ``ready()`` is true; what makes it ready calls ``loop.stop()``.

    ``run_forever`` rather than ``run_until_complete``: no future and no done callback a
    wait, and a stop takes effect after the loop's current round, so every reply that
    arrived in it is handed over at once.
    """
    while not ready():
        loop.run_forever()
