"""What tracing costs a sharded read, against what plain PynamoDB's tracing costs.

On dynalite (loopback, in memory), 2,000 items of one key: the newest 100
(``limit=100, scan_index_forward=False``) read by

* ``single``: plain PynamoDB ``Model.query`` of one unsharded key, on botocore (the
  baseline of every ``/plain`` ratio);
* ``single, botocore traced``: the same with OpenTelemetry's botocore instrumentation on
  (one span per request: the baseline of every ``/traced`` ratio, what a traced
  unsharded application pays);
* ``merged 16``: ``ShardedModel.query`` over 16 random shards, tracing off;
* ``merged 16, own spans``: the same with ``shardmodel.instrument`` (one span for the
  query, one per shard request, on the lean path);
* ``merged 16, own + botocore``: the botocore instrumentation on as well (the library
  steps aside to botocore, which traces each request; the library's span is their parent).

Client CPU (``time.process_time``: every thread of this process, the span processor's
included) and wall time per read, median of interleaved rounds after a warm-up round.
Spans go to a ``BatchSpanProcessor`` whose exporter drops them, as a production process
hands them to an exporter off the request's thread.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple, cast

from opentelemetry.instrumentation.botocore import BotocoreInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

import shardmodel
from shardmodel import RandomShards, ShardedKeyAttribute, ShardedModel
from shardmodel.testing import bind_models, create_tables, dynalite_server

ROOT = Path(__file__).resolve().parents[1]
DYNALITE = ROOT / "node_modules" / ".bin" / "dynalite"
CREDENTIALS = {
    "region": "us-east-1",
    "aws_access_key_id": "testing",
    "aws_secret_access_key": "testing",
}
ITEMS = 2_000
LATEST = 100
SHARDS = 16
ROUNDS = 7
READS = 20  # reads per variant per round
KEY = "hot"


class _Drop(SpanExporter):
    """An exporter that keeps nothing: the cost measured is making spans, not sending."""

    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _meta(table: str) -> type:
    return type("Meta", (), {"table_name": table, "region": "us-east-1"})


def _single(name: str) -> type[Model]:
    """A plain model of the unsharded table, with a client of its own."""
    namespace = {
        "Meta": _meta("bench-trace-single"),
        "pk": UnicodeAttribute(hash_key=True),
        "ts": NumberAttribute(range_key=True),
        "body": UnicodeAttribute(),
    }
    return cast(type[Model], type(name, (Model,), namespace))


def _sharded(name: str) -> type[ShardedModel]:
    """A 16-shard model of the sharded table, with a client of its own."""
    namespace = {
        "Meta": _meta("bench-trace-sharded"),
        "pk": ShardedKeyAttribute(
            hash_key=True, strategy=RandomShards(SHARDS), rng=random.Random(SHARDS)
        ),
        "ts": NumberAttribute(range_key=True),
        "body": UnicodeAttribute(),
    }
    return cast(type[ShardedModel], type(name, (ShardedModel,), namespace))


class Variant(NamedTuple):
    name: str
    model: type[Model]
    botocore_traced: bool  # the botocore instrumentation on while it runs
    own_spans: bool  # shardmodel.instrument on while it runs


class Sample(NamedTuple):
    cpu_ms: float
    wall_ms: float


def _read(model: type[Model]) -> list[int]:
    return [int(i.ts) for i in model.query(KEY, limit=LATEST, scan_index_forward=False)]


def _run(variant: Variant, provider: TracerProvider, expected: list[int]) -> Sample:
    instrumentor = BotocoreInstrumentor()
    if variant.botocore_traced:
        instrumentor.instrument(tracer_provider=provider)
    if variant.own_spans:
        shardmodel.instrument(tracer_provider=provider)
    try:
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(READS):
            if _read(variant.model) != expected:
                raise AssertionError(f"{variant.name} read other items")
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        shardmodel.uninstrument()
        if variant.botocore_traced:
            instrumentor.uninstrument()
    return Sample(cpu * 1e3 / READS, wall * 1e3 / READS)


def _measure(
    variants: Sequence[Variant], provider: TracerProvider, expected: list[int]
) -> dict[str, Sample]:
    for variant in variants:  # warm-up: connections, lean decisions, caches
        _run(variant, provider, expected)
    samples: dict[str, list[Sample]] = {v.name: [] for v in variants}
    for _ in range(ROUNDS):
        for variant in variants:
            samples[variant.name].append(_run(variant, provider, expected))
    return {
        name: Sample(
            statistics.median(s.cpu_ms for s in runs), statistics.median(s.wall_ms for s in runs)
        )
        for name, runs in samples.items()
    }


def _load(model: type[Model], count: int) -> None:
    with model.batch_write() as batch:
        for n in range(count):
            batch.save(model(pk=KEY, ts=n, body="x" * 64))


def main() -> None:
    """Start dynalite, load both tables, measure every variant, print the table."""
    load = os.getloadavg()[0]
    single, single_traced = _single("Single"), _single("SingleTraced")
    merged, merged_own = _sharded("Merged"), _sharded("MergedOwn")
    merged_traced = _sharded("MergedTraced")
    variants = [
        Variant("single", single, False, False),
        Variant("single, botocore traced", single_traced, True, False),
        Variant("merged 16", merged, False, False),
        Variant("merged 16, own spans", merged_own, False, True),
        Variant("merged 16, own + botocore", merged_traced, True, True),
    ]
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(_Drop()))
    with dynalite_server(DYNALITE) as url:
        bind_models([v.model for v in variants], host=url, **CREDENTIALS)
        create_tables([single, merged])
        _load(single, ITEMS)
        _load(merged, ITEMS)
        expected = list(range(ITEMS - 1, ITEMS - 1 - LATEST, -1))
        results = _measure(variants, provider, expected)
    provider.shutdown()
    plain, traced = results["single"], results["single, botocore traced"]
    print(
        f"tracing, latest {LATEST} of {ITEMS:,} items on dynalite (no latency added), "
        f"{READS} reads a variant a round, median of {ROUNDS} interleaved rounds after a "
        f"warm-up round\n/plain: against plain PynamoDB's single partition, untraced; "
        f"/traced: against the same with OpenTelemetry's botocore instrumentation on"
    )
    header = (
        f"{'variant':28} {'CPU ms':>7} {'/plain':>7} {'/traced':>8} {'wall ms':>8} {'/plain':>7}"
    )
    print(header)
    print("-" * len(header))
    for name, sample in results.items():
        print(
            f"{name:28} {sample.cpu_ms:7.2f} {sample.cpu_ms / plain.cpu_ms:7.2f} "
            f"{sample.cpu_ms / traced.cpu_ms:8.2f} {sample.wall_ms:8.2f} "
            f"{sample.wall_ms / plain.wall_ms:7.2f}"
        )
    own = results["merged 16, own spans"].cpu_ms / results["merged 16"].cpu_ms
    print(
        f"own spans on a 16-shard read: {own:.2f}x its untraced CPU; botocore tracing on "
        f"one partition: {traced.cpu_ms / plain.cpu_ms:.2f}x; 1-minute load average "
        f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    )


if __name__ == "__main__":
    main()
