"""The top-of-the-hour herd on the capacity simulator, and herd_offset's remedy."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from typing import Any

import pytest

from shardmodel import ShardKeyError, herd_offset
from shardmodel.testing import (
    BurstResult,
    CapacityLimits,
    CapacitySimulator,
    SimulatedClock,
    run_burst,
)
from tests.models import SeriesReading
from tests.support import raw_items

pytestmark = pytest.mark.usefixtures("tables")

TOP = datetime(2023, 10, 27, 16, tzinfo=timezone.utc).timestamp()
SENSORS = [f"sensor-{n:04d}" for n in range(200)]
#: a provisioned table of 50 WCU/s (no burst credit): the table limit binds
PROVISIONED = CapacityLimits(partition_wcu=1000, table_wcu=50, partitions=4)
#: no table limit, 2 partitions of 50 WCU/s: the partition limit binds
ON_DEMAND = CapacityLimits(partition_wcu=50, partitions=2)
LIMITS = {"table": PROVISIONED, "partition": ON_DEMAND}


def herd(times: list[float], limits: CapacityLimits) -> tuple[BurstResult, CapacitySimulator]:
    """Each sensor writes its reading of 16:00:00 at its time; returns the burst's counts."""
    clock = SimulatedClock(start=TOP - 1)
    simulator = CapacitySimulator(clock=clock, limits=limits, buffer_writes=True, seed=5)
    with simulator.attach(SeriesReading):
        result = run_burst(
            clock,
            times,
            lambda n: SeriesReading(sensor_id=SENSORS[n], timestamp=TOP, value=n).save(),
        )
    return result, simulator


def stored_sensors() -> list[str]:
    return sorted(item["SK"]["S"].split("#")[0] for item in raw_items(SeriesReading))


@pytest.mark.parametrize("limit", ["table", "partition"])
def test_every_sensor_at_the_top_of_the_hour_is_throttled_late_and_lost(limit: str) -> None:
    """200 writes in one second against 50 WCU/s (table, or each of 2 partitions).

    Throttles for that limit, late writes (and lost ones, where the retries run out);
    nothing is stored twice, and exactly the writes that raised are missing.
    """
    result, simulator = herd([TOP + n / len(SENSORS) for n in range(len(SENSORS))], LIMITS[limit])
    usage = simulator.table_usage("series-readings")
    print(simulator.report())
    assert usage.write_throttles >= len(SENSORS) - 100  # all but one second's worth
    reason = "KeyRange" if limit == "partition" else "ProvisionedThroughput"
    assert all(reason in name for name in simulator.throttles)
    assert result.late(1.0) > 0
    if limit == "table":  # 150 refused at once outrun the client's retry quota: lost
        assert result.failures > 0 and result.errors.keys() == {"PutError"}
    assert len(stored_sensors()) == len(SENSORS) - result.failures == len(set(stored_sensors()))


@pytest.mark.parametrize("limit", ["table", "partition"])
def test_herd_offset_spreads_the_fleet_and_nothing_is_throttled(limit: str) -> None:
    """The same fleet, each sensor delayed by herd_offset over 10 s: no throttle, all on time."""
    times = [TOP + herd_offset(sensor, 10.0) for sensor in SENSORS]
    result, simulator = herd(times, LIMITS[limit])
    assert simulator.table_usage("series-readings").write_throttles == 0
    assert (result.failures, result.late(0.0)) == (0, 0)
    assert stored_sensors() == SENSORS  # every reading, at its true time 16:00:00
    stamps = {item["SK"]["S"].split("#")[1] for item in raw_items(SeriesReading)}
    assert stamps == {"2023-10-27T16:00:00.000000Z"}


def test_herd_offset_is_stable_bounded_and_even() -> None:
    """Fixed offsets per entity (any process, any version), in [0, window), spread evenly.

    The expected values are md5-derived and written down: an offset from Python's
    ``hash`` (salted per process) or a changed formula would move every writer's cadence.
    """
    assert herd_offset("sensor-alpha-001", 60) == 36.07069737603072
    assert herd_offset("sensor-beta-7", 60) == 32.99588130853766
    assert herd_offset("sensor-alpha-001", 3600) == 2164.2418425618434  # scales with the window
    offsets = [herd_offset(f"sensor-{n}", 30) for n in range(3000)]
    assert all(0 <= offset < 30 for offset in offsets)
    per_second = Counter(int(offset) for offset in offsets)
    assert len(per_second) == 30 and max(per_second.values()) < 2 * 3000 / 30
    assert herd_offset("x", 0) == 0
    with pytest.raises(ValueError, match="window"):
        herd_offset("x", -1)


@pytest.mark.parametrize("window", [float("nan"), float("inf"), -1, -0.5, True, "30", 10**400])
def test_herd_offset_refuses_a_window_that_is_no_finite_time(window: Any) -> None:
    """NaN returned NaN and an infinity infinity: a window must be finite seconds, 0 or
    more; refused with a ShardKeyError (a ValueError) naming it."""
    with pytest.raises(ShardKeyError) as raised:
        herd_offset("sensor-1", window)
    assert str(raised.value) == (
        f"herd_offset(window={window!r}): give the window in seconds, a finite number, 0 or more"
    )


def test_herd_offset_refuses_an_entity_that_is_no_string() -> None:
    """A number for the entity is named, not an AttributeError from hashing it."""
    with pytest.raises(
        ShardKeyError, match=r"herd_offset\(entity=7\): give the entity id as a str"
    ):
        herd_offset(7, 30)  # type: ignore[arg-type]
