"""shardmodel.lean.fastparse gives exactly what botocore's parser gives, or lets botocore parse.

Two botocore clients get the same canned HTTP responses (a ``before-send`` handler
answers instead of the network): one with the fast parser installed, one without. Their
results, ResponseMetadata included, must be equal value for value and type for type.
"""

from __future__ import annotations

import base64
import contextlib
import json
import zlib
from collections import deque
from collections.abc import Iterator
from typing import Any

import botocore.session
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.parsers import create_parser
from hypothesis import given
from hypothesis import strategies as st

from shardmodel.lean import fastparse
from tests.models import RandomEvent


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class _Raw:
    """The part of a urllib3 response AWSResponse reads the body from."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **kwargs: Any) -> Iterator[bytes]:
        yield self._body


class Canned:
    """A DynamoDB client whose requests are answered from a queue of HTTP responses."""

    def __init__(self, fast: bool) -> None:
        session = botocore.session.get_session()
        self.client = session.create_client(
            "dynamodb",
            region_name="us-east-1",
            endpoint_url="http://canned.invalid",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(retries={"total_max_attempts": 2, "mode": "legacy"}),
        )
        self.replies: deque[tuple[int, bytes, dict[str, str]]] = deque()
        self.bodies_parsed: list[bytes] = []  # what botocore's parser was given
        self.client.meta.events.register("before-send.dynamodb.*", self._answer)
        if fast:
            assert fastparse.install(self.client)
        # registered after the fast parser: sees the body botocore will parse
        self.client.meta.events.register_last("before-parse.dynamodb", self._seen)

    def reply(self, body: bytes, status: int = 200, **headers: str) -> None:
        found = {
            "x-amzn-RequestId": "REQ123",
            "Content-Type": "application/x-amz-json-1.0",
            "x-amz-crc32": str(zlib.crc32(body)),
            **headers,
        }
        self.replies.append((status, body, found))

    def _answer(self, request: Any, **kwargs: Any) -> AWSResponse:
        status, body, headers = self.replies.popleft()
        return AWSResponse(request.url, status, headers, _Raw(body))

    def _seen(self, response_dict: dict[str, Any], **kwargs: Any) -> None:
        self.bodies_parsed.append(response_dict["body"])

    def call(self, operation: str, own: bool = True, **params: Any) -> tuple[str, Any]:
        """("ok", parsed) or ("error", the ClientError's response).

        ``own``: sent as the library sends its own requests (else as the application's).
        """
        scope = fastparse.own_requests() if own else contextlib.nullcontext()
        try:
            with scope:
                return "ok", getattr(self.client, operation)(**params)
        except ClientError as error:
            return "error", error.response


QUERY = {
    "TableName": "t",
    "KeyConditionExpression": "pk = :k",
    "ExpressionAttributeValues": {":k": {"S": "k"}},
}


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (1 == 1.0 and True == 1 are not)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def both(
    replies: list[tuple[bytes, int]], operation: str = "query", **params: Any
) -> tuple[tuple[str, Any], Canned]:
    """The fast client's result, checked equal to botocore's; and the fast client."""
    fast, plain = Canned(fast=True), Canned(fast=False)
    for canned in (fast, plain):
        for body, status in replies:
            canned.reply(body, status)
    got = fast.call(operation, **(params or QUERY))
    expected = plain.call(operation, **(params or QUERY))
    assert same(got, expected), (got, expected)
    return got, fast


KITCHEN_SINK = {
    "pk": {"S": "user#3"},
    "sk": {"N": "1700000000"},
    "s": {"S": "text é ✓"},
    "n": {"N": "-12.5E3"},
    "b": {"B": b64(b"\x00\xffbinary")},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b64(b"x"), b64(b"\x01\x02")]},
    "null": {"NULL": True},
    "true": {"BOOL": True},
    "false": {"BOOL": False},
    "m": {
        "M": {
            "b": {"B": b64(b"inner")},
            "l": {
                "L": [
                    {"B": b64(b"in a list")},
                    {"M": {"deep": {"BS": [b64(b"deeper")]}, "s": {"S": "x"}}},
                    {"NULL": True},
                    {"L": [{"L": [{"B": b64(b"three down")}]}]},
                ]
            },
            "s": {"S": "plain"},
        }
    },
    "l": {"L": [{"N": "1"}, {"S": "two"}, {"BOOL": True}, {"SS": ["s"]}, {"M": {}}]},
    "empty_m": {"M": {}},
    "empty_l": {"L": []},
    "empty_b": {"B": ""},
}

FULL_RESPONSE = {
    "Items": [KITCHEN_SINK, {"pk": {"S": "user#3"}, "sk": {"N": "2"}, "b": {"B": b64(b"2")}}],
    "Count": 2,
    "ScannedCount": 3,
    "LastEvaluatedKey": {"pk": {"S": "user#3"}, "sk": {"B": b64(b"\x00last")}},
    "ConsumedCapacity": {
        "TableName": "t",
        "CapacityUnits": 1.5,
        "ReadCapacityUnits": 1.5,
        "Table": {"CapacityUnits": 0.5, "ReadCapacityUnits": 0.5},
        "GlobalSecondaryIndexes": {"by-type": {"CapacityUnits": 1.0}},
        "LocalSecondaryIndexes": {"by-time": {"CapacityUnits": 2}},
    },
}


def encode(document: Any) -> bytes:
    return json.dumps(document).encode("utf-8")


def test_every_attribute_type_keys_capacity_and_counts() -> None:
    (kind, parsed), fast = both([(encode(FULL_RESPONSE), 200)])
    assert kind == "ok"
    assert fast.bodies_parsed == [b""]  # the fast path answered; botocore only added metadata
    item = parsed["Items"][0]
    assert item["b"] == {"B": b"\x00\xffbinary"}
    assert item["m"]["M"]["l"]["L"][1]["M"]["deep"] == {"BS": [b"deeper"]}
    assert parsed["LastEvaluatedKey"]["sk"] == {"B": b"\x00last"}
    assert parsed["ConsumedCapacity"]["CapacityUnits"] == 1.5
    assert parsed["ResponseMetadata"]["RequestId"] == "REQ123"
    assert parsed["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert parsed["ResponseMetadata"]["RetryAttempts"] == 0
    assert parsed["ResponseMetadata"]["HTTPHeaders"]["x-amzn-requestid"] == "REQ123"


def test_scan_responses_too() -> None:
    (kind, _), fast = both([(encode(FULL_RESPONSE), 200)], operation="scan", TableName="t", Limit=5)
    assert kind == "ok"
    assert fast.bodies_parsed == [b""]


@pytest.mark.parametrize(
    "document",
    [
        {"Items": [], "Count": 0, "ScannedCount": 0},
        {},
        {"Items": [{"a": {"S": "x"}}], "Unmodeled": {"B": "not decoded"}, "Count": 1},
        {"Items": [{"a": {"S": "x"}}], "LastEvaluatedKey": None, "ConsumedCapacity": None},
        {"Items": [{"unknown type": {"X": "?"}, "no type": {}, "null type": {"S": None}}]},
        {"Items": [{"two types": {"S": "a", "N": "1", "B": b64(b"both")}}]},
        {"Items": [{"nulls": {"L": [None, {"B": b64(b"after a null")}]}}]},
        {"Items": [{"null in a set": {"BS": [None, b64(b"b")]}}]},
        {"Items": [{"typed": {"S": "a", "__type": "ignored"}}]},
        {"Items": [None, {"a": {"N": "1"}}]},
        {"Items": [{"a": {"B": None}}], "LastEvaluatedKey": {"k": {"B": None}, "n": None}},
        {"Count": 1.0, "ScannedCount": True, "ConsumedCapacity": {"CapacityUnits": 1}},
    ],
    ids=[
        "empty",
        "no members",
        "unmodeled member",
        "null members",
        "odd attributes",
        "several types",
        "null in L",
        "null in BS",
        "__type",
        "null item",
        "null blob",
        "odd numbers",
    ],
)
def test_botocore_rules_for_odd_documents(document: dict[str, Any]) -> None:
    (kind, _), _ = both([(encode(document), 200)])
    assert kind == "ok"


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"null",
        b"[]",
        b"not json",
        b"\xef\xbb\xbf{}",  # a UTF-8 byte order mark: json rejects it in a str
        b'{"Items": [{"a": {"B": "not base64!"}}]}',
        b'{"Items": [{"a": {"M": "not a map"}}]}',
        b'{"Items": {"not": "a list"}}',
    ],
)
def test_bodies_the_fast_path_declines_are_botocores(body: bytes) -> None:
    """Whatever botocore does with these (parse or raise), the fast client does too."""
    fast, plain = Canned(fast=True), Canned(fast=False)
    fast.reply(body)
    plain.reply(body)
    outcomes = []
    for canned in (fast, plain):
        try:
            outcomes.append(("ok", canned.call("query", **QUERY)))
        except Exception as error:  # botocore's own parse errors
            outcomes.append(("raised", (type(error), str(error))))
    assert same(outcomes[0], outcomes[1]), outcomes
    assert fast.bodies_parsed == [body]  # botocore parsed the body itself


def test_errors_go_through_botocore() -> None:
    error = encode(
        {
            "__type": "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException",
            "message": "Requested resource not found",
        }
    )
    (kind, response), fast = both([(error, 400)])
    assert kind == "error"
    assert response["Error"]["Code"] == "ResourceNotFoundException"
    assert fast.bodies_parsed == [error]


def test_retry_attempts_after_a_throttle() -> None:
    throttle = encode(
        {
            "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
            "message": "slow down",
        }
    )
    (kind, parsed), fast = both([(throttle, 400), (encode(FULL_RESPONSE), 200)])
    assert kind == "ok"
    assert parsed["ResponseMetadata"]["RetryAttempts"] == 1
    assert fast.bodies_parsed == [throttle, b""]


def test_a_bad_checksum_is_still_botocores_to_catch() -> None:
    """The fast path leaves the HTTP response alone: the CRC32 check still sees it."""
    outcomes = []
    for fast in (True, False):
        canned = Canned(fast=fast)
        for _ in range(2):
            canned.reply(encode(FULL_RESPONSE), **{"x-amz-crc32": "1"})
        with pytest.raises(Exception) as raised:
            canned.call("query", **QUERY)
        outcomes.append(type(raised.value))
    assert outcomes[0] is outcomes[1]


def test_other_operations_are_left_alone() -> None:
    document = {"Item": {"b": {"B": b64(b"bin")}}}
    (kind, parsed), fast = both(
        [(encode(document), 200)],
        operation="get_item",
        TableName="t",
        Key={"pk": {"S": "k"}},
    )
    assert kind == "ok" and parsed["Item"] == {"b": {"B": b"bin"}}
    assert fast.bodies_parsed == [encode(document)]


def test_install_is_idempotent(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    original = fastparse._before_parse

    def counted(**kwargs: Any) -> None:
        calls.append(kwargs["operation_model"].name)
        original(**kwargs)

    monkeypatch.setattr(fastparse, "_before_parse", counted)
    canned = Canned(fast=True)
    for _ in range(3):
        assert fastparse.install(canned.client)
    canned.reply(encode(FULL_RESPONSE))
    assert canned.call("query", **QUERY)[0] == "ok"
    assert calls == ["Query"]
    assert canned.bodies_parsed == [b""]


# -- random attribute values against botocore's parser --------------------------------

_names = st.text(min_size=1, max_size=5)
_scalars = st.one_of(
    st.builds(lambda s: {"S": s}, st.text(max_size=8)),
    st.builds(
        lambda n: {"N": str(n)}, st.integers() | st.decimals(allow_nan=False, allow_infinity=False)
    ),
    st.builds(lambda b: {"B": b64(b)}, st.binary(max_size=8)),
    st.builds(lambda s: {"SS": s}, st.lists(st.text(max_size=4), min_size=1, max_size=3)),
    st.builds(
        lambda s: {"NS": [str(n) for n in s]}, st.lists(st.integers(), min_size=1, max_size=3)
    ),
    st.builds(
        lambda s: {"BS": [b64(b) for b in s]},
        st.lists(st.binary(max_size=4), min_size=1, max_size=3),
    ),
    st.just({"NULL": True}),
    st.builds(lambda b: {"BOOL": b}, st.booleans()),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.builds(lambda m: {"M": m}, st.dictionaries(_names, inner, max_size=3)),
        st.builds(lambda items: {"L": items}, st.lists(inner, max_size=3)),
    ),
    max_leaves=12,
)
_items = st.dictionaries(_names, _values, min_size=1, max_size=4)


@pytest.fixture(scope="module")
def query_shape() -> Any:
    return Canned(fast=False).client.meta.service_model.operation_model("Query").output_shape


@given(items=st.lists(_items, max_size=4), last=st.none() | _items)
def test_random_items_parse_like_botocore(query_shape: Any, items: list[Any], last: Any) -> None:
    document: dict[str, Any] = {"Items": items, "Count": len(items), "ScannedCount": len(items)}
    if last is not None:
        document["LastEvaluatedKey"] = last
    body = encode(document)
    expected = create_parser("json").parse(
        {"status_code": 200, "headers": {}, "body": body, "context": {}}, query_shape
    )
    expected.pop("ResponseMetadata")
    assert same(fastparse.parse_body(query_shape, body), expected)


# -- the merged query installs it ------------------------------------------------------


@pytest.mark.usefixtures("tables")
def test_merged_queries_parse_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    # the botocore path (the lean path parses with parse_body itself: test_lean.py)
    monkeypatch.setattr(RandomEvent.Meta, "lean_requests", False, raising=False)
    for ts in range(5):
        RandomEvent(user_id="fp", timestamp=ts, event_type="a").save()
    assert [e.timestamp for e in RandomEvent.query("fp")] == list(range(5))  # installs
    bodies: list[bytes] = []
    client = RandomEvent._get_connection().connection.client
    client.meta.events.register(
        "before-parse.dynamodb.Query",
        lambda response_dict, **kwargs: bodies.append(response_dict["body"]),
    )
    assert [e.timestamp for e in RandomEvent.query("fp", limit=3)] == [0, 1, 2]
    assert bodies and set(bodies) == {b""}  # every shard's response took the fast path


def test_the_applications_own_requests_on_the_client_are_botocores() -> None:
    """Installed on a client, the fast parser parses only the library's requests: a Query
    the application sends on the same client goes through botocore's parser, unchanged,
    and nothing is set on the client."""
    fast = Canned(fast=True)
    before = set(vars(fast.client))
    fast.reply(encode(FULL_RESPONSE))
    fast.reply(encode(FULL_RESPONSE))
    assert fast.call("query", own=False, **QUERY)[0] == "ok"
    assert fast.bodies_parsed == [encode(FULL_RESPONSE)]  # botocore parsed the body
    assert fast.call("query", **QUERY)[0] == "ok"
    assert fast.bodies_parsed[1:] == [b""]  # the library's: parsed fast
    assert set(vars(fast.client)) == before
