"""The thundering herd at the top of the hour, on the capacity simulator, and its remedy.

Every sensor writes one reading at 16:00:00 into the hybrid time-series layout; the new
hour's partitions and the table take the whole burst in one second. Then the same fleet
reports with each sensor delayed by ``herd_offset(sensor, window)``. Runs on in-process
moto with a simulated clock (deterministic, a few seconds): `python examples/herd.py`.
The docs (docs/timeseries.rst) quote its table.
"""

from __future__ import annotations

from datetime import datetime, timezone

from attrs import frozen
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import (
    BucketKeyAttribute,
    HashShards,
    SeriesKeyAttribute,
    SeriesTimeAttribute,
    TimeBuckets,
    TimeSeriesModel,
    herd_offset,
)
from shardmodel.testing import (
    CapacityLimits,
    CapacitySimulator,
    SimulatedClock,
    create_tables,
    mock_dynamodb,
    run_burst,
)

TOP = datetime(2023, 10, 27, 16, tzinfo=timezone.utc).timestamp()
SENSORS = 3000
WINDOW = 30.0  # seconds over which the remedy spreads the fleet's reports
LIMITS = CapacityLimits(partition_wcu=1000, table_wcu=1000, partitions=4)


class Reading(TimeSeriesModel):
    class Meta:
        table_name = "herd-readings"
        region = "us-east-1"

    pk = BucketKeyAttribute(
        strategy=[HashShards(10, on="sensor_id"), TimeBuckets("timestamp", "hour")],
        attr_name="PK",
    )
    sk = SeriesKeyAttribute(entity="sensor_id", time="timestamp", attr_name="SK")
    sensor_id = UnicodeAttribute()
    timestamp = SeriesTimeAttribute()
    value = NumberAttribute()


@frozen
class Outcome:
    """One run of the herd: what the writers saw and what the table holds."""

    name: str
    writes: int
    retries: int
    throttled_attempts: int
    late: int
    lost: int
    p99_delay: float
    max_delay: float
    stored: int


def measure(name: str, sensors: int, window: float, limits: CapacityLimits) -> Outcome:
    """``sensors`` writers report at the top of the hour, each after its jitter (0: none)."""
    ids = [f"sensor-{n:05d}" for n in range(sensors)]
    if window:
        times = [TOP + herd_offset(sensor, window) for sensor in ids]
    else:
        times = [TOP + n / sensors for n in range(sensors)]  # all in the first second
    clock = SimulatedClock(start=TOP - 1)
    with mock_dynamodb():
        create_tables([Reading])
        simulator = CapacitySimulator(clock=clock, limits=limits, buffer_writes=True, seed=11)
        with simulator.attach(Reading):

            def write(n: int) -> None:
                # the reading keeps its true time, the top of the hour; only the write moves
                Reading(sensor_id=ids[n], timestamp=TOP, value=n).save()

            burst = run_burst(clock, times, write)
            simulator.flush()
            throttled = simulator.table_usage(Reading.Meta.table_name).write_throttles
            retries = simulator.attempts - burst.calls
        stored = sum(1 for _ in Reading.scan())
    return Outcome(
        name=name,
        writes=burst.calls,
        retries=retries,
        throttled_attempts=throttled,
        late=burst.late(1.0),
        lost=burst.failures,
        p99_delay=burst.percentile(0.99),
        max_delay=max(burst.delays, default=0.0),
        stored=stored,
    )


def table(outcomes: list[Outcome]) -> str:
    """The results as the docs quote them."""
    lines = [
        f"{'':<26} {'writes':>6} {'retries':>7} {'throttled':>9} {'late >1s':>8} {'lost':>5} "
        f"{'p99 delay':>9} {'max delay':>9}"
    ]
    for o in outcomes:
        lines.append(
            f"{o.name:<26} {o.writes:>6} {o.retries:>7} {o.throttled_attempts:>9} {o.late:>8} "
            f"{o.lost:>5} "
            f"{o.p99_delay:>8.2f}s {o.max_delay:>8.2f}s"
        )
    return "\n".join(lines)


def main() -> None:
    before = measure("all at 16:00:00", SENSORS, 0, LIMITS)
    after = measure(f"herd_offset over {WINDOW:.0f}s", SENSORS, WINDOW, LIMITS)
    print(
        f"{SENSORS:,} sensors, one reading each at the top of the hour; table "
        f"{LIMITS.table_wcu:,.0f} WCU/s, {LIMITS.partitions} partitions of "
        f"{LIMITS.partition_wcu:,.0f} WCU/s, 10 shards per hour, 4 attempts per write\n"
    )
    print(table([before, after]))
    for outcome in (before, after):  # nothing stored twice, nothing but the lost missing
        assert outcome.stored == outcome.writes - outcome.lost
    assert before.throttled_attempts > 0 and before.late + before.lost > 0
    assert after.throttled_attempts == after.late == after.lost == 0


if __name__ == "__main__":
    main()
