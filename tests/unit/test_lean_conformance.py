"""The lean path sends the request botocore sends: a conformance suite against botocore.

Every operation the library sends goes once through the botocore client and once through
the lean client to a loopback server that records the wire request. The two must agree
on method, path, every header (the signature and date aside, which differ by instant; the
invocation id, fresh per call; the user agent's feature list, a set botocore writes in
its set's order) and the body's JSON, on the installed botocore; and the parsed response
and the retry headers of a second attempt likewise. Where the endpoint ruleset resolves
elsewhere than the client's endpoint (an account-ID endpoint), both send there.
"""

from __future__ import annotations

import json
import re
from typing import Any

import botocore.session
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config

from shardmodel.lean.client import LeanClient
from shardmodel.lean.private import missing
from tests.unit.test_lean import BATCH_RESPONSE, QUERY_RESPONSE, TABLE, Script, _client, reply

#: where the installed botocore lacks a name the lean path uses, it steps aside (make compat's
#: oldest end): there is no lean request to compare
pytestmark = pytest.mark.skipif(
    missing() is not None, reason=f"the lean path steps aside: botocore lacks {missing()}"
)

KEY = {"pk": {"S": "k#1"}, "sk": {"N": "1"}}
#: every operation the library sends, with a request and a response of its shape
OPERATIONS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "Query": (
        {
            "TableName": TABLE,
            "KeyConditionExpression": "#0 = :0",
            "ExpressionAttributeNames": {"#0": "pk"},
            "ExpressionAttributeValues": {":0": {"S": "k#1"}},
            "ExclusiveStartKey": KEY,
            "Limit": 7,
            "ReturnConsumedCapacity": "TOTAL",
        },
        QUERY_RESPONSE,
    ),
    "Scan": (
        {"TableName": TABLE, "Segment": 1, "TotalSegments": 4, "Limit": 3},
        {"Items": [KEY], "Count": 1, "ScannedCount": 1},
    ),
    "BatchGetItem": ({"RequestItems": {TABLE: {"Keys": [KEY]}}}, BATCH_RESPONSE),
    "GetItem": ({"TableName": TABLE, "Key": KEY, "ConsistentRead": True}, {"Item": KEY}),
    "PutItem": (
        {
            "TableName": TABLE,
            "Item": {**KEY, "n": {"N": "1.5"}},
            "ConditionExpression": "attribute_not_exists(#0)",
            "ExpressionAttributeNames": {"#0": "pk"},
        },
        {},
    ),
    "UpdateItem": (
        {
            "TableName": TABLE,
            "Key": KEY,
            "UpdateExpression": "ADD #0 :0",
            "ExpressionAttributeNames": {"#0": "n"},
            "ExpressionAttributeValues": {":0": {"N": "1"}},
            "ReturnValues": "ALL_NEW",
        },
        {"Attributes": {**KEY, "n": {"N": "2"}}},
    ),
    "DeleteItem": ({"TableName": TABLE, "Key": KEY}, {}),
    "BatchWriteItem": (
        {"RequestItems": {TABLE: [{"PutRequest": {"Item": KEY}}]}},
        {"UnprocessedItems": {}},
    ),
    "TransactWriteItems": (
        {"TransactItems": [{"Put": {"TableName": TABLE, "Item": KEY}}]},
        {},
    ),
    "DescribeTable": ({"TableName": TABLE}, {"Table": {"TableName": TABLE}}),
    "UpdateTable": (
        {"TableName": TABLE, "BillingMode": "PAY_PER_REQUEST"},
        {"TableDescription": {"TableName": TABLE}},
    ),
}

