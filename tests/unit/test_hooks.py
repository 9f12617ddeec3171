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
from shardmodel.lean.hooks import Hooks

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


def test_handlers_are_called_in_the_emitter_s_order_with_its_arguments(client: Any) -> None:
    events = client.meta.events
    model = client.meta.service_model.operation_model("Query")
    log: list[tuple[str, dict[str, Any]]] = []
    events.register("before-call", _recorder(log, "general"))
    events.register(QUERY, _recorder(log, "specific", answer="first"))
    events.register("before-call.dynamodb", _recorder(log, "service"))
    expected = events.emit(QUERY, params={"headers": {}}, model=model, context={})
    through_emitter, log[:] = list(log), []
    found = Hooks(events).emit(QUERY, params={"headers": {}}, model=model, context={})
    assert log == through_emitter
    assert [(h, r) for h, r in found] == [(h, r) for h, r in expected]
    assert log[0][1]["event_name"] == QUERY
    log.clear()
    arguments = {"params": {"headers": {}}, "model": model, "context": {}}
    handler, response = Hooks(events).emit_until_response(QUERY, **arguments)
    assert response == "first"  # and the handlers after it are not called
    assert [name for name, _ in log] == ["specific"]
    assert (handler, response) == events.emit_until_response(QUERY, **arguments)
    unanswered = "before-call.dynamodb.Scan"  # botocore's own two handlers, both None
    assert Hooks(events).emit_until_response(unanswered, **arguments) == (
        events.emit_until_response(unanswered, **arguments)
    )
    assert Hooks(events).emit_until_response("nothing.listens", **arguments) == (None, None)


def test_registering_and_unregistering_take_effect_at_once(client: Any) -> None:
    events, hooks = client.meta.events, Hooks(client.meta.events)
    log: list[tuple[str, dict[str, Any]]] = []
    assert hooks.emit("response-received.dynamodb.Query", context={}) == []
    assert not hooks.has_handlers("response-received.dynamodb.Query")
    late = _recorder(log, "late")
    events.register("response-received.dynamodb.Query", late)
    assert hooks.has_handlers("response-received.dynamodb.Query")
    hooks.emit("response-received.dynamodb.Query", context={})
    events.unregister("response-received.dynamodb.Query", late)
    hooks.emit("response-received.dynamodb.Query", context={})
    assert [name for name, _ in log] == ["late"]


def test_botocore_s_debug_log_is_written_through_the_emitter(
    client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    model = client.meta.service_model.operation_model("Query")
    client.meta.events.register(QUERY, lambda **_: None)
    with caplog.at_level(logging.DEBUG, logger="botocore.hooks"):
        Hooks(client.meta.events).emit(QUERY, params={"headers": {}}, model=model, context={})
    assert any("calling handler" in r.getMessage() for r in caplog.records)


def test_events_that_are_not_botocore_s_emitter_go_through_their_own_emit() -> None:
    calls: list[str] = []

    class Events:
        def emit(self, name: str, **kwargs: Any) -> list[Any]:
            calls.append(name)
            return [("h", 1)]

    assert Hooks(Events()).emit(QUERY) == [("h", 1)]
    assert calls == [QUERY]


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

    def outcome(emit: Any) -> Any:
        try:
            return [(handler, _kind(r)) for handler, r in emit()]
        except Exception as error:  # botocore's checksum check raises on a malformed header
            return type(error)

    def copy() -> Any:
        return None if parsed is None else dict(parsed)

    hooks = Hooks(client.meta.events)
    ours = outcome(lambda: hooks.needs_retry(RETRY, http, copy(), exception, 1, **arguments()))
    assert len(asked) == (0 if known else 1)
    theirs = outcome(
        lambda: client.meta.events.emit(
            RETRY,
            response=None if http is None else (http, copy()),
            attempts=1,
            caught_exception=exception,
            **arguments(),
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
    hooks.needs_retry(RETRY, http, {}, None, 2, {"context": {}}, **arguments)
    hooks.needs_retry(RETRY, http, {}, None, 1, {"context": {"retries": {}}}, **arguments)
    assert len(asked) == 2
    client.meta.events.register(RETRY, lambda **_: None)
    hooks.needs_retry(RETRY, http, {}, None, 1, {"context": {}}, **arguments)
    assert len(asked) == 3
