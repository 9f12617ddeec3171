"""The merged query: order, limits, cursors, costs, errors and threads."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from shardmodel import CursorError, PhysicalKey, RandomShards, UnsupportedOperationError
from tests.models import DailyEvent, HashedEvent, Photo, PlainEvent, RandomEvent, SensorReading

pytestmark = pytest.mark.usefixtures("tables")
UTC = timezone.utc


def load(n: int, key: str = "q") -> None:
    with RandomEvent.batch_write() as batch:
        for ts in range(n):
            batch.save(
                RandomEvent(user_id=key, timestamp=ts, event_type="odd" if ts % 2 else "even")
            )


def stray_threads(before: set[threading.Thread]) -> list[str]:
    """Threads started since ``before`` other than the shared, idle query workers."""
    return [
        t.name
        for t in threading.enumerate()
        if t not in before and not t.name.startswith("shardmodel-query")
    ]


def timestamps(results: Any) -> list[int]:
    return [e.timestamp for e in results]


def test_merged_order_both_directions_with_tiny_pages() -> None:
    """With 1-item pages every shard is paged many times; the order is still exact."""
    load(60)
    assert timestamps(RandomEvent.query("q", page_size=1)) == list(range(60))
    down = RandomEvent.query("q", scan_index_forward=False, page_size=2)
    assert timestamps(down) == list(range(59, -1, -1))


def test_limit_is_global_and_exact() -> None:
    """limit=n yields the first n items of the merged order, however pages fall."""
    load(50)
    for limit in (1, 7, 49, 50, 80):
        got = timestamps(RandomEvent.query("q", scan_index_forward=False, limit=limit))
        assert got == list(range(49, 49 - min(limit, 50), -1))


def test_latest_n_reads_at_most_twice_what_it_returns() -> None:
    """A latest-100 read over 10 shards asks DynamoDB for at most 2x the items returned."""
    load(400)
    results = RandomEvent.query("q", scan_index_forward=False, limit=100)
    assert timestamps(results) == list(range(399, 299, -1))
    assert results.items_read <= 200  # type: ignore[attr-defined]
    assert results.total_count == 100  # type: ignore[attr-defined]


def test_conditions_filters_and_counts() -> None:
    """Range and filter conditions apply per shard; count() sums the shards."""
    load(40)
    got = RandomEvent.query(
        "q", RandomEvent.timestamp.between(10, 20), RandomEvent.event_type == "odd"
    )
    assert timestamps(got) == [11, 13, 15, 17, 19]
    assert RandomEvent.count("q") == 40
    assert RandomEvent.count("q", RandomEvent.timestamp >= 30) == 10
    assert RandomEvent.count("q", filter_condition=RandomEvent.event_type == "odd") == 20


def test_cursor_resumes_mid_page_without_loss_or_repeat() -> None:
    """Stop anywhere, pass last_evaluated_key back: the rest comes, nothing twice."""
    load(45)
    for stop in (0, 1, 13, 44):
        first = RandomEvent.query("q", page_size=4)
        seen = [next(first).timestamp for _ in range(stop)]
        cursor = first.last_evaluated_key  # type: ignore[attr-defined]
        assert isinstance(cursor, str)
        rest = timestamps(RandomEvent.query("q", page_size=4, last_evaluated_key=cursor))
        assert seen + rest == list(range(45))


def test_cursor_after_a_limit_continues_the_order() -> None:
    """Pages of limit=10 walked by cursor give the whole key once, in order."""
    load(35)
    pages, cursor = [], None
    while True:
        page = RandomEvent.query("q", scan_index_forward=False, limit=10, last_evaluated_key=cursor)
        pages.append(timestamps(page))
        cursor = page.last_evaluated_key  # type: ignore[attr-defined]
        if cursor is None:
            break
    assert [t for p in pages for t in p] == list(range(34, -1, -1))
    assert [len(p) for p in pages][:3] == [10, 10, 10]


def test_exhausted_query_has_no_cursor() -> None:
    """Like PynamoDB, a query read to the end has last_evaluated_key None."""
    load(5)
    results = RandomEvent.query("q")
    assert len(list(results)) == 5
    assert results.last_evaluated_key is None  # type: ignore[attr-defined]


def test_bad_cursors_are_refused_clearly() -> None:
    """Tampered, truncated, foreign and other-key cursors raise CursorError."""
    load(20)
    results = RandomEvent.query("q", limit=5)
    list(results)
    cursor: str = results.last_evaluated_key  # type: ignore[attr-defined]
    body, checksum = cursor.split(".")
    tampered = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1] + "." + checksum
    for bad, message in [
        (tampered, "altered or truncated"),
        (cursor[: len(cursor) // 2], "not a shardmodel cursor"),
        (cursor[:-3], "altered or truncated"),
        ({"user_id": {"S": "q#1"}}, "not a shardmodel cursor"),
    ]:
        with pytest.raises(CursorError, match=message):
            RandomEvent.query("q", last_evaluated_key=bad)
    with pytest.raises(CursorError, match="another query"):
        RandomEvent.query("other", last_evaluated_key=cursor)
    with pytest.raises(CursorError, match="another query"):
        RandomEvent.query("q", scan_index_forward=False, last_evaluated_key=cursor)
    HashedEvent(user_id="q", timestamp=1).save()
    with pytest.raises(CursorError, match="another query"):
        HashedEvent.query("q", last_evaluated_key=cursor)


def test_an_error_in_one_shard_stops_promptly_and_leaves_no_threads() -> None:
    """One failing shard raises its error; the other shards' work is cancelled.

    "Promptly" is counted in requests, not seconds: reading 400 items in pages of 5
    takes at least 80 Query requests, and the error reaches the caller after no more
    than the first pages of the other shards and a prefetched page or two (the
    query's 10 in-flight slots), far fewer than half of them; after it, no request
    is sent. Worker threads are a shared pool: no new ones appear and none keeps working.
    """
    load(400)
    before = set(threading.enumerate())
    events = RandomEvent._get_connection().connection.client.meta.events
    sent: list[str] = []

    class Boom(RuntimeError):
        pass

    def fail_shard_3(params: dict[str, Any], **_: Any) -> None:
        values = params.get("ExpressionAttributeValues", {})
        if any(v == {"S": "q#3"} for v in values.values()):
            raise Boom("shard 3 is down")

    def record(event_name: str, **_: Any) -> None:
        sent.append(event_name)

    events.register("before-parameter-build.dynamodb.Query", fail_shard_3)
    events.register("before-send.dynamodb.Query", record)
    try:
        failing = RandomEvent.query("q", page_size=5)
        with pytest.raises(Boom):
            list(failing)
        at_error = len(sent)
        assert at_error < 40  # the whole read: 80 or more
        assert failing.outstanding == 0  # type: ignore[attr-defined]
        assert stray_threads(before) == []
        assert len(sent) == at_error  # nothing sent once the error was raised
    finally:
        events.unregister("before-parameter-build.dynamodb.Query", fail_shard_3)
        events.unregister("before-send.dynamodb.Query", record)


def test_closing_early_releases_threads() -> None:
    """close() after a few items cancels pending pages; no request is left running."""
    load(100)
    before = set(threading.enumerate())
    results = RandomEvent.query("q", page_size=3)
    assert [next(results).timestamp for _ in range(3)] == [0, 1, 2]
    assert results.outstanding > 0  # type: ignore[attr-defined]
    results.close()  # type: ignore[attr-defined]
    assert results.outstanding == 0  # type: ignore[attr-defined]
    assert stray_threads(before) == []
    with pytest.raises(StopIteration):
        next(results)


def test_time_buckets_read_only_the_buckets_the_condition_covers() -> None:
    """A 3-day range over 5 random shards per day reads 15 shards, concatenated by day."""
    start = datetime(2024, 1, 10, tzinfo=UTC)
    with DailyEvent.batch_write() as batch:
        for hour in range(0, 24 * 8, 5):
            batch.save(DailyEvent(tenant_id="t", created=start + timedelta(hours=hour)))
    lower, upper = start + timedelta(days=2), start + timedelta(days=4, hours=23)
    results = DailyEvent.query("t", DailyEvent.created.between(lower, upper))
    got = [e.created for e in results]
    expected = [start + timedelta(hours=h) for h in range(0, 24 * 8, 5)]
    assert got == [t for t in expected if lower <= t <= upper]
    assert results.shard_count == 15  # type: ignore[attr-defined]
    newest = DailyEvent.query(
        "t",
        DailyEvent.created <= upper,
        scan_index_forward=False,
        time_range=(lower, upper),
        limit=3,
    )
    assert [e.created for e in newest] == [t for t in expected if lower <= t <= upper][::-1][:3]


def test_unbounded_time_bucket_query_says_how_to_bound_it() -> None:
    """Without a time range the buckets are unknown: the error names the fix."""
    with pytest.raises(UnsupportedOperationError, match=r"between\(start, end\)"):
        DailyEvent.query("t")
    with pytest.raises(UnsupportedOperationError, match="time_range"):
        DailyEvent.count("t", DailyEvent.created > datetime(2024, 1, 1, tzinfo=UTC))


def test_hash_shards_fixed_by_the_query_read_one_shard() -> None:
    """HashShards(on=[sort key]) with an equality condition reads exactly one shard."""
    for ts in range(20):
        HashedEvent(user_id="h", timestamp=ts).save()
    one = HashedEvent.query("h", HashedEvent.timestamp == 7)
    assert timestamps(one) == [7]
    assert one.shard_count == 1  # type: ignore[attr-defined]
    every = HashedEvent.query("h")
    assert timestamps(every) == list(range(20))
    assert every.shard_count == 8  # type: ignore[attr-defined]


def test_physical_key_queries_one_shard() -> None:
    """A PhysicalKey hash key queries exactly that shard."""
    SensorReading(hour="h", sk="a", value=1).save()
    key = SensorReading(hour="h", sk="a").get_physical_key()
    assert [r.sk for r in SensorReading.query(PhysicalKey(str(key)))] == ["a"]


def test_scan_segments_return_logical_keys() -> None:
    """Parallel scan segments together return every item once, logically keyed."""
    load(30, key="s")
    seen = [
        (e.user_id, e.timestamp)
        for segment in range(3)
        for e in RandomEvent.scan(segment=segment, total_segments=3)
    ]
    assert sorted(seen) == [("s", ts) for ts in range(30)]


def test_capacity_and_counts_are_reported() -> None:
    """The iterator sums consumed capacity and counts requests and items read."""
    load(30)
    results = RandomEvent.query("q", consistent_read=True)
    assert len(list(results)) == 30
    assert results.requests >= 10  # type: ignore[attr-defined]
    assert results.items_read == 30  # type: ignore[attr-defined]
    assert results.consumed_capacity > 0  # type: ignore[attr-defined]


def test_rate_limit_and_bad_parallelism_are_refused() -> None:
    """Options a merged query cannot honour are refused with the alternative."""
    with pytest.raises(UnsupportedOperationError, match="parallelism"):
        RandomEvent.query("q", rate_limit=5)
    with pytest.raises(ValueError, match="parallelism"):
        RandomEvent.query("q", parallelism=0)


def test_plain_models_are_untouched() -> None:
    """A plain PynamoDB model keeps PynamoDB's query."""
    PlainEvent(user_id="p", timestamp=1).save()
    assert [e.timestamp for e in PlainEvent.query("p")] == [1]


def test_connection_pool_fits_the_fan_out() -> None:
    """A model's pool grows to its widest fan-out (up to 64) unless Meta sets it."""
    from pynamodb.attributes import NumberAttribute

    from shardmodel import ShardedKeyAttribute, ShardedModel

    class Wide(ShardedModel):
        class Meta:
            table_name = "wide"

        pk = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(16))
        ts = NumberAttribute(range_key=True)

    class Chosen(ShardedModel):
        class Meta:
            table_name = "chosen"
            max_pool_connections = 4

        pk = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(200))

    assert Wide.Meta.max_pool_connections == 16
    assert Chosen.Meta.max_pool_connections == 4
    assert Photo.Meta.max_pool_connections == 20
    assert PlainEvent.Meta.max_pool_connections == 10


