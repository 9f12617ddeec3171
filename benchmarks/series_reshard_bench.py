"""A time series' 16 -> 32 shard count change of 100,000 readings on dynalite.

Loads ``ITEMS`` readings into the time-series guide's layout (sha256 of the sensor over
16 shards, hourly buckets): ``SENSORS`` sensors over the ten hours before now, and one
reading in twenty dated in the three hours ahead (what a process a phase behind may have
written with the old count into the new count's buckets, the readings the cleanup
moves). Then runs every phase with :meth:`~shardmodel.migration.Reshard.steps` (settle 0)
and counts the requests each sends (botocore's ``before-send`` event), the wall time of
each, and the process's peak resident memory.

Each row is the phase reached; its requests and wall are the work done to reach it (the
cleanup's scan and moves are the done row).

Read amplification: in every phase, one ``query_series`` of one sensor over the thirteen
hours and one ``get_reading``, in requests. The baseline, measured in the same run before
the change starts, is the same two reads on the declared layout.

``python -m benchmarks.series_reshard_bench [items]`` (default 100,000).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from datetime import datetime, timedelta, timezone

from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from benchmarks.reshard_bench import CREDENTIALS, DYNALITE, Requests, phase_rows
from shardmodel import (
    BucketKeyAttribute,
    HashShards,
    SeriesKeyAttribute,
    SeriesTimeAttribute,
    TimeBuckets,
    TimeSeriesModel,
)
from shardmodel.migration import Phase, Reshard, follow
from shardmodel.testing import bind_models, create_tables, dynalite_server

ITEMS = 100_000
SENSORS = 1_000
NOW = datetime.now(timezone.utc)


class SensorReading(TimeSeriesModel):
    """The time-series guide's production layout."""

    class Meta:
        table_name = "bench-series-reshard"
        region = "us-east-1"

    pk = BucketKeyAttribute(
        strategy=[
            HashShards(16, on="sensor_id", algorithm="sha256"),
            TimeBuckets("timestamp", "hour"),
        ],
        attr_name="PK",
    )
    sk = SeriesKeyAttribute(entity="sensor_id", time="timestamp", attr_name="SK")
    sensor_id = UnicodeAttribute()
    timestamp = SeriesTimeAttribute()
    celsius = NumberAttribute()


def _load(items: int) -> int:
    """The readings; returns how many are dated ahead of the clock."""
    ahead = 0
    per_sensor = items // SENSORS
    with SensorReading.batch_write() as batch:
        for n in range(items):
            sensor = f"sensor-{n % SENSORS:04d}"
            step = n // SENSORS
            if (n * 7919) % 20 == 19:  # one in twenty: in the three hours ahead
                moment = NOW + timedelta(seconds=3 * 3600 * step / per_sensor)
                ahead += 1
            else:
                moment = NOW - timedelta(seconds=10 * 3600 * step / per_sensor + 1)
            batch.save(SensorReading(sensor_id=sensor, timestamp=moment, celsius=n % 40))
    return ahead


def _reads(requests: Requests) -> int:
    """Requests of one sensor's thirteen hours and one reading by time."""
    before = sum(requests.sent.values())
    readings = list(
        SensorReading.query_series(
            "sensor-0007", NOW - timedelta(hours=10, minutes=1), NOW + timedelta(hours=3)
        )
    )
    SensorReading.get_reading("sensor-0007", readings[0].timestamp)
    return sum(requests.sent.values()) - before


def main(items: int = ITEMS) -> None:
    """Load, change the count phase by phase, print the table."""
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")
    with dynalite_server(DYNALITE) as url:
        bind_models([SensorReading], host=url, **CREDENTIALS)
        create_tables([SensorReading])
        started = time.perf_counter()
        ahead = _load(items)
        loaded = time.perf_counter() - started
        requests = Requests()
        follow(SensorReading, cache_seconds=0)
        operator = Reshard(SensorReading)
        requests.watch(SensorReading._get_connection().connection.client)
        requests.watch(operator.store.items()._get_connection().connection.client)
        baseline = _reads(requests)
        print(
            f"series reshard {items:,} readings 16 -> 32 shards on dynalite (loaded in "
            f"{loaded:.0f} s; {ahead:,} dated in the three hours ahead); baseline read "
            f"(one sensor's 13 hours + one reading, no change): {baseline} requests"
        )
        steps = operator.steps(32, settle_seconds=0, page_size=100)
        total_wall, total = phase_rows(steps, requests, lambda: _reads(requests))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        moved = sum(p.changed for p in operator.store.progress("cleanup", 1))
        print(
            f"total: {total_wall:.0f} s, {sum(total.values()):,} requests "
            f"({sum(total.values()) / items:.2f} per reading); {moved:,} readings moved; "
            f"peak memory {peak / 2**20:.0f} MiB"
        )
        state = operator.status()
        assert state is not None and state.phase == Phase.DONE
        low, high = NOW - timedelta(hours=11), NOW + timedelta(hours=4)
        assert SensorReading.count_series("sensor-0007", low, high) == items // SENSORS


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else ITEMS)
