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
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import RandomShards, ShardedKeyAttribute, ShardedModel
from shardmodel.core.workers import Workers
from shardmodel.migration import follow, unfollow
from tests import traced_everywhere

trace = pytest.importorskip("opentelemetry.trace")
sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
export = pytest.importorskip("opentelemetry.sdk.trace.export")
instrumentation = pytest.importorskip("opentelemetry.instrumentation.botocore")

_seen: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="unset")

#: the tests of the botocore instrumentation alone (shardmodel making no spans)
untraced_only = pytest.mark.skipif(
    traced_everywhere.on(),
    reason="make traced: shardmodel's own spans are on, these test it without them",
)


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
    note = UnicodeAttribute(null=True)


def settled() -> None:
    """TracedEvent's view of its table's layout read now and kept: the spans a test
    counts are its operation's requests, with no read of the state table among them
    however long the test takes (every model reads it once per five seconds)."""
    follow(TracedEvent, cache_seconds=10**9).refresh()


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
    settled()  # before the instrumentation: its read is no span of the test's
    instrumentor = instrumentation.BotocoreInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    # a new client, made with the instrumentation in place (the lean path steps aside
    # for a traced client, so botocore sends and traces every request)
    monkeypatch.setattr(TracedEvent, "_connection", None)
    try:
        yield provider.get_tracer("test"), exporter
    finally:
        instrumentor.uninstrument()
        unfollow(TracedEvent)


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


@untraced_only
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


@untraced_only
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


# -- the library's own spans (shardmodel.instrument) ---------------------------------------

metrics_export = pytest.importorskip("opentelemetry.sdk.metrics.export")
sdk_metrics = pytest.importorskip("opentelemetry.sdk.metrics")


@pytest.fixture
def own(tables: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any, Any]]:
    """shardmodel's spans and metrics sent to providers of the test's own (no botocore
    instrumentation: the lean path sends); TracedEvent's 40 items on its 16 shards."""
    del tables
    import shardmodel

    TracedEvent.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    for ts in range(40):
        TracedEvent(user_id="u", timestamp=ts).save()
    exporter = in_memory.InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    reader = metrics_export.InMemoryMetricReader()
    meters = sdk_metrics.MeterProvider(metric_readers=[reader])
    monkeypatch.setattr(TracedEvent, "_connection", None)
    settled()
    shardmodel.instrument(tracer_provider=provider, meter_provider=meters)
    try:
        yield provider.get_tracer("test"), exporter, reader
    finally:
        shardmodel.uninstrument()
        unfollow(TracedEvent)


def _operation(exporter: Any, name: str) -> tuple[Any, list[Any]]:
    """The one span of operation ``name`` and the request spans, each its child."""
    spans = exporter.get_finished_spans()
    (op,) = [s for s in spans if s.name == name]
    requests = [s for s in spans if s.name.startswith("DynamoDB.")]
    assert len({s.context.span_id for s in requests}) == len(requests)  # none twice
    assert all(s.parent is not None for s in requests)
    assert {s.parent.span_id for s in requests} <= {op.context.span_id}
    assert all(s.kind == trace.SpanKind.CLIENT for s in requests)
    return op, requests


