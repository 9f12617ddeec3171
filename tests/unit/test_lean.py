"""The lean request path behaves like botocore's, down to the bytes on the wire.

A scripted loopback server answers each request with the next action of a script
(a response, split into pieces or chunked; a close; a reset; a stall). The same script
is played to PynamoDB's connection on botocore and on the lean path, and everything the
caller can see must be equal: results, exception types, messages, error codes,
``ThrottlingReasons``, the number of attempts. Signatures are checked against botocore's
signer, framing against every response shape HTTP/1.1 allows for these responses.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import json
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials, RefreshableCredentials
from botocore.exceptions import (
    ConnectionClosedError,
    EndpointConnectionError,
    HTTPClientError,
    ReadTimeoutError,
    SSLError,
)
from botocore.parsers import create_parser
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pynamodb.connection.base import Connection, MetaTable
from pynamodb.exceptions import GetError

from shardmodel.lean import LeanConnection, _stand_ins, table_connection, unsupported_reason
from shardmodel.lean.aio_http import AsyncHttpPool
from shardmodel.lean.client import Headers, LeanClient, lean_client
from shardmodel.lean.http import RESENDABLE, HttpPool
from shardmodel.lean.sigv4 import Signer
from shardmodel.retry import is_throttle
from shardmodel.throttles import throttling_reasons
from tests import traced_everywhere
from tests.models import RandomEvent
from tests.unit import test_fastparse as fastparse_tests

Action = Callable[[socket.socket], bool]  # answers one request; True keeps the socket

TABLE = "lean-table"
_PREFIX = "com.amazonaws.dynamodb.v20120810#"


# -- a scripted server -------------------------------------------------------------------


class Script:
    """A loopback HTTP server answering request n with action n; records every request."""

    def __init__(self, actions: list[Action], tls: Any = None) -> None:
        self.actions = deque(actions)
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.connections = 0
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._tls = tls
        self.port = self._listener.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._listener.close()

    def _serve(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._connection, args=(sock,), daemon=True).start()

    def _connection(self, sock: socket.socket) -> None:
        if self._tls is not None:
            try:
                sock = self._tls.wrap_socket(sock, server_side=True)
            except OSError:
                sock.close()
                return
        buffer = b""
        with sock:
            while True:
                while b"\r\n\r\n" not in buffer:
                    try:
                        chunk = sock.recv(65536)
                    except OSError:
                        return
                    if not chunk:
                        return
                    buffer += chunk
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                while len(buffer) < length:
                    buffer += sock.recv(65536)
                body, buffer = buffer[:length], buffer[length:]
                self.requests.append((headers, body))
                action = self.actions.popleft() if self.actions else reply(500, {})
                if not action(sock):
                    return


def _http(status: int, body: bytes, headers: dict[str, str] | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status} X"]
    for name, value in {"x-amzn-RequestId": "req-1", **(headers or {})}.items():
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _json(document: Any) -> bytes:
    return json.dumps(document).encode("utf-8")


def reply(
    status: int,
    document: Any,
    headers: dict[str, str] | None = None,
    pieces: int = 1,
    chunked: bool = False,
    close: bool = False,
    interim: bool = False,
) -> Action:
    """A JSON response: whole, in ``pieces`` writes, chunked, or ended by closing."""
    body = _json(document)

    def act(sock: socket.socket) -> bool:
        extra = {"Content-Type": "application/x-amz-json-1.0", **(headers or {})}
        if chunked:
            framed = b"".join(
                f"{len(body[i : i + 7]):x};ext=1\r\n".encode() + body[i : i + 7] + b"\r\n"
                for i in range(0, len(body), 7)
            )
            payload = _http(
                status,
                framed + b"0\r\nX-Trailer: 1\r\n\r\n",
                {**extra, "Transfer-Encoding": "chunked"},
            )
        elif close:
            payload = _http(status, body, {**extra, "Connection": "close"})
        else:
            payload = _http(status, body, {**extra, "Content-Length": str(len(body))})
        if interim:
            payload = b"HTTP/1.1 100 Continue\r\n\r\n" + payload
        size = max(1, len(payload) // pieces)
        for start in range(0, len(payload), size):
            sock.sendall(payload[start : start + size])
            if pieces > 1:
                time.sleep(0.001)
        return not close

    return act


def error(status: int, code: str, message: str, **extra: Any) -> Action:
    return reply(status, {"__type": _PREFIX + code, "message": message, **extra})


def hang_up(sock: socket.socket) -> bool:
    """Close without answering."""
    return False


def reset(sock: socket.socket) -> bool:
    """Abort the connection (a TCP reset)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return False


def cut(fraction: float) -> Action:
    """Send the first part of a response, then close."""

    def act(sock: socket.socket) -> bool:
        body = _json(QUERY_RESPONSE)
        payload = _http(200, body, {"Content-Length": str(len(body))})
        sock.sendall(payload[: int(len(payload) * fraction)])
        return False

    return act


def stall(seconds: float) -> Action:
    def act(sock: socket.socket) -> bool:
        threading.Event().wait(seconds)  # not time.sleep: tests record that instead
        return False

    return act


def garbage(sock: socket.socket) -> bool:
    sock.sendall(b"SSH-2.0-OpenSSH\r\n\r\n")
    return False


