"""The shared worker threads: every task comes back once, run or skipped."""

from __future__ import annotations

import sys
import threading
import time
from queue import SimpleQueue

import pytest

from shardmodel.core.workers import Task, Workers


def test_tasks_run_and_come_back_with_their_tag() -> None:
    workers = Workers(4, "test-workers")
    replies: SimpleQueue[Task[int]] = SimpleQueue()
    for n in range(20):
        workers.submit(pow, (n, 2), replies, tag=n)
    done = {task.tag: task.value() for task in (replies.get(timeout=60) for _ in range(20))}
    assert done == {n: n * n for n in range(20)}
    assert workers._threads <= 4


def test_an_error_is_raised_in_the_callers_thread() -> None:
    replies: SimpleQueue[Task[int]] = SimpleQueue()
    Workers(1, "test-workers").submit(int, ("x",), replies)
    with pytest.raises(ValueError, match="invalid literal"):
        replies.get(timeout=60).value()


def test_a_cancelled_task_is_skipped_but_still_comes_back() -> None:
    workers = Workers(1, "test-workers")
    gate = threading.Event()
    ran: list[str] = []
    replies: SimpleQueue[Task[None]] = SimpleQueue()
    workers.submit(gate.wait, (60,), replies, tag="blocker")  # holds the only thread
    queued = workers.submit(ran.append, ("queued",), replies, tag="queued")
    queued.cancel()
    gate.set()
    tags = {replies.get(timeout=60).tag for _ in range(2)}
    assert tags == {"blocker", "queued"} and ran == []


def test_threads_start_only_when_none_is_idle() -> None:
    workers = Workers(8, "test-workers")
    replies: SimpleQueue[Task[int]] = SimpleQueue()
    for _ in range(5):  # one at a time: the one thread is idle again each time
        workers.submit(abs, (-1,), replies)
        assert replies.get(timeout=60).value() == 1
        deadline = time.monotonic() + 60  # the thread counts itself idle just after replying
        while workers._idle == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
    assert workers._threads == 1


# -- a sync caller's kept loop -------------------------------------------------------------


def _meet(arrived: list[int], everyone: int, n: int) -> int:
    """Arrive, then wait on the loop until ``everyone`` has arrived (30 s at most)."""
    import asyncio

    from shardmodel.core.bridge import await_

    arrived.append(n)

    async def all_here() -> None:
        while len(arrived) < everyone:
            await asyncio.sleep(0.001)

    await_(asyncio.wait_for(all_here(), 30))
    return n


def test_a_sync_callers_tasks_wait_on_its_loop_together() -> None:
    """Ten tasks that each wait until all ten have started: only concurrent ones finish."""
    from shardmodel.core.workers import DRIVEN_WORKERS

    arrived: list[int] = []
    replies = DRIVEN_WORKERS.replies()
    for n in range(10):
        DRIVEN_WORKERS.submit(_meet, (arrived, 10, n), replies, tag=n)
    done = {task.tag: task.value() for task in (replies.get() for _ in range(10))}
    assert done == {n: n for n in range(10)} and sorted(arrived) == list(range(10))
    assert replies.empty()


def test_a_driven_tasks_error_is_raised_in_the_caller_and_a_cancelled_one_skipped() -> None:
    from shardmodel.core.workers import DRIVEN_WORKERS

    ran: list[str] = []
    replies = DRIVEN_WORKERS.replies()
    DRIVEN_WORKERS.submit(int, ("x",), replies, tag="bad")
    skipped = DRIVEN_WORKERS.submit(ran.append, ("skipped",), replies, tag="skipped")
    skipped.cancel()  # not started: the loop has not run since it was submitted
    tasks = {task.tag: task for task in (replies.get(), replies.get())}
    with pytest.raises(ValueError, match="invalid literal"):
        tasks["bad"].value()
    assert ran == [] and tasks["skipped"].cancelled


def test_the_kept_loop_is_the_threads_own_and_closes_with_it() -> None:
    import gc

    from shardmodel.core.thread_loop import thread_loop

    mine = thread_loop()
    assert thread_loop() is mine  # kept between calls
    theirs: list[object] = []
    thread = threading.Thread(target=lambda: theirs.append(thread_loop()))
    thread.start()
    thread.join(60)
    gc.collect()
    assert theirs[0] is not mine and theirs[0].is_closed()  # type: ignore[attr-defined]
    assert not mine.is_closed()


def test_sync_callers_keep_to_the_threads_when_told_or_inside_a_running_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    from shardmodel.core.workers import loop_fanout

    assert loop_fanout()
    monkeypatch.setenv("SHARDMODEL_SYNC_FANOUT", "threads")
    assert not loop_fanout()
    monkeypatch.delenv("SHARDMODEL_SYNC_FANOUT")

    async def inside() -> bool:
        return loop_fanout()

    assert asyncio.run(inside()) is False  # a sync call from a coroutine: threads

    class Monkey:  # gevent.monkey, as a patched process has it
        @staticmethod
        def is_module_patched(name: str) -> bool:
            return name == "threading"

    monkeypatch.setitem(sys.modules, "gevent.monkey", Monkey)
    assert not loop_fanout()
    monkeypatch.delitem(sys.modules, "gevent.monkey")
    assert loop_fanout()
