"""The library's own OpenTelemetry spans and metrics, when ``opentelemetry-api`` is there.

A sharded read is one logical operation and many requests: a 16-shard ``query`` sends
16 Queries, a ``get`` one BatchGetItem over its candidate shards. Each logical operation
(``query``, ``count``, ``scan``, ``get``, ``batch_get``, ``save``, ``update``, ``delete``,
``refresh``; and their async twins, which run them) is a span named for the model and
the operation (``Event.query``), carrying the shard count and, for a merged read, the
requests sent, items read and capacity consumed. Every request the lean path sends is a
child span of it named as OpenTelemetry's botocore instrumentation names its own
(``DynamoDB.Query``) with the attributes of its AWS SDK conventions (``rpc.system``,
``rpc.service``, ``rpc.method``, ``aws.dynamodb.table_names``, ...). A client with that
instrumentation on never takes the lean path (it steps aside, so botocore sends and
traces the request): no request is traced twice.

Metrics, through the OpenTelemetry metrics API: ``shardmodel.requests``,
``shardmodel.throttles`` (by error code) and ``shardmodel.consumed_capacity`` (units),
each per model and DynamoDB operation, for the requests the lean path sends.

Nothing is imported, and nothing costs more than one check (about 0.2 us), when
``opentelemetry-api`` is absent or no provider is set: the global providers are used
once an application sets them (``trace.set_tracer_provider``; seen within
:data:`RECHECK_SECONDS`), or the ones given to :func:`instrument` (at once).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = [
    "Operation",
    "Request",
    "active",
    "instrument",
    "operation",
    "request",
    "start_operation",
    "uninstrument",
]

_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])

#: the tracer's and meter's name: the instrumentation scope of every span and metric
SCOPE = "shardmodel"

_MODEL_KEY = "shardmodel.model"  # the logical operation's model, in the OTel context

_api: Any = None  # (trace, context, metrics) once imported; False when absent
_tracer_provider: Any = None  # given to instrument(); None: the global one
_meter_provider: Any = None
_tracers: dict[int, Any] = {}
_instruments: dict[int, tuple[Any, Any, Any]] = {}

#: how long an answer to "is anything recorded?" is kept: asking OpenTelemetry's getters
#: costs about 2 us, asked for every request; a provider the application sets while it
#: runs is seen within this many seconds
RECHECK_SECONDS = 1.0
_seen: tuple[float, Any, Any] = (-1.0, None, None)  # (valid until, tracer, counters)


def _modules() -> Any:
    global _api
    if _api is None:
        try:
            from opentelemetry import context, metrics, trace
        except ImportError:
            _api = False
        else:
            _api = (trace, context, metrics)
    return _api


def instrument(tracer_provider: Any = None, meter_provider: Any = None) -> None:
    """Send shardmodel's spans and metrics to these providers instead of the global ones.

    Either may be left out (the global one then serves). As OpenTelemetry's own
    instrumentations take a ``tracer_provider``; raises ``ImportError`` naming the
    package when ``opentelemetry-api`` is not installed.
    """
    global _tracer_provider, _meter_provider
    if not _modules():
        raise ImportError(
            "shardmodel.instrument needs opentelemetry-api: pip install opentelemetry-api"
        )
    _tracer_provider = tracer_provider
    _meter_provider = meter_provider
    _forget()


def uninstrument() -> None:
    """Back to the global providers (set by the application, if any)."""
    global _tracer_provider, _meter_provider
    _tracer_provider = _meter_provider = None
    _forget()


def _forget() -> None:
    global _seen
    _tracers.clear()
    _instruments.clear()
    _seen = (-1.0, None, None)


def _current() -> tuple[Any, Any]:
    """(tracer, counters) as last resolved, resolved again after RECHECK_SECONDS."""
    global _seen
    until, tracer, meters = _seen
    now = time.monotonic()
    if now < until:
        return tracer, meters
    tracer, meters = _resolve_tracer(), _resolve_meters()
    _seen = (now + RECHECK_SECONDS, tracer, meters)
    return tracer, meters


def _tracer() -> Any:
    """The tracer to make spans with, or None when no provider would record them."""
    return _current()[0]


def _meters() -> tuple[Any, Any, Any] | None:
    """The request, throttle and capacity counters, or None when nothing records them."""
    found: tuple[Any, Any, Any] | None = _current()[1]
    return found


def _resolve_tracer() -> Any:
    api = _modules()
    if not api:
        return None
    trace = api[0]
    provider = _tracer_provider or trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    found = _tracers.get(id(provider))
    if found is None:
        found = _tracers[id(provider)] = provider.get_tracer(SCOPE)
    return found


def _resolve_meters() -> tuple[Any, Any, Any] | None:
    api = _modules()
    if not api:
        return None
    metrics = api[2]
    provider = _meter_provider or metrics.get_meter_provider()
    if isinstance(provider, metrics.NoOpMeterProvider) or type(provider).__name__ == (
        "_ProxyMeterProvider"
    ):
        return None
    found = _instruments.get(id(provider))
    if found is None:
        meter = provider.get_meter(SCOPE)
        found = _instruments[id(provider)] = (
            meter.create_counter("shardmodel.requests", "{request}", "requests sent"),
            meter.create_counter("shardmodel.throttles", "{request}", "requests throttled"),
            meter.create_counter(
                "shardmodel.consumed_capacity", "{capacity_unit}", "capacity units consumed"
            ),
        )
    return found


class Operation:
    """One logical operation's span, held by what it returns (a merged query) until it ends.

    ``attach()`` makes the span current where the operation sends requests (a thread's
    task or a loop task copies the context then), ``end()`` closes it once.
    """

    __slots__ = ("_context", "_ended", "span")

    def __init__(self, span: Any, context: Any) -> None:
        self.span = span
        self._context = context
        self._ended = False

    def attach(self) -> object:
        """Make this operation current; give the token to :meth:`detach`."""
        token: object = _api[1].attach(self._context)
        return token

    def detach(self, token: object) -> None:
        """Restore what was current before :meth:`attach`."""
        _api[1].detach(token)

    def set(self, **attributes: Any) -> None:
        """Set ``shardmodel.<name>`` attributes (None values are left out)."""
        self.span.set_attributes(
            {f"shardmodel.{name}": value for name, value in attributes.items() if value is not None}
        )

    def fail(self, error: BaseException) -> None:
        """Record ``error`` on the span and mark it failed."""
        trace = _api[0]
        self.span.record_exception(error)
        self.span.set_status(trace.Status(trace.StatusCode.ERROR, type(error).__name__))

    def end(self) -> None:
        """End the span (again: nothing)."""
        if not self._ended:
            self._ended = True
            self.span.end()

    def step(self, advance: Callable[[Any], _T], iterator: Any) -> _T:
        """``advance(iterator)`` (one step of the operation's iterator) with this span
        current; the span ends when the iterator ends or raises."""
        token = self.attach()
        try:
            return advance(iterator)
        except StopIteration:
            self.end()
            raise
        except BaseException as error:
            self.fail(error)
            self.end()
            raise
        finally:
            self.detach(token)


def _table_name(model: type[Any]) -> str | None:
    meta = getattr(model, "Meta", None)
    name = getattr(meta, "table_name", None)
    return name if isinstance(name, str) else None


def start_operation(name: str, model: type[Any], **attributes: Any) -> Operation | None:
    """Start the span of ``model``'s operation ``name``, a child of the current span;
    None when tracing is off. The caller ends it (:meth:`Operation.end`)."""
    tracer = _tracer()
    if tracer is None:
        return None
    trace, context, _ = _api
    values: dict[str, Any] = {
        "db.system": "dynamodb",
        "shardmodel.model": model.__name__,
        "shardmodel.operation": name,
    }
    table = _table_name(model)
    if table is not None:
        values["aws.dynamodb.table_names"] = [table]
    values.update({f"shardmodel.{k}": v for k, v in attributes.items() if v is not None})
    span = tracer.start_span(f"{model.__name__}.{name}", attributes=values)
    current = trace.set_span_in_context(span)
    current = context.set_value(_MODEL_KEY, model.__name__, current)
    return Operation(span, current)


@contextmanager
def operation(name: str, model: type[Any], **attributes: Any) -> Iterator[Operation | None]:
    """A logical operation's span, current inside the block (None: tracing is off).

    An exception leaving the block is recorded on the span, and raised on.
    """
    op = start_operation(name, model, **attributes)
    if op is None:
        yield None
        return
    token = op.attach()
    try:
        yield op
    except BaseException as error:
        op.fail(error)
        raise
    finally:
        op.detach(token)
        op.end()


def traced(name: str, *, stream: bool = False) -> Callable[[_F], _F]:
    """Decorate a model's operation (a method, or a classmethod's function) to run inside
    the span of operation ``name``; ``stream``: it returns an iterator, whose steps carry
    the span until it ends (:func:`traced_stream`)."""

    def decorate(function: _F) -> _F:
        @functools.wraps(function)
        def run(owner: Any, *args: Any, **kwargs: Any) -> Any:
            if _tracer() is None:
                return function(owner, *args, **kwargs)
            model = owner if isinstance(owner, type) else type(owner)
            if stream:
                return traced_stream(name, model, lambda: function(owner, *args, **kwargs))
            with operation(name, model):
                return function(owner, *args, **kwargs)

        return run  # type: ignore[return-value]

    return decorate


_THROTTLES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
    }
)


class Request:
    """One request's span on the lean path (its attempts included), and its metrics."""

    __slots__ = ("_meters", "_model", "_operation", "span")

    def __init__(self, span: Any, meters: Any, operation: str, model: str | None) -> None:
        self.span = span
        self._meters = meters
        self._operation = operation
        self._model = model

    def _labels(self) -> dict[str, str]:
        labels = {"rpc.method": self._operation}
        if self._model is not None:
            labels["shardmodel.model"] = self._model
        return labels

    def answered(self, parsed: dict[str, Any]) -> None:
        """Record a successful response's attributes and counters."""
        span = self.span
        metadata = parsed.get("ResponseMetadata") or {}
        capacity = parsed.get("ConsumedCapacity")
        units = 0.0
        if isinstance(capacity, dict):
            units = float(capacity.get("CapacityUnits", 0) or 0)
        elif isinstance(capacity, list):
            units = sum(float(c.get("CapacityUnits", 0) or 0) for c in capacity)
        if span is not None:
            values: dict[str, Any] = {
                "shardmodel.attempts": int(metadata.get("RetryAttempts", 0)) + 1
            }
            if "RequestId" in metadata:
                values["aws.request_id"] = metadata["RequestId"]
            if "HTTPStatusCode" in metadata:
                values["http.response.status_code"] = metadata["HTTPStatusCode"]
            if "Count" in parsed:
                values["aws.dynamodb.count"] = parsed["Count"]
            if "ScannedCount" in parsed:
                values["aws.dynamodb.scanned_count"] = parsed["ScannedCount"]
            if capacity is not None:
                values["aws.dynamodb.consumed_capacity"] = units
            span.set_attributes(values)  # one lock, not one an attribute
            span.end()
        if self._meters is not None:
            labels = self._labels()
            self._meters[0].add(1, labels)
            if units:
                self._meters[2].add(units, labels)

    def failed(self, error: BaseException) -> None:
        """Record the error a request ended with (a throttle by its code)."""
        response = getattr(error, "response", None)
        code = (response or {}).get("Error", {}).get("Code") if isinstance(response, dict) else None
        if self.span is not None:
            trace = _api[0]
            self.span.set_attribute("error.type", code or type(error).__name__)
            self.span.record_exception(error)
            self.span.set_status(trace.Status(trace.StatusCode.ERROR, code or type(error).__name__))
            self.span.end()
        if self._meters is not None:
            labels = self._labels()
            self._meters[0].add(1, labels)
            if code in _THROTTLES:
                self._meters[1].add(1, {**labels, "error.type": code})


