"""The lean request path on real servers: what botocore's path answers, it answers.

Every request here goes over a socket to moto's server or dynalite (nothing answers in
``before-send``), so the lean path's own signing, framing and parsing are what runs.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from shardmodel.lean import LeanClient, table_connection
from shardmodel.throttles import throttling_reasons
from tests.models import RandomEvent


def _paths() -> tuple[Any, Any]:
    botocore = RandomEvent._get_connection()
    lean = table_connection(RandomEvent)
    assert isinstance(lean.connection.client, LeanClient)
    return botocore, lean


def _without_metadata(response: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in response.items() if k != "ResponseMetadata"}


def test_queries_and_batch_gets_answer_as_on_botocore(backend: str) -> None:
    for ts in range(40):
        RandomEvent(user_id="lean", timestamp=ts, event_type="é" * (ts % 3)).save()
    botocore, lean = _paths()
    keys = [f"lean#{n}" for n in range(10)]
    for key in keys:
        for kwargs in (
            {},
            {"limit": 2, "scan_index_forward": False},
            {"range_key_condition": RandomEvent.timestamp > 20, "select": "COUNT"},
            {"attributes_to_get": ["timestamp"], "consistent_read": True},
        ):
            expected = botocore.query(key, **kwargs)
            got = lean.query(key, **kwargs)
            assert _without_metadata(got) == _without_metadata(expected)
            assert got["ResponseMetadata"]["HTTPStatusCode"] == 200
            start = expected.get("LastEvaluatedKey")
            if start:
                page = lean.query(key, exclusive_start_key=start, **kwargs)
                assert _without_metadata(page) == _without_metadata(
                    botocore.query(key, exclusive_start_key=start, **kwargs)
                )
    wanted = [{"user_id": key, "timestamp": str(ts)} for key in keys for ts in (1, 2)]
    expected = botocore.batch_get_item(wanted)
    got = lean.batch_get_item(wanted)
    order = sorted  # BatchGetItem's order is unspecified
    assert order(map(repr, got["Responses"][RandomEvent.Meta.table_name])) == order(
        map(repr, expected["Responses"][RandomEvent.Meta.table_name])
    )


def test_server_errors_raise_what_botocore_raises(backend: str) -> None:
    botocore, lean = _paths()
    requests = {
        "Query": {
            "TableName": "no-such-table",
            "KeyConditionExpression": "#0 = :0",
            "ExpressionAttributeNames": {"#0": "user_id"},
            "ExpressionAttributeValues": {":0": {"S": "x"}},
        },
        "BatchGetItem": {"RequestItems": {"no-such-table": {"Keys": [{"user_id": {"S": "x"}}]}}},
    }
    for operation, params in requests.items():
        caught = []
        for client in (botocore.connection.client, lean.connection.client):
            with pytest.raises(ClientError) as raised:
                client._make_api_call(operation, dict(params))
            caught.append(raised.value)
        first, second = caught
        assert type(first) is type(second)
        assert first.response["Error"] == second.response["Error"]
        assert str(first) == str(second)
        assert throttling_reasons(first) == throttling_reasons(second) == ()


def test_merged_queries_read_the_same_on_both_paths(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for ts in range(30):
        RandomEvent(user_id="both", timestamp=ts).save()
    lean = [e.timestamp for e in RandomEvent.query("both", scan_index_forward=False, limit=7)]
    monkeypatch.setattr(RandomEvent.Meta, "lean_requests", False, raising=False)
    plain = [e.timestamp for e in RandomEvent.query("both", scan_index_forward=False, limit=7)]
    assert lean == plain == list(range(29, 22, -1))
    assert RandomEvent.count("both") == 30