QUERY_RESPONSE = {
    "Items": [
        {"pk": {"S": "k#1"}, "sk": {"N": "1"}, "blob": {"B": "AAE="}, "n": {"NULL": True}},
        {"pk": {"S": "k#1"}, "sk": {"N": "2"}, "set": {"SS": ["a", "b"]}, "m": {"M": {}}},
    ],
    "Count": 2,
    "ScannedCount": 2,
    "LastEvaluatedKey": {"pk": {"S": "k#1"}, "sk": {"N": "2"}},
    "ConsumedCapacity": {"TableName": TABLE, "CapacityUnits": 0.5},
}
BATCH_RESPONSE = {
    "Responses": {TABLE: [{"pk": {"S": "k#1"}, "sk": {"N": "1"}}]},
    "UnprocessedKeys": {TABLE: {"Keys": [{"pk": {"S": "k#2"}, "sk": {"N": "1"}}]}},
}
THROTTLE = (
    400,
    "ProvisionedThroughputExceededException",
    "Throughput exceeds the current capacity of your table or index.",
)
REASONS = {
    "ThrottlingReasons": [
        {
            "reason": "TableReadKeyRangeThroughputExceeded",
            "resource": f"arn:aws:dynamodb:us-east-1:123456789012:table/{TABLE}",
        }
    ]
}


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """botocore's retry delays, recorded instead of slept (both paths sleep via time.sleep)."""
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    return slept


def _codec_module(with_orjson: bool) -> Any:
    """A fresh copy of the lean client's module, imported with or without orjson.

    Without it, ``import orjson`` fails as on an install without the ``lean`` extra, so
    the copy holds the module's own stdlib fallback; with it, the orjson codec.
    """
    origin = sys.modules[LeanClient.__module__]
    spec = importlib.util.spec_from_file_location(f"{origin.__name__}_codec_copy", origin.__file__)
    assert spec is not None and spec.loader is not None
    copy = importlib.util.module_from_spec(spec)
    absent = object()
    saved = sys.modules.get("orjson", absent)  # None when imports of it are blocked
    if not with_orjson:
        sys.modules["orjson"] = None  # type: ignore[assignment]  # import orjson raises
    try:
        spec.loader.exec_module(copy)
    finally:
        if saved is absent:
            sys.modules.pop("orjson", None)
        else:
            sys.modules["orjson"] = saved  # type: ignore[assignment]
    return copy


