"""The hybrid time-bucket layout: the guides' hand-written code and the model agree."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import boto3
import pytest
from boto3.dynamodb.conditions import Key
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import (
    BucketKeyAttribute,
    CursorError,
    FanOutLimitError,
    HashShards,
    RandomShards,
    SeriesKeyAttribute,
    SeriesTimeAttribute,
    ShardConfigurationError,
    ShardKeyError,
    TimeBuckets,
    TimeSeriesModel,
)
from shardmodel.errors import QueryValidationError
from shardmodel.timeseries import series_time_text
from tests.models import SeriesReading
from tests.support import cursor_payload, raw_items, sent_requests, signed_cursor

pytestmark = pytest.mark.usefixtures("tables")

UTC = timezone.utc
SENSOR = "sensor-alpha-001"
AT = datetime(2023, 10, 27, 15, 4, 5, 123456, tzinfo=UTC)


def guide_time(ts: Any) -> datetime:
    """The guide's code for the time it is given: a datetime, an ISO string or epoch seconds.

    Epoch seconds become whole microseconds by ``int(ts * 1_000_000)``: truncated.
    """
    if isinstance(ts, datetime):
        return ts.astimezone(timezone.utc)
    if isinstance(ts, str):
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(timezone.utc)
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=int(ts * 1_000_000))


class GuideTimeSeriesManager:
    """The guides' hand-written hybrid layout, on boto3, written without shardmodel.

    PK = "{md5(sensor_id) % N}#{YYYY-MM-DDTHH}" (the hour in UTC),
    SK = "{sensor_id}#{UTC time with microseconds}Z".
    """

    def __init__(self, table_name: str, num_shards: int = 10) -> None:
        resource = boto3.resource("dynamodb", region_name="us-east-1")
        self.table = resource.Table(table_name)
        self.num_shards = num_shards

    def _shard(self, sensor_id: str) -> int:
        return int(hashlib.md5(sensor_id.encode("utf-8")).hexdigest(), 16) % self.num_shards

    def put_reading(self, sensor_id: str, timestamp: Any, value: Decimal) -> None:
        ts = guide_time(timestamp)
        self.table.put_item(
            Item={
                "PK": f"{self._shard(sensor_id)}#{ts.strftime('%Y-%m-%dT%H')}",
                "SK": f"{sensor_id}#{ts.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}",
                "value": value,
            }
        )

    def get_last_hours(self, sensor_id: str, hours: int, now: datetime) -> list[dict[str, Any]]:
        """Every reading of the last ``hours`` hour buckets, one query per bucket."""
        items: list[dict[str, Any]] = []
        for back in reversed(range(hours)):
            bucket = (now - timedelta(hours=back)).astimezone(timezone.utc)
            response = self.table.query(
                KeyConditionExpression=Key("PK").eq(
                    f"{self._shard(sensor_id)}#{bucket.strftime('%Y-%m-%dT%H')}"
                )
                & Key("SK").begins_with(f"{sensor_id}#")
            )
            items.extend(response["Items"])
        return items


@pytest.fixture
def guide_table() -> Iterator[str]:
    """A second table of SeriesReading's schema, written only by the guide's code."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    client.create_table(
        TableName="guide-readings",
        KeySchema=[
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    yield "guide-readings"
    client.delete_table(TableName="guide-readings")


#: (sensor, the time as the model is given it, the same time as a datetime, value)
READINGS: list[tuple[str, Any, datetime, str]] = [
    (SENSOR, AT, AT, "21.5"),
    (SENSOR, "2023-10-27T17:09:00.5+02:00", datetime(2023, 10, 27, 15, 9, 0, 500000, UTC), "22"),
    (SENSOR, 1698422400, datetime(2023, 10, 27, 16, 0, tzinfo=UTC), "-3.25"),
    (
        "sensor-beta-7",
        "2023-10-27T10:59:59.999999-05:00",
        AT.replace(minute=59, second=59, microsecond=999999),
        "1",
    ),
    ("sensor-beta-7", AT - timedelta(days=400), AT - timedelta(days=400), "0.001"),
    (
        "ünïcode-sensor",
        AT + timedelta(hours=1, minutes=30),
        AT + timedelta(hours=1, minutes=30),
        "7",
    ),
]


def number(text: str) -> int | float:
    """The python number the model is given for the guide's Decimal (same DynamoDB text)."""
    return int(text) if text.lstrip("-").isdigit() else float(text)


def by_key(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(items, key=lambda item: (item["PK"]["S"], item["SK"]["S"]))


def test_the_guides_code_and_the_model_store_byte_identical_items(guide_table: str) -> None:
    """Same readings, two writers: every stored item is the same, attribute for attribute."""
    guide = GuideTimeSeriesManager(guide_table)
    for sensor, given, moment, value in READINGS:
        guide.put_reading(sensor, moment, Decimal(value))
        SeriesReading(sensor_id=sensor, timestamp=given, value=number(value)).save()
    ours = by_key(raw_items(SeriesReading))
    client = boto3.client("dynamodb", region_name="us-east-1")
    theirs = by_key(client.scan(TableName=guide_table)["Items"])
    assert ours == theirs
    assert len(ours) == len(READINGS)
    first = next(
        item for item in ours if item["SK"]["S"] == f"{SENSOR}#2023-10-27T15:04:05.123456Z"
    )
    assert first == {
        "PK": {"S": "7#2023-10-27T15"},
        "SK": {"S": "sensor-alpha-001#2023-10-27T15:04:05.123456Z"},
        "value": {"N": "21.5"},
    }


def test_a_table_written_by_the_guide_reads_unchanged() -> None:
    """Items put by the guide's code come back with sensor, UTC time and value."""
    guide = GuideTimeSeriesManager("series-readings")
    for sensor, _, moment, value in READINGS:
        guide.put_reading(sensor, moment, Decimal(value))
    got = SeriesReading.query_series(SENSOR, AT - timedelta(hours=1), AT + timedelta(hours=2))
    assert [(r.sensor_id, r.timestamp, r.value) for r in got] == [
        (SENSOR, AT, 21.5),
        (SENSOR, datetime(2023, 10, 27, 15, 9, 0, 500000, UTC), 22),
        (SENSOR, datetime(2023, 10, 27, 16, 0, tzinfo=UTC), -3.25),
    ]
    loaded = SeriesReading.get("7#2023-10-27T15", f"{SENSOR}#2023-10-27T15:04:05.123456Z")
    assert (loaded.sensor_id, loaded.timestamp) == (SENSOR, AT)


def guide_inputs() -> list[Any]:
    """2,000 ``time.time()`` floats of a day, and ints, Decimals, ISO strings and datetimes.

    Drawn from a fixed seed: about four in ten of the floats end within half a
    microsecond below the next one, where rounding and the guide's truncation part.
    """
    draw = random.Random(45)
    start = 1_795_900_000.0
    floats = [start + draw.random() * 86_400 for _ in range(2_000)]
    return [
        *floats,
        *(int(f) for f in floats[:50]),
        *(Decimal(repr(f)) for f in floats[:50]),
        Decimal("1698419045.1234569"),
        "2023-10-27T15:04:05.1234569Z",
        "2023-10-27T17:04:05.999999999+02:00",
        AT,
        datetime(2023, 10, 27, 17, 4, 5, 999999, timezone(timedelta(hours=2))),
    ]


def test_series_keys_are_byte_identical_to_the_guides_for_every_kind_of_time() -> None:
    """The sort key of a float, int, Decimal, ISO or datetime time is the guide's, to the byte."""
    for given in guide_inputs():
        guide = guide_time(given)
        keys = SeriesReading(sensor_id=SENSOR, timestamp=given).serialize()
        assert keys["SK"]["S"] == f"{SENSOR}#{guide.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}", given
        assert keys["PK"]["S"] == f"7#{guide.strftime('%Y-%m-%dT%H')}", given


def test_a_guide_written_reading_is_read_by_the_float_the_guide_was_given(
    guide_table: str,
) -> None:
    """get_reading(sensor, t) finds what the guide put at t; a save of it adds no second item."""
    floats = [f for f in guide_inputs()[:2_000] if f * 1_000_000 % 1 >= 0.5][:40]
    guide = GuideTimeSeriesManager("series-readings")
    for n, when in enumerate(floats):
        guide.put_reading(SENSOR, when, Decimal(n))
    for n, when in enumerate(floats):
        found = SeriesReading.get_reading(SENSOR, when)
        assert found.value == n
        SeriesReading(sensor_id=SENSOR, timestamp=when, value=n).save()
    assert len(raw_items(SeriesReading)) == len(floats)


class QueryLog:
    """Every Query request the model's client sends: (partition key, sort key condition)."""

    def __init__(self) -> None:
        self.partitions: list[str] = []
        client = SeriesReading._get_connection().connection.client
        client.meta.events.register("provide-client-params.dynamodb.Query", self.record)

    def record(self, params: dict[str, Any], **_: Any) -> None:
        self.partitions.append(params["ExpressionAttributeValues"][":0"]["S"])


def test_the_last_three_hours_read_exactly_three_partitions() -> None:
    """latest(sensor, hours=3) at 15:20: buckets 13, 14 and 15 of the sensor's shard, once each."""
    for minutes in range(0, 6 * 60, 7):  # 10:00 .. 15:53, every 7 minutes
        moment = datetime(2023, 10, 27, 10, tzinfo=UTC) + timedelta(minutes=minutes)
        SeriesReading(sensor_id=SENSOR, timestamp=moment, value=minutes).save()
        SeriesReading(sensor_id="sensor-beta-7", timestamp=moment, value=-minutes).save()
    log = QueryLog()
    now = datetime(2023, 10, 27, 15, 20, tzinfo=UTC)
    readings = SeriesReading.latest(SENSOR, hours=3, now=now)
    got = [(r.sensor_id, r.timestamp) for r in readings]
    assert sorted(log.partitions) == ["7#2023-10-27T13", "7#2023-10-27T14", "7#2023-10-27T15"]
    assert readings.requests == 3
    expected = [
        datetime(2023, 10, 27, 10, tzinfo=UTC) + timedelta(minutes=m)
        for m in range(0, 6 * 60, 7)
        if datetime(2023, 10, 27, 13, tzinfo=UTC)
        <= datetime(2023, 10, 27, 10, tzinfo=UTC) + timedelta(minutes=m)
        <= now
    ]
    assert got == [(SENSOR, t) for t in expected]
    # the guide's loop reads the same three partitions, whole: after 15:20 too
    guide = GuideTimeSeriesManager("series-readings").get_last_hours(SENSOR, 3, now)
    ours = [f"{SENSOR}#{series_time_text(t)}" for t in expected]
    assert [item["SK"] for item in guide if item["SK"] <= f"{SENSOR}#2023-10-27T15:20"] == ours


def test_get_reading_reads_one_item_by_entity_and_time() -> None:
    SeriesReading(sensor_id=SENSOR, timestamp=AT, value=5).save()
    found = SeriesReading.get_reading(SENSOR, "2023-10-27T17:04:05.123456+02:00")
    assert (found.sensor_id, found.timestamp, found.value) == (SENSOR, AT, 5)
    with pytest.raises(SeriesReading.DoesNotExist):
        SeriesReading.get_reading(SENSOR, AT + timedelta(microseconds=1))


def test_entities_at_the_sort_key_limit() -> None:
    """The sort key may hold 1,024 bytes: entity + '#' + 27 bytes of time."""
    widest = "é" * 498  # 996 bytes
    SeriesReading(sensor_id=widest, timestamp=AT, value=1).save()
    assert [r.sensor_id for r in SeriesReading.query_series(widest, AT, AT)] == [widest]
    with pytest.raises(ShardKeyError, match="1024-byte"):
        SeriesReading(sensor_id=widest + "x", timestamp=AT, value=1).save()


def test_iso_times_with_offsets_are_stored_in_utc_and_the_instance_shows_utc() -> None:
    reading = SeriesReading(sensor_id=SENSOR, timestamp="2023-10-28T01:30:00+10:30", value=1)
    reading.save()
    assert reading.timestamp == datetime(2023, 10, 27, 15, 0, tzinfo=UTC)
    assert (reading.pk, reading.sk) == ("7#2023-10-27T15", f"{SENSOR}#2023-10-27T15:00:00.000000Z")
    with pytest.raises(ShardKeyError, match="no offset"):
        SeriesReading(sensor_id=SENSOR, timestamp="2023-10-27T15:00:00", value=1).save()
    with pytest.raises(ShardKeyError, match="naive datetime"):
        SeriesReading(sensor_id=SENSOR, timestamp=datetime(2023, 10, 27), value=1).save()
    assert len(raw_items(SeriesReading)) == 1


def test_limits_directions_and_cursors_over_buckets() -> None:
    moments = [AT + timedelta(minutes=13 * n) for n in range(40)]  # about 9 hours
    for n, moment in enumerate(moments):
        SeriesReading(sensor_id=SENSOR, timestamp=moment, value=n).save()
    start, end = moments[3], moments[35]
    wanted = moments[3:36]
    for forward in (True, False):
        order = wanted if forward else wanted[::-1]
        limited = SeriesReading.query_series(
            SENSOR, start, end, scan_index_forward=forward, limit=5
        )
        assert [r.timestamp for r in limited] == order[:5]
        seen: list[datetime] = []
        cursor = None
        while True:
            page = SeriesReading.query_series(
                SENSOR,
                start,
                end,
                scan_index_forward=forward,
                limit=4,
                last_evaluated_key=cursor,
                parallelism=2,
            )
            seen.extend(r.timestamp for r in page)
            cursor = page.last_evaluated_key
            if cursor is None:
                break
        assert seen == order


def test_count_series_counts_every_bucket_once() -> None:
    for n in range(30):
        SeriesReading(sensor_id=SENSOR, timestamp=AT + timedelta(minutes=17 * n), value=n).save()
        SeriesReading(
            sensor_id="sensor-beta-7", timestamp=AT + timedelta(minutes=n), value=n
        ).save()
    log = QueryLog()
    end = AT + timedelta(minutes=17 * 20)
    assert SeriesReading.count_series(SENSOR, AT, end) == 21
    assert len(log.partitions) == 6  # 15:04 .. 20:44: six hours, one partition each
    assert (
        SeriesReading.count_series(SENSOR, AT, end, filter_condition=SeriesReading.value < 5) == 5
    )
    with pytest.raises(FanOutLimitError):
        SeriesReading.count_series(SENSOR, AT, end, max_requests=5)


def test_a_cursor_resumes_only_its_own_sensor_and_direction() -> None:
    for n in range(5):
        SeriesReading(sensor_id=SENSOR, timestamp=AT + timedelta(minutes=n), value=n).save()
    page = SeriesReading.query_series(SENSOR, AT, AT + timedelta(hours=1), limit=2)
    assert len(list(page)) == 2
    with pytest.raises(CursorError, match="another query"):
        SeriesReading.query_series(
            "sensor-beta-7", AT, AT + timedelta(hours=1), last_evaluated_key=page.last_evaluated_key
        )


def test_query_series_bound_counts_every_hour_of_the_range() -> None:
    """48 hours from 15:04 touch 49 hourly partitions: a bound of 48 refuses, 49 admits.

    Every read path's check before its first request: tests/unit/test_request_bound.py.
    """
    log = QueryLog()
    with pytest.raises(FanOutLimitError, match="49 partitions"):
        SeriesReading.query_series(SENSOR, AT, AT + timedelta(hours=48), max_requests=48)
    assert log.partitions == []
    assert (
        list(SeriesReading.query_series(SENSOR, AT, AT + timedelta(hours=48), max_requests=49))
        == []
    )


@pytest.mark.parametrize(
    ("entity", "match"),
    [("a#b", "separator"), ("", "empty"), (7, "must be a str"), ("x" * 1000, "1024-byte")],
)
def test_bad_entities_are_refused_before_anything_is_sent(entity: Any, match: str) -> None:
    log = QueryLog()
    with pytest.raises(ShardKeyError, match=match):
        SeriesReading(sensor_id=entity, timestamp=AT, value=1).save()
    with pytest.raises(ShardKeyError, match=match):
        list(SeriesReading.query_series(entity, AT, AT))
    assert log.partitions == [] and raw_items(SeriesReading) == []


def test_bad_ranges_and_filters_are_refused() -> None:
    with pytest.raises(ShardKeyError, match="after end"):
        SeriesReading.query_series(SENSOR, AT, AT - timedelta(seconds=1))
    with pytest.raises(ShardKeyError, match="stored in the sort key"):
        SeriesReading.query_series(
            SENSOR, AT, AT, filter_condition=SeriesReading.sensor_id == SENSOR
        )
    with pytest.raises(ShardKeyError, match="whole number of hours"):
        SeriesReading.latest(SENSOR, hours=0)
    with pytest.raises(ShardKeyError, match="pass its now= too"):
        SeriesReading.latest(SENSOR, hours=2, last_evaluated_key="x.y")


def test_filters_projections_updates_and_deletes() -> None:
    for n in range(6):
        SeriesReading(sensor_id=SENSOR, timestamp=AT + timedelta(minutes=n), value=n).save()
    odd = SeriesReading.query_series(
        SENSOR, AT, AT + timedelta(hours=1), filter_condition=SeriesReading.value > 2, limit=2
    )
    assert [r.value for r in odd] == [3, 4]
    slim = list(SeriesReading.query_series(SENSOR, AT, AT, attributes_to_get=["timestamp"]))
    assert [(r.sensor_id, r.timestamp, r.value) for r in slim] == [(SENSOR, AT, None)]
    reading = SeriesReading.get("7#2023-10-27T15", f"{SENSOR}#2023-10-27T15:04:05.123456Z")
    reading.update(actions=[SeriesReading.value.set(99)])
    reading.refresh()
    assert (reading.value, reading.timestamp) == (99, AT)
    with pytest.raises(ShardKeyError, match="part of the keys"):
        reading.update(actions=[SeriesReading.sensor_id.set("other")])
    reading.delete()
    assert len(raw_items(SeriesReading)) == 5


def declare(**keys: Any) -> type[TimeSeriesModel]:
    namespace: dict[str, Any] = {
        "Meta": type("Meta", (), {"table_name": "t", "region": "us-east-1"}),
        "sensor_id": UnicodeAttribute(),
        "timestamp": SeriesTimeAttribute(),
        "value": NumberAttribute(null=True),
        **keys,
    }
    return type("Bad", (TimeSeriesModel,), namespace)


def test_bad_declarations_are_refused_at_definition() -> None:
    sk = SeriesKeyAttribute(entity="sensor_id", time="timestamp", attr_name="SK")
    with pytest.raises(ShardConfigurationError, match="follow from the entity"):
        declare(pk=BucketKeyAttribute(strategy=RandomShards(4)), sk=sk)
    with pytest.raises(ShardConfigurationError, match="follow from the entity"):
        declare(pk=BucketKeyAttribute(strategy=HashShards(4, on="value")), sk=sk)
    with pytest.raises(ShardConfigurationError, match="time text holds"):
        declare(
            pk=BucketKeyAttribute(strategy=TimeBuckets("timestamp", "hour")),
            sk=SeriesKeyAttribute(entity="sensor_id", time="timestamp", separator="-"),
        )
    with pytest.raises(ShardConfigurationError, match="SeriesTimeAttribute"):
        declare(
            pk=BucketKeyAttribute(strategy=TimeBuckets("timestamp", "hour")),
            sk=SeriesKeyAttribute(entity="sensor_id", time="value"),
        )
    with pytest.raises(ShardConfigurationError, match="one BucketKeyAttribute"):
        declare(sk=sk)


# -- the edges: what Model.query refuses, series refuse too ----------------------------


def test_a_twelve_hour_bucket_format_is_refused_at_definition() -> None:
    """``%Y-%m-%dT%I`` labels 01:00 and 13:00 alike: a range over both read the partition
    twice (9 readings for 5). The class is refused when defined."""
    sk = SeriesKeyAttribute(entity="sensor_id", time="timestamp", attr_name="SK")
    with pytest.raises(ShardConfigurationError, match="12-hour clock: use %H"):
        declare(
            pk=BucketKeyAttribute(
                strategy=[HashShards(4, on="sensor_id"), TimeBuckets("timestamp", "%Y-%m-%dT%I")]
            ),
            sk=sk,
        )


WINDOW = (AT, AT + timedelta(hours=2))


def _series_reads(**options: Any) -> list[Callable[[], Any]]:
    """query_series and latest with ``options``, each run to its end."""
    return [
        lambda: list(SeriesReading.query_series(SENSOR, *WINDOW, **options)),
        lambda: list(SeriesReading.latest(SENSOR, hours=2, now=WINDOW[1], **options)),
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"limit": -1}, "Value -1 at 'limit' failed to satisfy constraint: Member must have"),
        ({"limit": 2.5}, "Value 2.5 at 'limit' failed to satisfy constraint: Member must be an"),
        ({"limit": True}, "Value True at 'limit' failed"),
        ({"limit": "3"}, "Value '3' at 'limit' failed to satisfy constraint: Member must be an "),
        ({"page_size": 0}, "Value 0 at 'page_size' failed to satisfy constraint: Member must have"),
        ({"page_size": 2.0}, "Value 2.0 at 'page_size' failed"),
        ({"scan_index_forward": "no"}, "Value 'no' at 'scan_index_forward' failed"),
        ({"scan_index_forward": 0}, "Value 0 at 'scan_index_forward' failed"),
        ({"consistent_read": "yes"}, "Value 'yes' at 'consistent_read' failed"),
        (
            {"filter_condition": SeriesReading.pk == "7#2023-10-27T15"},
            "non-primary key attributes: Primary key attribute: PK; SeriesReading.query_series",
        ),
        ({"filter_condition": SeriesReading.sk.startswith("s")}, "Primary key attribute: SK"),
    ],
)
def test_series_reads_refuse_what_a_query_refuses_before_sending(
    options: dict[str, Any], message: str
) -> None:
    """Limits and page sizes that are not positive ints, flags that are not bools and
    filters on the keys are refused as Model.query refuses them (DynamoDB's
    ValidationException, as a QueryValidationError), before any request: no more
    ``limit=-1`` returning [], ``limit=2.5`` three items or ``page_size=0`` an IndexError."""
    for n in range(3):
        SeriesReading(sensor_id=SENSOR, timestamp=AT + timedelta(minutes=n), value=n).save()
    with sent_requests(SeriesReading) as sent:
        for read in _series_reads(**options):
            with pytest.raises(QueryValidationError) as raised:
                read()
            assert message in str(raised.value)
            assert raised.value.cause_response_code == "ValidationException"
    assert sent == []


