"""The lean path's event calls: the handlers botocore's emitter calls, as it calls them."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any
from zlib import crc32

import botocore.session
import pytest
from botocore.exceptions import ConnectionClosedError
from botocore.retries import standard

from shardmodel.lean.client import Headers, _HttpResponse
from shardmodel.lean.hooks import (
    EventNames,
    Hooks,
    _is_standard_retry,
    first_answer,
    retry_delay,
    until_answer,
)

QUERY = "before-call.dynamodb.Query"
RETRY = "needs-retry.dynamodb.Query"


@pytest.fixture
def client() -> Iterator[Any]:
    session = botocore.session.get_session()
    made = session.create_client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    yield made
    made.close()


def _recorder(log: list[tuple[str, dict[str, Any]]], name: str, answer: Any = None) -> Any:
    def handler(**kwargs: Any) -> Any:
        log.append((name, kwargs))
        return answer

    return handler


NAMES = EventNames.of("dynamodb.Query")
QUERY_MODEL = botocore.session.get_session().get_service_model("dynamodb").operation_model("Query")


def test_handlers_are_called_in_the_emitter_s_order_with_its_arguments(client: Any) -> None:
    events = client.meta.events
    model = client.meta.service_model.operation_model("Query")
    log: list[tuple[str, dict[str, Any]]] = []
    events.register("before-call", _recorder(log, "general"))
    events.register(QUERY, _recorder(log, "specific", answer="first"))
    events.register("before-call.dynamodb", _recorder(log, "service"))
    expected = events.emit(QUERY, params={"headers": {}}, model=model, context={})
    through_emitter, log[:] = list(log), []
    found = Hooks(events).resolve(NAMES, QUERY_MODEL)
    answer = first_answer(
        found.before_call, params={"headers": {}}, model=model, context={}, event_name=QUERY
    )
    assert log == through_emitter
    assert answer == next(r for _, r in expected if r is not None) == "first"
    assert log[0][1]["event_name"] == QUERY
    log.clear()
    arguments = {"params": {"headers": {}}, "model": model, "context": {}}
    response = until_answer(found.before_call, event_name=QUERY, **arguments)
    assert response == "first"  # and the handlers after it are not called
    assert [name for name, _ in log] == ["specific"]
    assert response == events.emit_until_response(QUERY, **arguments)[1]
    scan_model = client.meta.service_model.operation_model("Scan")
    scan = Hooks(events).resolve(EventNames.of("dynamodb.Scan"), scan_model)  # botocore's, None
    unanswered = "before-call.dynamodb.Scan"
    assert until_answer(scan.before_call, event_name=unanswered, **arguments) is None
    assert events.emit_until_response(unanswered, **arguments)[1] is None
    assert until_answer((), **arguments) is None and first_answer((), **arguments) is None


@pytest.mark.parametrize("operation", ["Query", "BatchGetItem", "TransactWriteItems", "PutItem"])
def test_botocore_s_handlers_left_out_would_have_done_nothing(client: Any, operation: str) -> None:
    events = client.meta.events
    model = client.meta.service_model.operation_model(operation)
    names = EventNames.of(f"dynamodb.{operation}")
    found = Hooks(events).resolve(names, model)
    kept = {getattr(h, "__name__", None) for h in (*found.parameters, *found.before_call)}
    assert ("generate_idempotent_uuid" in kept) == bool(model.idempotent_members)
    assert "inject_api_version_header_if_needed" not in kept
    for event, kwargs in (
        ("parameters", lambda: {"params": {"TableName": "t"}}),
        ("before_call", lambda: {"params": {"headers": {}, "context": {}}}),
    ):
        context = {"client_config": client.meta.config}
        theirs: dict[str, Any] = kwargs()
        ours: dict[str, Any] = kwargs()
        events.emit(getattr(names, event), model=model, context=dict(context), **theirs)
        first_answer(
            getattr(found, event),
            model=model,
            context=dict(context),
            event_name=getattr(names, event),
            **ours,
        )
        tokens = [kw["params"].pop("ClientRequestToken", None) for kw in (ours, theirs)]
        assert (tokens[0] is None) == (tokens[1] is None)  # a random token each
        assert ours == theirs


def test_the_recursion_header_is_added_inside_lambda_as_botocore_adds_it(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stand-in for botocore's handler reads the environment on every request."""
    events = client.meta.events
    found = Hooks(events).resolve(NAMES, QUERY_MODEL)  # before the variables are set

    def headers() -> tuple[dict[str, str], dict[str, str]]:
        ours: dict[str, Any] = {"headers": {}}
        theirs: dict[str, Any] = {"headers": {}}
        until_answer(
            found.before_call, params=ours, model=QUERY_MODEL, context={}, event_name=QUERY
        )
        events.emit_until_response(QUERY, params=theirs, model=QUERY_MODEL, context={})
        return ours["headers"], theirs["headers"]

    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    monkeypatch.setenv("_X_AMZN_TRACE_ID", "Root=1-5759e988-bd862e3fe1be46a994272793")
    assert headers() == ({}, {})
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "handler")
    ours, theirs = headers()
    assert ours == theirs and "X-Amzn-Trace-Id" in ours
    monkeypatch.delenv("_X_AMZN_TRACE_ID")
    assert headers() == ({}, {})