@pytest.fixture(params=["json", "orjson"])
def codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The lean path's JSON codec for one test: the stdlib fallback, then orjson.

    Both are the lean client module's own code (see :func:`_codec_module`); only the
    orjson run skips, when orjson is not installed.
    """
    if request.param == "orjson":
        pytest.importorskip("orjson")
    copy = _codec_module(with_orjson=request.param == "orjson")
    assert (copy._loads is None) == (request.param == "json")  # the codec asked for
    origin = sys.modules[LeanClient.__module__]
    monkeypatch.setattr(origin, "_loads", copy._loads)
    monkeypatch.setattr(origin, "_dumps", copy._dumps)
    return str(request.param)


@functools.cache
def _offline_lean() -> LeanClient:
    """A lean client that never connects, built once: a botocore client per Hypothesis
    example made two tests take 50 s each."""
    return LeanClient(_client("http://127.0.0.1:9"))


def _client(url: str, attempts: int = 3, read_timeout: float = 5, **config: Any) -> Any:
    """A client of the scripted server ``url``, with the handlers a user's client has.

    Once moto is imported (any test of the process may have), botocore gives every new
    client moto's ``before-send`` stub, and the lean path then builds each request for
    it: the path of a user's client, with only PynamoDB's handlers, would go untested.
    """
    session = botocore.session.get_session()
    client = session.create_client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret",
        config=Config(
            retries={"mode": "standard", "total_max_attempts": attempts},
            parameter_validation=False,
            read_timeout=read_timeout,
            connect_timeout=2,
            **config,
        ),
    )
    if "moto.core.models" in sys.modules:
        client.meta.events.unregister(
            "before-send", sys.modules["moto.core.models"].botocore_stubber
        )
    return client


def _connection(url: str, lean: bool, attempts: int = 3, read_timeout: float = 5) -> Any:
    """A PynamoDB Connection to ``url`` (its table described offline), botocore or lean."""
    connection = Connection(host=url, region="us-east-1")
    connection._client = _client(url, attempts, read_timeout)
    connection.add_meta_table(
        MetaTable(
            {
                "TableName": TABLE,
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "sk", "KeyType": "RANGE"},
                ],
                "AttributeDefinitions": [
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "sk", "AttributeType": "N"},
                ],
            }
        )
    )
    return LeanConnection(connection) if lean else connection


def _close(connection: Any) -> None:
    """Close the sockets a connection opened (a test leaves none behind)."""
    origin = connection._origin if isinstance(connection, LeanConnection) else connection
    lean = _stand_ins.get(origin._client)
    if isinstance(lean, LeanClient):
        lean.pool.close()
    origin._client.close()


def _query(connection: Any) -> Any:
    return connection.query(TABLE, "k#1", limit=13, scan_index_forward=False)


def _batch_get(connection: Any) -> Any:
    return connection.batch_get_item(TABLE, [{"pk": "k#1", "sk": 1}, {"pk": "k#2", "sk": 1}])


def _outcome(call: Callable[[Any], Any], connection: Any) -> dict[str, Any]:
    """What a caller can observe of one call: the result, or everything about the error."""
    try:
        result = call(connection)
    except Exception as caught:
        cause = caught.cause if hasattr(caught, "cause") else None
        origin = caught.__cause__ or caught.__context__
        # the botocore ClientError PynamoDB's VerboseClientError wraps, if any
        inner = cause.__cause__ if getattr(cause, "response", None) is not None else None
        return {
            "type": type(caught).__name__,
            "message": str(caught).replace(connection_url(connection), "URL"),
            "code": getattr(caught, "cause_response_code", None),
            "error_message": getattr(caught, "cause_response_message", None),
            "throttle": is_throttle(caught),
            "reasons": throttling_reasons(caught),
            "cause": type(cause).__name__,
            "origin": type(origin).__name__,
            "botocore": type(inner).__name__,
            "response": {
                k: v for k, v in getattr(inner, "response", {}).items() if k != "ResponseMetadata"
            },
        }
    metadata = result.pop("ResponseMetadata")
    metadata["HTTPHeaders"].pop("date", None)
    return {"result": result, "metadata": metadata}


def connection_url(connection: Any) -> str:
    origin = connection._origin if isinstance(connection, LeanConnection) else connection
    return str(origin._client.meta.endpoint_url)


def _both(
    actions: list[Action],
    call: Callable[[Any], Any] = _query,
    attempts: int = 3,
    expect_same: bool = True,
) -> tuple[Any, Any, int]:
    """The outcome on botocore and on the lean path of the same script; requests each."""
    outcomes, counts = [], []
    for lean in (False, True):
        server = Script(list(actions))
        connection = _connection(server.url, lean, attempts)
        try:
            outcomes.append(_outcome(call, connection))
            counts.append(len(server.requests))
        finally:
            _close(connection)
            server.close()
    if expect_same:
        assert counts[0] == counts[1], f"attempts: botocore {counts[0]}, lean {counts[1]}"
    return outcomes[0], outcomes[1], counts[1]


# -- the same outcome as botocore --------------------------------------------------------


@pytest.mark.parametrize(
    "shape",
    [
        {},
        {"pieces": 40},
        {"chunked": True},
        {"close": True},
        {"interim": True},
        {"chunked": True, "pieces": 25},
    ],
    ids=["whole", "partial reads", "chunked", "until close", "100 continue", "chunked pieces"],
)
@pytest.mark.usefixtures("codec")
def test_every_response_shape_gives_botocore_s_result(shape: dict[str, Any]) -> None:
    botocore_, lean, requests = _both([reply(200, QUERY_RESPONSE, **shape)])
    assert lean == botocore_
    assert requests == 1
    assert lean["result"]["Items"][0]["blob"] == {"B": b"\x00\x01"}


@pytest.mark.usefixtures("codec")
def test_batch_get_gives_botocore_s_result() -> None:
    botocore_, lean, _ = _both([reply(200, BATCH_RESPONSE)], _batch_get)
    assert lean == botocore_
    assert lean["result"]["UnprocessedKeys"][TABLE]["Keys"]


@pytest.mark.usefixtures("codec")
def test_a_throttle_is_retried_then_raised_like_botocore(no_sleep: list[float]) -> None:
    actions = [error(*THROTTLE, **REASONS)] * 3
    botocore_, lean, requests = _both(actions)
    assert lean == botocore_
    assert requests == 3
    assert lean["type"] == "QueryError" and lean["throttle"]
    assert lean["reasons"] == ("TableReadKeyRangeThroughputExceeded",)
    assert lean["botocore"] == "ProvisionedThroughputExceededException"


@pytest.mark.usefixtures("codec")
def test_a_batch_get_throttle_raises_get_error_like_botocore(no_sleep: list[float]) -> None:
    botocore_, lean, _ = _both([error(*THROTTLE, **REASONS)] * 3, _batch_get)
    assert lean == botocore_
    assert lean["type"] == GetError.__name__


@pytest.mark.parametrize(
    "first",
    [
        error(500, "InternalServerError", "Internal server error"),
        error(503, "ServiceUnavailable", "unavailable"),
        error(400, "ThrottlingException", "Rate exceeded"),
        reset,
        hang_up,
        garbage,
    ],
    ids=["500", "503", "throttling", "reset", "hang up", "garbage"],
)
@pytest.mark.usefixtures("codec")
def test_transient_failures_are_retried_like_botocore(first: Action, no_sleep: list[float]) -> None:
    botocore_, lean, requests = _both([first, reply(200, QUERY_RESPONSE)])
    assert lean == botocore_
    assert "result" in lean
    assert requests == 2
    assert lean["metadata"]["RetryAttempts"] == 1


@pytest.mark.parametrize("fraction", [0.05, 0.5, 0.95], ids=["in head", "in body", "at end"])
@pytest.mark.usefixtures("codec")
def test_a_truncated_response_is_retried_where_botocore_loses_it(
    fraction: float, no_sleep: list[float]
) -> None:
    """A deliberate difference: botocore parses a cut response as an empty result."""
    botocore_, lean, _ = _both([cut(fraction), reply(200, QUERY_RESPONSE)], expect_same=False)
    assert botocore_["result"] == {}  # no Items, no LastEvaluatedKey: the shard looks empty
    assert lean["result"]["Items"] and lean["metadata"]["RetryAttempts"] == 1


@pytest.mark.parametrize(
    "action",
    [
        error(400, "ValidationException", "One or more parameter values were invalid"),
        error(400, "ResourceNotFoundException", "Requested resource not found"),
        error(400, "UnrecognizedClientException", "The security token is invalid."),
        reply(400, {"message": "no type"}),
        reply(200, ["not", "an", "object"]),
    ],
    ids=["validation", "not found", "bad token", "no code", "not an object"],
)
@pytest.mark.usefixtures("codec")
def test_errors_that_are_not_retried_raise_like_botocore(action: Action) -> None:
    botocore_, lean, requests = _both([action, reply(200, QUERY_RESPONSE)])
    assert lean == botocore_
    assert requests == 1


@pytest.mark.usefixtures("codec")
def test_retries_end_with_the_connection_error_botocore_raises(no_sleep: list[float]) -> None:
    botocore_, lean, requests = _both([reset] * 3)
    assert lean == botocore_
    assert requests == 3
    assert lean["origin"] == "ConnectionClosedError"


@pytest.mark.usefixtures("codec")
def test_a_crc32_mismatch_is_retried_like_botocore(no_sleep: list[float]) -> None:
    bad = reply(200, QUERY_RESPONSE, headers={"x-amz-crc32": "1"})
    botocore_, lean, requests = _both([bad, reply(200, QUERY_RESPONSE)])
    assert lean == botocore_
    assert requests == 2


@pytest.mark.usefixtures("codec")
def test_a_read_timeout_is_retried_then_raised(no_sleep: list[float]) -> None:
    outcomes = []
    for lean in (False, True):
        server = Script([stall(1.5)] * 2)
        connection = _connection(server.url, lean, attempts=2, read_timeout=0.3)
        outcomes.append(_outcome(_query, connection))
        assert len(server.requests) == 2
        _close(connection)
        server.close()
    assert outcomes[0]["origin"] == outcomes[1]["origin"] == "ReadTimeoutError"
    assert outcomes[0]["type"] == outcomes[1]["type"] == "QueryError"


# -- the request: signed, serialized like botocore -----------------------------------


_header_values = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=20)


@given(
    body=st.binary(max_size=200),
    token=st.none() | st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1),
    extra=st.dictionaries(
        st.sampled_from(["x-amz-target", "x-custom", "content-type"]), _header_values
    ),
    when=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 1, 1)),
    port=st.sampled_from(["", ":8000", ":443"]),
)
def test_signatures_are_botocore_s(
    body: bytes, token: str | None, extra: dict[str, str], when: datetime, port: str
) -> None:
    import botocore.auth
    from botocore.auth import SigV4Auth

    when = when.replace(microsecond=0, tzinfo=timezone.utc)
    credentials = Credentials("AKID", "s3cr3t/key", token)
    url = f"https://dynamodb.us-west-2.amazonaws.com{port}/"
    host = url.split("/")[2].removesuffix(":443")
    # the lean path's headers: one value per name, whatever its case
    headers = dict(Headers({"Content-Type": "application/x-amz-json-1.0", **extra}))
    ours = Signer(credentials.get_frozen_credentials, "us-west-2", now=lambda: when)
    signed = ours.sign({"host": host, **headers}, body)
    request = AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
    original = botocore.auth.get_current_datetime
    botocore.auth.get_current_datetime = lambda: when.replace(tzinfo=None)
    try:
        SigV4Auth(credentials, "dynamodb", "us-west-2").add_auth(request)
    finally:
        botocore.auth.get_current_datetime = original
    assert signed["authorization"] == request.headers["Authorization"]
    assert signed["x-amz-date"] == request.headers["X-Amz-Date"]
    assert signed.get("x-amz-security-token") == request.headers.get("X-Amz-Security-Token")


_SHARED_CLOCK: list[datetime] = [datetime(2026, 1, 1, tzinfo=timezone.utc)]
_SHARED_TOKEN: list[str | None] = [None]
_SHARED_SIGNER = Signer(
    lambda: Credentials("AKID", "s3cr3t/key", _SHARED_TOKEN[0]).get_frozen_credentials(),
    "us-west-2",
    now=lambda: _SHARED_CLOCK[0],
)


@given(
    body=st.binary(max_size=200),
    token=st.sampled_from([None, "tok-1", "tok-2"]),
    extra=st.dictionaries(
        st.sampled_from(["x-amz-target", "x-custom", "x-amz-date"]),
        st.sampled_from(["a", "b  c", " d "]),
    ),
    when=st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2026, 1, 3)),
)
def test_one_signer_keeps_signing_like_botocore_as_headers_tokens_and_days_change(
    body: bytes, token: str | None, extra: dict[str, str], when: datetime
) -> None:
    """The canonical header block is worked out once per header set and token: a signer
    reused over many requests (as the lean client's is) still signs each as botocore."""
    import botocore.auth
    from botocore.auth import SigV4Auth

    when = when.replace(microsecond=0, tzinfo=timezone.utc)
    _SHARED_CLOCK[0], _SHARED_TOKEN[0] = when, token
    headers = {"host": "h:8000", "content-type": "application/x-amz-json-1.0", **extra}
    signed = _SHARED_SIGNER.sign(headers, body)
    request = AWSRequest(
        method="POST",
        url="http://h:8000/",
        data=body,
        headers={k: v for k, v in headers.items() if k != "host"},
    )
    original = botocore.auth.get_current_datetime
    botocore.auth.get_current_datetime = lambda: when.replace(tzinfo=None)
    try:
        SigV4Auth(Credentials("AKID", "s3cr3t/key", token), "dynamodb", "us-west-2").add_auth(
            request
        )
    finally:
        botocore.auth.get_current_datetime = original
    assert signed["authorization"] == request.headers["Authorization"]
    assert signed.get("x-amz-security-token") == request.headers.get("X-Amz-Security-Token")


def test_the_signing_key_is_derived_once_a_day() -> None:
    now = [datetime(2026, 1, 1, 12, tzinfo=timezone.utc)]
    credentials = Credentials("AKID", "secret")
    signer = Signer(credentials.get_frozen_credentials, "us-east-1", now=lambda: now[0])
    signer.sign({"host": "h"}, b"{}")
    now[0] += timedelta(hours=1)
    signer.sign({"host": "h"}, b"{}")
    assert len(signer._keys) == 1
    now[0] += timedelta(days=1)
    signer.sign({"host": "h"}, b"{}")
    assert len(signer._keys) == 2


@pytest.mark.usefixtures("codec")
def test_expired_credentials_are_refreshed_before_signing() -> None:
    refreshed: list[int] = []
    soon = datetime.now(timezone.utc) + timedelta(seconds=30)  # inside botocore's window

    def refresh() -> dict[str, str]:
        refreshed.append(1)
        later = datetime.now(timezone.utc) + timedelta(hours=1)
        return {
            "access_key": f"AKIDNEW{len(refreshed)}",
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
    try:
        client = _client(server.url)
        client._request_signer._credentials = credentials
        lean = LeanClient(client)
        lean.call("Query", {"TableName": TABLE})
        lean.call("Query", {"TableName": TABLE})
    finally:
        lean.pool.close()
        client.close()
        server.close()
    assert refreshed == [1]
    for headers, _ in server.requests:
        assert "Credential=AKIDNEW1/" in headers["authorization"]
        assert headers["x-amz-security-token"] == "new-token"


# the codec fixture patches the module once per test, the same for every example
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    key=st.binary(max_size=40),
    legacy=st.text(max_size=10),
    number=st.sampled_from(["1", "1.0", "1e0", "-0", "9" * 38]),
)
@pytest.mark.usefixtures("codec")
def test_bodies_are_what_botocore_serializes(key: bytes, legacy: str, number: str) -> None:
    """Both codecs encode a request body to the JSON botocore's serializer sends.

    The first two bodies hold no binary value, so the codec writes them; a binary value
    (the last two) sends the body through botocore's serializer.
    """
    lean = _offline_lean()
    for params in (
        {
            "TableName": TABLE,
            "KeyConditionExpression": "#0 = :0 AND #1 > :1",
            "ExpressionAttributeNames": {"#0": "pk", "#1": "sk"},
            "ExpressionAttributeValues": {":0": {"S": legacy}, ":1": {"N": number}},
            "ExclusiveStartKey": {"pk": {"S": "k\u00e9#1"}, "sk": {"N": number}},
            "ScanIndexForward": False,
            "ConsistentRead": True,
            "Limit": 13,
        },
        {"RequestItems": {TABLE: {"Keys": [{"pk": {"S": legacy}, "sk": {"N": number}}]}}},
        {
            "TableName": TABLE,
            "KeyConditionExpression": "#0 = :0",
            "ExpressionAttributeNames": {"#0": "pk"},
            "ExpressionAttributeValues": {":0": {"S": "k\u00e9#1"}, ":1": {"N": number}},
            "ExclusiveStartKey": {"pk": {"S": "k"}, "sk": {"B": key}},
            "Limit": 13,
        },
        {"RequestItems": {TABLE: {"Keys": [{"pk": {"B": legacy}, "sk": {"BS": [key, legacy]}}]}}},
    ):
        operation = "Query" if "TableName" in params else "BatchGetItem"
        expected = lean.client._serializer.serialize_to_request(
            params, lean.client.meta.service_model.operation_model(operation)
        )["body"]
        assert json.loads(lean._serialize(operation, params)) == json.loads(expected)


# -- HTTP framing --------------------------------------------------------------------


def test_a_kept_socket_is_reused() -> None:
    server = Script([reply(200, {"a": 1})] * 3)
    pool = HttpPool(server.url)
    try:
        for _ in range(3):
            assert pool.post({"x": "1"}, b"{}").body == b'{"a": 1}'
    finally:
        pool.close()
        server.close()
    assert server.connections == 1
    assert server.requests[0][0]["host"] == f"127.0.0.1:{server.port}"
    assert server.requests[0][0]["content-length"] == "2"


def test_a_socket_the_server_closed_while_idle_is_replaced_transparently() -> None:
    server = Script([reply(200, {"a": 1}), hang_up, reply(200, {"a": 2})])
    pool = HttpPool(server.url)
    try:
        assert pool.post({}, b"{}").body == b'{"a": 1}'
        assert pool.post({}, b"{}", resend=True).body == b'{"a": 2}'
    finally:
        pool.close()
        server.close()
    assert server.connections == 2


def _write_on_a_closing_socket(post: Callable[[Any, bytes, bool], Any], server: Script) -> None:
    """The server reads the second request, then closes without an answer: applied or not,
    the caller cannot know; a write must not go again on its own."""
    assert post({}, b"{}", False).body == b'{"a": 1}'
    with pytest.raises(ConnectionClosedError):
        post({}, b'{"write": 1}', False)
    assert [body for _, body in server.requests] == [b"{}", b'{"write": 1}']
    assert server.connections == 1


def test_a_write_on_a_socket_closed_under_it_is_not_resent() -> None:
    """Only reads (RESENDABLE) are sent again on a new socket; a write raises for botocore's
    retry policy to judge (and count), on the sync pool and on the async one alike."""
    assert "Query" in RESENDABLE and "PutItem" not in RESENDABLE
    assert "UpdateItem" not in RESENDABLE and "ExecuteStatement" not in RESENDABLE
    server = Script([reply(200, {"a": 1}), hang_up, reply(200, {"a": 2})])
    pool = HttpPool(server.url)
    try:
        _write_on_a_closing_socket(pool.post, server)
    finally:
        pool.close()
        server.close()

    server = Script([reply(200, {"a": 1}), hang_up, reply(200, {"a": 2})])

    async def run() -> None:
        loop_pool = AsyncHttpPool(server.url)
        await loop_pool.start()
        done: list[Any] = []
        for body in (b"{}", b'{"write": 1}'):
            try:
                done.append(await loop_pool.post({}, body, False))
            except ConnectionClosedError as error:
                done.append(error)
        assert done[0].body == b'{"a": 1}' and isinstance(done[1], ConnectionClosedError)
        loop_pool.close()

    try:
        asyncio.run(run())
    finally:
        server.close()
    assert [body for _, body in server.requests] == [b"{}", b'{"write": 1}']
    assert server.connections == 1


def test_connection_close_is_not_reused() -> None:
    server = Script([reply(200, {"a": 1}, close=True), reply(200, {"a": 2})])
    pool = HttpPool(server.url)
    try:
        assert json.loads(pool.post({}, b"{}").body) == {"a": 1}
        assert json.loads(pool.post({}, b"{}").body) == {"a": 2}
    finally:
        pool.close()
        server.close()
    assert server.connections == 2


@pytest.mark.parametrize(
    ("action", "raised"),
    [
        (reset, ConnectionClosedError),
        (hang_up, ConnectionClosedError),
        (cut(0.5), ConnectionClosedError),
        (stall(1.0), ReadTimeoutError),
        (garbage, HTTPClientError),
    ],
    ids=["reset", "hang up", "cut", "timeout", "garbage"],
)
def test_failures_raise_botocore_s_exceptions(action: Action, raised: type[Exception]) -> None:
    server = Script([action])
    pool = HttpPool(server.url, read_timeout=0.3)
    try:
        with pytest.raises(raised):
            pool.post({}, b"{}")
    finally:
        server.close()


def test_a_closed_port_is_an_endpoint_connection_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(EndpointConnectionError):
        HttpPool(f"http://127.0.0.1:{port}").post({}, b"{}")


def test_a_malformed_chunk_is_an_http_client_error() -> None:
    def bad_chunk(sock: socket.socket) -> bool:
        sock.sendall(_http(200, b"zz\r\nab\r\n0\r\n\r\n", {"Transfer-Encoding": "chunked"}))
        return True

    server = Script([bad_chunk])
    try:
        with pytest.raises(HTTPClientError):
            HttpPool(server.url).post({}, b"{}")
    finally:
        server.close()


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return key, cert


@pytest.mark.parametrize(
    ("verify", "ok"), [(False, True), ("cert", True), (True, False)], ids=["off", "bundle", "on"]
)
def test_tls_is_verified_as_botocore_verifies(
    certificate: tuple[Path, Path], verify: Any, ok: bool
) -> None:
    import ssl

    key, cert = certificate
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = Script([reply(200, {"a": 1})], tls=context)
    pool = HttpPool(server.url, verify=str(cert) if verify == "cert" else verify)
    try:
        if ok:
            assert pool.post({}, b"{}").body == b'{"a": 1}'
        else:
            with pytest.raises(SSLError):
                pool.post({}, b"{}")
    finally:
        pool.close()
        server.close()


def test_headers_are_case_insensitive() -> None:
    headers = Headers({"Content-Type": "a"})
    headers["X-Amz-Target"] = "b"
    headers.update({"X-AMZ-DATE": "c"})
    assert headers["content-type"] == "a" and "x-amz-target" in headers
    assert headers.get("X-Amz-Date") == "c" and headers.pop("CONTENT-TYPE") == "a"
    assert dict(headers) == {"x-amz-target": "b", "x-amz-date": "c"}


# -- when the lean path steps aside ----------------------------------------------------


@pytest.mark.parametrize(
    ("url", "config", "reason"),
    [
        ("http://127.0.0.1:9/base", {}, "not a plain"),
        ("http://127.0.0.1:9", {"proxies": {"http": "http://proxy:3128"}}, "proxy"),
        ("http://127.0.0.1:9", {"client_cert": "/nonexistent.pem"}, "client certificate"),
        ("http://127.0.0.1:9", {}, None),
    ],
    ids=["path", "proxy", "client cert", "plain"],
)
def test_clients_it_cannot_stand_in_for_stay_on_botocore(
    url: str, config: dict[str, Any], reason: str | None
) -> None:
    found = unsupported_reason(_client(url, **config))
    assert (found is None) if reason is None else (reason in (found or ""))


@pytest.mark.parametrize("mode", ["adaptive", "standard", "legacy"])
def test_adaptive_retries_stay_on_botocore(mode: str) -> None:
    """botocore's adaptive mode rate-limits on a lock the fan-out's loop cannot wait on."""
    session = botocore.session.get_session()
    client = session.create_client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret",
        config=Config(retries={"mode": mode}),
    )
    found = unsupported_reason(client)
    assert ("adaptive retry mode" in (found or "")) if mode == "adaptive" else found is None


