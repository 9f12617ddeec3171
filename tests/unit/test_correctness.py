"""Issue 10's rules on in-process moto: equal keys, bounded reads, refusals before sending."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import boto3
import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import QueryError
from pynamodb.models import Model

from shardmodel import (
    CursorError,
    DynamicShards,
    FanOutLimitError,
    HashShards,
    RandomShards,
    ShardConfigurationError,
    ShardedKeyAttribute,
    ShardedModel,
    ShardKeyError,
    ShardMetadataError,
    TimeBuckets,
)
from shardmodel.core.canonical import canonical_number
from shardmodel.request_bound import DEFAULT_MAX_REQUESTS
from tests.models import DailyEvent, DynamicEvent, HashedEvent, RandomEvent
from tests.support import cursor_payload, signed_cursor, stored_keys

pytestmark = pytest.mark.usefixtures("tables")


@contextmanager
def sent_requests(model: type[Model]) -> Iterator[list[str]]:
    """The DynamoDB operations the model's client sends inside the block."""
    sent: list[str] = []
    client = model._get_connection().connection.client

    def record(model: Any, **kwargs: Any) -> None:
        sent.append(model.name)

    client.meta.events.register("before-call.dynamodb", record)
    try:
        yield sent
    finally:
        client.meta.events.unregister("before-call.dynamodb", record)


# -- equal values are one key ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("250", "250"),
        ("250.0", "250"),
        ("2.5e2", "250"),
        ("2.5E+2", "250"),
        ("-0", "0"),
        ("0.000", "0"),
        ("-1.50", "-1.5"),
        ("1e-30", "0.000000000000000000000000000001"),
        ("1e+30", "1000000000000000000000000000000"),
        ("12345678901234567890123456789012345678", "12345678901234567890123456789012345678"),
        (1.0, "1"),
        (Decimal("1E+0"), "1"),
    ],
)
def test_numbers_take_dynamodbs_canonical_form(text: Any, canonical: str) -> None:
    assert canonical_number(text) == canonical


def test_a_number_hashed_in_any_form_is_one_item() -> None:
    """250, 250.0 and a float written 2.5e2 hash to one shard: the second save overwrites."""
    HashedEvent(user_id="n", timestamp=250, event_type="int").save()
    HashedEvent(user_id="n", timestamp=250.0, event_type="float").save()
    HashedEvent(user_id="n", timestamp=2.5e2, event_type="exponent").save()
    assert len(stored_keys(HashedEvent)) == 1
    assert HashedEvent.get("n", 250.0).event_type == "exponent"
    assert [e.event_type for e in HashedEvent.query("n", HashedEvent.timestamp == 2.5e2)] == [
        "exponent"
    ]


def test_point_reads_of_random_shards_match_numbers_by_value() -> None:
    RandomEvent(user_id="p", timestamp=1, event_type="one").save()
    RandomEvent(user_id="p", timestamp=10**17, event_type="big").save()
    assert RandomEvent.get("p", 1.0).event_type == "one"
    found = RandomEvent.batch_get([("p", 1.0), ("p", 1e17), ("p", 2.0)])
    assert sorted(e.event_type for e in found) == ["big", "one"]


# -- key length --------------------------------------------------------------------------


def test_a_key_too_long_for_some_shard_is_refused_on_every_shard() -> None:
    """2,046 bytes fit '#0'..'#9' but not '#10'..'#15': refused before any write."""

    class Wide(ShardedModel):
        class Meta:
            table_name = "random-events"
            region = "us-east-1"

        user_id = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(16))
        timestamp = NumberAttribute(range_key=True)

    logical = "k" * 2046
    for ts in range(20):
        with pytest.raises(ShardKeyError, match=r"up to 2049 bytes.*shorten the logical key by"):
            Wide(user_id=logical, timestamp=ts).save()
    assert stored_keys(RandomEvent) == []
    fits = "k" * 2045
    Wide(user_id=fits, timestamp=1).save()
    assert Wide.get(fits, 1).user_id == fits
    assert [e.timestamp for e in Wide.query(fits)] == [1]