def test_count_series_refuses_a_filter_on_the_keys_and_a_non_bool_flag() -> None:
    """count_series checks its filter and consistent_read as query_series does."""
    with sent_requests(SeriesReading) as sent:
        with pytest.raises(QueryValidationError, match="Primary key attribute: SK; Series"):
            SeriesReading.count_series(SENSOR, *WINDOW, filter_condition=SeriesReading.sk > "")
        with pytest.raises(QueryValidationError, match="at 'consistent_read'"):
            SeriesReading.count_series(SENSOR, *WINDOW, consistent_read=1)
    assert sent == []


def test_a_range_at_the_end_of_the_year_9999_reads_its_readings() -> None:
    """The last hours datetime can hold are read like any others (an OverflowError from
    stepping past the year 9999 before), and count the same."""
    last = datetime(9999, 12, 31, 23, 30, tzinfo=UTC)
    SeriesReading(sensor_id=SENSOR, timestamp=last, value=1).save()
    end = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    start = end - timedelta(hours=3)
    assert [r.timestamp for r in SeriesReading.query_series(SENSOR, start, end)] == [last]
    assert SeriesReading.count_series(SENSOR, start, end) == 1
    assert [r.value for r in SeriesReading.latest(SENSOR, hours=2, now=end)] == [1]