def active() -> bool:
    """True when spans or metrics would be recorded now."""
    tracer, meters = _current()
    return tracer is not None or meters is not None


def request(
    operation_name: str, api_params: dict[str, Any], region: str | None, *, span: bool = True
) -> Request | None:
    """A request's span (a child of the current span) and metrics; None when neither is on.

    ``span=False``: its metrics alone (a tracer's botocore instrumentation makes its span).
    """
    tracer, meters = _current()
    if not span:
        tracer = None
    if tracer is None and meters is None:
        return None
    model = _api[1].get_value(_MODEL_KEY)
    made = None
    if tracer is not None:
        trace = _api[0]
        attributes: dict[str, Any] = {
            "rpc.system": "aws-api",
            "rpc.service": "DynamoDB",
            "rpc.method": operation_name,
        }
        if region:
            attributes["cloud.region"] = region
        table = api_params.get("TableName")
        if isinstance(table, str):
            attributes["aws.dynamodb.table_names"] = [table]
        elif isinstance(api_params.get("RequestItems"), dict):
            attributes["aws.dynamodb.table_names"] = sorted(api_params["RequestItems"])
        for name, attribute in (
            ("IndexName", "index_name"),
            ("Limit", "limit"),
            ("ConsistentRead", "consistent_read"),
            ("ScanIndexForward", "scan_forward"),
            ("Segment", "segment"),
            ("TotalSegments", "total_segments"),
        ):
            if name in api_params:
                attributes[f"aws.dynamodb.{attribute}"] = api_params[name]
        made = tracer.start_span(
            f"DynamoDB.{operation_name}", kind=trace.SpanKind.CLIENT, attributes=attributes
        )
    return Request(made, meters, operation_name, model)