def test_reads_of_keys_stored_before_the_check_still_work() -> None:
    """Items a layout stored on its short shards stay readable: too-long keys are skipped."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    logical = "k" * 2046
    client.put_item(
        TableName="random-events",
        Item={"user_id": {"S": f"{logical}#3"}, "timestamp": {"N": "7"}},
    )

    class Wide(ShardedModel):
        class Meta:
            table_name = "random-events"
            region = "us-east-1"

        user_id = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(16))
        timestamp = NumberAttribute(range_key=True)

    assert Wide.get(logical, 7).timestamp == 7
    assert [e.timestamp for e in Wide.query(logical)] == [7]
    assert Wide.count(logical) == 1


# -- bounded fan-out ---------------------------------------------------------------------


class HourlyEvent(ShardedModel):
    class Meta:
        table_name = "daily-events"
        region = "us-east-1"

    tenant_id = ShardedKeyAttribute(
        hash_key=True, strategy=[TimeBuckets("created", "hour"), RandomShards(2)]
    )
    created = NumberAttribute(range_key=True)


def test_a_year_of_hourly_buckets_is_refused_before_the_first_request() -> None:
    year = (1_700_000_000, 1_700_000_000 + 365 * 86400)
    with sent_requests(HourlyEvent) as sent:
        with pytest.raises(FanOutLimitError, match=r"17,522 partitions.*bound of 1,000") as error:
            list(HourlyEvent.query("t", HourlyEvent.created.between(*year), limit=1))
        with pytest.raises(FanOutLimitError, match="max_requests=17522"):
            HourlyEvent.count("t", HourlyEvent.created.between(*year))
    assert sent == []
    assert (error.value.planned, error.value.bound) == (17522, DEFAULT_MAX_REQUESTS)


def test_the_bound_is_settable_per_call_and_in_meta() -> None:
    day = (1_700_000_000, 1_700_000_000 + 86400)  # 25 hours touched x 2 shards
    assert list(HourlyEvent.query("t", HourlyEvent.created.between(*day), max_requests=50)) == []
    with pytest.raises(FanOutLimitError, match=r"50 partitions.*bound of 49"):
        HourlyEvent.count("t", HourlyEvent.created.between(*day), max_requests=49)
    HourlyEvent.Meta.max_requests = 10  # type: ignore[attr-defined]
    try:
        with pytest.raises(FanOutLimitError, match="bound of 10"):
            list(HourlyEvent.query("t", HourlyEvent.created.between(*day)))
        with pytest.raises(ShardKeyError, match=r"max_requests=0: give a positive int"):
            list(HourlyEvent.query("t", HourlyEvent.created.between(*day), max_requests=0))
    finally:
        del HourlyEvent.Meta.max_requests  # type: ignore[attr-defined]


def _put_metadata(key: str, count: str, history: list[str]) -> None:
    boto3.client("dynamodb", region_name="us-east-1").put_item(
        TableName="dynamic-events-shards",
        Item={
            "user_id": {"S": key},
            "number_of_shards": {"N": count},
            "last_updated": {"N": "5"},
            "shard_history": {"SS": history},
        },
    )


@pytest.mark.parametrize(
    ("count", "history", "message"),
    [
        ("200000", ["5:1"], "number_of_shards is 200000.*from 1 to 100"),
        ("2.5", ["5:1"], "number_of_shards is 2.5, not a whole number"),
        ("2", ["5:1", "2:200000"], "'2:200000' is not.*count from 1 to 100"),
        ("2", ["5:1", "7:2.5"], "'7:2.5' is not '<epoch>:<count>' with whole numbers"),
        ("0", ["5:1"], "number_of_shards is 0"),
    ],
)
def test_metadata_outside_the_strategy_is_refused_naming_key_and_field(
    count: str, history: list[str], message: str
) -> None:
    _put_metadata("bad", count, history)
    with sent_requests(DynamicEvent) as sent:
        for read in (
            lambda: list(DynamicEvent.query("bad")),
            lambda: DynamicEvent.get("bad", 1),
            lambda: DynamicEvent.count("bad"),
        ):
            with pytest.raises(ShardMetadataError, match=f"key 'bad'.*{message}"):
                read()
    assert "Query" not in sent and "BatchGetItem" not in sent


# -- misconfigurations refused when the class is defined ---------------------------------


@pytest.mark.parametrize(
    ("strategy", "separator"),
    [
        (RandomShards(20), "1"),
        (HashShards(4, on=["timestamp"]), "x0"),
        (DynamicShards(), "7"),
        (TimeBuckets("timestamp", "day"), "-"),
        (TimeBuckets("timestamp", "hour"), "T"),
    ],
)
def test_a_separator_a_segment_can_contain_is_refused(strategy: Any, separator: str) -> None:
    with pytest.raises(ShardConfigurationError, match="separator"):

        class Broken(ShardedModel):
            class Meta:
                table_name = "random-events"
                region = "us-east-1"

            user_id = ShardedKeyAttribute(hash_key=True, strategy=strategy, separator=separator)
            timestamp = NumberAttribute(range_key=True)


def test_a_sharded_key_on_a_plain_model_is_refused_naming_sharded_model() -> None:
    with pytest.raises((ShardConfigurationError, RuntimeError)) as raised:

        class Plain(Model):
            class Meta:
                table_name = "random-events"

            user_id = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(4))

    error = raised.value
    cause = error if isinstance(error, ShardConfigurationError) else error.__cause__
    assert isinstance(cause, ShardConfigurationError)
    assert "class Plain(ShardedModel)" in str(cause)


def test_a_strategy_class_instead_of_an_instance_says_how_to_write_it() -> None:
    with pytest.raises(ShardConfigurationError, match=r"write RandomShards\(10\)"):
        ShardedKeyAttribute(hash_key=True, strategy=RandomShards)  # type: ignore[arg-type]
    with pytest.raises(ShardConfigurationError, match=r"write HashShards\(10\)"):
        ShardedKeyAttribute(hash_key=True, strategy=[RandomShards(2), HashShards])  # type: ignore[list-item]


# -- bad input: clear errors, nothing sent -----------------------------------------------


def test_an_epoch_in_milliseconds_is_named_as_such() -> None:
    class Log(ShardedModel):
        class Meta:
            table_name = "hashed-events"
            region = "us-east-1"

        tenant_id = ShardedKeyAttribute(
            hash_key=True, strategy=TimeBuckets("created", "day"), attr_name="user_id"
        )
        created = NumberAttribute(range_key=True, attr_name="timestamp")

    with pytest.raises(ShardKeyError, match="divide it by 1000"):
        Log(tenant_id="t", created=1_700_000_000_000_000).save()
    with pytest.raises(ShardKeyError, match=r"Log\.created: .NaN. is not a finite number"):
        Log(tenant_id="t", created=float("nan")).save()
    assert stored_keys(HashedEvent) == []


def test_a_non_utc_iso_offset_is_refused_on_save_with_the_utc_form() -> None:
    class IsoLog(ShardedModel):
        class Meta:
            table_name = "daily-events"
            region = "us-east-1"

        tenant_id = ShardedKeyAttribute(hash_key=True, strategy=TimeBuckets("at", "day"))
        at = UnicodeAttribute(range_key=True, attr_name="created")

    with pytest.raises(ShardKeyError, match=r"'2024-01-16T03:00:00\.000000Z'"):
        IsoLog(tenant_id="t", at="2024-01-15T22:00:00-05:00").save()
    IsoLog(tenant_id="t", at="2024-01-16T03:00:00Z").save()
    assert stored_keys(DailyEvent) == ["t#2024-01-16"]
    # a bound at -05:00 matches stored UTC text by its wall time: the 15th's text range
    found = IsoLog.query(
        "t", IsoLog.at.between("2024-01-16T00:00:00-05:00", "2024-01-16T23:59:59-05:00")
    )
    assert [e.at for e in found] == ["2024-01-16T03:00:00Z"]


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        (RandomEvent.timestamp.between(5, 1), "BETWEEN operator requires upper bound"),
        (
            (RandomEvent.timestamp > 1) & (RandomEvent.timestamp < 5),
            "only contain one condition per key",
        ),
    ],
)
def test_key_conditions_dynamodb_refuses_are_refused_before_sending(
    condition: Any, message: str
) -> None:
    with sent_requests(RandomEvent) as sent:
        for read in (
            lambda: list(RandomEvent.query("u", condition)),
            lambda: RandomEvent.count("u", condition),
        ):
            with pytest.raises(QueryError, match=message) as raised:
                read()
            assert raised.value.cause_response_code == "ValidationException"
            assert isinstance(raised.value, ShardKeyError)
    assert sent == []


def test_time_buckets_suggest_only_forms_dynamodb_accepts() -> None:
    with pytest.raises(Exception, match=r"between\(start, end\).*time_range") as raised:
        list(DailyEvent.query("t"))
    assert "(at > a) & (at < b)" not in str(raised.value)
    assert "> start and < end" not in str(raised.value)


@pytest.mark.parametrize(("limit", "page_size"), [(-1, None), (None, 0), (None, -3)])
def test_negative_limits_are_refused_like_dynamodb(limit: Any, page_size: Any) -> None:
    with sent_requests(RandomEvent) as sent:
        with pytest.raises(QueryError, match="greater than or equal to 1") as raised:
            list(RandomEvent.query("u", limit=limit, page_size=page_size))
    assert raised.value.cause_response_code == "ValidationException"
    assert sent == []
    assert list(RandomEvent.query("u", limit=0)) == []


# -- cursors -----------------------------------------------------------------------------


def _forged(payload: Any) -> str:
    """A cursor whose checksum passes (no cursor_secret): anyone can make one."""
    return signed_cursor(payload)


def _taken_cursor() -> tuple[str, dict[str, Any]]:
    for ts in range(30):
        RandomEvent(user_id="c", timestamp=ts).save()
    results = RandomEvent.query("c", page_size=2)
    next(results)
    cursor = results.last_evaluated_key
    results.close()  # waits out its prefetches: on a loaded machine one landed in a later check
    assert cursor is not None
    return cursor, cursor_payload(cursor)


def _with_first_shard(payload: dict[str, Any], **change: Any) -> dict[str, Any]:
    shards = [dict(payload["shards"][0], **change), *payload["shards"][1:]]
    return dict(payload, shards=shards)


def test_malformed_cursor_payloads_are_refused_field_by_field() -> None:
    _, payload = _taken_cursor()
    bad_payloads = [
        [],
        None,
        "cursor",
        dict(payload, forward="false"),
        dict(payload, version="1"),
        dict(payload, logical_key=7),
        dict(payload, shards=[]),
        dict(payload, shards=[None]),
        dict(payload, extra=1),
        _with_first_shard(payload, done="no"),
        _with_first_shard(payload, start={"timestamp": {"X": "1"}}),
        _with_first_shard(payload, start={"timestamp": {"N": "one"}}),
        _with_first_shard(payload, start={"timestamp": {"N": "1", "S": "1"}}),
        _with_first_shard(payload, start=[]),
        _with_first_shard(payload, key=""),
        dict(payload, shards=[payload["shards"][0], payload["shards"][0]]),
    ]
    with sent_requests(RandomEvent) as sent:
        for bad in bad_payloads:
            with pytest.raises(CursorError, match="last_evaluated_key"):
                list(RandomEvent.query("c", page_size=2, last_evaluated_key=_forged(bad)))
    assert sent == []


def test_a_cursor_listing_only_some_shards_is_refused_not_restarted() -> None:
    cursor, payload = _taken_cursor()
    partial = dict(payload, shards=payload["shards"][:-1])
    with pytest.raises(CursorError, match="lacks shards this query reads"):
        list(RandomEvent.query("c", page_size=2, last_evaluated_key=_forged(partial)))
    resumed = [e.timestamp for e in RandomEvent.query("c", page_size=2, last_evaluated_key=cursor)]
    assert len(resumed) == 29
