"""Issue 10's rules on the servers (moto and dynalite), differential where DynamoDB decides."""

from __future__ import annotations

from typing import Any

import pytest
from pynamodb.exceptions import QueryError

from shardmodel import FanOutLimitError, ShardKeyError, ShardMetadataError
from tests.models import DynamicEvent, HashedEvent, PlainEvent, RandomEvent
from tests.support import stored_keys


def test_numbers_equal_to_dynamodb_are_one_key(backend: str) -> None:
    for model in (HashedEvent, RandomEvent):
        model(user_id="n", timestamp=250, event_type="int").save()
    HashedEvent(user_id="n", timestamp=250.0, event_type="float").save()
    assert len(stored_keys(HashedEvent)) == 1
    for model in (HashedEvent, RandomEvent):
        assert model.get("n", 2.5e2).timestamp == 250
        assert [e.timestamp for e in model.batch_get([("n", 250.0), ("n", 1.0)])] == [250]
        assert [e.timestamp for e in model.query("n", model.timestamp == 250.0)] == [250]
        assert model.count("n", model.timestamp == 250.0) == 1


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.timestamp.between(5, 1),
        lambda m: (m.timestamp > 1) & (m.timestamp < 5),
    ],
)
def test_key_conditions_fail_like_a_plain_model(backend: str, make: Any) -> None:
    """Where DynamoDB answers ValidationException, the sharded model raises the same kind."""
    for model in (RandomEvent, HashedEvent):
        with pytest.raises(QueryError) as sharded:
            list(model.query("u", make(model)))
        assert isinstance(sharded.value, ShardKeyError)
        assert sharded.value.cause_response_code == "ValidationException"
    if backend == "dynalite":  # moto accepts both conditions; DynamoDB and dynalite refuse
        with pytest.raises(QueryError) as plain:
            list(PlainEvent.query("u", make(PlainEvent)))
        assert plain.value.cause_response_code == "ValidationException"
        assert sharded.value.cause_response_message is not None
        first_words = str(plain.value.cause_response_message).split(";")[0][:40]
        assert str(sharded.value.cause_response_message).startswith(first_words)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.timestamp > 3,
        lambda m: m.user_id == "u",
        lambda m: m.event_type.exists() & (m.timestamp < 2),
    ],
)
def test_a_filter_on_a_key_fails_like_a_plain_model(backend: str, make: Any) -> None:
    """DynamoDB refuses a query filter on a key attribute; so do query and count, unsent."""
    for model in (RandomEvent, HashedEvent):
        with pytest.raises(QueryError) as sharded:
            list(model.query("u", filter_condition=make(model)))
        assert sharded.value.cause_response_code == "ValidationException"
        with pytest.raises(QueryError):
            model.count("u", filter_condition=make(model))
    if backend == "dynalite":  # moto accepts it; DynamoDB and dynalite refuse
        with pytest.raises(QueryError) as plain:
            list(PlainEvent.query("u", filter_condition=make(PlainEvent)))
        assert (
            plain.value.cause_response_message
            == str(sharded.value.cause_response_message).split(";")[0]
        )


def test_a_negative_limit_fails_like_a_plain_model(backend: str) -> None:
    with pytest.raises(QueryError) as sharded:
        list(RandomEvent.query("u", limit=-1))
    assert sharded.value.cause_response_code == "ValidationException"
    if backend == "dynalite":
        with pytest.raises(QueryError) as plain:
            list(PlainEvent.query("u", limit=-1))
        assert plain.value.cause_response_code == "ValidationException"


def test_a_key_too_long_for_any_shard_is_refused_before_writing(backend: str) -> None:
    logical = "k" * (2048 - 2)  # "#9" fits, RandomShards(10) never makes "#10": it fits
    RandomEvent(user_id=logical, timestamp=1).save()
    assert RandomEvent.get(logical, 1).user_id == logical
    with pytest.raises(ShardKeyError, match="partition key limit"):
        RandomEvent(user_id=logical + "k", timestamp=1).save()
    assert len(stored_keys(RandomEvent)) == 1


def test_bounds_hold_on_servers(backend: str) -> None:
    import boto3

    from tests.integration.conftest import CREDENTIALS

    with pytest.raises(FanOutLimitError):
        list(RandomEvent.query("u", max_requests=9))
    assert list(RandomEvent.query("u", max_requests=10)) == []
    host = DynamicEvent.Meta.host
    client = boto3.client("dynamodb", endpoint_url=host, **_boto(CREDENTIALS))
    client.put_item(
        TableName="dynamic-events-shards",
        Item={
            "user_id": {"S": "bad"},
            "number_of_shards": {"N": "2.5"},
            "last_updated": {"N": "5"},
            "shard_history": {"SS": ["2:200000"]},
        },
    )
    with pytest.raises(ShardMetadataError, match="key 'bad'"):
        list(DynamicEvent.query("bad"))


def _boto(credentials: dict[str, str]) -> dict[str, str]:
    return {
        "region_name": credentials["region"],
        "aws_access_key_id": credentials["aws_access_key_id"],
        "aws_secret_access_key": credentials["aws_secret_access_key"],
    }