def test_unsigned_clients_stay_on_botocore() -> None:
    from botocore import UNSIGNED

    client = _client("http://127.0.0.1:9", signature_version=UNSIGNED)
    assert unsupported_reason(client) is not None


def test_an_environment_proxy_keeps_botocore(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert "proxy" in (unsupported_reason(_client("http://dynamo.example:8000")) or "")


@pytest.mark.skipif(
    traced_everywhere.on(),
    reason="make traced: shardmodel traces the lean path itself, so it keeps it",
)
@pytest.mark.usefixtures("tables")
def test_a_traced_botocore_sees_every_shard_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenTelemetry's botocore instrumentation (and Datadog's, X-Ray's) wraps
    ``BaseClient._make_api_call``: with it in place the sharded read steps aside to
    botocore, so every shard's Query passes the wrapper (a span each) instead of none."""
    import functools

    from botocore.client import BaseClient

    for ts in range(30):
        RandomEvent(user_id="tr", timestamp=ts, event_type="a").save()
    plain = BaseClient._make_api_call
    traced: list[str] = []

    @functools.wraps(plain)
    def instrumented(self: Any, operation: str, params: dict[str, Any]) -> Any:
        traced.append(operation)
        return plain(self, operation, params)

    assert isinstance(table_connection(RandomEvent).connection, LeanConnection)  # untraced
    monkeypatch.setattr(BaseClient, "_make_api_call", instrumented)
    # a new client, made with the instrumentation in place (the decision is per client);
    # the old connection comes back after the test
    monkeypatch.setattr(RandomEvent, "_connection", None)
    assert [e.timestamp for e in RandomEvent.query("tr")] == list(range(30))
    shards = len(RandomEvent.user_id.layout.strategies[0].query_candidates(None, {}))
    assert traced.count("Query") == shards == 10
    assert table_connection(RandomEvent).connection.client.instrumented


@pytest.mark.usefixtures("tables")
@pytest.mark.usefixtures("codec")
def test_models_read_on_the_lean_path_unless_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    for ts in range(3):
        RandomEvent(user_id="ln", timestamp=ts, event_type="a").save()
    lean = table_connection(RandomEvent)
    assert isinstance(lean.connection, LeanConnection)
    assert isinstance(lean.connection.client, LeanClient)  # moto answers in before-send
    assert [e.timestamp for e in RandomEvent.query("ln")] == [0, 1, 2]
    monkeypatch.setattr(RandomEvent.Meta, "lean_requests", False, raising=False)
    assert table_connection(RandomEvent) is RandomEvent._get_connection()
    assert [e.timestamp for e in RandomEvent.query("ln")] == [0, 1, 2]


@pytest.mark.usefixtures("tables")
def test_a_switch_that_is_not_a_bool_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from shardmodel.errors import ShardConfigurationError

    monkeypatch.setattr(RandomEvent.Meta, "lean_requests", "no", raising=False)
    with pytest.raises(ShardConfigurationError, match="lean_requests = 'no'"):
        list(RandomEvent.query("ln"))


@pytest.mark.usefixtures("codec")
def test_a_connection_s_extra_headers_are_sent_as_botocore_sends_them() -> None:
    """PynamoDB's before-send handler adds them: read on every request, not once."""
    empty = {"Items": [], "Count": 0, "ScannedCount": 0}
    sent: dict[bool, list[str | None]] = {}
    for lean in (False, True):
        server = Script([reply(200, empty)] * 2)
        connection = _connection(server.url, lean)
        origin = connection._origin if lean else connection
        origin._client.meta.events.register_first("before-send.*.*", origin._before_send)
        try:
            origin._extra_headers = {"X-Extra": "yes"}
            _query(connection)
            origin._extra_headers = None
            _query(connection)
        finally:
            _close(connection)
            server.close()
        sent[lean] = [headers.get("x-extra") for headers, _ in server.requests]
    assert sent[True] == sent[False] == ["yes", None]


@pytest.mark.usefixtures("tables")
@pytest.mark.usefixtures("codec")
@pytest.mark.parametrize("marked", [True, False], ids=["on the loop", "on the threads"])
def test_every_lean_request_passes_botocore_s_events(marked: bool) -> None:
    """Marked nonblocking, the handlers see the shard requests on the caller's loop, each
    in a greenlet of its own; unmarked, on the worker threads. Either way each request's
    events are whole and in botocore's order."""
    import greenlet

    from shardmodel.lean import nonblocking

    RandomEvent(user_id="ev", timestamp=1, event_type="a").save()
    client = RandomEvent._get_connection().connection.client
    seen: list[tuple[tuple[int, int], str]] = []
    names = (
        "provide-client-params",
        "before-parameter-build",
        "before-call",
        "before-send",
        "response-received",
        "needs-retry",
        "after-call",
    )

    def record(event_name: str, **_: Any) -> None:
        seen.append(((threading.get_ident(), id(greenlet.getcurrent())), event_name))

    if marked:
        nonblocking(record)
    for name in names:
        client.meta.events.register(f"{name}.dynamodb.Query", record)
    try:
        list(RandomEvent.query("ev"))
    finally:
        for name in names:
            client.meta.events.unregister(f"{name}.dynamodb.Query", record)
    events = [event for _, event in seen]
    assert events.count("before-send.dynamodb.Query") == 10  # RandomShards(10)
    assert events.count("after-call.dynamodb.Query") == 10
    threads = {thread for (thread, _), _ in seen}
    assert (threads == {threading.get_ident()}) is marked
    # many requests at once: each one's (a thread's or a greenlet's) are whole, in order
    for runner in {who for who, _ in seen}:
        mine = [event.rsplit(".", 2)[0] for who, event in seen if who == runner]
        assert mine == list(names) * (len(mine) // len(names)), mine


# -- the JSON codecs: the stdlib fallback and the optional orjson ------------------------


# the codec fixture patches the module once per test, the same for every example
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(items=[], count=2**64, units=0.0)  # orjson alone decodes this to a float
@given(
    items=st.lists(fastparse_tests._items, max_size=4),
    count=st.integers(min_value=0, max_value=2**70),
    units=st.floats(allow_nan=False, allow_infinity=False),
)
@pytest.mark.usefixtures("codec")
def test_the_codec_decodes_what_botocore_decodes(
    items: list[Any], count: int, units: float
) -> None:
    """Each codec parses a Query body to botocore's own result, type for type.

    Integers past 64 bits included (orjson alone would give a float); a body that is not
    JSON gives None, which leaves it to botocore.
    """
    from shardmodel.lean.fastparse import parse_body

    loads = sys.modules[LeanClient.__module__]._loads
    shape = _offline_lean()._models["Query"].output_shape
    document = {
        "Items": items,
        "Count": count,
        "ConsumedCapacity": {"TableName": TABLE, "CapacityUnits": units},
    }
    body = fastparse_tests.encode(document)
    expected = create_parser("json").parse({"body": body, "headers": {}, "status_code": 200}, shape)
    expected.pop("ResponseMetadata", None)
    assert fastparse_tests.same(parse_body(shape, body, loads), expected)
    assert fastparse_tests.same(parse_body(shape, body + b"]", loads), None)


def test_a_botocore_without_a_name_the_lean_path_uses_makes_it_step_aside(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """botocore before ~1.40.62 builds AWSPreparedRequest without ``context``: the lean path
    would raise TypeError in a user's query there. It names the gap once and steps aside."""
    from botocore import awsrequest

    from shardmodel.lean import private

    client = _client("http://127.0.0.1:9")
    assert unsupported_reason(client) is None
    original = awsrequest.AWSPreparedRequest.__init__

    def older(
        self: Any, method: str, url: str, headers: Any, body: Any, stream_output: bool
    ) -> None:
        original(self, method, url, headers, body, stream_output)

    monkeypatch.setattr(awsrequest.AWSPreparedRequest, "__init__", older)
    private.missing.cache_clear()
    private._warn.cache_clear()
    try:
        with pytest.warns(private.LeanFallbackWarning, match=r"lacks botocore\.awsrequest"):
            reason = unsupported_reason(client)
        assert reason == (
            "the installed botocore lacks botocore.awsrequest.AWSPreparedRequest(context=...)"
        )
        assert lean_client(client) is None
    finally:
        monkeypatch.undo()
        private.missing.cache_clear()
    assert unsupported_reason(client) is None
    del client._request_signer._signing_name  # a client instance missing a name
    with pytest.warns(private.LeanFallbackWarning, match="_request_signer._signing_name"):
        assert "lacks client._request_signer._signing_name" in str(unsupported_reason(client))


def test_a_botocore_without_resolved_protocol_still_reads_the_model_s_protocol() -> None:
    """botocore 1.34 (the lowest setup.cfg allows) has no ``resolved_protocol``: the
    client's protocol is then its model's ``protocol`` (make compat runs that botocore)."""

    class Older:
        protocol = "json"

    class Newer(Older):
        resolved_protocol = "smithy-rpc-v2-cbor"

    from shardmodel.lean import private

    assert private.protocol(Older()) == "json"
    assert private.protocol(Newer()) == "smithy-rpc-v2-cbor"


def test_nothing_is_set_on_the_user_s_client_and_it_is_freed_as_without_us() -> None:
    """The lean and async stand-ins live in tables keyed weakly by the botocore client and
    hold it weakly: no attribute appears on the client, and dropping it frees it."""
    import gc
    import weakref

    from shardmodel.lean import _lean_for
    from shardmodel.lean.aio import async_client

    client = botocore.session.get_session().create_client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="a",
        aws_secret_access_key="b",
    )
    before = set(vars(client))
    lean = _lean_for(client)
    assert isinstance(lean, LeanClient) and lean.client is client
    assert _lean_for(client) is lean  # built once
    standing = async_client(client)
    assert async_client(client) is standing and standing.client is client
    assert set(vars(client)) == before
    lean.pool.close()
    freed = weakref.ref(client)
    del client, lean, standing
    gc.collect()
    assert freed() is None
