"""One burst of writes to one hot key, run three ways on the capacity simulator.

:func:`run_hot_key_burst` offers the same load (by default 5,000 writes, 5,000 a second, of
small items to one logical key) to three tables of in-process moto, each
under :class:`~shardmodel.testing.CapacitySimulator` with DynamoDB's on-demand partition
limit of 1,000 WCU a second:

* ``unsharded``: a plain PynamoDB model, every write on one physical key;
* ``sharded``: ``RandomShards(n)`` (by default 10, as ``shardmodel plan`` advises for
  this rate);
* ``dynamic``: ``DynamicShards``, starting at one shard and growing on throttling.

Each write is retried as PynamoDB retries it (botocore's standard mode: up to 4 attempts,
while the client's retry quota lasts); a write that fails after every attempt is lost.
The numbers ``shardmodel demo`` prints and the docs' capacity figure draws are these
runs' counts.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from attrs import frozen
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from shardmodel.attributes import ShardedKeyAttribute
from shardmodel.engine import sharding_of
from shardmodel.keyspace.dynamic import DynamicShards
from shardmodel.keyspace.strategies import RandomShards
from shardmodel.model.sharded import ShardedModel
from shardmodel.retry import Backoff
from shardmodel.testing import (
    CapacitySimulator,
    SimulatedClock,
    create_tables,
    mock_dynamodb,
    run_load,
)

__all__ = [
    "HOT_KEY",
    "LAYOUTS",
    "RATE",
    "BurstRun",
    "bars",
    "conclusion",
    "print_burst",
    "run_hot_key_burst",
]

#: The one logical key every write of the burst goes to.
HOT_KEY = "device-42"
#: The three ways the burst runs, in the order they are printed.
LAYOUTS = ("unsharded", "sharded", "dynamic")
#: Writes a second offered to the hot key: five partitions' worth.
RATE = 5000
_START = 1_800_000_000.0
_PAYLOAD = "reading"  # a small item: 1 WCU a write, as any item up to 1 KB


@frozen
class BurstRun:
    """What one layout did with the burst.

    Attributes:
        layout: ``"unsharded"``, ``"sharded"`` or ``"dynamic"``.
        strategy: the partition key's declaration (``"RandomShards(10)"``).
        writes: writes offered.
        throttles: write attempts the simulator refused (retries included).
        lost: writes that failed after every retry.
        stored: items the table holds for the hot key afterwards.
        shards: physical keys the hot key's items are stored under.
        newest: the newest items of a merged read by the logical key, as
            ``(logical key, seq, physical key)``.
    """

    layout: str
    strategy: str
    writes: int
    throttles: int
    lost: int
    stored: int
    shards: int
    newest: tuple[tuple[str, int, str], ...]


def _models(shards: int, seed: int, clock: SimulatedClock) -> dict[str, type[Model]]:
    class Plain(Model):
        class Meta:
            table_name = "burst-unsharded"
            region = "us-east-1"

        device_id = UnicodeAttribute(hash_key=True)
        seq = NumberAttribute(range_key=True)
        payload = UnicodeAttribute()

    class Sharded(ShardedModel):
        class Meta:
            table_name = "burst-sharded"
            region = "us-east-1"

        device_id = ShardedKeyAttribute(
            hash_key=True, strategy=RandomShards(shards), rng=random.Random(seed)
        )
        seq = NumberAttribute(range_key=True)
        payload = UnicodeAttribute()

    class Dynamic(ShardedModel):
        class Meta:
            table_name = "burst-dynamic"
            region = "us-east-1"
            # a throttled new write is resent after a back-off on the simulated clock
            shard_backoff = Backoff(sleep=clock.sleep, rng=random.Random(seed))

        device_id = ShardedKeyAttribute(
            hash_key=True,
            strategy=DynamicShards(cooldown=0.25, jitter=0, writer_cache_seconds=0.1, clock=clock),
            rng=random.Random(seed),
        )
        seq = NumberAttribute(range_key=True)
        payload = UnicodeAttribute()

    return {"unsharded": Plain, "sharded": Sharded, "dynamic": Dynamic}


def _strategy(layout: str, shards: int) -> str:
    return {"unsharded": "one key", "sharded": f"RandomShards({shards})"}.get(
        layout, "DynamicShards()"
    )


def _run_one(
    layout: str, model: type[Model], rate: int, seconds: float, shards: int, seed: int,
    clock: SimulatedClock,
) -> BurstRun:  # fmt: skip
    models: list[Any] = [model]
    directory = sharding_of(model).directory if issubclass(model, ShardedModel) else None
    if directory is not None:
        models.append(directory.table())
    simulator = CapacitySimulator(clock=clock, seed=seed, buffer_writes=True)
    with simulator.attach(*models):

        def write(n: int) -> None:
            model(HOT_KEY, n, payload=_PAYLOAD).save()

        load = run_load(clock, rate, seconds, write)
    usage = simulator.table_usage(model.Meta.table_name)
    physical = {
        part.partition
        for part, use in simulator.usage().items()
        if part.table == model.Meta.table_name and use.write_units
    }
    stored = model.count(HOT_KEY)
    items: list[Any] = list(model.query(HOT_KEY, scan_index_forward=False, limit=3))
    newest = tuple((item.device_id, int(item.seq), _physical(item)) for item in items)
    return BurstRun(
        layout=layout,
        strategy=_strategy(layout, shards),
        writes=load.calls,
        throttles=usage.write_throttles,
        lost=load.failures,
        stored=stored,
        shards=len(physical),
        newest=newest,
    )


def _physical(item: Any) -> str:
    return str(item.get_physical_key() if isinstance(item, ShardedModel) else item.device_id)


def run_hot_key_burst(
    writes: int = 5000,
    rate: int = RATE,
    shards: int = 10,
    seed: int = 7,
    layouts: tuple[str, ...] = LAYOUTS,
) -> list[BurstRun]:
    """Offer ``writes`` writes, ``rate`` a second, to each layout.

    Runs on its own in-process moto (never AWS) and a simulated clock: the same
    arguments give the same numbers on every run.

    Args:
        writes: writes in the burst.
        rate: writes a second to the hot key (simulated time).
        shards: the sharded layout's ``RandomShards(n)``.
        seed: seeds the shard picks, the retry jitter and the growth jitter.
        layouts: which of :data:`LAYOUTS` to run.
    """
    unknown = [layout for layout in layouts if layout not in LAYOUTS]
    if unknown:
        raise ValueError(f"run_hot_key_burst(layouts={unknown!r}): choose from {LAYOUTS}")
    if writes < 1 or rate < 1:
        raise ValueError(f"run_hot_key_burst(writes={writes!r}, rate={rate!r}): give positive ints")
    seconds = writes / rate
    runs = []
    clock = SimulatedClock(start=_START)
    with mock_dynamodb():
        models = _models(shards, seed, clock)
        create_tables([models[layout] for layout in layouts])
        for layout in layouts:
            runs.append(_run_one(layout, models[layout], rate, seconds, shards, seed, clock))
            clock.advance_to(clock.now() + 60)  # a quiet minute between runs
    return runs


def bars(runs: list[BurstRun], width: int = 40) -> list[str]:
    """A terminal bar chart of each run's throttled attempts and lost writes."""
    top = max([1, *(max(run.throttles, run.lost) for run in runs)])
    lines = []
    for run in runs:
        for label, value, mark in (("throttled", run.throttles, "#"), ("lost", run.lost, "!")):
            bar = mark * max(1 if value else 0, round(width * value / top))
            name = run.layout if label == "throttled" else ""
            lines.append(f"  {name:<10} {label:<10}|{bar:<{width}}| {value:>6,}")
    return lines