def test_a_window_reaching_before_the_year_one_is_refused_before_sending() -> None:
    """latest(hours=10**8) would start before the year 1: a ShardKeyError naming hours,
    not an OverflowError."""
    with sent_requests(SeriesReading) as sent:
        with pytest.raises(ShardKeyError) as raised:
            SeriesReading.latest(SENSOR, hours=10**8, now=AT)
    assert str(raised.value) == (
        "SeriesReading.latest(hours=100000000): the window would start before the year 1; "
        "give fewer hours"
    )
    assert sent == []


@pytest.mark.parametrize(
    "time", [Decimal("sNaN"), Decimal("NaN"), float("nan"), float("inf"), Decimal("-Infinity")]
)
def test_times_that_are_no_number_are_refused_by_name(time: Any) -> None:
    """A signaling NaN (float() of it raises ValueError), NaN or an infinity is no time:
    a ShardKeyError naming the argument, on save and on read."""
    with pytest.raises(ShardKeyError) as raised:
        list(SeriesReading.query_series(SENSOR, time, AT))
    assert str(raised.value) == (
        f"SeriesReading.query_series(start): {time!r} is not a time; pass finite epoch "
        "seconds or a datetime"
    )
    with pytest.raises(ShardKeyError, match=r"^SeriesReading.timestamp: .* is not a time"):
        SeriesReading(sensor_id=SENSOR, timestamp=time, value=1).save()
    assert raw_items(SeriesReading) == []


