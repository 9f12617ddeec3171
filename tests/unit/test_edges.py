"""Arguments at the edges of Model.query, count, get and cursors (in-process moto).

Each read either answers as an unsharded table would, or raises a shardmodel error
naming the argument and the fix before any request is sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import CursorError, RandomShards, ShardedKeyAttribute, ShardedModel, ShardKeyError
from shardmodel.errors import QueryValidationError
from shardmodel.migration import Reshard, follow, unfollow
from shardmodel.testing import (
    SimulatedClock,
    bind_models,
    create_tables,
    drop_tables,
    mock_dynamodb,
)
from tests.migration_models import MIGRATION_MODELS, Reading
from tests.models import (
    DailyEvent,
    HashedEvent,
    IsoEvent,
    PlainEvent,
    PlainIsoEvent,
    RandomEvent,
    SeriesReading,
)
from tests.support import cursor_payload, raw_items, sent_requests, signed_cursor

pytestmark = pytest.mark.usefixtures("tables")

SECRET = "s3cret"


class SignedEvent(ShardedModel):
    """RandomEvent's table, with signed cursors."""

    class Meta:
        table_name = "random-events"
        region = "us-east-1"
        cursor_secret = SECRET

    user_id = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(10))
    timestamp = NumberAttribute(range_key=True)
    event_type = UnicodeAttribute(null=True)


def _save(key: str, count: int) -> None:
    with RandomEvent.batch_write() as batch, PlainEvent.batch_write() as plain:
        for ts in range(count):
            batch.save(RandomEvent(user_id=key, timestamp=ts, event_type="e"))
            plain.save(PlainEvent(user_id=key, timestamp=ts, event_type="e"))


# -- flags, limits and page sizes ------------------------------------------------------


@pytest.mark.parametrize("flag", ["scan_index_forward", "consistent_read"])
@pytest.mark.parametrize("value", ["no", 0, 1, "False", [], 0.0])
def test_a_flag_that_is_not_a_bool_is_refused_before_sending(flag: str, value: Any) -> None:
    """``scan_index_forward='no'`` read as ascending to the merge and as the raw value to
    each shard's Query, so items came in neither order; a non-bool flag is refused, as
    DynamoDB refuses a non-boolean, naming the argument."""
    _save("u", 30)
    with sent_requests(RandomEvent) as sent:
        with pytest.raises(QueryValidationError) as raised:
            list(RandomEvent.query("u", **{flag: value}))
        if flag == "consistent_read":
            with pytest.raises(QueryValidationError):
                RandomEvent.count("u", consistent_read=value)
    assert str(raised.value) == (
        f"1 validation error detected: Value {value!r} at '{flag}' failed to satisfy "
        f"constraint: Member must be a boolean; pass {flag}=True or {flag}=False"
    )
    assert raised.value.cause_response_code == "ValidationException"
    assert sent == []


@pytest.mark.parametrize("forward", [True, False, None])
def test_bool_flags_answer_as_the_unsharded_table(forward: bool | None) -> None:
    """True, False and None (ascending) read in the order a plain model reads."""
    _save("f", 25)
    expected = [e.timestamp for e in PlainEvent.query("f", scan_index_forward=forward)]
    got = [e.timestamp for e in RandomEvent.query("f", scan_index_forward=forward)]
    assert got == expected == sorted(expected, reverse=forward is False)


@pytest.mark.parametrize(
    ("options", "suggested"),
    [
        ({"limit": 2.5}, "limit=2"),
        ({"limit": "3"}, "limit=3"),
        ({"limit": "10"}, "limit=10"),
        ({"limit": True}, "limit=10"),
        ({"limit": Decimal(4)}, "limit=4"),
        ({"page_size": 7.0}, "page_size=7"),
        ({"page_size": "x"}, "page_size=10"),
    ],
)
def test_a_limit_or_page_size_that_is_no_int_is_refused_as_such(
    options: dict[str, Any], suggested: str
) -> None:
    """A float, string, bool or Decimal is refused as not an integer (``limit='10'`` was
    called "not greater than or equal to 1"), with an int to write instead."""
    ((field, value),) = options.items()
    with sent_requests(RandomEvent) as sent:
        with pytest.raises(QueryValidationError) as raised:
            list(RandomEvent.query("u", **options))
    assert str(raised.value) == (
        f"1 validation error detected: Value {value!r} at '{field}' failed to satisfy "
        f"constraint: Member must be an integer; pass {field}=None for no {field}, or a "
        f"positive int such as {suggested}"
    )
    assert sent == []


