"""The suite's faster moto (tests/moto_speed.py) answers as moto itself does."""

from __future__ import annotations

import base64
import json
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests import moto_speed

NUMBERS = st.one_of(
    st.integers(min_value=-(10**20), max_value=10**20),
    st.decimals(
        allow_nan=False, allow_infinity=False, places=6, min_value=-(10**6), max_value=10**6
    ),
)


def _table(hash_type: str, range_type: str | None) -> Any:
    from moto.dynamodb.models.table import Table

    schema = [{"AttributeName": "h", "KeyType": "HASH"}]
    attrs = [{"AttributeName": "h", "AttributeType": hash_type}]
    if range_type is not None:
        schema.append({"AttributeName": "r", "KeyType": "RANGE"})
        attrs.append({"AttributeName": "r", "AttributeType": range_type})
    return Table(
        "speed",
        account_id="123456789012",
        region="us-east-1",
        schema=schema,
        attr=attrs,
    )


@settings(max_examples=60)
@given(
    kinds=st.tuples(st.sampled_from("NSB"), st.sampled_from(["N", "S", "B", None])),
    data=st.data(),
)
def test_the_sorted_listing_is_moto_s_own(kinds: tuple[str, str | None], data: Any) -> None:
    """Items listed in the order moto's own ``all_items`` gives, for every key type."""
    hash_type, range_type = kinds
    table = _table(hash_type, range_type)
    values = {
        "N": NUMBERS.map(str),
        "S": st.text(min_size=1, max_size=8),
        "B": st.binary(min_size=1, max_size=8).map(lambda b: base64.b64encode(b).decode()),
    }
    rows = data.draw(
        st.lists(
            st.tuples(values[hash_type], values[range_type] if range_type else st.none()),
            max_size=30,
        )
    )
    for hash_value, range_value in rows:
        item = {"h": {hash_type: hash_value}}
        if range_type is not None:
            item["r"] = {range_type: range_value}
        table.put_item(item)
    ours = [(i.hash_key, i.range_key) for i in moto_speed.all_items(table)]
    theirs = [(i.hash_key, i.range_key) for i in moto_speed.original_all_items()(table)]
    assert ours == theirs