@pytest.mark.parametrize("fanout", ["default", "threads"])
def test_a_sync_query_is_one_span_with_a_child_span_per_shard_request(
    own: tuple[Any, Any, Any], fanout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tracer, exporter, _ = own
    if fanout == "threads":
        monkeypatch.setenv("SHARDMODEL_SYNC_FANOUT", "threads")
    with tracer.start_as_current_span("page") as page:
        assert [e.timestamp for e in TracedEvent.query("u", limit=30)] == list(range(30))
    op, requests = _operation(exporter, "TracedEvent.query")
    assert op.parent.span_id == page.get_span_context().span_id
    assert op.attributes["shardmodel.shards"] == 16
    assert op.attributes["shardmodel.requests"] == len(requests) >= 16
    assert op.attributes["shardmodel.items"] == 30
    assert op.attributes["aws.dynamodb.table_names"] == ("traced-events",)
    (request, *_) = requests
    assert request.name == "DynamoDB.Query"
    assert request.attributes["rpc.system"] == "aws-api"
    assert request.attributes["rpc.service"] == "DynamoDB"
    assert request.attributes["rpc.method"] == "Query"
    assert request.attributes["aws.dynamodb.table_names"] == ("traced-events",)
    assert request.attributes["shardmodel.attempts"] == 1
    assert op.end_time >= max(s.end_time for s in requests)


def test_count_get_and_writes_are_spans_of_their_own(own: tuple[Any, Any, Any]) -> None:
    _, exporter, _ = own
    assert TracedEvent.count("u") == 40
    _, requests = _operation(exporter, "TracedEvent.count")
    assert [s.name for s in requests] == ["DynamoDB.Query"] * 16
    exporter.clear()
    assert TracedEvent.get("u", 7).timestamp == 7
    _, requests = _operation(exporter, "TracedEvent.get")
    assert [s.name for s in requests] == ["DynamoDB.BatchGetItem"]
    exporter.clear()
    item = TracedEvent(user_id="u", timestamp=100)
    item.save()
    _, requests = _operation(exporter, "TracedEvent.save")
    assert [s.name for s in requests] == ["DynamoDB.PutItem"]  # through botocore
    assert requests[0].attributes["rpc.method"] == "PutItem"
    exporter.clear()
    item.update(actions=[TracedEvent.note.set("seen")])
    _, requests = _operation(exporter, "TracedEvent.update")
    assert [s.name for s in requests] == ["DynamoDB.UpdateItem"]
    exporter.clear()
    item.delete()
    _, requests = _operation(exporter, "TracedEvent.delete")
    assert [s.name for s in requests] == ["DynamoDB.DeleteItem"]


def test_an_async_query_and_save_are_spans_with_their_requests_as_children(
    own: tuple[Any, Any, Any],
) -> None:
    tracer, exporter, _ = own

    async def page() -> list[Any]:
        with tracer.start_as_current_span("page"):
            return [e.timestamp async for e in TracedEvent.aquery("u")]

    assert asyncio.run(page()) == list(range(40))
    op, requests = _operation(exporter, "TracedEvent.query")
    assert [s.name for s in requests] == ["DynamoDB.Query"] * 16
    assert op.attributes["shardmodel.requests"] == 16
    exporter.clear()
    asyncio.run(TracedEvent(user_id="u", timestamp=99).asave())
    _, requests = _operation(exporter, "TracedEvent.save")
    assert [s.name for s in requests] == ["DynamoDB.PutItem"]


def test_a_scan_and_a_batch_get_keep_their_iterator_and_trace_their_pages(
    own: tuple[Any, Any, Any],
) -> None:
    from pynamodb.pagination import ResultIterator

    _, exporter, _ = own
    scan = TracedEvent.scan(TracedEvent.timestamp < 10, page_size=4)
    assert isinstance(scan, ResultIterator)  # PynamoDB's own, as without a tracer
    assert len(list(scan)) == 10 and scan.last_evaluated_key is None
    _, requests = _operation(exporter, "TracedEvent.scan")
    assert [s.name for s in requests] == ["DynamoDB.Scan"] * len(requests) and len(requests) > 1
    exporter.clear()
    keys = [("u", 1), ("u", 2), ("u", 3)]
    assert sorted(e.timestamp for e in TracedEvent.batch_get(keys)) == [1, 2, 3]
    _, requests = _operation(exporter, "TracedEvent.batch_get")
    assert {s.name for s in requests} == {"DynamoDB.BatchGetItem"}


def test_a_refused_query_is_a_failed_span_with_no_request(own: tuple[Any, Any, Any]) -> None:
    _, exporter, _ = own
    with pytest.raises(Exception, match="max_requests"):
        list(TracedEvent.query("u", max_requests=2))
    op, requests = _operation(exporter, "TracedEvent.query")
    assert requests == []
    assert op.status.status_code == trace.StatusCode.ERROR
    assert [e.name for e in op.events] == ["exception"]


def test_an_abandoned_query_ends_its_span_when_it_goes(own: tuple[Any, Any, Any]) -> None:
    import gc

    _, exporter, _ = own
    query = TracedEvent.query("u", page_size=2)
    next(query)
    assert not [s for s in exporter.get_finished_spans() if s.name == "TracedEvent.query"]
    del query
    gc.collect()
    op, _ = _operation(exporter, "TracedEvent.query")
    assert op.attributes["shardmodel.items"] == 1


def test_requests_are_counted_per_model_and_operation(own: tuple[Any, Any, Any]) -> None:
    _, _, reader = own
    assert TracedEvent.count("u") == 40
    TracedEvent.get("u", 3)
    points = {
        (p.attributes["shardmodel.model"], p.attributes["rpc.method"]): p.value
        for metric in reader.get_metrics_data().resource_metrics[0].scope_metrics[0].metrics
        if metric.name == "shardmodel.requests"
        for p in metric.data.data_points
    }
    assert points == {("TracedEvent", "Query"): 16, ("TracedEvent", "BatchGetItem"): 1}
    TracedEvent(user_id="u", timestamp=200).save()
    points = {
        (p.attributes["shardmodel.model"], p.attributes["rpc.method"]): p.value
        for metric in reader.get_metrics_data().resource_metrics[0].scope_metrics[0].metrics
        if metric.name == "shardmodel.requests"
        for p in metric.data.data_points
    }
    assert points[("TracedEvent", "PutItem")] == 1  # a sync write, through botocore


def test_with_the_botocore_instrumentation_on_too_no_request_is_traced_twice(
    own: tuple[Any, Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, exporter, _ = own
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    settled()  # before the instrumentation: its read is no span of the test's
    instrumentor = instrumentation.BotocoreInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    monkeypatch.setattr(TracedEvent, "_connection", None)  # a client made traced
    try:
        assert len(list(TracedEvent.query("u"))) == 40
        exporter.clear()
        TracedEvent(user_id="u", timestamp=300).save()  # through the instrumented botocore
        _, writes = _operation(exporter, "TracedEvent.save")
        assert [s.name for s in writes] == ["DynamoDB.PutItem"]  # botocore's alone
        assert "shardmodel" not in {s.instrumentation_scope.name for s in writes}
        exporter.clear()
        assert len(list(TracedEvent.query("u"))) == 41
    finally:
        instrumentor.uninstrument()
    _, requests = _operation(exporter, "TracedEvent.query")
    assert [s.name for s in requests] == ["DynamoDB.Query"] * 16  # one a request, not 32
    # shardmodel's own (botocore's instrumentation would cost several times the CPU),
    # and no request went through the instrumented botocore client
    assert {s.instrumentation_scope.name for s in requests} == {"shardmodel"}


def test_without_a_provider_nothing_is_made() -> None:
    from shardmodel.core import telemetry

    assert telemetry.start_operation("query", TracedEvent) is None
    assert telemetry.request("Query", {}, None) is None


def test_a_transaction_is_a_span_with_its_request_as_child(own: tuple[Any, Any, Any]) -> None:
    """shardmodel's TransactWrite and TransactGet: PynamoDB's, with the commit one
    operation's span and the request its child (PynamoDB's own send on a connection the
    library never sees: no span)."""
    from pynamodb.connection import Connection

    from shardmodel import TransactGet, TransactWrite

    _, exporter, _ = own
    item = TracedEvent(user_id="u", timestamp=500, note="in a transaction")
    with TransactWrite(connection=Connection(region="us-east-1")) as write:
        write.save(item)
    op, requests = _operation(exporter, "Transaction.transact_write")
    assert [s.name for s in requests] == ["DynamoDB.TransactWriteItems"]
    assert tuple(op.attributes["aws.dynamodb.table_names"]) == ("traced-events",)
    exporter.clear()
    with TransactGet(connection=Connection(region="us-east-1")) as read:
        found = read.get(TracedEvent, item.get_physical_key(), 500)
    assert found.get().note == "in a transaction"
    op, requests = _operation(exporter, "Transaction.transact_get")
    assert [s.name for s in requests] == ["DynamoDB.TransactGetItems"]
