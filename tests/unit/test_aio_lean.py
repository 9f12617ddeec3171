"""The async request path against a scripted server: what the sync lean path does, it does.

Each case runs one PynamoDB call through :class:`shardmodel.lean.aio.AsyncConnection`
inside an async call (the greenlet bridge), its request sent on the loop's
``AsyncHttpPool``, and compares what a caller sees with the sync lean path's outcome of
the same script: results, retries (botocore's standard mode), errors and their causes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from botocore.credentials import RefreshableCredentials

from shardmodel.core import bridge
from shardmodel.lean import client as lean_client
from shardmodel.lean.aio import AsyncConnection, async_client
from tests.unit.test_lean import (
    BATCH_RESPONSE,
    QUERY_RESPONSE,
    REASONS,
    THROTTLE,
    Action,
    Script,
    _batch_get,
    _close,
    _connection,
    _outcome,
    _query,
    cut,
    error,
    garbage,
    hang_up,
    reply,
    reset,
    stall,
)


@pytest.fixture
def no_wait(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The retries' back-off, recorded instead of waited (the lean path sleeps via the bridge)."""
    slept: list[float] = []
    monkeypatch.setattr(lean_client, "sleep", slept.append)
    monkeypatch.setattr("time.sleep", slept.append)  # the sync path's, in the same test
    return slept


def _run(
    actions: list[Action], call: Callable[[Any], Any], use_async: bool, **options: Any
) -> tuple[Any, int]:
    server = Script(list(actions))
    connection = _connection(server.url, lean=not use_async, **options)
    try:
        if not use_async:
            return _outcome(call, connection), len(server.requests)

        async def run() -> Any:
            return await bridge.call(_outcome, call, AsyncConnection(connection))

        with asyncio.Runner() as runner:
            outcome = runner.run(run())
            for pool in async_client(connection._client).pools():
                pool.close()
        return outcome, len(server.requests)
    finally:
        _close(connection)
        server.close()


def _both(
    actions: list[Action], call: Callable[[Any], Any] = _query, **options: Any
) -> tuple[Any, Any, int]:
    sync, sync_requests = _run(actions, call, use_async=False, **options)
    got, requests = _run(actions, call, use_async=True, **options)
    assert requests == sync_requests, f"attempts: sync {sync_requests}, async {requests}"
    return sync, got, requests


def test_a_query_and_a_batch_get_answer_as_on_the_sync_path() -> None:
    for call, document in ((_query, QUERY_RESPONSE), (_batch_get, BATCH_RESPONSE)):
        sync, got, requests = _both([reply(200, document)], call)
        assert got == sync and "result" in got and requests == 1


@pytest.mark.parametrize(
    "first",
    [
        error(500, "InternalServerError", "Internal Server Error"),
        error(*THROTTLE, **REASONS),
        reset,
        hang_up,
        garbage,
        cut(0.5),
    ],
    ids=["500", "throttling", "reset", "hang up", "garbage", "truncated"],
)
def test_transient_failures_are_retried_as_on_the_sync_path(
    first: Action, no_wait: list[float]
) -> None:
    sync, got, requests = _both([first, reply(200, QUERY_RESPONSE)])
    assert got == sync
    assert "result" in got and requests == 2
    assert got["metadata"]["RetryAttempts"] == 1


def test_a_throttle_is_retried_then_raised_as_on_the_sync_path(no_wait: list[float]) -> None:
    sync, got, requests = _both([error(*THROTTLE, **REASONS)] * 3)
    assert got == sync
    assert requests == 3
    assert got["type"] == "QueryError" and got["throttle"]
    assert got["reasons"] == ("TableReadKeyRangeThroughputExceeded",)


def test_a_read_timeout_is_retried_then_raised_as_on_the_sync_path(
    no_wait: list[float],
) -> None:
    """The pool's one timer fails a response late by its read timeout (0.3 s here), within
    a tick of it, on every attempt; a reply in time after one is served."""
    sync, got, requests = _both([stall(1.5)] * 2, attempts=2, read_timeout=0.3)
    assert got == sync and requests == 2
    assert got["origin"] == "ReadTimeoutError" and got["type"] == "QueryError"
    sync, got, requests = _both([stall(1.5), reply(200, QUERY_RESPONSE)], read_timeout=0.3)
    assert got == sync and "result" in got and requests == 2


