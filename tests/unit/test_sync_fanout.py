"""A sync query's shard requests: on the caller's kept loop, or on the shared threads.

Both ways read the same pages and give the same items and cursors; only where the
requests wait differs (``SHARDMODEL_SYNC_FANOUT=threads`` keeps the threads).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from shardmodel.core.workers import DRIVEN_WORKERS, shared_workers
from shardmodel.engine.sharding import sharding_of
from shardmodel.lean import nonblocking
from tests.models import RandomEvent
from tests.unit.test_query import load

pytestmark = pytest.mark.usefixtures("tables")


def threads_of_queries(read: Callable[[], Any]) -> tuple[Any, set[int]]:
    """``read()``'s result and the threads its Query requests were sent from."""
    seen: set[int] = set()

    @nonblocking
    def record(**_: Any) -> None:
        seen.add(threading.get_ident())

    events = RandomEvent._get_connection().connection.client.meta.events
    events.register("before-send.dynamodb.Query", record)
    try:
        return read(), seen
    finally:
        events.unregister("before-send.dynamodb.Query", record)


@pytest.fixture(params=["loop", "threads"])
def fanout(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "threads":
        monkeypatch.setenv("SHARDMODEL_SYNC_FANOUT", "threads")
    yield request.param


def test_shard_requests_wait_on_the_callers_loop_or_on_the_threads(fanout: str) -> None:
    load(40)
    got, threads = threads_of_queries(
        lambda: [e.timestamp for e in RandomEvent.query("q", page_size=3)]
    )
    assert got == list(range(40))
    caller = threading.get_ident()
    if fanout == "loop":
        assert threads == {caller}  # every page, sent and read in the caller's thread
        assert sharding_of(RandomEvent).executor.runner() is DRIVEN_WORKERS
    else:
        assert caller not in threads and threads  # every page on a worker thread
        assert sharding_of(RandomEvent).executor.runner() is shared_workers()
    counted, threads = threads_of_queries(lambda: RandomEvent.count("q"))
    assert counted == 40
    assert (threads == {caller}) is (fanout == "loop")


def test_botocore_requests_keep_to_the_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Meta.lean_requests = False`` sends through botocore, which blocks: threads."""
    monkeypatch.setattr(RandomEvent.Meta, "lean_requests", False, raising=False)
    load(12)
    got, threads = threads_of_queries(lambda: [e.timestamp for e in RandomEvent.query("q")])
    assert got == list(range(12)) and threading.get_ident() not in threads
    assert sharding_of(RandomEvent).executor.runner() is shared_workers()


def test_both_ways_read_the_same_items_and_cursors_resume_across_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    load(57)
    reads: list[tuple[str, Callable[[], Any]]] = [
        ("latest 10", lambda: RandomEvent.query("q", scan_index_forward=False, limit=10)),
        ("pages of 2", lambda: RandomEvent.query("q", page_size=2)),
        (
            "filtered",
            lambda: RandomEvent.query("q", filter_condition=RandomEvent.event_type == "odd"),
        ),
        ("range", lambda: RandomEvent.query("q", RandomEvent.timestamp.between(5, 30), limit=7)),
    ]

    def run(way: str) -> dict[str, tuple[list[int], int, int]]:
        if way == "threads":
            monkeypatch.setenv("SHARDMODEL_SYNC_FANOUT", "threads")
        else:
            monkeypatch.delenv("SHARDMODEL_SYNC_FANOUT", raising=False)
        out = {}
        for name, read in reads:
            results = read()
            items = [e.timestamp for e in results]
            out[name] = (items, results.requests, results.items_read)
        return out

    assert run("loop") == run("threads")
    first = RandomEvent.query("q", limit=20)  # the loop's cursor, resumed on the threads
    head = [e.timestamp for e in first]
    monkeypatch.setenv("SHARDMODEL_SYNC_FANOUT", "threads")
    cursor = first.last_evaluated_key
    rest = [e.timestamp for e in RandomEvent.query("q", last_evaluated_key=cursor)]
    assert head + rest == list(range(57))


def test_a_query_left_unfinished_does_not_hold_the_next_one() -> None:
    """Shard requests still out when the caller stops reading come back later, to no one."""
    load(80)
    abandoned = RandomEvent.query("q", page_size=2)
    assert next(abandoned).timestamp == 0
    # its prefetched pages are tasks of this thread's loop; the next query runs that loop
    assert [e.timestamp for e in RandomEvent.query("q", limit=5)] == [0, 1, 2, 3, 4]
    assert [e.timestamp for e in abandoned][:3] == [1, 2, 3]
    del abandoned
    assert RandomEvent.count("q") == 80


def test_a_handler_that_may_block_keeps_the_requests_on_the_threads() -> None:
    """A user's handler may sleep or do I/O: on the loop it would hold every shard's
    request, so the requests go to the threads until it is marked ``nonblocking``."""
    load(30)
    events = RandomEvent._get_connection().connection.client.meta.events
    calls: list[int] = []

    def users(**_: Any) -> None:
        calls.append(threading.get_ident())

    for event in ("after-call.dynamodb.Query", "before-send.dynamodb"):
        events.register(event, users)
        try:
            assert sharding_of(RandomEvent).executor.runner() is shared_workers()
            got, threads = threads_of_queries(lambda: [e.timestamp for e in RandomEvent.query("q")])
            assert got == list(range(30)) and threading.get_ident() not in threads
        finally:
            events.unregister(event, users)
    assert sharding_of(RandomEvent).executor.runner() is DRIVEN_WORKERS
    nonblocking(users)
    events.register("before-send.dynamodb", users)
    try:
        assert sharding_of(RandomEvent).executor.runner() is DRIVEN_WORKERS
        calls.clear()
        assert [e.timestamp for e in RandomEvent.query("q")] == list(range(30))
        assert set(calls) == {threading.get_ident()} and len(calls) >= 10
    finally:
        events.unregister("before-send.dynamodb", users)


def test_a_thread_that_ends_mid_query_leaves_no_request_pending() -> None:
    """A thread stops reading a query and ends: its loop cancels the requests still out
    (as ``asyncio.run`` cancels what is left) and closes."""
    import asyncio
    import gc

    from shardmodel.core.bridge import await_
    from shardmodel.core.thread_loop import thread_loop

    load(80)
    kept: list[Any] = []
    held: list[bytes] = []

    @nonblocking
    def slow_next_pages(request: Any, **_: Any) -> None:
        if b"ExclusiveStartKey" in request.body:  # every shard's second page
            held.append(request.body)
            await_(asyncio.sleep(60))

    def reader() -> None:
        abandoned = RandomEvent.query("q", page_size=2)
        next(abandoned)  # the shards' next pages are asked for ...
        assert RandomEvent.count("q") == 80  # ... and sent while this runs the loop
        loop = thread_loop()
        kept.extend([loop, abandoned, asyncio.all_tasks(loop)])  # out for a minute

    events = RandomEvent._get_connection().connection.client.meta.events
    events.register("before-send.dynamodb.Query", slow_next_pages)
    try:
        thread = threading.Thread(target=reader)
        thread.start()
        thread.join(60)
        gc.collect()
    finally:
        events.unregister("before-send.dynamodb.Query", slow_next_pages)
    loop, _, tasks = kept
    # random placement can leave a shard with one page only: it asks no second page
    assert len(tasks) == len(held) >= 5 and loop.is_closed()
    assert all(task.done() for task in tasks)


def test_a_sync_iterator_handed_to_another_thread_returns_every_item_once(fanout: str) -> None:
    """Started on one thread (its kept loop holds the next pages' requests), the thread
    ends; read on in another thread, each item comes once and in order."""
    load(80)
    started: list[Any] = []

    def first_thread() -> None:
        query = RandomEvent.query("q", page_size=3)
        started.extend([query, [next(query).timestamp for _ in range(5)]])

    thread = threading.Thread(target=first_thread)
    thread.start()
    thread.join(60)
    query, head = started
    assert head == [0, 1, 2, 3, 4]
    rest: list[int] = []
    reader = threading.Thread(target=lambda: rest.extend(e.timestamp for e in query))
    reader.start()
    reader.join(60)
    assert head + rest == list(range(80))


def test_a_sync_iterator_continued_inside_a_coroutine_returns_every_item_once(
    fanout: str,
) -> None:
    """A loop runs in the thread now: the iterator's own cannot, its next pages are
    asked elsewhere; every item once, in order, and the cursor still resumes."""
    import asyncio

    load(60)
    query = RandomEvent.query("q", page_size=4, limit=50)
    head = [next(query).timestamp for _ in range(7)]

    async def go_on() -> list[int]:
        return [e.timestamp for e in query]

    rest = asyncio.run(go_on())
    assert head + rest == list(range(50))
    cursor = query.last_evaluated_key
    tail = [e.timestamp for e in RandomEvent.query("q", last_evaluated_key=cursor)]
    assert head + rest + tail == list(range(60))