def test_a_series_cursor_resumes_only_its_own_range_and_filter() -> None:
    """The cursor records the range (and filter): resuming another range over the same
    partitions is refused, where it was accepted and skipped or repeated readings."""
    for n in range(8):
        SeriesReading(sensor_id=SENSOR, timestamp=AT + timedelta(minutes=n), value=n).save()
    page = SeriesReading.query_series(SENSOR, AT, AT + timedelta(minutes=50), limit=3)
    assert [r.value for r in page] == [0, 1, 2]
    cursor = page.last_evaluated_key
    with sent_requests(SeriesReading) as sent:
        for start, end, options in [
            (AT + timedelta(minutes=4), AT + timedelta(minutes=50), {}),
            (AT, AT + timedelta(minutes=40), {}),
            (AT, AT + timedelta(minutes=50), {"filter_condition": SeriesReading.value > 4}),
        ]:
            with pytest.raises(CursorError, match="taken with other conditions"):
                SeriesReading.query_series(SENSOR, start, end, last_evaluated_key=cursor, **options)
    assert sent == []
    rest = SeriesReading.query_series(
        SENSOR, AT, AT + timedelta(minutes=50), last_evaluated_key=cursor
    )
    assert [r.value for r in rest] == [3, 4, 5, 6, 7]