def test_errors_that_are_not_retried_raise_as_on_the_sync_path() -> None:
    action = error(400, "ValidationException", "One or more parameter values were invalid")
    sync, got, requests = _both([action, reply(200, QUERY_RESPONSE)])
    assert got == sync
    assert requests == 1 and got["code"] == "ValidationException"


def test_expired_credentials_are_refreshed_off_the_loop_before_signing() -> None:
    """A refresh blocks (STS, the metadata service): it runs on the loop's thread pool,
    once, and both requests are signed with the new key."""
    refreshed: list[bool] = []
    soon = datetime.now(timezone.utc) + timedelta(seconds=30)  # inside botocore's window

    def refresh() -> dict[str, str]:
        refreshed.append(bridge.in_async())
        later = datetime.now(timezone.utc) + timedelta(hours=1)
        return {
            "access_key": "AKIDNEW",
            "secret_key": "new-secret",
            "token": "new-token",
            "expiry_time": later.isoformat(),
        }

    credentials = RefreshableCredentials.create_from_metadata(
        {
            "access_key": "AKIDOLD",
            "secret_key": "old",
            "token": "old-token",
            "expiry_time": soon.isoformat(),
        },
        refresh_using=refresh,
        method="test",
    )
    server = Script([reply(200, QUERY_RESPONSE)] * 2)
    connection = _connection(server.url, lean=False)
    connection._client._request_signer._credentials = credentials
    twin = AsyncConnection(connection)

    async def run() -> None:
        await bridge.call(_query, twin)
        await bridge.call(_query, twin)

    try:
        with asyncio.Runner() as runner:
            runner.run(run())
            for pool in async_client(connection._client).pools():
                pool.close()
    finally:
        _close(connection)
        server.close()
    assert refreshed == [False]  # once, and not as an async call: on a pool thread
    for headers, _ in server.requests:
        assert "Credential=AKIDNEW/" in headers["authorization"]
        assert headers["x-amz-security-token"] == "new-token"


def test_adaptive_mode_waits_for_its_tokens_off_the_loop() -> None:
    """botocore's adaptive retry mode limits the sending rate with a token bucket whose
    ``acquire`` waits on a lock: inside an async call that wait would hold the loop and
    every coroutine on it. Its requests run on threads instead; the loop keeps moving."""
    import threading
    import time

    import botocore.session
    from botocore.config import Config
    from botocore.retries.adaptive import ClientRateLimiter

    from shardmodel.lean.client import LeanClient

    server = Script([reply(200, QUERY_RESPONSE)] * 3)
    connection = _connection(server.url, lean=False)
    client = botocore.session.get_session().create_client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url=server.url,
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret",
        config=Config(retries={"mode": "adaptive", "total_max_attempts": 2}),
    )
    connection._client = client
    limiter = next(
        handler.__self__
        for handler in client.meta.events._emitter._handlers.prefix_search(
            "before-send.dynamodb.Query"
        )
        if isinstance(getattr(handler, "__self__", None), ClientRateLimiter)
    )
    limiter._enabled = True  # as after a throttle: every request takes a token first
    limiter._token_bucket.max_rate = 2.5  # a token each 0.4 s, none in hand
    limiter._token_bucket._current_capacity = 0
    assert LeanClient(client).rate_limited() and not LeanClient(client).never_blocks("Query")
    ticks: list[float] = []
    waited_on: set[int] = set()
    acquire = limiter._token_bucket.acquire

    def noted(*args: Any, **kwargs: Any) -> Any:
        waited_on.add(threading.get_ident())
        return acquire(*args, **kwargs)

    limiter._token_bucket.acquire = noted

    async def read() -> Any:
        return await bridge.call(_outcome, _query, AsyncConnection(connection))

    async def tick() -> None:
        end = time.monotonic() + 0.35
        while time.monotonic() < end:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.02)

    async def both() -> Any:
        outcome, _ = await asyncio.gather(read(), tick())
        return outcome

    try:
        with asyncio.Runner() as runner:
            outcome = runner.run(both())
            loop_thread = threading.get_ident()
    finally:
        _close(connection)
        server.close()
    assert "result" in outcome and len(server.requests) == 1
    assert waited_on and loop_thread not in waited_on  # the wait ran on a thread
    assert len(ticks) >= 8  # the loop ran on meanwhile (a held loop: 1 tick)
