"""The edges on the servers (moto and dynalite), differential where they differ.

moto and dynalite answer odd arguments differently (a page size of 0: an IndexError in
moto, a ValidationException in dynalite; a start key of another partition: accepted by
moto, refused by dynalite). A sharded model answers the same on both: as the unsharded
model, or a shardmodel error before anything is sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import DeleteError, GetError, QueryError, ScanError

from shardmodel import CursorError, HashShards, ShardedKeyAttribute, ShardedModel, ShardKeyError
from shardmodel.errors import QueryValidationError
from shardmodel.testing import bind_models, create_tables, drop_tables
from tests.integration.conftest import CREDENTIALS, unbind
from tests.models import HashedEvent, PlainEvent, PlainReading, RandomEvent, SeriesReading
from tests.support import cursor_payload, sent_requests, signed_cursor

UTC = timezone.utc
AT = datetime(2023, 10, 27, 15, 4, tzinfo=UTC)


def _store(key: str, count: int) -> None:
    with RandomEvent.batch_write() as batch, PlainEvent.batch_write() as plain:
        for ts in range(count):
            kind = "odd" if ts % 2 else "even"
            batch.save(RandomEvent(user_id=key, timestamp=ts, event_type=kind))
            plain.save(PlainEvent(user_id=key, timestamp=ts, event_type=kind))


@pytest.mark.parametrize(
    "options",
    [
        {"page_size": 0},
        {"limit": -1},
        {"limit": 2.5},
        {"limit": "3"},
        {"scan_index_forward": 0},
        {"scan_index_forward": "no"},
        {"consistent_read": 1},
        {"filter_condition": SeriesReading.pk == "x"},
        {"filter_condition": SeriesReading.sk.startswith("s")},
    ],
)
def test_series_reads_refuse_on_every_server_before_sending(
    backend: str, options: dict[str, Any]
) -> None:
    """query_series, latest and count_series refuse what the servers answer differently
    (moto: an IndexError for page_size=0 on a non-empty partition; dynalite: a
    ValidationException, or a SerializationException for a number as a flag), the same
    on both, with nothing sent. count_series takes no paging or direction."""
    SeriesReading(sensor_id="s", timestamp=AT, value=1).save()
    end = AT + timedelta(hours=1)
    reads = [
        lambda: list(SeriesReading.query_series("s", AT, end, **options)),
        lambda: list(SeriesReading.latest("s", hours=2, now=end, **options)),
    ]
    if not {"limit", "page_size", "scan_index_forward"} & set(options):
        reads.append(lambda: SeriesReading.count_series("s", AT, end, **options))
    with sent_requests(SeriesReading) as sent:
        for read in reads:
            with pytest.raises(QueryValidationError) as raised:
                read()
            assert raised.value.cause_response_code == "ValidationException"
    assert sent == []
    if backend == "dynalite" and "page_size" in options:  # the server's own refusal
        with pytest.raises(QueryError) as plain:
            list(PlainReading.query("s", page_size=0))
        assert plain.value.cause_response_code == "ValidationException"


@pytest.mark.parametrize(
    ("flag", "plain_answers"),
    [
        (0, {"moto": list(range(10)), "dynalite": "SerializationException"}),
        ("no", {"moto": list(range(10)), "dynalite": list(range(9, -1, -1))}),
    ],
)
def test_a_flag_that_is_no_bool_is_refused_where_the_servers_disagree(
    backend: str, flag: Any, plain_answers: dict[str, Any]
) -> None:
    """The servers read a non-bool ScanIndexForward each their own way (0: ascending on
    moto, a SerializationException on dynalite; 'no': ascending on moto, descending on
    dynalite); the sharded query refuses both on both, before sending."""
    _store("f", 10)
    with sent_requests(RandomEvent) as sent, pytest.raises(QueryValidationError):
        list(RandomEvent.query("f", scan_index_forward=flag))
    assert sent == []
    try:
        plain: Any = [e.timestamp for e in PlainEvent.query("f", scan_index_forward=flag)]
    except QueryError as error:
        plain = error.cause_response_code
    assert plain == plain_answers[backend]


def test_a_scan_filter_on_the_sharded_key_matches_the_plain_models(backend: str) -> None:
    """Filters on the sharded key return, on both servers, the plain model's items."""
    _store("u", 5)
    _store("u#1", 3)
    _store("v", 4)
    for make in (
        lambda m: m.user_id == "u",
        lambda m: m.user_id != "u",
        lambda m: m.user_id.startswith("u#"),
        lambda m: (m.user_id == "v") & (m.event_type == "odd"),
        lambda m: m.user_id.is_in("u", "v"),
    ):
        expected = sorted((e.user_id, e.timestamp) for e in PlainEvent.scan(make(PlainEvent)))
        got = sorted((e.user_id, e.timestamp) for e in RandomEvent.scan(make(RandomEvent)))
        assert got == expected and expected