# -- the sort key of a read by full key ------------------------------------------------


READS: list[Callable[[Any], Any]] = [
    lambda range_key: RandomEvent.get("u", range_key),
    lambda range_key: HashedEvent.get("u", range_key),
    lambda range_key: list(RandomEvent.batch_get([("u", range_key)])),
    lambda range_key: list(HashedEvent.batch_get([("u", 1), ("u", range_key)])),
]


@pytest.mark.parametrize("read", READS)
def test_a_missing_sort_key_is_refused_by_name_before_sending(read: Any) -> None:
    """``get('u', None)`` on a model with a number sort key raised ``'null' is not a
    number``; it is a ShardKeyError naming the sort key, and nothing is sent (a plain
    model's server answers ValidationException)."""
    with sent_requests(RandomEvent) as sent, sent_requests(HashedEvent) as sent_hashed:
        with pytest.raises(ShardKeyError) as raised:
            read(None)
    assert "has the sort key 'timestamp', and range_key is None; give the timestamp of the " in (
        str(raised.value)
    )
    assert sent == sent_hashed == []


@pytest.mark.parametrize("read", READS)
@pytest.mark.parametrize(
    ("value", "problem"),
    [("abc", "'\"abc\"' is not a number"), (10**400, "38 significant digits")],
)
def test_a_sort_key_of_another_type_is_refused_by_name(read: Any, value: Any, problem: str) -> None:
    """A string for a number sort key, or a number DynamoDB cannot store, names the value
    and the attribute's type before anything is sent."""
    with sent_requests(RandomEvent) as sent, sent_requests(HashedEvent) as sent_hashed:
        with pytest.raises(ShardKeyError) as raised:
            read(value)
    assert "is no value of the sort key 'timestamp' (NumberAttribute): " in str(raised.value)
    assert problem in str(raised.value)
    assert sent == sent_hashed == []


def test_a_sort_key_of_a_string_model_is_checked_too() -> None:
    """A UTCDateTimeAttribute sort key given a number is named, not sent."""
    with pytest.raises(ShardKeyError, match=r"range_key=5 is no value of the sort key 'created'"):
        DailyEvent.get("t", 5)


# -- cursors: the query's conditions, and forged content --------------------------------


def _resigned(data: dict[str, Any]) -> str:
    """A payload signed with the model's own secret: what a forger holding it makes."""
    return signed_cursor(data, SECRET)


def _signed_cursor(key: str = "c") -> str:
    _save(key, 40)
    results = SignedEvent.query(key, SignedEvent.timestamp > 3, page_size=2)
    for _ in range(5):
        next(results)
    cursor = results.last_evaluated_key
    results.close()
    assert cursor is not None
    return cursor


def _first_started(data: dict[str, Any]) -> dict[str, Any]:
    start: dict[str, Any] = next(s["start"] for s in data["shards"] if s["start"] is not None)
    return start


FORGERIES: list[tuple[Callable[[dict[str, Any]], Any], str]] = [
    (lambda start: start["user_id"].update(S="other#3"), "is in the partition 'other#3'"),
    (lambda start: start.update(timestamp={"S": "7"}), "has 'timestamp' of type S"),
    (lambda start: start.pop("timestamp"), "names ['user_id'], the query's keys are"),
    (lambda start: start.update(extra={"S": "x"}), "names ['extra', 'timestamp', 'user_id']"),
    (lambda start: start.update(timestamp={"N": "1e400"}), "is not a valid N value"),
    (lambda start: start.update(timestamp={"N": "2"}), "does not match the range key predicate"),
]


@pytest.mark.parametrize(("forge", "problem"), FORGERIES)
def test_a_forged_cursor_signed_with_the_secret_is_refused_before_sending(
    forge: Callable[[dict[str, Any]], Any], problem: str
) -> None:
    """A start key in another partition, of another type, without the sort key, with a
    number DynamoDB cannot hold or outside the range: the signature is right, the content
    is not a position of this query. Refused by name; nothing reaches the server."""
    data = cursor_payload(_signed_cursor())
    forge(_first_started(data))
    with sent_requests(SignedEvent) as sent:
        with pytest.raises(CursorError) as raised:
            list(
                SignedEvent.query(
                    "c", SignedEvent.timestamp > 3, page_size=2, last_evaluated_key=_resigned(data)
                )
            )
    assert problem in str(raised.value)
    assert sent == []