_SIGNATURE = re.compile(r", Signature=[0-9a-f]{64}$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def _comparable(headers: dict[str, str]) -> dict[str, Any]:
    """The headers as two senders of one request must agree on them."""
    kept: dict[str, Any] = dict(headers)
    assert _SIGNATURE.search(kept["authorization"])
    kept["authorization"] = _SIGNATURE.sub("", kept["authorization"])
    assert re.fullmatch(r"\d{8}T\d{6}Z", kept.pop("x-amz-date"))
    assert _UUID.match(kept.pop("amz-sdk-invocation-id"))
    kept.pop("content-length")  # the JSON's spacing differs; the bodies are compared whole
    agent = kept["user-agent"].split(" ")
    kept["user-agent"] = [
        ("m/", frozenset(part[2:].split(","))) if part.startswith("m/") else part for part in agent
    ]
    return kept


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_the_lean_request_is_the_one_botocore_sends(operation: str) -> None:
    """Method, path, headers and body on the wire, and the parsed result, are botocore's."""
    params, response = OPERATIONS[operation]
    server = Script([reply(200, response)] * 2)
    client = _client(server.url)
    lean = LeanClient(client, operations=[operation])
    try:
        theirs = client._make_api_call(operation, params)
        ours = lean.call(operation, params)
    finally:
        lean.close()
        client.close()
        server.close()
    (botocore_headers, botocore_body), (lean_headers, lean_body) = server.requests
    assert _comparable(lean_headers) == _comparable(botocore_headers)
    assert json.loads(lean_body) == json.loads(botocore_body)
    for result in (ours, theirs):
        result["ResponseMetadata"].pop("HTTPHeaders")  # the server's date differs
    assert ours == theirs


def test_a_retry_carries_botocore_s_attempt_headers() -> None:
    """A second attempt keeps the call's invocation id and counts the attempt (and the
    ``ttl`` a reply's ``Date`` sets), as botocore's endpoint writes them."""
    date = {"Date": "Sun, 29 Nov 2026 09:00:00 GMT"}
    params, response = OPERATIONS["Query"]
    sent: dict[str, list[dict[str, str]]] = {}
    for name in ("botocore", "lean"):
        server = Script(
            [
                reply(500, {"__type": "InternalServerError", "message": "again"}, headers=date),
                reply(200, response),
            ]
        )
        client = _client(server.url)
        lean = LeanClient(client)
        try:
            if name == "lean":
                lean.call("Query", params)
            else:
                client._make_api_call("Query", params)
        finally:
            lean.close()
            client.close()
            server.close()
        sent[name] = [headers for headers, _ in server.requests]
    for attempts in sent.values():
        first, second = attempts
        assert first["amz-sdk-invocation-id"] == second["amz-sdk-invocation-id"]
    for index in (0, 1):
        ours = _comparable(sent["lean"][index])
        theirs = _comparable(sent["botocore"][index])
        assert ours.pop("host") != theirs.pop("host")  # a server each
        # the ttl is the server's date plus the read timeout, to the second of the reply
        ttl = re.compile(r"ttl=\d{8}T\d{6}Z; ")
        assert ttl.sub("ttl=; ", ours.pop("amz-sdk-request")) == ttl.sub(
            "ttl=; ", theirs.pop("amz-sdk-request")
        )
        assert ours == theirs
    assert sent["lean"][1]["amz-sdk-request"].startswith("ttl=")
    assert sent["lean"][1]["amz-sdk-request"].endswith("attempt=2; max=3")


def _account_client(mode: str) -> Any:
    """A client whose credentials carry an account, with no endpoint given: botocore's
    endpoint ruleset picks the account's endpoint unless the mode is ``disabled``."""
    session = botocore.session.get_session()
    return session.create_client(
        "dynamodb",
        region_name="eu-west-1",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret",
        aws_account_id="111122223333",
        config=Config(account_id_endpoint_mode=mode, retries={"mode": "standard"}),
    )


@pytest.mark.parametrize(
    ("mode", "host"),
    [
        ("preferred", "111122223333.ddb.eu-west-1.amazonaws.com"),
        ("disabled", "dynamodb.eu-west-1.amazonaws.com"),
    ],
)
def test_the_lean_path_sends_where_the_endpoint_ruleset_says(mode: str, host: str) -> None:
    """With account-ID credentials the request goes to the account's endpoint (botocore's
    default mode), with the URL, headers and signature scope botocore gives it."""
    client = _account_client(mode)
    seen: list[Any] = []

    def answer(request: Any, **_: Any) -> AWSResponse:
        seen.append(request)
        return AWSResponse(request.url, 200, {}, _Raw(json.dumps(QUERY_RESPONSE).encode()))

    client.meta.events.register_first("before-send.dynamodb.Query", answer)
    lean = LeanClient(client)
    try:
        params = OPERATIONS["Query"][0]
        client._make_api_call("Query", params)
        lean.call("Query", params)
    finally:
        lean.close()
        client.close()
    theirs, ours = seen
    assert theirs.url == ours.url == f"https://{host}/"
    assert "Credential=AKIDEXAMPLE/" in ours.headers["authorization"]
    assert "/eu-west-1/dynamodb/aws4_request" in ours.headers["authorization"]
    # what before-send handlers see (the HTTP layer adds the body's length on the wire)
    assert {k.lower() for k in theirs.headers} - {"content-length"} == {
        k.lower() for k in ours.headers
    }


class _Raw:
    """A response body botocore's ``AWSResponse`` can read."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body