def traced_stream(name: str, model: type[Any], make: Callable[[], _T]) -> _T:
    """The iterator ``make()`` returns, its requests children of operation ``name``'s span.

    An iterator that can hold the operation (a merged query's ``observe``) ends the span
    itself when it ends; any other steps with the span current and ends it with the
    iteration: its class made a traced subclass of its own (PynamoDB's ``ResultIterator``
    stays one), or, where a class cannot change (a generator), wrapped.
    """
    op = start_operation(name, model)
    if op is None:
        return make()
    token = op.attach()
    try:
        result = make()
    except BaseException as error:
        op.fail(error)
        op.end()
        raise
    finally:
        op.detach(token)
    observe = getattr(result, "observe", None)
    if observe is not None:
        observe(op)
        return result
    if _traced_in_place(result, op) is not None:
        return result
    wrapped: Any = _TracedIterator(result, op)
    return wrapped  # type: ignore[no-any-return]


_subclasses: dict[type, type] = {}


def _traced_in_place(result: Any, op: Operation) -> Any:
    """``result`` itself, its class a traced subclass of its own (so ``isinstance`` and
    every attribute hold, PynamoDB's ``ResultIterator`` stays one); None when its class
    cannot be changed (a generator)."""
    kind = type(result)
    if kind in _traced_kinds:
        return result  # traced already, by an operation inside this one
    if not hasattr(result, "__dict__") or not hasattr(kind, "__next__"):
        return None
    traced = _subclasses.get(kind)
    if traced is None:
        traced = _subclass(kind)
    try:
        result.__class__ = traced
    except TypeError:
        return None
    result._shardmodel_operation = op
    return result


