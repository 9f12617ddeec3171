"""The lean path against botocore on both servers: the same results and the same errors.

Each operation the library uses is sent through the botocore client and through the
lean client of that same client, to moto's server and to dynalite; reads must return
the same parsed result, writes the same returned values, failures the same botocore
exception with the same code (the wire requests themselves are compared in
``tests/unit/test_lean_conformance.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import botocore.session
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from shardmodel.lean.client import LeanClient
from shardmodel.lean.private import missing
from tests.integration.conftest import CREDENTIALS

#: where the installed botocore lacks a name the lean path uses, it steps aside (make compat's
#: oldest end): there is no lean request to compare
pytestmark = pytest.mark.skipif(
    missing() is not None, reason=f"the lean path steps aside: botocore lacks {missing()}"
)

TABLE = "conformance"


@pytest.fixture
def clients(request: pytest.FixtureRequest, backend: str) -> Iterator[tuple[Any, LeanClient]]:
    """A botocore client of the backend's server, its table empty, and its lean client."""
    url = request.getfixturevalue(f"{backend}_url")
    client = botocore.session.get_session().create_client(
        "dynamodb",
        region_name=CREDENTIALS["region"],
        endpoint_url=url,
        aws_access_key_id=CREDENTIALS["aws_access_key_id"],
        aws_secret_access_key=CREDENTIALS["aws_secret_access_key"],
        config=Config(retries={"mode": "standard"}),
    )
    if TABLE in client.list_tables()["TableNames"]:
        client.delete_table(TableName=TABLE)
        client.get_waiter("table_not_exists").wait(TableName=TABLE, WaiterConfig={"Delay": 0.05})
    client.create_table(
        TableName=TABLE,
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName=TABLE, WaiterConfig={"Delay": 0.05})
    lean = LeanClient(client, operations=client.meta.service_model.operation_names)
    try:
        yield client, lean
    finally:
        lean.close()
        client.close()


def _item(who: str, n: int) -> dict[str, Any]:
    return {
        "pk": {"S": f"{who}#p"},
        "sk": {"N": str(n)},
        "n": {"N": "1.50"},
        "tags": {"SS": ["b", "a"]},
        "blob": {"B": b"\x00\x01"},
        "doc": {"M": {"x": {"L": [{"NULL": True}, {"BOOL": False}]}}},
    }


def _same(ours: dict[str, Any], theirs: dict[str, Any], who: tuple[str, str]) -> None:
    """Equal results but for the response metadata and each side's own key prefix."""
    shown = [
        repr(
            {
                key: {table: sorted(map(repr, items)) for table, items in value.items()}
                if key == "Responses"  # a batch's items come in no set order
                else value
                for key, value in result.items()
                if key != "ResponseMetadata"
            }
        ).replace(mark, "*")
        for result, mark in ((ours, who[0]), (theirs, who[1]))
    ]
    assert shown[0] == shown[1]


def _both(client: Any, lean: LeanClient, operation: str, make: Any) -> None:
    """``operation`` with ``make(who)``'s parameters, botocore's on its items, the lean
    client's on its own: the same result, or the same error."""
    results = []
    for who, send in (("LEAN", lean.call), ("BOTO", client._make_api_call)):
        try:
            results.append(send(operation, make(who)))
        except ClientError as error:
            results.append((type(error).__name__, error.response["Error"]["Code"]))
    ours, theirs = results
    if isinstance(ours, tuple) or isinstance(theirs, tuple):
        assert ours == theirs
    else:
        _same(ours, theirs, ("LEAN", "BOTO"))


def test_every_operation_returns_what_botocore_returns(clients: tuple[Any, LeanClient]) -> None:
    client, lean = clients
    for n in range(3):
        _both(client, lean, "PutItem", lambda who, n=n: {"TableName": TABLE, "Item": _item(who, n)})
    conditional = {"ConditionExpression": "attribute_not_exists(pk)"}
    _both(
        client,
        lean,
        "PutItem",
        lambda who: {"TableName": TABLE, "Item": _item(who, 0), **conditional},
    )
    key = {"sk": {"N": "1"}}
    _both(
        client,
        lean,
        "GetItem",
        lambda who: {"TableName": TABLE, "Key": {"pk": {"S": f"{who}#p"}, **key}},
    )
    _both(
        client,
        lean,
        "UpdateItem",
        lambda who: {
            "TableName": TABLE,
            "Key": {"pk": {"S": f"{who}#p"}, **key},
            "UpdateExpression": "ADD #n :one",
            "ExpressionAttributeNames": {"#n": "n"},
            "ExpressionAttributeValues": {":one": {"N": "1"}},
            "ReturnValues": "ALL_NEW",
        },
    )
    query = {
        "KeyConditionExpression": "pk = :p AND sk >= :s",
        "Limit": 2,
        "ReturnConsumedCapacity": "TOTAL",
    }
    _both(
        client,
        lean,
        "Query",
        lambda who: {
            "TableName": TABLE,
            "ExpressionAttributeValues": {":p": {"S": f"{who}#p"}, ":s": {"N": "0"}},
            **query,
        },
    )
    _both(
        client,
        lean,
        "BatchGetItem",
        lambda who: {
            "RequestItems": {
                TABLE: {"Keys": [{"pk": {"S": f"{who}#p"}, "sk": {"N": str(n)}} for n in range(3)]}
            }
        },
    )
    _both(
        client,
        lean,
        "BatchWriteItem",
        lambda who: {"RequestItems": {TABLE: [{"PutRequest": {"Item": _item(who, 7)}}]}},
    )
    _both(
        client,
        lean,
        "TransactWriteItems",
        lambda who: {
            "TransactItems": [
                {"Put": {"TableName": TABLE, "Item": _item(who, 8)}},
                {
                    "Delete": {
                        "TableName": TABLE,
                        "Key": {"pk": {"S": f"{who}#p"}, "sk": {"N": "7"}},
                    }
                },
            ]
        },
    )
    _both(
        client,
        lean,
        "DeleteItem",
        lambda who: {
            "TableName": TABLE,
            "Key": {"pk": {"S": f"{who}#p"}, "sk": {"N": "0"}},
            "ReturnValues": "ALL_OLD",
        },
    )
    _both(
        client,
        lean,
        "GetItem",
        lambda who: {"TableName": "no-such-table", "Key": {"pk": {"S": who}}},
    )
    # a scan sees both sides' items: each reads the same table, so the results are equal
    scans = [send("Scan", {"TableName": TABLE}) for send in (lean.call, client._make_api_call)]
    _same(scans[0], scans[1], ("", ""))
    assert scans[0]["Count"] == 6
