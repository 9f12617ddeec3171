"""Run a capacity plan's suggested layout on the capacity simulator, at the planned rate.

:func:`verify_plan` is what ``shardmodel plan --verify`` runs: advice must hold in the
library's own simulator. It declares a model with the strategy the plan suggests
(:attr:`shardmodel.capacity.ShardPlan.suggestion`) on a fresh table of in-process moto,
drives the planned writes a second for ``seconds`` simulated seconds (items of the planned
size, spread as the strategy spreads them), then the planned Queries a second (each
reading every shard under ``RandomShards``, one shard under ``HashShards``, with the
planned items a Query), and counts what the simulator throttled. On-demand partitions:
1,000 WCU and 3,000 RCU a second each, every physical key on its own.
"""

from __future__ import annotations

import math
import random
import uuid
from typing import Any

from attrs import frozen
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel.capacity import DEFAULT_HEADROOM, ShardPlan, shards_for
from shardmodel.core.tables import create_table
from shardmodel.keyspace.keys import PhysicalKey
from shardmodel.keyspace.strategies import MAX_SHARDS, HashShards, RandomShards
from shardmodel.sizing import item_size
from shardmodel.testing.backend import mock_dynamodb
from shardmodel.testing.clock import SimulatedClock
from shardmodel.testing.load import run_load
from shardmodel.testing.simulator import CapacitySimulator

__all__ = ["MAX_VERIFY_REQUESTS", "PlanRun", "verify_plan"]

#: The most requests a verification sends (rate x seconds, Queries x shards they read):
#: in-process moto answers a few thousand a second.
MAX_VERIFY_REQUESTS = 200_000


@frozen
class PlanRun:
    """What a plan's layout did on the capacity simulator.

    Attributes:
        plan: the plan that was run.
        strategy: the layout, as declared (``"RandomShards(20)"``).
        seconds: simulated seconds of each side's load.
        writes: writes sent.
        reads: Queries sent (a Query of every shard counts once per shard).
        write_throttles: write attempts the simulator refused.
        read_throttles: read attempts the simulator refused.
        failures: operations that raised after every retry.
    """

    plan: ShardPlan
    strategy: str
    seconds: float
    writes: int
    reads: int
    write_throttles: int
    read_throttles: int
    failures: int

    @property
    def throttles(self) -> int:
        """Every refused attempt, reads and writes."""
        return self.write_throttles + self.read_throttles

    @property
    def passed(self) -> bool:
        """True when the layout took the planned rate with no throttle."""
        return self.throttles == 0 and self.failures == 0


