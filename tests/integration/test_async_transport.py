"""The async request path on real servers: sockets kept, the pool bounded, errors as sync.

Every async request here goes over a socket of the test loop's ``AsyncHttpPool`` to
moto's server or dynalite (nothing answers in ``before-send``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pynamodb.exceptions import GetError, QueryError

from shardmodel.lean.aio import async_client
from shardmodel.lean.aio_http import AsyncHttpPool
from tests.models import RandomEvent


def _count_requests(model: Any) -> list[str]:
    """Every answered request of ``model``'s client, by operation (an after-call hook)."""
    seen: list[str] = []
    client = model._get_connection().connection.client

    def count(model: Any, **kwargs: Any) -> None:
        seen.append(model.name)

    client.meta.events.register("after-call.dynamodb", count, unique_id="test-async-count")
    return seen


def test_concurrent_reads_reuse_a_bounded_pool_of_kept_sockets(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """200 coroutines' reads (each a BatchGetItem or 10 shard queries) go out on at most
    the model's ``max_pool_connections`` sockets at once; on dynalite each is opened once
    and kept. moto's server closes every connection after its response, so there each
    request opens one (and the pool still never holds more than its bound)."""
    with RandomEvent.batch_write() as batch:
        for ts in range(50):
            batch.save(RandomEvent(user_id="pool", timestamp=ts, event_type="e"))
    connects = {"n": 0}
    original = AsyncHttpPool._connect

    async def counted(self: AsyncHttpPool) -> Any:
        connects["n"] += 1
        return await original(self)

    monkeypatch.setattr(AsyncHttpPool, "_connect", counted)
    seen = _count_requests(RandomEvent)

    async def one(n: int) -> int:
        if n % 2:
            return len([e async for e in RandomEvent.aquery("pool", limit=5)])
        return len([(await RandomEvent.aget("pool", n % 50)).timestamp])

    async def run() -> list[int]:
        return list(await asyncio.gather(*(one(n) for n in range(200))))

    with asyncio.Runner() as runner:
        got = runner.run(run())
        (pool,) = async_client(RandomEvent._get_connection().connection.client).pools()
        bound = pool.max_connections
        assert pool.peak_open <= bound
        assert pool.sent == len(seen)
    assert got == [5 if n % 2 else 1 for n in range(200)]
    assert len(seen) >= 100 + 100 * 10  # a BatchGetItem per get, a Query per shard
    if backend == "dynalite":
        assert 1 <= connects["n"] <= bound  # every socket kept for the next request
    else:
        assert connects["n"] <= len(seen)


def test_server_errors_raise_what_the_sync_path_raises(backend: str) -> None:
    """A missing table: the same PynamoDB error, wrapping the same botocore error."""

    class Missing(RandomEvent):
        class Meta(RandomEvent.Meta):
            table_name = "no-such-table"

    Missing._connection = None  # its own table connection, on RandomEvent's endpoint
    caught: list[BaseException] = []
    with pytest.raises(GetError) as raised:
        Missing.get("x", 1)
    caught.append(raised.value)

    async def aget() -> None:
        await Missing.aget("x", 1)

    with asyncio.Runner() as runner:
        with pytest.raises(GetError) as raised:
            runner.run(aget())
        caught.append(raised.value)
        with pytest.raises(QueryError) as query_raised:
            runner.run(_list(Missing.aquery("x")))
    sync_error, async_error = caught
    assert type(sync_error.cause) is type(async_error.cause)
    assert sync_error.cause_response_code == async_error.cause_response_code
    assert async_error.cause_response_code == "ResourceNotFoundException"
    assert query_raised.value.cause_response_code == "ResourceNotFoundException"


async def _list(results: Any) -> list[Any]:
    return [item async for item in results]