@pytest.mark.parametrize(
    ("forge", "problem"),
    [
        (lambda s: s.update(PK={"S": "3#2023-10-27T15"}), "is in the partition '3#2023-10-27T15'"),
        (lambda s: s.update(SK={"N": "5"}), "has 'SK' of type N, the key's type is S"),
        (lambda s: s.pop("SK"), "names ['PK'], the query's keys are ['PK', 'SK']"),
        (
            lambda s: s.update(SK={"S": "sensor-beta-7#2023"}),
            "does not match the range key predicate",
        ),
    ],
)
def test_a_forged_series_cursor_is_refused_before_sending(forge: Any, problem: str) -> None:
    """A cursor edited and signed again (anyone can without Meta.cursor_secret) whose start
    key DynamoDB would refuse, or that would read another sensor's readings, is refused."""
    for n in range(4):
        SeriesReading(sensor_id=SENSOR, timestamp=AT + timedelta(minutes=n), value=n).save()
    page = SeriesReading.query_series(SENSOR, AT, AT + timedelta(minutes=9), limit=2)
    list(page)
    data = cursor_payload(str(page.last_evaluated_key))
    (started,) = [s for s in data["shards"] if s["start"] is not None]
    forge(started["start"])
    with sent_requests(SeriesReading) as sent:
        with pytest.raises(CursorError) as raised:
            SeriesReading.query_series(
                SENSOR, AT, AT + timedelta(minutes=9), last_evaluated_key=signed_cursor(data)
            )
    assert f"start of shard '7#2023-10-27T15' {problem}" in str(raised.value)
    assert sent == []


