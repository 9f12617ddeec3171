"""A 16 -> 32 shard count change of 100,000 items on dynalite: requests, wall, memory.

Loads ``ITEMS`` items (``KEYS`` logical keys of ``ITEMS / KEYS`` sort keys, HashShards(16)
on the sort key) into a dynalite started here, then runs every phase with
:meth:`~shardmodel.migration.Reshard.steps` (settle 0: no process lags) and counts the
requests each phase's job sends (botocore's ``before-send`` event, where every request
passes), the wall time of each, and the process's peak resident memory.

Read amplification: in every phase, one query of one logical key (limit 100) and one
``get``, counted in requests and items read per item returned. The baseline, measured in
the same run before the migration starts, is the same query and get on the declared
layout (16 shards): the ratio is what the migration adds to a read.

``python -m benchmarks.reshard_bench [items]`` (default 100,000; ``make bench`` runs 20,000
to keep the whole bench short).

``python -m benchmarks.reshard_bench ITEMS --abort-in PHASE``: after that straight change
(the baseline), the same change of the same items on a second table, aborted in
``PHASE`` and taken to done and back (``Reshard.resume``): its rows, its totals and
their ratio to the baseline's.
"""

from __future__ import annotations

import itertools
import os
import resource
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import HashShards, ShardedKeyAttribute, ShardedModel
from shardmodel.migration import MigrationState, Phase, Reshard, follow
from shardmodel.testing import bind_models, create_tables, dynalite_server

ROOT = Path(__file__).resolve().parents[1]
DYNALITE = ROOT / "node_modules" / ".bin" / "dynalite"
ITEMS = 100_000
KEYS = 100
CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}


class Reading(ShardedModel):
    """Hash-sharded on the sort key, as the resharding guide's example."""

    class Meta:
        table_name = "bench-reshard"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(hash_key=True, strategy=HashShards(16, on=["seq"]))
    seq = NumberAttribute(range_key=True)
    value = UnicodeAttribute(null=True)


class Requests:
    """Counts every request the process sends, by operation."""

    def __init__(self) -> None:
        self.sent: Counter[str] = Counter()

    def __call__(self, request: Any, **_: Any) -> None:
        target = request.headers.get("X-Amz-Target", b"")
        name = target.decode() if isinstance(target, bytes) else str(target)
        self.sent[name.rsplit(".", 1)[-1]] += 1

    def watch(self, client: Any) -> None:
        client.meta.events.register("before-send.dynamodb", self)


def phase_rows(
    steps: Iterable[MigrationState],
    requests: Requests,
    reads: Callable[[], int],
    sweep: str | None = None,
) -> tuple[float, Counter[str]]:
    """Print the header and a row per phase ``steps`` reaches: its wall time, the requests
    sent to reach it by operation, and ``reads()``'s requests in it (counted apart); then
    (``sweep``) a row of that name for what ran after the last yield. Returns the wall
    and the requests by operation in all."""
    print(f"{'reached':<14}{'wall s':>9}{'requests':>10}  {'by operation':<60}{'read req':>9}")
    total_wall = 0.0
    total: Counter[str] = Counter()
    mark = time.perf_counter()
    seen = Counter(requests.sent)
    labels = (("back:" if s.returning else "") + s.phase.value for s in steps)
    after = [] if sweep is None else [sweep]
    for name in itertools.chain(labels, after):  # lazily: each row when its step is done
        now = time.perf_counter()
        sent = requests.sent - seen
        total += sent
        read = "" if name == sweep else str(reads())
        seen = Counter(requests.sent)
        detail = ", ".join(f"{k} {v:,}" for k, v in sent.most_common(5))
        print(f"{name:<14}{now - mark:>9.1f}{sum(sent.values()):>10,}  {detail:<60}{read:>9}")
        total_wall += now - mark
        mark = time.perf_counter()
    return total_wall, total


def _load(model: type[Reading], items: int) -> None:
    per_key = items // KEYS
    with model.batch_write() as batch:
        for key in range(KEYS):
            for seq in range(per_key):
                batch.save(model(sensor=f"sensor-{key}", seq=seq, value="x" * 40))