_traced_kinds: set[type] = set()


def _subclass(kind: type) -> type:
    """A subclass of ``kind`` whose steps run with their operation current."""
    step = kind.__next__  # type: ignore[attr-defined]
    below = getattr(kind, "__del__", None)

    def __next__(self: Any) -> Any:
        return self._shardmodel_operation.step(step, self)

    def __del__(self: Any) -> None:
        op = self.__dict__.get("_shardmodel_operation")
        if op is not None:
            op.end()  # left unfinished: the span ends when the iterator goes
        if below is not None:
            below(self)

    traced = type(kind.__name__, (kind,), {"__next__": __next__, "__del__": __del__})
    traced.__module__ = kind.__module__
    traced.__qualname__ = kind.__qualname__
    _subclasses[kind] = traced
    _traced_kinds.add(traced)
    return traced


class _TracedIterator:
    """An iterator stepped with its operation's span current; the span ends with it."""

    __slots__ = ("_inner", "_op")

    def __init__(self, inner: Any, op: Operation) -> None:
        self._inner = inner
        self._op = op

    def __iter__(self) -> _TracedIterator:
        return self

    def __next__(self) -> Any:
        return self._op.step(next, self._inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __del__(self) -> None:
        op = getattr(self, "_op", None)
        if op is not None:
            op.end()  # left unfinished: the span ends when the iterator goes