def _models(table: str, strategy: Any, seed: int) -> tuple[Any, Any]:
    """The planned model, and a plain one on the same table that fills chosen shards."""
    from pynamodb.models import Model

    from shardmodel.attributes import ShardedKeyAttribute
    from shardmodel.model.sharded import ShardedModel

    class PlannedKey(ShardedModel):
        class Meta:
            table_name = table
            region = "us-east-1"
            max_retry_attempts = 0  # every throttle counts: none is hidden by a retry

        key = ShardedKeyAttribute(hash_key=True, strategy=strategy, rng=random.Random(seed))
        seq = NumberAttribute(range_key=True)
        pad = UnicodeAttribute(null=True)

    class StoredItem(Model):
        class Meta:
            table_name = table
            region = "us-east-1"

        key = UnicodeAttribute(hash_key=True)
        seq = NumberAttribute(range_key=True)
        pad = UnicodeAttribute(null=True)

    return PlannedKey, StoredItem


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
) -> PlanRun:
    """Plan one hot key's traffic (:func:`~shardmodel.capacity.shards_for`) and run it.

    The arguments are ``shards_for``'s; ``shards`` overrides the planned count (to see
    what a smaller layout does), ``seconds`` is how long each side runs, ``seed`` seeds
    the random picks. Runs on its own table of in-process moto (nested in a running
    :func:`~shardmodel.testing.mock_dynamodb` it shares it), never on AWS.

    Raises:
        ValueError: bad arguments, or more than :data:`MAX_VERIFY_REQUESTS` requests.
    """
    plan = shards_for(item_bytes, reads_per_second, items_per_read, writes_per_second,
                      consistent, headroom)  # fmt: skip
    if shards is None and plan.shards > MAX_SHARDS:
        raise ValueError(
            f"this traffic needs {plan.shards:,} shards, over the {MAX_SHARDS:,} a strategy "
            "takes; verify a lower rate"
        )
    count = plan.shards if shards is None else shards
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_SHARDS:
        raise ValueError(f"verify_plan(shards={shards!r}): give an int from 1 to {MAX_SHARDS}")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 1 <= seconds <= 60:
        raise ValueError(f"verify_plan(seconds={seconds!r}): give from 1 to 60 simulated seconds")
    hashed = plan.suggestion == "hashed"
    per_query = count if not hashed else 1
    requests = (writes_per_second + reads_per_second * per_query) * seconds
    if requests > MAX_VERIFY_REQUESTS:
        raise ValueError(
            f"verifying this plan sends {requests:,.0f} requests, over the "
            f"{MAX_VERIFY_REQUESTS:,} a verification may send (in-process moto answers a "
            "few thousand a second); verify a lower rate or fewer seconds"
        )
    strategy = HashShards(count, on="seq") if hashed else RandomShards(count)
    with mock_dynamodb():
        model, stored = _models(f"planned-{uuid.uuid4().hex[:12]}", strategy, seed)
        create_table(model)
        try:
            pad = _pad(model, stored, item_bytes, count)
            per_shard = items_per_read if hashed else math.ceil(items_per_read / count)
            keys = _fill(model, stored, strategy, count, per_shard if reads_per_second else 0, pad)
            clock = SimulatedClock(start=1_000_000)
            simulator = CapacitySimulator(clock=clock, seed=seed, buffer_writes=True)
            rng = random.Random(seed)
            with simulator.attach(model):
                failures = 0
                if writes_per_second > 0:

                    def write(n: int) -> None:
                        model("hot", rng.randrange(10**12), pad=pad).save()

                    failures += run_load(clock, writes_per_second, seconds, write).failures
                if reads_per_second > 0:

                    def read(n: int) -> None:
                        for key in [rng.choice(keys)] if hashed else keys:
                            query = model.query(
                                PhysicalKey(key), consistent_read=consistent, limit=per_shard
                            )
                            list(query)

                    failures += run_load(clock, reads_per_second, seconds, read).failures
            usage = simulator.table_usage(model.Meta.table_name)
        finally:
            model.delete_table()
    return PlanRun(
        plan=plan,
        strategy=f"{type(strategy).__name__}({count})",
        seconds=float(seconds),
        writes=round(writes_per_second * seconds),
        reads=round(reads_per_second * seconds) * per_query,
        write_throttles=usage.write_throttles,
        read_throttles=usage.read_throttles,
        failures=failures,
    )


def _pad(model: Any, stored: Any, item_bytes: int, count: int) -> str:
    """The pad that makes a stored item ``item_bytes`` long (or as near), shard suffix included.

    Sized on the longest physical key (the last shard's), so no item costs a unit more
    than planned.
    """
    from shardmodel.engine import sharding_of

    longest = sharding_of(model).key().layout.join("hot", [count - 1])
    bare = item_size(stored(longest, 10**12 - 1, pad="").serialize())  # the longest seq
    return "x" * max(0, item_bytes - bare)


def _fill(
    model: Any, stored: Any, strategy: Any, count: int, per_shard: int, pad: str
) -> list[str]:
    """Store ``per_shard`` items on every shard (before the simulator is attached).

    Returns every shard's physical key. A hashed shard holds the items whose ``seq``
    hashes to it, as the planned model would have written them.
    """
    from shardmodel.engine import sharding_of

    layout = sharding_of(model).key().layout
    keys = [layout.join("hot", [shard]) for shard in range(count)]
    filled = [0] * count
    seq = 0
    with stored.batch_write() as batch:
        while per_shard and min(filled) < per_shard:
            shard = (
                strategy.shard_of([str(seq)]) if isinstance(strategy, HashShards) else seq % count
            )
            if filled[shard] < per_shard:
                filled[shard] += 1
                batch.save(stored(keys[shard], seq, pad=pad))
            seq += 1
    return keys