def test_a_handler_need_not_be_hashable(client: Any) -> None:
    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Unhashable)

        def __call__(self, **kwargs: Any) -> str:
            return "answered"

    client.meta.events.register(QUERY, Unhashable())
    found = Hooks(client.meta.events).resolve(NAMES, QUERY_MODEL)
    assert until_answer(found.before_call, params={"headers": {}}, event_name=QUERY) == "answered"


def test_an_operation_s_handlers_are_found_once_and_anew_after_a_registration(
    client: Any,
) -> None:
    events, hooks = client.meta.events, Hooks(client.meta.events)
    log: list[tuple[str, dict[str, Any]]] = []
    found = hooks.resolve(NAMES, QUERY_MODEL)
    assert not found.received
    assert hooks.resolve(NAMES, QUERY_MODEL) is found  # kept while botocore keeps its look-up cache
    late = _recorder(log, "late")
    events.register(NAMES.received, late)
    found = hooks.resolve(NAMES, QUERY_MODEL)
    assert list(found.received) == [late]
    first_answer(found.received, context={}, event_name=NAMES.received)
    events.unregister(NAMES.received, late)
    found = hooks.resolve(NAMES, QUERY_MODEL)
    assert not found.received
    first_answer(found.received, context={}, event_name=NAMES.received)
    assert [name for name, _ in log] == ["late"]