def test_sort_keys_follow_dynamodb_order() -> None:
    """Numbers order numerically (ints, decimals, exponents, 38 digits); strings by bytes.

    The reference order is exact (Decimal): pairs a float cannot tell apart (equal in
    their first 17 digits) must keep their order, negative and in exponent form too.
    """
    from decimal import Decimal

    from pynamodb.attributes import NumberAttribute, UnicodeAttribute

    from shardmodel.engine.merge import dynamodb_sort_key

    number = NumberAttribute(attr_name="n")
    values = ["5", "-3", "10", "2.5", "1e3", "007", "-0.5", "1" * 38, "99999999999999999999.5"]
    values += ["12345678901234567890.2", "12345678901234567890.1", "1" * 37 + "2"]
    values += ["-12345678901234567890.2", "-1.23456789012345678901E+19", "9" * 17 + "8E-40"]
    values += ["9" * 17 + "7E-40", "-" + "1" * 37 + "0", "-" + "1" * 37 + "1"]
    assert len({Decimal(v) for v in values}) == len(values)  # one order only
    key = dynamodb_sort_key(number)
    ordered = sorted(values, key=lambda v: key({"n": {"N": v}}))
    assert ordered == sorted(values, key=Decimal)
    assert sorted(values, key=float) != sorted(values, key=Decimal)  # floats would not do
    text = dynamodb_sort_key(UnicodeAttribute(attr_name="s"))
    words = ["z", "é", "a", "\U0001f600", "\uffff"]
    assert sorted(words, key=lambda w: text({"s": {"S": w}})) == sorted(
        words, key=lambda w: w.encode("utf-8")
    )
