"""A sync query's shard requests on real servers: together, on the caller's kept loop.

Each shard's page goes over a socket of the calling thread's ``AsyncHttpPool`` (its loop
kept between calls); told ``SHARDMODEL_SYNC_FANOUT=threads``, over the worker threads'.
"""

from __future__ import annotations

import pytest

from shardmodel.core.thread_loop import thread_loop
from shardmodel.lean.aio import async_client
from shardmodel.lean.aio_http import AsyncHttpPool
from tests.models import RandomEvent


def _loop_pool() -> AsyncHttpPool | None:
    client = async_client(RandomEvent._get_connection().connection.client)
    loop = thread_loop()
    found = [pool for pool in client.pools() if pool.loop is loop]
    return found[0] if found else None


@pytest.mark.usefixtures("backend")
def test_a_sync_query_waits_for_its_shards_together_on_the_callers_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with RandomEvent.batch_write() as batch:
        for ts in range(60):
            batch.save(RandomEvent(user_id="fan", timestamp=ts, event_type="e"))
    pool = _loop_pool()
    sent = 0 if pool is None else pool.sent
    if pool is not None:
        pool.peak_open = pool.open
    results = RandomEvent.query("fan", page_size=3)
    assert [e.timestamp for e in results] == list(range(60))
    pool = _loop_pool()
    assert pool is not None
    assert pool.sent - sent == results.requests >= 20  # type: ignore[attr-defined]
    assert pool.peak_open > 1  # the shards' pages waited on their sockets at once
    assert RandomEvent.count("fan") == 60
    assert pool.sent - sent == results.requests + 10  # type: ignore[attr-defined]

    monkeypatch.setenv("SHARDMODEL_SYNC_FANOUT", "threads")
    sent = pool.sent
    assert [e.timestamp for e in RandomEvent.query("fan", limit=7)] == list(range(7))
    assert pool.sent == sent  # the worker threads' sockets instead


@pytest.mark.usefixtures("backend")
def test_a_sync_iterator_read_on_in_another_thread_and_in_a_coroutine_loses_nothing() -> None:
    """Started on a thread that then ends, read on elsewhere: every item once, in order.

    The first thread's kept loop held the next pages' requests and its sockets, and
    closed with the thread; read inside a coroutine, a loop already runs in the thread.
    Either way the requests still needed are asked again from the same positions.
    """
    import asyncio
    import threading

    with RandomEvent.batch_write() as batch:
        for ts in range(90):
            batch.save(RandomEvent(user_id="handoff", timestamp=ts, event_type="e"))
    started: list[object] = []

    def first_thread() -> None:
        query = RandomEvent.query("handoff", page_size=3)
        started.extend([query, [next(query).timestamp for _ in range(4)]])

    thread = threading.Thread(target=first_thread)
    thread.start()
    thread.join(60)
    query, head = started
    middle: list[int] = []

    def second_thread() -> None:
        for item in query:  # type: ignore[attr-defined]
            middle.append(item.timestamp)
            if len(middle) == 30:
                break

    reader = threading.Thread(target=second_thread)
    reader.start()
    reader.join(60)

    async def inside_a_coroutine() -> list[int]:
        return [item.timestamp for item in query]  # type: ignore[attr-defined]

    rest = asyncio.run(inside_a_coroutine())
    assert head + middle + rest == list(range(90))  # type: ignore[operator]
