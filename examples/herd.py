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
#: A provisioned table of 1,000 WCU/s: the table limit binds first.
PROVISIONED = CapacityLimits(partition_wcu=1000, table_wcu=1000, partitions=4)
#: An on-demand table (no table limit) on 2 partitions: the partition limit binds.
ON_DEMAND = CapacityLimits(partition_wcu=1000, partitions=2)


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
    table_throttles: int
    partition_throttles: int
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
            reasons = simulator.throttles
            partition = sum(
                n for r, n in reasons.items() if r.endswith("KeyRangeThroughputExceeded")
            )
            retries = simulator.attempts - burst.calls
        stored = sum(1 for _ in Reading.scan())
    return Outcome(
        name=name,
        writes=burst.calls,
        retries=retries,
        table_throttles=sum(reasons.values()) - partition,
        partition_throttles=partition,
        late=burst.late(1.0),
        lost=burst.failures,
        p99_delay=burst.percentile(0.99),
        max_delay=max(burst.delays, default=0.0),
        stored=stored,
    )


def table(outcomes: list[Outcome]) -> str:
    """The results as the docs quote them."""
    lines = [
        f"{'':<34} {'writes':>6} {'retries':>7} {'throttled':>16} {'late >1s':>8} {'lost':>5} "
        f"{'p99 delay':>9} {'max delay':>9}",
        f"{'':<34} {'':>6} {'':>7} {'table':>7} {'partn':>8}",
    ]
    for o in outcomes:
        lines.append(
            f"{o.name:<34} {o.writes:>6} {o.retries:>7} {o.table_throttles:>7} "
            f"{o.partition_throttles:>8} {o.late:>8} {o.lost:>5} "
            f"{o.p99_delay:>8.2f}s {o.max_delay:>8.2f}s"
        )
    return "\n".join(lines)


def main() -> None:
    outcomes = []
    for table_name, limits in (("provisioned", PROVISIONED), ("on-demand", ON_DEMAND)):
        outcomes.append(measure(f"{table_name}, all at 16:00:00", SENSORS, 0, limits))
        outcomes.append(
            measure(f"{table_name}, herd_offset {WINDOW:.0f}s", SENSORS, WINDOW, limits)
        )
    print(
        f"{SENSORS:,} sensors, one reading each at the top of the hour, 10 shards per hour, "
        "4 attempts per write; provisioned: a table of 1,000 WCU/s on 4 partitions of "
        "1,000 WCU/s; on-demand: no table limit, 2 partitions of 1,000 WCU/s\n"
    )
    print(table(outcomes))
    for outcome in outcomes:  # nothing stored twice, nothing but the lost missing
        assert outcome.stored == outcome.writes - outcome.lost
    before, after = outcomes[0::2], outcomes[1::2]
    assert all(
        o.table_throttles + o.partition_throttles > 0 and o.late + o.lost > 0 for o in before
    )
    assert before[0].table_throttles > 0 and before[1].partition_throttles > 0
    assert all(o.table_throttles + o.partition_throttles + o.late + o.lost == 0 for o in after)


if __name__ == "__main__":
    main()
