"""The shared worker threads: every task comes back once, run or skipped."""

from __future__ import annotations

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
