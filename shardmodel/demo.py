"""The demo: a burst of writes to one hot key, unsharded versus sharded, on in-process moto."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from shardmodel.attributes import ShardedKeyAttribute
from shardmodel.keyspace.strategies import RandomShards
from shardmodel.model.sharded import ShardedModel
from shardmodel.testing import create_tables, mock_dynamodb

__all__ = ["run_demo"]

HOT_KEY = "device-42"
PARTITION_WCU = 1000


def _models(shards: int, seed: int) -> tuple[type[Model], type[ShardedModel]]:
    class Reading(Model):
        class Meta:
            table_name = "demo-readings-unsharded"
            region = "us-east-1"

        device_id = UnicodeAttribute(hash_key=True)
        seq = NumberAttribute(range_key=True)
        payload = UnicodeAttribute()

    class ShardedReading(ShardedModel):
        class Meta:
            table_name = "demo-readings-sharded"
            region = "us-east-1"

        device_id = ShardedKeyAttribute(
            hash_key=True, strategy=RandomShards(shards), rng=random.Random(seed)
        )
        seq = NumberAttribute(range_key=True)
        payload = UnicodeAttribute()

    return Reading, ShardedReading


def _physical_counts(model: type[Model]) -> Counter[str]:
    counts: Counter[str] = Counter()
    start = None
    while True:
        page = model._get_connection().scan(exclusive_start_key=start)
        counts.update(item["device_id"]["S"] for item in page.get("Items", []))
        start = page.get("LastEvaluatedKey")
        if not start:
            return counts


def _table(title: str, counts: Counter[str], writes: int, out: Callable[[str], None]) -> None:
    out(f"\n{title}")
    out(f"  {'physical key':<22}{'items':>8}{'share':>9}{'peak WCU/s if 1 s burst':>26}")
    for key in sorted(counts, key=lambda k: (len(k), k)):
        share = counts[key] / writes
        flag = "  <- over one partition's 1,000" if counts[key] > PARTITION_WCU else ""
        out(f"  {key:<22}{counts[key]:>8}{share:>9.1%}{counts[key]:>26,}{flag}")


def run_demo(
    writes: int = 2000, shards: int = 10, seed: int = 7, out: Callable[[str], None] = print
) -> dict[str, Counter[str]]:
    """Write a burst to one hot key on both layouts and print where the items landed.

    Returns the per-physical-key counts of both tables (used by the tests).
    """
    started = time.perf_counter()
    with mock_dynamodb():
        plain, sharded = _models(shards, seed)
        create_tables([plain, sharded])
        out(f"Burst: {writes:,} writes of 1 KB items to the hot key {HOT_KEY!r} (in-process moto)")
        payload = "x" * 980  # with the key and names, just under 1 KB: 1 WCU a write
        with plain.batch_write() as batch:
            for seq in range(writes):
                batch.save(plain(HOT_KEY, seq, payload=payload))
        with sharded.batch_write() as sharded_batch:
            for seq in range(writes):
                sharded_batch.save(sharded(HOT_KEY, seq, payload=payload))
        unsharded_counts = _physical_counts(plain)
        sharded_counts = _physical_counts(sharded)
        _table("Unsharded: every write lands on one physical key", unsharded_counts, writes, out)
        _table(
            f"Sharded with RandomShards({shards}): the same writes spread evenly",
            sharded_counts,
            writes,
            out,
        )
        merged: list[Any] = list(sharded.query(HOT_KEY, scan_index_forward=False, limit=5))
        out(f"\nMerged read-back of {HOT_KEY!r} across {shards} shards, newest first:")
        for item in merged:
            out(f"  {item.device_id}  seq={item.seq}  (stored under {item.get_physical_key()})")
        total = sum(1 for _ in sharded.query(HOT_KEY))
        out(f"  ... {total:,} items in one ordered stream, logical key only")
    out(f"\nDone in {time.perf_counter() - started:.1f} s.")
    return {"unsharded": unsharded_counts, "sharded": sharded_counts}
