"""A hot sensor escalates: the time-series guide's 2,000 writes/s sensor loses nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import HashShards, TimeBuckets
from shardmodel.errors import ShardConfigurationError
from shardmodel.testing import CapacitySimulator, SimulatedClock, run_load
from shardmodel.timeseries import (
    BucketKeyAttribute,
    SeriesKeyAttribute,
    SeriesTimeAttribute,
    TimeSeriesModel,
)

HOUR = datetime(2023, 10, 27, 15, tzinfo=timezone.utc)
RATE = 2000  # the guide's hot sensor, writes a second
SECONDS = 2


class Reading(TimeSeriesModel):
    """The guide's production layout: 10 hashed shards of each hour."""

    class Meta:
        table_name = "hot-sensor-readings"
        region = "us-east-1"
        max_retry_attempts = 0  # a throttled write is a lost write here
        hot_entities: dict[str, int] | None = None

    pk = BucketKeyAttribute(
        strategy=[HashShards(10, on="sensor_id"), TimeBuckets("timestamp", "hour")],
        attr_name="PK",
    )
    sk = SeriesKeyAttribute(entity="sensor_id", time="timestamp", attr_name="SK")
    sensor_id = UnicodeAttribute()
    timestamp = SeriesTimeAttribute()
    value = NumberAttribute(null=True)


def _drive(lost: list[int]) -> CapacitySimulator:
    """2,000 readings a second of one sensor for 2 simulated seconds, each 1 WCU."""
    clock = SimulatedClock(start=HOUR.timestamp())
    simulator = CapacitySimulator(clock=clock, seed=5, buffer_writes=True)

    def write(n: int) -> None:
        at = HOUR + timedelta(microseconds=n * 500)  # 2,000 a second, distinct times
        try:
            Reading(sensor_id="sensor-hot", timestamp=at, value=n).save()
        except Exception:
            lost.append(n)
            raise

    with simulator.attach(Reading):
        run_load(clock, RATE, SECONDS, write)
    return simulator


def test_the_hot_sensor_in_one_partition_loses_writes(
    dynamodb_tables: Callable[..., None],
) -> None:
    """Without escalation its hour is one partition: half of every second throttles."""
    dynamodb_tables(Reading)
    lost: list[int] = []
    _drive(lost)
    assert len(lost) > RATE * SECONDS / 3


def test_an_escalated_hot_sensor_loses_nothing_and_reads_back_in_order(
    dynamodb_tables: Callable[..., None],
) -> None:
    dynamodb_tables(Reading)
    Reading.Meta.hot_entities = {"sensor-hot": 4}
    try:
        lost: list[int] = []
        simulator = _drive(lost)
        assert lost == [] and simulator.table_usage("hot-sensor-readings").write_throttles == 0
        readings = list(Reading.query_series("sensor-hot", HOUR, HOUR + timedelta(hours=1)))
        assert [r.value for r in readings] == list(range(RATE * SECONDS))  # one time order
        bucket = "5#2023-10-27T15"  # the sensor's hashed shard and hour, as before
        assert sorted({r.pk for r in readings}) == [bucket] + [f"{bucket}#{n}" for n in (1, 2, 3)]
        assert Reading.count_series("sensor-hot", HOUR, HOUR + timedelta(hours=1)) == 4000
        newest = list(
            Reading.query_series("sensor-hot", HOUR, HOUR + timedelta(hours=1),
                                 scan_index_forward=False, limit=3)
        )  # fmt: skip
        assert [r.value for r in newest] == [3999, 3998, 3997]
        one = Reading.get_reading("sensor-hot", HOUR + timedelta(microseconds=500 * 1234))
        assert one.value == 1234
    finally:
        Reading.Meta.hot_entities = None


def test_a_bad_escalation_is_refused_with_the_fix(dynamodb_tables: Callable[..., None]) -> None:
    dynamodb_tables(Reading)
    for bad in ({"sensor-hot": 0}, {"sensor-hot": "4"}, ["sensor-hot"]):
        Reading.Meta.hot_entities = bad  # type: ignore[assignment]
        try:
            with pytest.raises(ShardConfigurationError, match="hot_entities"):
                Reading(sensor_id="sensor-hot", timestamp=HOUR).save()
        finally:
            Reading.Meta.hot_entities = None
