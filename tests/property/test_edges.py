"""Hypothesis: at the edges of their arguments, reads answer as an unsharded table or
refuse before sending (moto).

The generators (``tests/strategies.py``) draw flags that are not bools; limits and page
sizes as ints, floats, strings, bools and Decimals; strftime formats; and cursors forged,
then signed again with the model's own secret.
"""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import (
    CursorError,
    RandomShards,
    ShardConfigurationError,
    ShardedKeyAttribute,
    ShardedModel,
    TimeBuckets,
)
from shardmodel.errors import QueryValidationError
from tests.models import PlainEvent, RandomEvent, SeriesReading
from tests.strategies import (
    non_bool_flags,
    paging_values,
    start_forgeries,
    strftime_formats,
)
from tests.support import cursor_payload, sent_requests, signed_cursor

fixture_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
UTC = timezone.utc
AT = datetime(2023, 10, 27, 15, 4, tzinfo=UTC)
_keys = itertools.count()

moments = st.datetimes(
    min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
)


@given(fmt=strftime_formats, first=moments, second=moments)
def test_an_accepted_format_labels_times_in_their_order(
    fmt: str, first: datetime, second: datetime
) -> None:
    """Any strftime format is refused when declared, or its labels never fall as time
    goes on: no label comes back, so no partition is read for two time ranges."""
    try:
        strategy = TimeBuckets("ts", fmt)
    except ShardConfigurationError:
        return
    early, late = sorted([first, second])
    assert strategy.bucket(early) <= strategy.bucket(late), (fmt, early, late)


def _store(key: str) -> None:
    with RandomEvent.batch_write() as batch, PlainEvent.batch_write() as plain:
        for ts in range(12):
            batch.save(RandomEvent(user_id=key, timestamp=ts, event_type="e"))
            plain.save(PlainEvent(user_id=key, timestamp=ts, event_type="e"))


@pytest.mark.usefixtures("tables")
@fixture_ok
@given(flag=st.sampled_from(["scan_index_forward", "consistent_read"]), value=non_bool_flags)
def test_a_non_bool_flag_is_refused_before_sending(flag: str, value: Any) -> None:
    """A flag that is not a bool is refused by Model.query, count, query_series and
    latest, naming it, and nothing is sent."""
    assume(value is not None)
    reads = [
        lambda: list(RandomEvent.query("f", **{flag: value})),
        lambda: list(SeriesReading.query_series("s", AT, AT, **{flag: value})),
        lambda: list(SeriesReading.latest("s", 1, now=AT, **{flag: value})),
    ]
    if flag == "consistent_read":
        reads.append(lambda: RandomEvent.count("f", consistent_read=value))
        reads.append(lambda: SeriesReading.count_series("s", AT, AT, consistent_read=value))
    with sent_requests(RandomEvent) as sent, sent_requests(SeriesReading) as sent_series:
        for read in reads:
            with pytest.raises(QueryValidationError, match=f"at '{flag}' failed"):
                read()
    assert sent == sent_series == []


def _valid(value: Any, least: int) -> bool:
    return value is None or (type(value) is int and value >= least)


@pytest.mark.usefixtures("tables")
@fixture_ok
@given(limit=paging_values, page_size=paging_values, forward=st.booleans())
def test_paging_answers_as_the_unsharded_table_or_is_refused(
    limit: Any, page_size: Any, forward: bool
) -> None:
    """A limit of ints from 0 and a page size from 1 read what a plain model reads; any
    other value (a float, a string, a bool, a negative) is refused before sending."""
    key = f"p-{next(_keys)}"
    _store(key)
    options = {"limit": limit, "page_size": page_size, "scan_index_forward": forward}
    if _valid(limit, 0) and _valid(page_size, 1):
        got = [e.timestamp for e in RandomEvent.query(key, **options)]
        assert got == [e.timestamp for e in PlainEvent.query(key, **options)]
        series = SeriesReading.query_series("s", AT, AT + timedelta(hours=2), **options)
        assert list(series) == []
        return
    with sent_requests(RandomEvent) as sent, sent_requests(SeriesReading) as sent_series:
        with pytest.raises(QueryValidationError, match="validation error detected: Value"):
            list(RandomEvent.query(key, **options))
        with pytest.raises(QueryValidationError, match="validation error detected: Value"):
            list(SeriesReading.query_series("s", AT, AT + timedelta(hours=2), **options))
    assert sent == sent_series == []


SECRET = b"property-secret"


class SignedEvent(ShardedModel):
    """RandomEvent's table, with cursors signed by SECRET."""

    class Meta:
        table_name = "random-events"
        region = "us-east-1"
        cursor_secret = SECRET

    user_id = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(10))
    timestamp = NumberAttribute(range_key=True)
    event_type = UnicodeAttribute(null=True)


def _forge(token: str, kind: str, value: Any) -> str:
    """The cursor with one start key (or its conditions) edited, signed with SECRET."""
    data = cursor_payload(token)
    shard = next(s for s in data["shards"] if s["start"] is not None)
    start = shard["start"]
    if kind == "partition":
        assume(value != shard["key"])
        start["user_id"] = {"S": value}
    elif kind == "sort type":
        start["timestamp"] = {value: "AA=="}
    elif kind == "no sort key":
        del start["timestamp"]
    elif kind == "extra attribute":
        assume(value not in start)
        start[value] = {"S": "x"}
    elif kind == "unstorable number":
        start["timestamp"] = {"N": value}
    elif kind == "outside the range":
        start["timestamp"] = {"N": str(value)}
    else:
        assume(value != data["conditions"])
        data["conditions"] = value
    return signed_cursor(data, SECRET)


@pytest.mark.usefixtures("tables")
@fixture_ok
@given(forgery=start_forgeries, taken=st.integers(1, 8))
def test_a_forged_and_resigned_cursor_is_refused_before_sending(
    forgery: tuple[str, Any], taken: int
) -> None:
    """However a cursor is edited (a start key of another partition or type, without its
    sort key, with an attribute too many, a number DynamoDB cannot hold, outside the
    range; other conditions), signed again with the model's own secret it is refused,
    and no request is sent."""
    key = f"c-{next(_keys)}"
    with SignedEvent.batch_write() as batch:
        for ts in range(4, 16):
            batch.save(SignedEvent(user_id=key, timestamp=ts))
    condition = SignedEvent.timestamp > 3
    first = SignedEvent.query(key, condition, limit=taken)
    assert len(list(first)) == taken
    token = first.last_evaluated_key
    assert token is not None
    forged = _forge(token, *forgery)
    with sent_requests(SignedEvent) as sent:
        with pytest.raises(CursorError, match="last_evaluated_key"):
            list(SignedEvent.query(key, condition, last_evaluated_key=forged))
    assert sent == []