def test_botocore_s_debug_log_is_written_through_the_emitter(
    client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    model = client.meta.service_model.operation_model("Query")
    client.meta.events.register(QUERY, lambda **_: "answered")
    hooks = Hooks(client.meta.events)
    hooks.resolve(NAMES, QUERY_MODEL)  # found and kept with the log off
    with caplog.at_level(logging.DEBUG, logger="botocore.hooks"):
        found = hooks.resolve(NAMES, QUERY_MODEL)
        answer = until_answer(
            found.before_call, params={"headers": {}}, model=model, context={}, event_name=QUERY
        )
    assert answer == "answered"
    assert any("calling handler" in r.getMessage() for r in caplog.records)


def test_events_that_are_not_botocore_s_emitter_go_through_their_own_emit() -> None:
    calls: list[tuple[str, str]] = []

    class Events:
        def emit(self, name: str, **kwargs: Any) -> list[Any]:
            calls.append(("emit", name))
            return [("h", None), ("g", 1)]

        def emit_until_response(self, name: str, **kwargs: Any) -> tuple[Any, Any]:
            calls.append(("until", name))
            return ("h", 2)

    found = Hooks(Events()).resolve(NAMES, QUERY_MODEL)
    assert first_answer(found.before_send, request=None, event_name=NAMES.before_send) == 1
    assert until_answer(found.before_call, params={}, event_name=NAMES.before_call) == 2
    assert calls == [("emit", NAMES.before_send), ("until", NAMES.before_call)]


# -- needs-retry -------------------------------------------------------------------------

BODY = json.dumps({"Items": [], "Count": 0, "ScannedCount": 0}).encode()
OK = {"x-amz-crc32": str(crc32(BODY) & 0xFFFFFFFF)}


def _response(status: int, headers: dict[str, str], body: bytes = BODY) -> Any:
    return _HttpResponse("http://127.0.0.1:9/", status, Headers(headers), body)


CASES: list[tuple[str, Any, Any, Exception | None, bool]] = [
    ("2xx, checksum matches", _response(200, OK), {"Items": []}, None, True),
    ("2xx, no checksum", _response(200, {}), {"Items": []}, None, True),
    ("2xx, checksum differs", _response(200, {"x-amz-crc32": "1"}), {"Items": []}, None, False),
    ("2xx, checksum malformed", _response(200, {"x-amz-crc32": "x"}), {}, None, False),
    (
        "throttled",
        _response(400, {}),
        {"Error": {"Code": "ThrottlingException", "Message": "slow down"}},
        None,
        False,
    ),
    ("5xx", _response(500, {}), {"Error": {"Code": "InternalServerError"}}, None, False),
    ("no response", None, None, ConnectionClosedError(endpoint_url="http://x"), False),
]


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per time botocore's standard retry handler is asked (its context built)."""
    calls: list[int] = []
    create = standard.RetryEventAdapter.create_retry_context

    def counted(self: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return create(self, **kwargs)

    monkeypatch.setattr(standard.RetryEventAdapter, "create_retry_context", counted)
    return calls


def _kind(delay: Any) -> Any:
    """A handler's answer with its random back-off reduced to "a delay"."""
    return delay if delay is None or delay is False else "a delay"


@pytest.mark.parametrize(
    ("http", "parsed", "exception", "known"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_the_standard_retry_handler_is_skipped_only_where_its_answer_is_known(
    asked: list[int],
    client: Any,
    http: Any,
    parsed: Any,
    exception: Exception | None,
    known: bool,
) -> None:
    model = client.meta.service_model.operation_model("Query")

    def arguments() -> dict[str, Any]:
        return {
            "endpoint": client._endpoint,
            "operation": model,
            "request_dict": {"context": {}},
        }

    def outcome(answer: Any) -> Any:
        try:
            return _kind(answer())
        except Exception as error:  # botocore's checksum check raises on a malformed header
            return type(error)

    def copy() -> Any:
        return None if parsed is None else dict(parsed)

    hooks = Hooks(client.meta.events)
    found = hooks.resolve(NAMES, QUERY_MODEL)
    ours = outcome(lambda: retry_delay(found, http, copy(), exception, 1, **arguments()))
    assert len(asked) == (0 if known else 1)
    theirs = outcome(
        lambda: next(
            (
                r
                for _, r in client.meta.events.emit(
                    RETRY,
                    response=None if http is None else (http, copy()),
                    attempts=1,
                    caught_exception=exception,
                    **arguments(),
                )
                if r is not None
            ),
            None,
        )
    )
    assert ours == theirs


def test_another_needs_retry_handler_or_a_later_attempt_asks_the_handlers(
    asked: list[int], client: Any
) -> None:
    hooks = Hooks(client.meta.events)
    model = client.meta.service_model.operation_model("Query")
    arguments = {"endpoint": client._endpoint, "operation": model}
    http = _response(200, OK)
    found = hooks.resolve(NAMES, QUERY_MODEL)
    retry_delay(found, http, {}, None, 2, {"context": {}}, **arguments)
    retry_delay(found, http, {}, None, 1, {"context": {"retries": {}}}, **arguments)
    assert len(asked) == 2
    retry_delay(found, http, {}, None, 1, {"context": {}}, **arguments)
    assert len(asked) == 2  # the known answer
    client.meta.events.register(RETRY, lambda **_: None)
    retry_delay(hooks.resolve(NAMES, QUERY_MODEL), http, {}, None, 1, {"context": {}}, **arguments)
    assert len(asked) == 3


def test_a_handler_after_the_standard_retry_handler_asks_it_too(
    asked: list[int], client: Any
) -> None:
    """The standard handler first in the list is not enough: it must be alone."""
    client.meta.events.register_last("needs-retry", lambda **_: None)  # called after it
    found = Hooks(client.meta.events).resolve(NAMES, QUERY_MODEL)
    assert _is_standard_retry(found.retry[0])
    arguments = {"endpoint": client._endpoint, "operation": QUERY_MODEL}
    retry_delay(found, _response(200, OK), {}, None, 1, {"context": {}}, **arguments)
    assert len(asked) == 1
