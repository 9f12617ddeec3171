"""One fresh process of ``benchmarks/aio_bench.py``: the sync 16-shard latest 100 vs one partition.

Run by the aio bench as a script (``python benchmarks/aio_fresh.py URL TREE``) with
``PYTHONPATH`` set to the tree whose ``shardmodel`` it measures: this one, or the one
the branch started from. It reads the tables the aio bench loaded (10,000 items of one
key, on one partition and on 16 random shards), with the same 5 ms slept before every
request, and prints ``name=value`` lines: the median wall and CPU of 5 interleaved
rounds after a warm-up (a round's sample the mean of 5 reads back to back, as in the
aio bench), of the sync merged read and of plain PynamoDB's single partition, and their
ratios. It uses only what both trees have.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

import shardmodel
from shardmodel import RandomShards, ShardedKeyAttribute, ShardedModel
from shardmodel.testing import bind_models

LATENCY = 0.005
ROUNDS = 5
READS = 5  # reads per sample, their mean
KEY = "hot"
LATEST = 100


class Single(Model):
    class Meta:
        table_name = "bench-query-single"
        region = "us-east-1"

    pk = UnicodeAttribute(hash_key=True)
    ts = NumberAttribute(range_key=True)
    body = UnicodeAttribute()


class Sharded16(ShardedModel):
    class Meta:
        table_name = "bench-query-shards-16"
        region = "us-east-1"

    pk = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(16))
    ts = NumberAttribute(range_key=True)
    body = UnicodeAttribute()


def _delay(**kwargs: Any) -> None:
    time.sleep(LATENCY)


def _read(model: Any) -> tuple[float, float]:
    """The mean wall and CPU seconds of READS reads back to back."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    reads = [
        [int(i.ts) for i in model.query(KEY, scan_index_forward=False, limit=LATEST)]
        for _ in range(READS)
    ]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if any(len(got) != LATEST or got != sorted(got, reverse=True) for got in reads):
        raise RuntimeError(f"{model.__name__}: wrong result")
    return wall / READS, cpu / READS


def main() -> None:
    url, tree = sys.argv[1], Path(sys.argv[2]).resolve()
    if Path(shardmodel.__file__).resolve().parents[1] != tree:
        raise RuntimeError(f"shardmodel from {shardmodel.__file__}, not from {tree}")
    bind_models(
        [Single, Sharded16],
        host=url,
        region="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    for model in (Single, Sharded16):
        model._get_connection().connection.client.meta.events.register(
            "before-send.dynamodb.*", _delay
        )
    samples: dict[Any, list[tuple[float, float]]] = {Single: [], Sharded16: []}
    for model in samples:
        _read(model)  # warm: the client, its sockets, the worker threads
    for _ in range(ROUNDS):
        for model, found in samples.items():
            found.append(_read(model))
    wall = {m: statistics.median(w for w, _ in s) for m, s in samples.items()}
    cpu = {m: statistics.median(c for _, c in s) for m, s in samples.items()}
    print(f"wall_ratio={wall[Sharded16] / wall[Single]}")
    print(f"cpu_ratio={cpu[Sharded16] / cpu[Single]}")
    print(f"merged_wall_ms={wall[Sharded16] * 1e3}")
    print(f"merged_cpu_ms={cpu[Sharded16] * 1e3}")
    print(f"single_wall_ms={wall[Single] * 1e3}")
    print(f"single_cpu_ms={cpu[Single] * 1e3}")


if __name__ == "__main__":
    main()
