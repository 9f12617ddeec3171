"""The write and point-read path: a sharded model against plain PynamoDB, same run, same data.

Measures the mapper's own cost (choosing and composing keys, rewriting on load) on
in-process moto, where both models pay the same server cost. Plain PynamoDB and every
sharded model are timed alike: per operation, a warm-up round, then ``ROUNDS`` rounds
that each time every model once in turn (plain, then each strategy), so drift (a
neighbour's load, the tables growing) falls on all of them alike; each number is the
median of its rounds. Prints a table of per-operation times and the ratio sharded / plain.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone

from pynamodb.attributes import NumberAttribute, UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.models import Model

from shardmodel import (
    DynamicShards,
    HashShards,
    RandomShards,
    ShardedKeyAttribute,
    ShardedModel,
    TimeBuckets,
)
from shardmodel.testing import create_tables, mock_dynamodb

ITEMS = 400
ROUNDS = 5  # timed rounds, after one warm-up round
OPERATIONS = ("serialize", "save", "get")


class Plain(Model):
    class Meta:
        table_name = "bench-plain"
        region = "us-east-1"

    pk = UnicodeAttribute(hash_key=True)
    ts = NumberAttribute(range_key=True)
    body = UnicodeAttribute()


class Hashed(ShardedModel):
    class Meta:
        table_name = "bench-hashed"
        region = "us-east-1"

    pk = ShardedKeyAttribute(hash_key=True, strategy=HashShards(16, on=["ts"]))
    ts = NumberAttribute(range_key=True)
    body = UnicodeAttribute()


class Randomized(ShardedModel):
    class Meta:
        table_name = "bench-random"
        region = "us-east-1"

    pk = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(16))
    ts = NumberAttribute(range_key=True)
    body = UnicodeAttribute()


class Bucketed(ShardedModel):
    class Meta:
        table_name = "bench-bucketed"
        region = "us-east-1"

    pk = ShardedKeyAttribute(
        hash_key=True, strategy=[TimeBuckets("created", "hour"), RandomShards(4)]
    )
    created = UTCDateTimeAttribute(range_key=True)
    body = UnicodeAttribute()


class Dynamic(ShardedModel):
    """A dynamic key: writers cache its count for 5 s (the default)."""

    class Meta:
        table_name = "bench-dynamic"
        region = "us-east-1"

    pk = ShardedKeyAttribute(hash_key=True, strategy=DynamicShards())
    ts = NumberAttribute(range_key=True)
    body = UnicodeAttribute()


class DynamicUncached(ShardedModel):
    """A dynamic key whose writers read its count for every new item."""

    class Meta:
        table_name = "bench-dynamic-uncached"
        region = "us-east-1"

    pk = ShardedKeyAttribute(hash_key=True, strategy=DynamicShards(writer_cache_seconds=0))
    ts = NumberAttribute(range_key=True)
    body = UnicodeAttribute()


def _serialize(model: type[Model], key: Callable[[int], object]) -> Callable[[], None]:
    items = [model("hot", key(n), body="x" * 100) for n in range(ITEMS)]

    def run() -> None:
        for item in items:
            item.serialize()

    return run


def _save(model: type[Model], key: Callable[[int], object]) -> Callable[[], None]:
    rounds = iter(range(1 + ROUNDS))

    def run() -> None:
        # each round writes new items: re-saving new random-sharded instances would
        # (rightly) create duplicates on other shards
        offset = next(rounds) * ITEMS
        for n in range(offset, offset + ITEMS):
            model("hot", key(n), body="x" * 100).save()

    return run


def _get(model: type[Model], key: Callable[[int], object]) -> Callable[[], None]:
    def run() -> None:
        for n in range(0, ITEMS, 4):  # the warm-up round's saves wrote them
            model.get("hot", key(n))

    return run


#: calls per run of each operation, to report per-call times
CALLS = {"serialize": ITEMS, "save": ITEMS, "get": ITEMS // 4}
BUILDERS = {"serialize": _serialize, "save": _save, "get": _get}


def _time(run: Callable[[], None]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def measure(
    cases: Sequence[tuple[str, type[Model], Callable[[int], object]]],
) -> dict[str, dict[str, float]]:
    """Median seconds per call: case name -> operation -> seconds.

    For each operation every case runs once to warm up, then ``ROUNDS`` rounds run every
    case once in turn; plain PynamoDB is a case like the others.
    """
    found: dict[str, dict[str, float]] = {name: {} for name, _, _ in cases}
    for op in OPERATIONS:
        runs = [BUILDERS[op](model, key) for _, model, key in cases]
        for run in runs:
            run()  # warm: clients, caches, moto's tables; the saves the gets read
        samples: list[list[float]] = [[] for _ in cases]
        for _ in range(ROUNDS):
            for times, run in zip(samples, runs, strict=True):
                times.append(_time(run))
        for (name, _, _), times in zip(cases, samples, strict=True):
            found[name][op] = statistics.median(times) / CALLS[op]
    return found


def main() -> None:
    epoch = 1_700_000_000

    def number(n: int) -> object:
        return epoch + n

    def moment(n: int) -> object:
        return datetime.fromtimestamp(epoch + n * 60, tz=timezone.utc)

    plain = "plain PynamoDB"
    cases: list[tuple[str, type[Model], Callable[[int], object]]] = [
        (plain, Plain, number),
        ("HashShards(16)", Hashed, number),
        ("RandomShards(16)", Randomized, number),
        ("TimeBuckets+Random(4)", Bucketed, moment),
        ("Dynamic (cached count)", Dynamic, number),
        ("Dynamic (no cache)", DynamicUncached, number),
    ]
    load = os.getloadavg()[0]
    with mock_dynamodb():
        create_tables([Plain, Hashed, Randomized, Bucketed, Dynamic, DynamicUncached])
        measured = measure(cases)
    print(
        f"write path, {ITEMS} items, in-process moto: median of {ROUNDS} rounds after a "
        "warm-up round, each round timing plain PynamoDB and every strategy in turn"
    )
    print(f"{'strategy':<24}{'operation':<11}{'plain µs':>10}{'sharded µs':>12}{'ratio':>8}")
    ratios = []
    for name, _, _ in cases[1:]:
        for op in OPERATIONS:
            base, value = measured[plain][op], measured[name][op]
            print(f"{name:<24}{op:<11}{base * 1e6:>10.0f}{value * 1e6:>12.0f}{value / base:>8.2f}")
            if op == "save":
                ratios.append(value / base)
    print(
        f"median save ratio: {statistics.median(ratios):.2f}; 1-minute load average "
        f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
