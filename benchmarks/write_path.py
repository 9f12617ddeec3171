"""The write and point-read path: a sharded model against plain PynamoDB, same run, same data.

Measures the mapper's own cost (choosing and composing keys, rewriting on load) on
in-process moto, where both models pay the same server cost. Prints a table of
per-operation times and the ratio sharded / plain.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
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
REPEATS = 3


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


def _best(run: Callable[[], None]) -> float:
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def _serialize(model: type[Model], key: Callable[[int], object]) -> Callable[[], None]:
    items = [model("hot", key(n), body="x" * 100) for n in range(ITEMS)]

    def run() -> None:
        for item in items:
            item.serialize()

    return run


def _save(model: type[Model], key: Callable[[int], object]) -> Callable[[], None]:
    rounds = iter(range(REPEATS))

    def run() -> None:
        # each repeat writes new items: re-saving new random-sharded instances would
        # (rightly) create duplicates on other shards
        offset = next(rounds) * ITEMS
        for n in range(offset, offset + ITEMS):
            model("hot", key(n), body="x" * 100).save()

    return run


def _get(model: type[Model], key: Callable[[int], object]) -> Callable[[], None]:
    def run() -> None:
        for n in range(0, ITEMS, 4):
            model.get("hot", key(n))

    return run


def main() -> None:
    epoch = 1_700_000_000

    def number(n: int) -> object:
        return epoch + n

    def moment(n: int) -> object:
        return datetime.fromtimestamp(epoch + n * 60, tz=timezone.utc)

    cases: list[tuple[str, type[Model], Callable[[int], object]]] = [
        ("HashShards(16)", Hashed, number),
        ("RandomShards(16)", Randomized, number),
        ("TimeBuckets+Random(4)", Bucketed, moment),
        ("Dynamic (cached count)", Dynamic, number),
        ("Dynamic (no cache)", DynamicUncached, number),
    ]
    rows = []
    with mock_dynamodb():
        create_tables([Plain, Hashed, Randomized, Bucketed, Dynamic, DynamicUncached])
        baseline = {
            "serialize": _best(_serialize(Plain, number)) / ITEMS,
            "save": _best(_save(Plain, number)) / ITEMS,
            "get": _best(_get(Plain, number)) / (ITEMS / 4),
        }
        for name, model, key in cases:
            measured = {
                "serialize": _best(_serialize(model, key)) / ITEMS,
                "save": _best(_save(model, key)) / ITEMS,
                "get": _best(_get(model, key)) / (ITEMS / 4),
            }
            for op in ("serialize", "save", "get"):
                rows.append((name, op, baseline[op], measured[op]))
    print(f"write path, {ITEMS} items, best of {REPEATS}, in-process moto")
    print(f"{'strategy':<24}{'operation':<11}{'plain µs':>10}{'sharded µs':>12}{'ratio':>8}")
    for name, op, base, value in rows:
        print(f"{name:<24}{op:<11}{base * 1e6:>10.0f}{value * 1e6:>12.0f}{value / base:>8.2f}")
    ratios = [value / base for _, op, base, value in rows if op == "save"]
    print(f"median save ratio: {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
