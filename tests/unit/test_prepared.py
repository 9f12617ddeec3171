"""A prepared shard query sends what PynamoDB's Connection.query would, key for key."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from pynamodb.connection.base import Connection
from pynamodb.exceptions import QueryError
from pynamodb.signals import post_dynamodb_send, pre_dynamodb_send

from shardmodel.lean import LeanConnection, table_connection
from shardmodel.lean.prepared import PreparedQuery, dispatch_is_plain
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
    """The request ``call`` hands the client (not sent: ``_make_api_call`` is replaced).

    Below ``dispatch``: the request as sent, with the defaults ``dispatch`` adds.
    """
    requests: list[dict[str, Any]] = []

    def make_api_call(self: Any, operation: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        requests.append({"operation": operation, **kwargs})
        return {"Items": []}

    with monkeypatch.context() as patch:
        patch.setattr(Connection, "_make_api_call", make_api_call)
        patch.setattr(LeanConnection, "_make_api_call", make_api_call)
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


@pytest.mark.parametrize("signal", [pre_dynamodb_send, post_dynamodb_send])
def test_pynamodb_signals_reach_their_receivers_as_from_connection_query(signal: Any) -> None:
    connection = table_connection(RandomEvent)
    prepared = PreparedQuery(connection)
    heard: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        heard.append({k: v for k, v in kwargs.items() if k != "req_uuid"})

    with signal.connected_to(receiver):
        assert not dispatch_is_plain()
        prepared("u#1")
        connection.query("u#1")
    assert dispatch_is_plain()
    assert heard == [{"operation_name": "Query", "table_name": RandomEvent.Meta.table_name}] * 2


def test_pynamodbs_debug_log_is_written_as_from_connection_query(
    caplog: pytest.LogCaptureFixture,
) -> None:
    connection = table_connection(RandomEvent)
    prepared = PreparedQuery(connection)
    with caplog.at_level(logging.DEBUG, logger="pynamodb.connection.base"):
        prepared("u#1")
        ours = [r.getMessage() for r in caplog.records if r.name == "pynamodb.connection.base"]
        caplog.clear()
        connection.query("u#1")
        theirs = [r.getMessage() for r in caplog.records if r.name == "pynamodb.connection.base"]
    assert ours and len(ours) == len(theirs)
    assert ours[0] == theirs[0]  # the request, as dispatch logs it
