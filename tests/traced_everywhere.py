"""A pytest plugin that runs a session with shardmodel's spans and metrics on: ``make traced``.

While OpenTelemetry records, a sync model's connection is its traced twin and every
iterator steps with its operation's span current; the unit and property suites must
pass unchanged that way too. Tests whose subject is the untraced path skip (they ask
:func:`on`).
"""

from __future__ import annotations

import os
from typing import Any

_FLAG = "SHARDMODEL_TRACED_EVERYWHERE"


def on() -> bool:
    """True in a ``make traced`` session (asked when a test module is collected)."""
    return os.environ.get(_FLAG) == "1"


def _instrument() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import shardmodel

    provider = TracerProvider()
    spans = _EXPORTER.setdefault("spans", InMemorySpanExporter())
    provider.add_span_processor(SimpleSpanProcessor(spans))
    meters = MeterProvider(metric_readers=[InMemoryMetricReader()])
    shardmodel.instrument(tracer_provider=provider, meter_provider=meters)


_EXPORTER: dict[str, Any] = {}


def pytest_configure(config: Any) -> None:
    del config
    os.environ[_FLAG] = "1"  # the xdist workers' too
    _instrument()


def pytest_runtest_teardown(item: Any) -> None:
    del item
    from shardmodel.core import telemetry

    _EXPORTER["spans"].clear()  # the spans are made, not kept
    if telemetry._tracer_provider is None:  # a test uninstrumented: on again
        _instrument()
