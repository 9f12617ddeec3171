"""Tracing: the requests a sharded read or write sends are children of the caller's span.

OpenTelemetry's botocore instrumentation (as Datadog's and X-Ray's) makes a span for each
request botocore sends, as a child of the span current where it is sent. A sync query
sends its shard requests from the fan-out's worker threads: each must run in the caller's
context, or every request span is a root of its own, cut off from the trace of the page
that was slow.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterator
from queue import SimpleQueue
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute

from shardmodel import RandomShards, ShardedKeyAttribute, ShardedModel
from shardmodel.core.workers import Workers

trace = pytest.importorskip("opentelemetry.trace")
sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
export = pytest.importorskip("opentelemetry.sdk.trace.export")
instrumentation = pytest.importorskip("opentelemetry.instrumentation.botocore")

_seen: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="unset")


def test_a_task_on_a_worker_thread_runs_in_the_callers_context() -> None:
    pool = Workers(4, "test-context")
    replies: SimpleQueue[Any] = SimpleQueue()
    token = _seen.set("caller")
    try:
        tasks = [pool.submit(_seen.get, (), replies) for _ in range(8)]
        assert [replies.get().value() for _ in tasks] == ["caller"] * 8
    finally:
        _seen.reset(token)
    # a copy each: what the call sets stays in its task
    task = pool.submit(_seen.set, ("task",), replies)
    replies.get().value()
    assert task.context is not None and _seen.get() == "unset"


class TracedEvent(ShardedModel):
    class Meta:
        table_name = "traced-events"
        region = "us-east-1"

    user_id = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(16))
    timestamp = NumberAttribute(range_key=True)


@pytest.fixture
def traced(tables: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    """A tracer of a provider of the test's own, and the botocore instrumentation on it;
    TracedEvent's table with 40 items on its 16 shards."""
    del tables
    TracedEvent.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    for ts in range(40):
        TracedEvent(user_id="u", timestamp=ts).save()
    exporter = in_memory.InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    instrumentor = instrumentation.BotocoreInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    # a new client, made with the instrumentation in place (the lean path steps aside
    # for a traced client, so botocore sends and traces every request)
    monkeypatch.setattr(TracedEvent, "_connection", None)
    try:
        yield provider.get_tracer("test"), exporter
    finally:
        instrumentor.uninstrument()


def _requests_under(exporter: Any, name: str) -> list[Any]:
    """The request spans of the one span called ``name``, each checked to be its child."""
    spans = exporter.get_finished_spans()
    (outer,) = [s for s in spans if s.name == name]
    requests = [s for s in spans if s.name.startswith("DynamoDB.")]
    assert len({s.context.span_id for s in requests}) == len(requests)  # none twice
    orphans = [s.name for s in requests if s.parent is None]
    assert not orphans, f"{len(orphans)} request spans outside the caller's span"
    assert {s.parent.span_id for s in requests} == {outer.context.span_id}
    assert {s.context.trace_id for s in requests} == {outer.context.trace_id}
    return requests


@pytest.mark.parametrize("fanout", ["default", "threads"])
def test_a_sync_query_and_count_trace_every_shard_request_under_the_callers_span(
    traced: tuple[Any, Any], fanout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tracer, exporter = traced
    if fanout == "threads":
        monkeypatch.setenv("SHARDMODEL_SYNC_FANOUT", "threads")
    with tracer.start_as_current_span("page"):
        assert [e.timestamp for e in TracedEvent.query("u")] == list(range(40))
    requests = _requests_under(exporter, "page")
    assert [s.name for s in requests] == ["DynamoDB.Query"] * 16
    assert len({s.attributes["rpc.method"] for s in requests}) == 1
    exporter.clear()
    with tracer.start_as_current_span("total"):
        assert TracedEvent.count("u") == 40
    assert [s.name for s in _requests_under(exporter, "total")] == ["DynamoDB.Query"] * 16


def test_an_async_query_and_save_trace_every_request_under_the_callers_span(
    traced: tuple[Any, Any],
) -> None:
    tracer, exporter = traced

    async def page() -> list[Any]:
        with tracer.start_as_current_span("page"):
            return [e.timestamp async for e in TracedEvent.aquery("u")]

    async def save() -> None:
        with tracer.start_as_current_span("write"):
            await TracedEvent(user_id="u", timestamp=99).asave()

    assert asyncio.run(page()) == list(range(40))
    assert [s.name for s in _requests_under(exporter, "page")] == ["DynamoDB.Query"] * 16
    exporter.clear()
    asyncio.run(save())
    assert [s.name for s in _requests_under(exporter, "write")] == ["DynamoDB.PutItem"]
