"""A prepared shard query sends what PynamoDB's Connection.query would, key for key."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pynamodb.connection.base import Connection
from pynamodb.exceptions import QueryError

from shardmodel.lean import LeanConnection, table_connection
from shardmodel.lean.prepared import PreparedQuery
from tests.models import Photo, RandomEvent

pytestmark = pytest.mark.usefixtures("tables")

CASES: list[tuple[type[Any], dict[str, Any]]] = [
    (RandomEvent, {}),
    (RandomEvent, {"scan_index_forward": False, "return_consumed_capacity": "TOTAL"}),
    (
        RandomEvent,
        {
            "range_key_condition": RandomEvent.timestamp.between(1, 9),
            "filter_condition": RandomEvent.event_type.startswith("cl")
            & RandomEvent.event_type.exists(),
            "attributes_to_get": ["timestamp", "event_type"],
            "consistent_read": True,
        },
    ),
    (RandomEvent, {"select": "COUNT", "range_key_condition": RandomEvent.timestamp > 5}),
    (Photo, {"index_name": "by-album", "range_key_condition": Photo.taken >= 3}),
]


def sent(monkeypatch: pytest.MonkeyPatch, call: Any) -> dict[str, Any]:
    """The request ``call`` dispatches (not sent: dispatch is replaced)."""
    requests: list[dict[str, Any]] = []

    def dispatch(self: Any, operation: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        requests.append({"operation": operation, **kwargs})
        return {"Items": []}

    with monkeypatch.context() as patch:
        patch.setattr(Connection, "dispatch", dispatch)
        patch.setattr(LeanConnection, "dispatch", dispatch)
        call()
    (request,) = requests
    return request


@pytest.mark.parametrize(("model", "fixed"), CASES)
@pytest.mark.parametrize("start", [None, "start"])
@pytest.mark.parametrize("limit", [None, 7])
def test_each_shard_sends_what_connection_query_sends(
    monkeypatch: pytest.MonkeyPatch,
    model: type[Any],
    fixed: dict[str, Any],
    start: str | None,
    limit: int | None,
) -> None:
    connection = table_connection(model)
    prepared = PreparedQuery(connection, **fixed)
    hash_name = "album" if "index_name" in fixed else model._hash_keyname
    for shard in ("u#0", "u#7", "x" * 2048):
        key = None
        if start is not None:
            key = {hash_name: {"S": shard}, model._hash_keyname: {"S": "p"}}
            if model is RandomEvent:
                key["timestamp"] = {"N": "4"}
            else:
                key["taken"] = {"N": "4"}
        expected = sent(
            monkeypatch,
            lambda s=shard, k=key: connection.query(s, exclusive_start_key=k, limit=limit, **fixed),
        )
        found = sent(monkeypatch, lambda s=shard, k=key: prepared(s, k, limit))
        assert found == expected


def test_the_template_is_not_changed_by_a_shard(monkeypatch: pytest.MonkeyPatch) -> None:
    prepared = PreparedQuery(table_connection(RandomEvent))
    first = sent(monkeypatch, lambda: prepared("u#1"))
    sent(monkeypatch, lambda: prepared("u#2", {"user_id": {"S": "u#2"}}, 3))
    assert sent(monkeypatch, lambda: prepared("u#1")) == first


def test_server_errors_are_wrapped_as_connection_query_wraps_them() -> None:
    connection = table_connection(RandomEvent)
    prepared = PreparedQuery(connection)
    connection.delete_table()  # the table goes after the query was prepared
    with pytest.raises(QueryError) as ours:
        prepared("u#1")
    with pytest.raises(QueryError) as pynamodbs:
        connection.query("u#1")
    assert ours.value.cause_response_code == "ResourceNotFoundException"
    request_id = re.compile(r"request \(\w+\)")
    assert request_id.sub("", str(ours.value)) == request_id.sub("", str(pynamodbs.value))
    assert type(ours.value.cause) is type(pynamodbs.value.cause)
    RandomEvent.create_table(wait=True)  # for the fixture's clean-up


def test_without_a_recognizable_template_each_call_builds_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    connection = table_connection(RandomEvent)
    prepared = PreparedQuery(connection)
    prepared._slot = None  # what happens when the stand-in is not found exactly once
    assert sent(monkeypatch, lambda: prepared("u#3", None, 2)) == sent(
        monkeypatch, lambda: connection.query("u#3", limit=2)
    )