def _reads(requests: Requests, model: type[Reading] = Reading) -> tuple[int, float]:
    """Requests and items read per item returned by one query (limit 100) and one get."""
    before = sum(requests.sent.values())
    returned = len(list(model.query("sensor-7", limit=100)))
    model.get("sensor-7", 7)
    returned += 1
    sent = sum(requests.sent.values()) - before
    return sent, sent / returned


class Aborted(Reading):
    """The same layout on a second table: the change aborted and taken back."""

    class Meta:
        table_name = "bench-reshard-aborted"
        region = "us-east-1"


def _aborted(items: int, abort_in: Phase, requests: Requests, baseline: tuple[float, int]) -> None:
    """The change of ``Aborted``'s items aborted in ``abort_in``, then done and back."""
    _load(Aborted, items)
    follow(Aborted, cache_seconds=0)
    operator = Reshard(Aborted)
    requests.watch(Aborted._get_connection().connection.client)
    requests.watch(operator.store.items()._get_connection().connection.client)

    def steps() -> Iterable[MigrationState]:
        for state in operator.steps(32, settle_seconds=0, page_size=100):
            yield state
            if state.phase == abort_in:
                break
        operator.abort()
        states = operator.resume(page_size=100)
        next(states)  # the phase it was aborted in
        yield from states

    print(f"\nthe same change on a second table, aborted in {abort_in.value}, then done and back:")
    # the return's sweep runs after its last yield
    reads = lambda: _reads(requests, Aborted)[0]  # noqa: E731
    total_wall, total = phase_rows(steps(), requests, reads, "back:sweep")
    requested = sum(total.values())
    wall, sent = baseline
    print(
        f"aborted total: {total_wall:.0f} s, {requested:,} requests "
        f"({requested / items:.1f} per item); against the straight change: wall "
        f"{total_wall / wall:.2f}x, requests {requested / sent:.2f}x"
    )
    operator.finish()  # the code never changed
    assert Aborted.count("sensor-7") == items // KEYS


def main(items: int = ITEMS, abort_in: Phase | None = None) -> None:
    """Load, migrate phase by phase, print the table."""
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")
    with dynalite_server(DYNALITE) as url:
        bind_models([Reading], host=url, **CREDENTIALS)
        create_tables([Reading])
        started = time.perf_counter()
        _load(Reading, items)
        loaded = time.perf_counter() - started
        requests = Requests()
        follow(Reading, cache_seconds=0)
        operator = Reshard(Reading)
        requests.watch(Reading._get_connection().connection.client)
        requests.watch(operator.store.items()._get_connection().connection.client)
        baseline, _ = _reads(requests)
        print(
            f"reshard {items:,} items 16 -> 32 shards on dynalite (loaded in {loaded:.0f} s); "
            f"baseline read (query of 100 + get, 16 shards, no migration): {baseline} requests"
        )
        steps = operator.steps(32, settle_seconds=0, page_size=100)
        # steps() runs the sweep after its last yield
        total_wall, total = phase_rows(steps, requests, lambda: _reads(requests)[0], "sweep")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(
            f"total: {total_wall:.0f} s, {sum(total.values()):,} requests "
            f"({sum(total.values()) / items:.1f} per item); peak memory {peak / 2**20:.0f} MiB"
        )
        assert operator.status() is not None and operator.status().phase == Phase.DONE  # type: ignore[union-attr]
        assert Reading.count("sensor-7") == items // KEYS
        if abort_in is not None:
            bind_models([Aborted], host=url, **CREDENTIALS)
            create_tables([Aborted])
            _aborted(items, abort_in, requests, (total_wall, sum(total.values())))


if __name__ == "__main__":
    arguments = sys.argv[1:]
    phase = None
    if "--abort-in" in arguments:
        at = arguments.index("--abort-in")
        phase = Phase(arguments[at + 1])
        del arguments[at : at + 2]
    main(int(arguments[0]) if arguments else ITEMS, phase)
