"""Rounds of requests per merged latest-100 read, over many random layouts (no server).

The merged query asks each shard for ``first_page_size(100, shards)`` items first; a
shard that holds more of the newest 100 than that is read again: a second round trip,
which costs a whole request latency. A bigger first page makes second rounds rarer and
reads more items (read capacity, and the bench's "items read <= 2x returned" target).

For each first-page size this drives the real :class:`shardmodel.engine.merge.MergedQuery`
over ``TRIALS`` random layouts (every item on a uniformly random shard, as
``RandomShards`` writes them; a fresh layout per trial, not one seeded data set) with
an in-memory fetch, and prints the share of reads needing a second round, the mean
rounds and the mean items read per item returned.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from typing import Any
from unittest import mock

from shardmodel.engine import merge as query_module
from shardmodel.engine.merge import MergedQuery, QueryIdentity, first_page_size

SHARDS = 16
LATEST = 100
ITEMS = 400  # per layout: enough that every shard has items past the newest 100
TRIALS = 1000


def _layout(rng: random.Random) -> dict[str, list[dict[str, Any]]]:
    """ITEMS items, newest first, each on a random shard."""
    shards: dict[str, list[dict[str, Any]]] = {f"k#{n}": [] for n in range(SHARDS)}
    for ts in range(ITEMS, 0, -1):
        key = f"k#{rng.randrange(SHARDS)}"
        shards[key].append({"pk": {"S": key}, "ts": {"N": str(ts)}})
    return shards


def _read(shards: dict[str, list[dict[str, Any]]]) -> tuple[int, int]:
    """(rounds, items read) of one merged latest-100 read of a layout."""
    calls: dict[str, int] = {}
    read = 0

    def fetch(key: str, start: Any, page: int | None) -> dict[str, Any]:
        nonlocal read
        items = shards[key]
        offset = 0 if start is None else int(start["offset"]["N"])
        chunk = items[offset : offset + (page or len(items))]
        calls[key] = calls.get(key, 0) + 1
        read += len(chunk)
        response: dict[str, Any] = {"Items": chunk, "Count": len(chunk)}
        if offset + len(chunk) < len(items):
            last = dict(chunk[-1])
            last["offset"] = {"N": str(offset + len(chunk))}
            response["LastEvaluatedKey"] = last
        return response

    merged: MergedQuery[Any] = MergedQuery(
        fetch=fetch,
        groups=[list(shards)],
        sort_key=lambda item: int(item["ts"]["N"]),
        forward=False,
        build=lambda raw: raw,
        key_names=["pk", "ts", "offset"],
        identity=QueryIdentity(model="m", index=None, logical_key="k", forward=False),
        encode=lambda cursor: "",
        limit=LATEST,
        parallelism=1,  # deterministic; rounds do not depend on threads
    )
    got = [int(item["ts"]["N"]) for item in merged]
    if got != list(range(ITEMS, ITEMS - LATEST, -1)):
        raise RuntimeError("the merge returned the wrong items")
    return max(calls.values()), read


def measure(page: int, trials: int = TRIALS, seed: int = 0) -> tuple[float, float, float]:
    """(share of reads with a second round, mean rounds, mean items read / returned)."""
    rng = random.Random(seed)
    sizing: Callable[[int, int], int] = lambda remaining, shards: page  # noqa: E731
    rounds, reads = [], []
    with mock.patch.object(query_module, "first_page_size", sizing):
        for _ in range(trials):
            found, read = _read(_layout(rng))
            rounds.append(found)
            reads.append(read / LATEST)
    second = sum(1 for r in rounds if r > 1) / trials
    return second, statistics.mean(rounds), statistics.mean(reads)


def main() -> None:
    chosen = first_page_size(LATEST, SHARDS)
    print(
        f"merged latest {LATEST} of {ITEMS} items on {SHARDS} random shards: "
        f"{TRIALS} random layouts per first-page size (MergedQuery, in memory)"
    )
    print(f"{'first page':>10}{'2nd round':>11}{'rounds':>8}{'read/ret':>10}")
    for page in (8, 10, 12, 13, 14, 16, 20):
        second, rounds, read = measure(page)
        mark = "  <- first_page_size" if page == chosen else ""
        print(f"{page:>10}{second:>10.1%}{rounds:>8.2f}{read:>10.2f}{mark}")


if __name__ == "__main__":
    main()