def test_a_resumed_series_read_returns_readings_written_since_into_empty_buckets() -> None:
    """A bucket empty when the cursor was taken is not finished: a reading written there
    since, after the cursor's place, is returned on resume (as an unsharded query resumed
    after its ExclusiveStartKey returns it); one before that place is not, and no bucket
    the read has passed is read again."""
    end = AT + timedelta(hours=3)  # four hourly buckets
    for forward, sensor in ((True, "sensor-fwd"), (False, "sensor-back")):
        for n in range(3):
            SeriesReading(sensor_id=sensor, timestamp=AT + timedelta(minutes=n), value=n).save()
        page = SeriesReading.query_series(sensor, AT, end, limit=2, scan_index_forward=forward)
        first = [r.value for r in page]
        cursor = page.last_evaluated_key
        after, before = (timedelta(hours=2), timedelta(seconds=30))
        if not forward:
            after, before = timedelta(seconds=30), timedelta(seconds=90)
        for offset, value in ((after, 9), (before, 8)):
            SeriesReading(sensor_id=sensor, timestamp=AT + offset, value=value).save()
        with sent_requests(SeriesReading) as sent:
            resumed = SeriesReading.query_series(
                sensor, AT, end, last_evaluated_key=cursor, scan_index_forward=forward
            )
            rest = [r.value for r in resumed]
        if forward:
            assert (first, rest) == ([0, 1], [2, 9])
            assert len(sent) == 4  # the cursor's bucket and the three after it
        else:
            assert (first, rest) == ([2, 1], [9, 0])
            assert len(sent) == 1  # the buckets after the cursor's are finished


def test_a_series_cursor_whose_sort_key_names_no_time_is_refused() -> None:
    """Within the range and the partition, but not a reading's sort key: CursorError,
    before any request."""
    for n in range(4):
        SeriesReading(sensor_id=SENSOR, timestamp=AT + timedelta(minutes=n), value=n).save()
    end = AT + timedelta(minutes=9)
    page = SeriesReading.query_series(SENSOR, AT, end, limit=2)
    list(page)
    data = cursor_payload(str(page.last_evaluated_key))
    (started,) = [s for s in data["shards"] if s["start"] is not None]
    started["start"]["SK"]["S"] += "0"  # sorts inside the range, names no time
    with sent_requests(SeriesReading) as sent:
        with pytest.raises(CursorError, match="names no reading's time"):
            SeriesReading.query_series(SENSOR, AT, end, last_evaluated_key=signed_cursor(data))
    assert sent == []