@settings(max_examples=40)
@given(
    kinds=st.tuples(st.sampled_from("NS"), st.sampled_from(["N", "S", None])),
    forward=st.booleans(),
    limit=st.one_of(st.none(), st.integers(min_value=1, max_value=5)),
    data=st.data(),
)
def test_a_table_query_lists_what_moto_s_own_lists(
    kinds: tuple[str, str | None], forward: bool, limit: int | None, data: Any
) -> None:
    """A Query without an index answers from its partition's items alone, with the items,
    count and last key moto's whole-table listing gives, in both directions, from any
    start key."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    hash_type, range_type = kinds
    table = _table(hash_type, range_type)
    values = {"N": NUMBERS.map(str), "S": st.text(min_size=1, max_size=4)}
    hashes = data.draw(st.lists(values[hash_type], min_size=1, max_size=4, unique=True))
    for hash_value in hashes:
        for range_value in data.draw(st.lists(values[range_type or "S"], max_size=6)):
            item = {"h": {hash_type: hash_value}}
            if range_type is not None:
                item["r"] = {range_type: range_value}
            table.put_item(item)
    queried = DynamoType({hash_type: data.draw(st.sampled_from(hashes))})
    query = moto_speed._query(moto_speed._ORIGINAL["query"])
    start = None
    for _ in range(10):  # page through, as a client does
        args: tuple[Any, ...] = (None, [], limit, start, forward, None)
        ours = query(table, queried, *args)
        theirs = moto_speed._ORIGINAL["query"](table, queried, *args)
        assert [i.to_json() for i in ours[0]] == [i.to_json() for i in theirs[0]]
        assert ours[1:] == theirs[1:]
        start = ours[2]
        if start is None:
            break


def test_item_operations_serialize_as_moto_does() -> None:
    """Every DynamoDB item operation's result, walked by its shape, is the JSON moto's
    model-driven serializer writes: extra members dropped, blobs base64, numbers kept."""
    from moto.core.responses import get_service_model
    from moto.core.serialize import JSONSerializer

    from tests.moto_speed import _ORIGINAL, _fast_serialize

    service = get_service_model("dynamodb")
    result = {
        "Items": [
            {"k": {"S": "a"}, "b": {"B": b"\x00\xff"}, "n": {"N": "1.50"}, "l": {"L": []}},
            {"m": {"M": {"x": {"BS": [b"1", b"2"]}, "y": {"NULL": True}}}},
        ],
        "Count": 2,
        "ScannedCount": 3,
        "ConsumedCapacity": {"TableName": "t", "CapacityUnits": Decimal("0.5")},
        "ConsumedCapacityUnits": 0.5,  # not in the shape: left out
        "LastEvaluatedKey": None,  # None: left out
    }
    original = _ORIGINAL.get("serialize", JSONSerializer.serialize)
    fast = _fast_serialize(original)
    for operation in ("Query", "Scan"):
        serializer = JSONSerializer(operation_model=service.operation_model(operation))
        expected = json.loads(original(serializer, result)["body"])
        got = json.loads(fast(serializer, result)["body"])
        assert got == expected, operation
        assert "ConsumedCapacityUnits" not in got and "LastEvaluatedKey" not in got


def _conversation() -> list[tuple[str, dict[str, Any]]]:
    """A table's life in DynamoDB's item operations, errors included."""
    key = {"k": {"S": "a"}, "s": {"N": "1"}}
    item = {**key, "b": {"B": b"\x00\xff"}, "l": {"L": [{"N": "1.50"}, {"NULL": True}]}}
    table = {"TableName": "light"}
    return [
        ("describe_table", table),
        ("put_item", {**table, "Item": item, "ReturnConsumedCapacity": "TOTAL"}),
        ("put_item", {**table, "Item": item, "ConditionExpression": "attribute_not_exists(k)"}),
        ("get_item", {**table, "Key": key, "ConsistentRead": True}),
        (
            "update_item",
            {
                **table,
                "Key": key,
                "UpdateExpression": "ADD c :one",
                "ExpressionAttributeValues": {":one": {"N": "2"}},
                "ReturnValues": "ALL_NEW",
            },
        ),
        (
            "batch_write_item",
            {
                "RequestItems": {
                    "light": [
                        {"PutRequest": {"Item": {"k": {"S": "a"}, "s": {"N": str(n)}}}}
                        for n in range(2, 6)
                    ]
                }
            },
        ),
        (
            "query",
            {
                **table,
                "KeyConditionExpression": "k = :k",
                "Limit": 2,
                "ExpressionAttributeValues": {":k": {"S": "a"}},
            },
        ),
        ("batch_get_item", {"RequestItems": {"light": {"Keys": [key, {**key, "s": {"N": "9"}}]}}}),
        (
            "transact_write_items",
            {
                "TransactItems": [
                    {"Delete": {**table, "Key": {"k": {"S": "a"}, "s": {"N": "2"}}}},
                ]
            },
        ),
        ("scan", {**table, "Select": "COUNT"}),
        ("delete_item", {**table, "Key": key, "ReturnValues": "ALL_OLD"}),
        ("get_item", {"TableName": "missing", "Key": key}),
        (
            "query",
            {
                **table,
                "KeyConditionExpression": "nope = :k",
                "ExpressionAttributeValues": {":k": {"S": "a"}},
            },
        ),
    ]


def _answers(light: bool) -> list[tuple[int, Any]]:
    import boto3

    from shardmodel.testing import FAKE_CREDENTIALS, mock_dynamodb

    moto_speed._LIGHT = light
    answers: list[tuple[int, Any]] = []
    dispatch = moto_speed._light_dispatch
    light_ones: list[str] = []

    def counted(cls: Any, request: Any) -> Any:
        light_ones.append(request.headers["X-Amz-Target"])
        return dispatch(cls, request)

    moto_speed._light_dispatch = counted
    try:
        with mock_dynamodb():
            client = boto3.client(
                "dynamodb",
                region_name="eu-west-1",
                aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
                aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            )
            client.create_table(
                TableName="light",
                KeySchema=[
                    {"AttributeName": "k", "KeyType": "HASH"},
                    {"AttributeName": "s", "KeyType": "RANGE"},
                ],
                AttributeDefinitions=[
                    {"AttributeName": "k", "AttributeType": "S"},
                    {"AttributeName": "s", "AttributeType": "N"},
                ],
                BillingMode="PAY_PER_REQUEST",
            )
            for operation, arguments in _conversation():
                try:
                    answer = getattr(client, operation)(**arguments)
                except client.exceptions.ClientError as error:
                    answer = dict(error.response)
                meta = answer.pop("ResponseMetadata")
                headers = meta["HTTPHeaders"]
                assert len(headers.pop("x-amzn-requestid")) == 52
                for varying in ("date", "x-amz-crc32", "content-length"):
                    headers.pop(varying, None)
                if "Table" in answer:  # its creation time differs between the sessions
                    answer["Table"].pop("CreationDateTime")
                answers.append((meta["HTTPStatusCode"], {**answer, "headers": headers}))
        assert moto_speed._LIGHT is light  # the light runs never stepped aside
    finally:
        moto_speed._LIGHT = True
        moto_speed._light_dispatch = dispatch
    # every request of the conversation (the table's creation too) went the way asked
    assert len(light_ones) == (len(answers) + 1 if light else 0)
    return answers


def test_the_light_dispatch_answers_as_moto_s_request_building_does() -> None:
    """Every item operation, a conditional failure, a missing table and a validation error
    get the same status, body and headers (all but the request id, date and checksum)
    when moto's request is built from botocore's without werkzeug, in another region
    than moto's default."""
    light, built = _answers(True), _answers(False)
    assert [status for status, _ in built].count(400) == 3
    assert light == built


def test_the_request_id_reaches_an_xml_body_as_moto_writes_it() -> None:
    headers: dict[str, Any] = {"status": 200}
    body = "<Response><RequestId>x</RequestId></Response>"
    headers, body = moto_speed._enrich_response(headers, body)
    assert headers["status"] == "200"
    assert body == f"<Response><RequestId>{headers['x-amzn-requestid']}</RequestId></Response>"
    assert moto_speed._enrich_response({}, '{"a": 1}')[1] == '{"a": 1}'


def test_a_light_dispatch_this_moto_does_not_take_steps_aside_and_answers() -> None:
    """A moto release whose response classes no longer take what the light dispatch sets
    (5.2.6 changed how they find the action) gets moto's own path, with a warning, instead
    of an error in every test."""
    import boto3
    import pytest

    from shardmodel.testing import FAKE_CREDENTIALS, mock_dynamodb

    dispatch = moto_speed._light_dispatch

    def broken(cls: Any, request: Any) -> Any:
        raise AttributeError("'NoneType' object has no attribute 'content_type'")

    moto_speed._light_dispatch = broken
    try:
        with mock_dynamodb(), pytest.warns(moto_speed.MotoSpeedFallback, match="moto"):
            client = boto3.client(
                "dynamodb",
                region_name="us-east-1",
                aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
                aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            )
            assert client.list_tables()["TableNames"] == []
            assert moto_speed._LIGHT is False
    finally:
        moto_speed._LIGHT = True
        moto_speed._light_dispatch = dispatch
