"""Run a capacity plan's suggested layout on the capacity simulator, at the planned rate.

:func:`verify_plan` is what ``shardmodel plan --verify`` runs: advice must hold in the
library's own simulator. It takes the strategy the plan suggests
(:attr:`shardmodel.capacity.ShardPlan.suggestion`), places the planned writes a second
as that strategy places them (the strategy's own ``pick`` or hash), and sends the planned
Queries a second (each reading every shard under ``RandomShards``, the first page the
merged query asks of each, one shard under ``HashShards``), both sides at once for
``seconds`` simulated seconds, and counts what the simulator's capacity ledger throttled.
On-demand partitions: 1,000 WCU and 3,000 RCU a second each, or a linear mix, every
physical key on its own.

It charges the ledger directly, the rates and not a server's answers: a verification of
any accepted input takes seconds. Where the requests are more than
:data:`MAX_VERIFY_REQUESTS`, it follows a sample of the shards (every shard is placed
alike, so each is a fair draw) and scales their throttles to the whole layout.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Iterator
from typing import Any

from attrs import frozen

from shardmodel.capacity import DEFAULT_HEADROOM, ShardPlan, query_units, shards_for, write_units
from shardmodel.engine.merge import first_page_size
from shardmodel.keyspace.strategies import MAX_SHARDS, HashShards, RandomShards
from shardmodel.testing.capacity import CapacityLedger, CapacityLimits, Charge, PartitionId

__all__ = ["MAX_VERIFY_REQUESTS", "PlanRun", "verify_plan"]

#: The most shard requests a verification charges one by one; beyond it a sample of the
#: shards is followed.
MAX_VERIFY_REQUESTS = 1_000_000

_TABLE = "planned"


@frozen
class PlanRun:
    """What a plan's layout did on the capacity simulator.

    Attributes:
        plan: the plan that was run.
        strategy: the layout, as declared (``"RandomShards(20)"``).
        seconds: simulated seconds of the load (both sides at once).
        writes: writes sent.
        reads: shard Queries sent (a Query of every shard counts once per shard).
        write_throttles: write attempts the simulator refused (scaled when sampled).
        read_throttles: read attempts the simulator refused (scaled when sampled).
        failures: operations that raised after every retry (none retry here: 0 unless
            a throttle is counted as one; kept for the report).
        sampled: shards followed (the layout's count when every one was).
    """

    plan: ShardPlan
    strategy: str
    seconds: float
    writes: int
    reads: int
    write_throttles: int
    read_throttles: int
    failures: int
    sampled: int = 0

    @property
    def throttles(self) -> int:
        """Every refused attempt, reads and writes."""
        return self.write_throttles + self.read_throttles

    @property
    def passed(self) -> bool:
        """True when the layout took the planned rate with no throttle."""
        return self.throttles == 0 and self.failures == 0


def _check(count: Any, shards: int | None, seconds: Any) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_SHARDS:
        raise ValueError(f"verify_plan(shards={shards!r}): give an int from 1 to {MAX_SHARDS}")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 1 <= seconds <= 60:
        raise ValueError(f"verify_plan(seconds={seconds!r}): give from 1 to 60 simulated seconds")


def verify_plan(
    item_bytes: int,
    reads_per_second: float = 0,
    items_per_read: int = 1,
    writes_per_second: float = 0,
    consistent: bool = False,
    headroom: float = DEFAULT_HEADROOM,
    *,
    shards: int | None = None,
    seconds: float = 2.0,
    seed: int = 0,
    on_second: Callable[[int, int], None] | None = None,
) -> PlanRun:
    """Plan one hot key's traffic (:func:`~shardmodel.capacity.shards_for`) and run it.

    The arguments are ``shards_for``'s; ``shards`` overrides the planned count (to see
    what a smaller layout does), ``seconds`` is how long the load runs, ``seed`` seeds
    the random picks, ``on_second(done, total)`` is called after each simulated second
    (the command line prints it).

    Raises:
        ValueError: bad arguments, named.
    """
    plan = shards_for(item_bytes, reads_per_second, items_per_read, writes_per_second,
                      consistent, headroom)  # fmt: skip
    if shards is None and plan.shards > MAX_SHARDS:
        raise ValueError(
            f"this traffic needs {plan.shards:,} shards, over the {MAX_SHARDS:,} a strategy "
            "takes; verify a lower rate"
        )
    count = plan.shards if shards is None else shards
    _check(count, shards, seconds)
    hashed = plan.suggestion == "hashed"
    strategy: Any = HashShards(count, on="seq") if hashed else RandomShards(count)
    page = items_per_read if hashed else first_page_size(items_per_read, count)
    per_query = 1 if hashed else count
    requests = (writes_per_second + reads_per_second * per_query) * seconds
    followed = count if requests <= MAX_VERIFY_REQUESTS else _sample(count, requests)
    run = _Run(
        strategy,
        count,
        followed,
        write_units(item_bytes),
        query_units(item_bytes, page, consistent),
        random.Random(seed),
    )
    whole = math.ceil(seconds)
    for second in range(whole):
        span = min(1.0, seconds - second)
        run.second(second, span, writes_per_second, reads_per_second, hashed)
        if on_second is not None:
            on_second(second + 1, whole)
    scale = count / followed
    return PlanRun(
        plan=plan,
        strategy=f"{type(strategy).__name__}({count})",
        seconds=float(seconds),
        writes=round(writes_per_second * seconds),
        reads=round(reads_per_second * seconds) * per_query,
        write_throttles=round(run.write_throttles * scale),
        read_throttles=round(run.read_throttles * scale),
        failures=0,
        sampled=followed,
    )


def _sample(count: int, requests: float) -> int:
    """Shards to follow so that about MAX_VERIFY_REQUESTS charges are made (at least 1)."""
    return max(1, min(count, math.floor(count * MAX_VERIFY_REQUESTS / requests)))


class _Run:
    """The charges of one verification: shard placement, and the ledger that judges it.

    With every shard followed, an item goes where the strategy puts it (its own ``pick``,
    or the hash of a fresh ``seq``). With a sample, the arrivals that land on the followed
    shards are drawn directly (a geometric skip between them), each on a uniform one of
    them: both strategies place uniformly, and the others' arrivals cost nothing.
    """

    def __init__(
        self, strategy: Any, count: int, followed: int, wcu: int, rcu: float, rng: random.Random
    ) -> None:
        self.strategy = strategy
        self.count = count
        self.followed = followed
        self.wcu = float(wcu)
        self.rcu = rcu
        self.rng = rng
        self.ledger = CapacityLedger(CapacityLimits())
        self.parts = [PartitionId(_TABLE, None, f"hot#{shard}") for shard in range(followed)]
        self.write_throttles = 0
        self.read_throttles = 0

    def _shard(self) -> int:
        """Where the strategy puts one item: a random shard, or the hash of a fresh seq."""
        if isinstance(self.strategy, RandomShards):
            return int(self.rng.randrange(self.count))  # RandomShards.pick, keyless
        return int(self.strategy.shard_of([str(self.rng.randrange(10**12))]))

    def _arrivals(self, start: float, rate: float, total: int) -> Iterator[tuple[float, int]]:
        """(time, shard) of each of ``total`` evenly spaced items on a followed shard."""
        if self.followed == self.count:
            for n in range(total):
                yield start + n / rate, self._shard()
            return
        share = self.followed / self.count
        log_miss = math.log(1.0 - share) if share < 1 else -math.inf
        n = -1
        while True:
            n += 1 + int(math.log(1.0 - self.rng.random()) / log_miss)
            if n >= total:
                return
            yield start + n / rate, self.rng.randrange(self.followed)

    def second(self, second: int, span: float, writes: float, reads: float, hashed: bool) -> None:
        """Charge one simulated second's writes and Queries, in the order they arrive."""
        start = 1_000_000 + second
        streams: list[Iterator[tuple[float, int, bool]]] = []
        if writes:
            arrivals = self._arrivals(start, writes, round(writes * span))
            streams.append((when, shard, True) for when, shard in arrivals)
        if reads and hashed:
            arrivals = self._arrivals(start, reads, round(reads * span))
            streams.append((when, shard, False) for when, shard in arrivals)
        elif reads:
            every = range(round(reads * span))
            streams.append((start + n / reads, -1, False) for n in every)
        admit = self.ledger.admit_all
        for when, shard, is_write in heapq.merge(*streams):
            if is_write:
                if admit([Charge(self.parts[shard], self.wcu)], "write", when):
                    self.write_throttles += 1
                continue
            for target in [shard] if shard >= 0 else range(self.followed):
                if admit([Charge(self.parts[target], self.rcu)], "read", when):
                    self.read_throttles += 1