@pytest.mark.parametrize("filtered", [False, True])
def test_a_scan_page_size_of_zero_is_refused_on_both_servers(backend: str, filtered: bool) -> None:
    """A scan with ``page_size=0`` is refused before sending, with or without a filter on
    the sharded key; dynalite itself refuses Limit=0 with a ValidationException."""
    _store("u", 3)
    condition = RandomEvent.user_id == "u" if filtered else None
    with sent_requests(RandomEvent) as sent, pytest.raises(QueryValidationError):
        list(RandomEvent.scan(condition, page_size=0))
    assert sent == []
    if backend == "dynalite":
        with pytest.raises(ScanError) as plain:
            list(PlainEvent.scan(page_size=0))
        assert plain.value.cause_response_code == "ValidationException"


def test_a_missing_sort_key_is_refused_where_the_servers_refuse_it(backend: str) -> None:
    """A plain model's server answers get(key, None) and a delete of an item whose sort
    key is None with a ValidationException (both servers); the sharded model refuses
    them before sending, naming the sort key."""
    with sent_requests(RandomEvent) as sent, pytest.raises(ShardKeyError, match="range_key"):
        RandomEvent.get("u", None)
    with sent_requests(HashedEvent) as sent_hashed:
        with pytest.raises(ShardKeyError, match="sort key 'timestamp' is None"):
            HashedEvent("u", None).delete()
    assert sent == sent_hashed == []
    with pytest.raises(GetError) as plain:
        PlainEvent.get("u", None)
    assert plain.value.cause_response_code == "ValidationException"
    with pytest.raises(DeleteError) as deleted:
        PlainEvent("u", None).delete()
    assert deleted.value.cause_response_code == "ValidationException"


def _forged(token: str, start: dict[str, Any]) -> str:
    """The cursor with its first started shard's start replaced, checksummed again."""
    data = cursor_payload(token)
    next(s for s in data["shards"] if s["start"] is not None)["start"] = start
    return signed_cursor(data)


@pytest.mark.parametrize(
    "start",
    [
        {"user_id": {"S": "v#1"}, "timestamp": {"N": "5"}},
        {"user_id": {"S": "c#1"}, "timestamp": {"S": "5"}},
        {"user_id": {"S": "c#1"}},
        {"user_id": {"S": "c#1"}, "timestamp": {"N": "2"}},
        {"user_id": {"S": "c#1"}, "timestamp": {"N": "1e400"}},
    ],
)
def test_a_forged_start_key_is_refused_on_both_servers(backend: str, start: Any) -> None:
    """dynalite refuses such an ExclusiveStartKey with a ValidationException, moto reads
    on from some (another partition: no item; below the range: the range) and fails on
    others; the sharded query refuses each before sending, on both."""
    _store("c", 20)
    first = RandomEvent.query("c", RandomEvent.timestamp > 3, limit=6)
    list(first)
    token = first.last_evaluated_key
    assert token is not None
    data = cursor_payload(token)
    shard = next(s["key"] for s in data["shards"] if s["start"] is not None)
    start = {**start, "user_id": {"S": shard}} if start["user_id"]["S"] == "c#1" else start
    with sent_requests(RandomEvent) as sent, pytest.raises(CursorError):
        list(
            RandomEvent.query(
                "c", RandomEvent.timestamp > 3, last_evaluated_key=_forged(token, start)
            )
        )
    assert sent == []
    if backend == "dynalite":  # the server's own refusal of the same start, unsharded
        plain = {**start, "user_id": {"S": start["user_id"]["S"].split("#")[0]}}
        with pytest.raises(QueryError) as refused:
            list(PlainEvent.query("c", PlainEvent.timestamp > 3, last_evaluated_key=plain))
        assert refused.value.cause_response_code == "ValidationException"