def conclusion(runs: list[BurstRun]) -> str:
    """One line saying what the runs show."""
    said = []
    for run in runs:
        if run.lost:
            said.append(
                f"{run.layout} lost {run.lost:,} of {run.writes:,} ({run.lost / run.writes:.0%})"
            )
        elif run.layout == "dynamic":
            said.append(f"{run.strategy} lost none, growing onto {run.shards} physical keys")
        else:
            said.append(f"{run.strategy} lost none")
    return "One key takes 1,000 writes/s: " + "; ".join(said) + "."


def print_burst(runs: list[BurstRun], out: Callable[[str], None] = print) -> None:
    """Print the runs side by side, the bar chart, the conclusion and the read-back."""
    writes = runs[0].writes
    out(
        f"Burst: {writes:,} writes to the one key {HOT_KEY!r}, {RATE:,} a second, on the "
        "capacity simulator"
    )
    out(
        "(1,000 WCU/s a partition; botocore retries a throttled write: up to 4 attempts, "
        "while its retry quota lasts)"
    )
    out("")
    out(f"  {'layout':<10} {'strategy':<17}{'writes':>8}{'throttled':>11}{'lost':>8}"
        f"{'stored':>8}{'keys':>6}")  # fmt: skip
    for run in runs:
        out(
            f"  {run.layout:<10} {run.strategy:<17}{run.writes:>8,}{run.throttles:>11,}"
            f"{run.lost:>8,}{run.stored:>8,}{run.shards:>6}"
        )
    out("  (throttled: attempts refused; lost: writes failed after every retry; keys: physical)")
    out("")
    for line in bars(runs):
        out(line)
    out("")
    out(conclusion(runs))
    for run in runs:
        if run.layout == "unsharded" or not run.newest:
            continue
        out(f"\nMerged read-back of {HOT_KEY!r}, {run.layout} ({run.strategy}), newest first:")
        for logical, seq, physical in run.newest:
            out(f"  {logical}  seq={seq}  (stored under {physical})")
        out(f"  ... {run.stored:,} items in one ordered stream, by the logical key only")