def test_an_untouched_resigned_cursor_still_resumes() -> None:
    """The checks pass a genuine cursor: re-signing unchanged content resumes as before."""
    data = cursor_payload(_signed_cursor())
    rest = SignedEvent.query(
        "c", SignedEvent.timestamp > 3, page_size=2, last_evaluated_key=_resigned(data)
    )
    assert [e.timestamp for e in rest] == list(range(9, 40))


@pytest.mark.parametrize(
    ("range_condition", "filter_condition"),
    [
        (RandomEvent.timestamp < 3, None),
        (RandomEvent.timestamp > 4, None),
        (None, None),
        (RandomEvent.timestamp > 3, RandomEvent.event_type == "e"),
    ],
)
def test_a_cursor_resumes_only_the_conditions_it_was_taken_with(
    range_condition: Any, filter_condition: Any
) -> None:
    """The range (and filter) are in the cursor: a resume with others over the same
    partitions is refused (it returned items an unsharded table would not, and lost
    others), before any request."""
    _save("r", 30)
    first = RandomEvent.query("r", RandomEvent.timestamp > 3, limit=5)
    assert [e.timestamp for e in first] == [4, 5, 6, 7, 8]
    cursor = first.last_evaluated_key
    with sent_requests(RandomEvent) as sent:
        with pytest.raises(CursorError) as raised:
            list(
                RandomEvent.query("r", range_condition, filter_condition, last_evaluated_key=cursor)
            )
    assert str(raised.value) == (
        "last_evaluated_key was taken with other conditions (range_key_condition, "
        "time_range or filter_condition, or a time series' start and end) than this query's; "
        "resume with the same conditions, or start over"
    )
    assert sent == []


def test_equal_numbers_are_the_same_conditions() -> None:
    """``ts > 3`` and ``ts > 3.0`` are one DynamoDB condition: the cursor resumes either."""
    _save("n", 12)
    first = RandomEvent.query("n", RandomEvent.timestamp > 3, limit=4)
    assert [e.timestamp for e in first] == [4, 5, 6, 7]
    rest = RandomEvent.query(
        "n", RandomEvent.timestamp > 3.0, last_evaluated_key=first.last_evaluated_key
    )
    assert [e.timestamp for e in rest] == [8, 9, 10, 11]


def test_a_cursor_of_a_time_range_resumes_only_that_range() -> None:
    """``time_range`` picks a TimeBuckets key's buckets: it is one of the conditions."""
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    for hour in range(30):
        DailyEvent(tenant_id="t", created=start + timedelta(hours=hour), event_type="e").save()
    window = (start, start + timedelta(days=2))
    first = DailyEvent.query("t", DailyEvent.created >= start, time_range=window, limit=3)
    assert len(list(first)) == 3
    cursor = first.last_evaluated_key
    with pytest.raises(CursorError, match="taken with other conditions"):
        DailyEvent.query(
            "t",
            DailyEvent.created >= start,
            time_range=(start, start + timedelta(days=3)),
            last_evaluated_key=cursor,
        )
    rest = DailyEvent.query(
        "t", DailyEvent.created >= start, time_range=window, last_evaluated_key=cursor
    )
    assert len(list(rest)) == 27


# -- time ranges and times at datetime's ends ----------------------------------------