def test_a_cursor_resumes_only_its_own_range_on_both_servers(backend: str) -> None:
    """A cursor taken with one range over the same shards is refused with another range,
    before sending (it was accepted, and lost or repeated items); with its own range it
    resumes to exactly the plain model's items."""
    _store("r", 20)
    first = RandomEvent.query("r", RandomEvent.timestamp > 3, limit=5)
    taken = [e.timestamp for e in first]
    token = first.last_evaluated_key
    with sent_requests(RandomEvent) as sent, pytest.raises(CursorError, match="other conditions"):
        list(RandomEvent.query("r", RandomEvent.timestamp > 1, last_evaluated_key=token))
    assert sent == []
    rest = [
        e.timestamp
        for e in RandomEvent.query("r", RandomEvent.timestamp > 3, last_evaluated_key=token)
    ]
    assert taken + rest == [e.timestamp for e in PlainEvent.query("r", PlainEvent.timestamp > 3)]


def test_the_last_hours_of_the_year_9999_are_read_on_both_servers(backend: str) -> None:
    """A reading in the last hour datetime holds is stored and read back in its range."""
    last = datetime(9999, 12, 31, 23, 30, tzinfo=UTC)
    SeriesReading(sensor_id="s", timestamp=last, value=7).save()
    end = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    found = SeriesReading.query_series("s", end - timedelta(hours=5), end)
    assert [(r.timestamp, r.value) for r in found] == [(last, 7)]


class Reading(ShardedModel):
    """The time-series guide's pattern 2: the shard is a hash of the event id."""

    class Meta:
        table_name = "pattern-two"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(hash_key=True, strategy=HashShards(10, on=["event_id"]))
    ts = NumberAttribute(range_key=True)
    event_id = UnicodeAttribute()


class SampleOrder(ShardedModel):
    """The write-sharding sample's ``<customer>.<int(order id) % 5>``."""

    class Meta:
        table_name = "sample-orders"
        region = "us-east-1"

    customer = ShardedKeyAttribute(
        hash_key=True,
        strategy=HashShards(5, on=["order_id"], algorithm=lambda values: int(values[0])),
        separator=".",
    )
    order_id = NumberAttribute(range_key=True)


@pytest.fixture
def own_tables(backend: str, request: pytest.FixtureRequest) -> Iterator[None]:
    """Reading's and SampleOrder's tables on the backend's server, for this test."""
    url = request.getfixturevalue(f"{backend}_url")
    models = [Reading, SampleOrder]
    bind_models(models, host=url, **CREDENTIALS)
    drop_tables(models)
    create_tables(models)
    try:
        yield
    finally:
        drop_tables(models)
        unbind(models)


@pytest.mark.usefixtures("own_tables")
def test_a_hinted_get_reads_one_shard_on_both_servers() -> None:
    """get(..., shard_by=...) is one GetItem; without it, one BatchGetItem of 10 keys."""
    for n in range(6):
        Reading(sensor="s", ts=n, event_id=f"e{n}").save()
    with sent_requests(Reading) as sent:
        assert Reading.get("s", 4, shard_by={"event_id": "e4"}).event_id == "e4"
        keys = [("s", n, {"event_id": f"e{n}"}) for n in range(6)]
        assert sorted(r.ts for r in Reading.batch_get(keys)) == list(range(6))
    assert sent == ["GetItem", "BatchGetItem"]
    Reading("s", 4).delete(shard_by={"event_id": "e4"})
    assert sorted(r.ts for r in Reading.query("s")) == [0, 1, 2, 3, 5]


@pytest.mark.usefixtures("own_tables")
def test_a_shard_function_layout_reads_and_writes_unchanged_on_both_servers() -> None:
    """Keys written as ``<customer>.<order % 5>`` read back by key; the model writes there."""
    SampleOrder._get_connection().put_item("acme.2", "12")  # as the sample writes it
    assert SampleOrder.get("acme", 12).order_id == 12
    SampleOrder(customer="acme", order_id=33).save()
    assert SampleOrder._get_connection().get_item("acme.3", "33")["Item"]["order_id"] == {"N": "33"}
