"""Sensor readings in the guides' hybrid layout: no sensor in the partition key.

PK = "{md5(sensor) % 10}#{UTC hour}", SK = "{sensor}#{UTC time}Z". Twenty sensors report
every minute for three hours; one sensor's range and its last hours are read with one
call each, one partition per hour. Runs on in-process moto: `python examples/timeseries.py`.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta, timezone

from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import (
    BucketKeyAttribute,
    HashShards,
    SeriesKeyAttribute,
    SeriesTimeAttribute,
    TimeBuckets,
    TimeSeriesModel,
)
from shardmodel.testing import create_tables, mock_dynamodb


class Reading(TimeSeriesModel):
    class Meta:
        table_name = "sensor-readings"
        region = "us-east-1"

    pk = BucketKeyAttribute(
        strategy=[HashShards(10, on="sensor_id"), TimeBuckets("timestamp", "hour")],
        attr_name="PK",
    )
    sk = SeriesKeyAttribute(entity="sensor_id", time="timestamp", attr_name="SK")
    sensor_id = UnicodeAttribute()
    timestamp = SeriesTimeAttribute()
    value = NumberAttribute()


START = datetime(2023, 10, 27, 13, tzinfo=timezone.utc)
SENSORS = [f"sensor-{n:02d}" for n in range(20)]


def main() -> None:
    with mock_dynamodb():
        create_tables([Reading])
        with Reading.batch_write() as batch:
            for minute in range(180):
                for n, sensor in enumerate(SENSORS):
                    at = START + timedelta(minutes=minute)
                    # a gateway in UTC+2 reports local times: stored in UTC, "...Z"
                    given = at.astimezone(timezone(timedelta(hours=2))).isoformat()
                    batch.save(Reading(sensor_id=sensor, timestamp=given, value=n + minute))
        per_partition = Counter(r.pk for r in Reading.scan())
        print(
            f"{len(SENSORS) * 180} readings in {len(per_partition)} partitions; busiest "
            f"holds {max(per_partition.values())}, e.g. {sorted(per_partition)[:3]}"
        )

        one = Reading.query_series(
            "sensor-07", START + timedelta(minutes=50), "2023-10-27T16:10:00+02:00"
        )
        readings = list(one)
        print(
            f"sensor-07 13:50..14:10: {len(readings)} readings from {one.requests} partitions, "
            f"first {readings[0].sk}"
        )
        assert len(readings) == 21 and one.requests == 2
        assert [r.timestamp for r in readings] == sorted(r.timestamp for r in readings)

        last = Reading.latest("sensor-07", hours=3, now="2023-10-27T15:30:00Z")
        stamps = [r.timestamp for r in last]
        print(
            f"last 3 hours at 15:30: {len(stamps)} readings, {last.requests} partitions, "
            f"{stamps[0]:%H:%M} .. {stamps[-1]:%H:%M}"
        )
        assert len(stamps) == 151 and last.requests == 3

        newest = Reading.latest(
            "sensor-07", hours=3, now="2023-10-27T15:30:00Z", scan_index_forward=False, limit=5
        )
        page = [f"{r.timestamp:%H:%M}" for r in newest]
        cursor = newest.last_evaluated_key
        more = Reading.latest(
            "sensor-07",
            hours=3,
            now="2023-10-27T15:30:00Z",
            scan_index_forward=False,
            limit=5,
            last_evaluated_key=cursor,
        )
        print("newest five:", page, "then:", [f"{r.timestamp:%H:%M}" for r in more])
        assert page == ["15:30", "15:29", "15:28", "15:27", "15:26"]


if __name__ == "__main__":
    main()