@pytest.mark.parametrize(
    ("time_range", "message"),
    [
        ((1,), "DailyEvent: time_range=(1,) is not a pair; pass time_range=(start, end)"),
        ("2024-01-01", "DailyEvent: time_range='2024-01-01' is not a pair"),
        (
            (Decimal("sNaN"), 5),
            "DailyEvent: time_range's start: Decimal('sNaN') is not a time; pass finite epoch "
            "seconds or a datetime",
        ),
        ((0, float("inf")), "DailyEvent: time_range's end: inf is not a time"),
        ((datetime(2024, 1, 1), None), "time_range's start: naive datetime '2024-01-01T00:00:00'"),
    ],
)
def test_a_time_range_that_is_no_pair_of_times_is_refused_by_name(
    time_range: Any, message: str
) -> None:
    """A time_range of one value raised ValueError (unpacking), and a signaling NaN in it
    a ValueError from the cursor's digest; each is a ShardKeyError naming time_range,
    before anything is sent, for query and count."""
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    with sent_requests(DailyEvent) as sent:
        for read in (
            lambda: list(DailyEvent.query("t", DailyEvent.created >= start, time_range=time_range)),
            lambda: DailyEvent.count("t", DailyEvent.created >= start, time_range=time_range),
        ):
            with pytest.raises(ShardKeyError) as raised:
                read()
            assert message in str(raised.value)
    assert sent == []


def test_a_time_past_the_year_9999_in_utc_is_refused_by_name() -> None:
    """``9999-12-31T23:00:00-05:00`` is in the year 10000 in UTC, where no bucket is: a
    ShardKeyError naming the argument, the value and the range of times, not an
    OverflowError. (A UTCDateTimeAttribute's own serialization of such a datetime raises
    PynamoDB's OverflowError, on an unsharded model as well.)"""
    late = datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5)))
    message = (
        "is outside the years 1 to 9999 in UTC, the times a bucket can hold; give a time "
        "from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z"
    )
    with sent_requests(SeriesReading) as sent:
        with pytest.raises(
            ShardKeyError, match=r"^SeriesReading.query_series\(end\): '9999-12-31T23:00:00-05:00' "
        ):
            list(SeriesReading.query_series("s", late - timedelta(hours=5), late))
        with pytest.raises(ShardKeyError, match=message):
            SeriesReading(sensor_id="s", timestamp="0001-01-01T01:00:00+05:00", value=1).save()
    assert sent == []
    assert raw_items(SeriesReading) == []


def test_an_iso_bound_past_the_year_9999_in_utc_reads_as_the_plain_table() -> None:
    """A string bound is compared by DynamoDB as text: ``9999-12-31T23:59:59-05:00``
    matches stored UTC times up to that wall time. Its UTC instant (the year 10000) raised
    OverflowError while picking buckets; it now reads the last buckets there are, and
    answers as the unsharded table does."""
    for at in ("9999-12-30T12:00:00Z", "9999-12-31T20:00:00Z", "0001-01-01T02:00:00Z"):
        IsoEvent(user_id="u", at=at).save()
        PlainIsoEvent(user_id="u", at=at).save()
    for low, high in (
        ("9999-12-30T00:00:00-05:00", "9999-12-31T23:59:59-05:00"),
        ("0001-01-01T00:00:00+05:00", "0001-01-01T04:00:00+05:00"),
    ):
        expected = [e.at for e in PlainIsoEvent.query("u", PlainIsoEvent.at.between(low, high))]
        assert [e.at for e in IsoEvent.query("u", IsoEvent.at.between(low, high))] == expected
        assert expected


@pytest.fixture
def migration_tables() -> Iterator[SimulatedClock]:
    """The migration models' tables on in-process moto, and a simulated clock."""
    with mock_dynamodb():
        bind_models(MIGRATION_MODELS, host=None)
        create_tables(MIGRATION_MODELS)
        yield SimulatedClock(start=1_700_000_000.0)
        for model in MIGRATION_MODELS:
            unfollow(model)
        drop_tables(MIGRATION_MODELS)


def test_a_cursor_taken_before_a_shard_count_change_resumes_during_it(
    migration_tables: SimulatedClock,
) -> None:
    """The conditions a cursor records are the caller's: the copy test a migration adds
    to every table query's filter is not one of them, so the resume is not refused."""
    clock = migration_tables
    for seq in range(20):
        Reading(sensor="k", seq=seq, value=f"v{seq}").save()
    page = Reading.query("k", Reading.seq >= 2, limit=5)
    assert [r.seq for r in page] == [2, 3, 4, 5, 6]
    follow(Reading, cache_seconds=0, clock=clock)
    Reshard(Reading, clock=clock).start(32, settle_seconds=10)
    rest = Reading.query("k", Reading.seq >= 2, last_evaluated_key=page.last_evaluated_key)
    assert [r.seq for r in rest] == list(range(7, 20))
