"""DynamicShards' defaults against a spike: one key from idle to ten partitions' worth.

``python -m benchmarks.dynamic_spike [seconds]``: on the capacity simulator (simulated
clock, in-process moto), one logical key of a ``DynamicShards`` model goes at once from
nothing to 100 writes a simulated second of 1 WCU each, with partitions of 10 WCU a
second: DynamoDB's 10,000 writes a second on 1,000 WCU partitions, scaled down by 100
(a throttled write costs the simulator tens of milliseconds of CPU, and a spike on one
shard throttles most of them). The key needs 10 shards at the least, 20 with the
2x headroom the capacity guides advise.

It prints, for the defaults (``cooldown=60``, ``growth_factor=2``), for
``pace="history"`` and for ``cooldown=15``: when each growth happened,
when the count first reached 10 and 16, and the writes refused (throttled at least once)
and failed (after every retry) in each 30-second window. The baseline is the same spike
on the defaults; no wall time is measured.
"""

from __future__ import annotations

import sys
from typing import Any

from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import DynamicShards, ShardChange, ShardedKeyAttribute, ShardedModel
from shardmodel.engine import sharding_of
from shardmodel.testing import (
    CapacityLimits,
    CapacitySimulator,
    SimulatedClock,
    mock_dynamodb,
    run_load,
)

RATE = 100  # writes a simulated second on the one key: ten partitions' worth
WINDOW = 30.0  # seconds of each line of the table
THREADS = 16


def _model(name: str, clock: SimulatedClock, changes: list[ShardChange], **options: Any) -> Any:
    class SpikeEvents(ShardedModel):
        class Meta:
            table_name = name
            region = "us-east-1"

        key = ShardedKeyAttribute(
            hash_key=True,
            strategy=DynamicShards(clock=clock, on_change=changes.append, **options),
        )
        seq = NumberAttribute(range_key=True)
        body = UnicodeAttribute()

    return SpikeEvents


def spike(label: str, seconds: float, **options: Any) -> list[str]:
    """The spike on one fresh model with ``options``; the lines of its report."""
    clock = SimulatedClock(start=1_800_000_000)
    changes: list[ShardChange] = []
    model = _model(f"spike-{label}", clock, changes, **options)
    model.create_table(wait=True, billing_mode="PAY_PER_REQUEST")
    directory = sharding_of(model).directory
    assert directory is not None
    simulator = CapacitySimulator(
        clock=clock, limits=CapacityLimits(partition_wcu=10), buffer_writes=True, seed=7
    )
    simulator.attach(model, directory.table())
    start = clock.now()
    lines = [f"{label}: {options or 'defaults'}"]
    lines.append("window s    writes  refused  failed  shards at end")
    sent = 0
    try:
        while clock.now() - start < seconds:
            before = simulator.table_usage(model.Meta.table_name).write_throttles
            first = sent

            def write(number: int, first: int = first) -> None:
                model("hot", first + number, body="x" * 200).save()

            result = run_load(clock, RATE, WINDOW, write, threads=THREADS)
            sent += result.calls
            refused = simulator.table_usage(model.Meta.table_name).write_throttles - before
            count = max([c.new_count for c in changes if c.kind == "grow"], default=1)
            at = round(clock.now() - start - WINDOW)
            lines.append(
                f"{at:>4}-{at + round(WINDOW):<4} {result.calls:>8,} {refused:>8,} "
                f"{result.failures:>7,} {count:>6}"
            )
    finally:
        simulator.detach()
    grows = [(c.new_count, round(c.at - start)) for c in changes if c.kind == "grow"]
    lines.append(f"growths (count, s after the spike began): {grows}")
    for need in (10, 16):
        when = next((at for count, at in grows if count >= need), None)
        lines.append(f"  {need} shards after {'never' if when is None else f'{when} s'}")
    return lines


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 300.0
    with mock_dynamodb():
        for line in spike("defaults", seconds):
            print(line, flush=True)
        print()
        for line in spike("pace-history", seconds, pace="history"):
            print(line, flush=True)
        print()
        for line in spike("cooldown-15", seconds, cooldown=15):
            print(line, flush=True)


if __name__ == "__main__":
    main()
