"""Counter proofs with the testing toolkit: partition capacity and injected faults."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import UpdateError
from pynamodb.models import Model

from shardmodel import CounterAttribute, RandomShards, ShardedKeyAttribute, ShardedModel
from shardmodel.testing import (
    CapacityLimits,
    CapacitySimulator,
    Faults,
    SimulatedClock,
    run_load,
)
from tests.support import run_threads

#: The fault tests drive threads without moving the simulated clock: lift the capacity
#: limits there so only the injected faults fail requests.
UNLIMITED = CapacityLimits(partition_wcu=1e9, partition_rcu=1e9)

RATE = 500  # increments per simulated second: 5x a partition of PARTITION_WCU
PARTITION_WCU = 100  # DynamoDB's 1,000 / 10: the same ratios, 10x fewer requests


class HotCounter(Model):
    """An unsharded counter: every increment on one item, one partition."""

    class Meta:
        table_name = "hot-counter"
        region = "us-east-1"

    name = UnicodeAttribute(hash_key=True)
    views = NumberAttribute(default=0)


class SpreadCounter(ShardedModel):
    """The same counter over 10 random shards."""

    class Meta:
        table_name = "spread-counter"
        region = "us-east-1"

    name = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(10))
    views = CounterAttribute(default=0)


def test_ten_shards_absorb_five_times_a_partitions_increments(
    capacity_simulator: Callable[..., CapacitySimulator],
    dynamodb_tables: Callable[..., None],
    sim_clock: SimulatedClock,
) -> None:
    """500 increments/s at 100 WCU/s partitions: throttled on one item, none over 10 shards."""
    dynamodb_tables(HotCounter, SpreadCounter)
    limits = CapacityLimits(partition_wcu=PARTITION_WCU)
    simulator = capacity_simulator(HotCounter, SpreadCounter, limits=limits)
    connection = HotCounter._get_connection()

    def hot(_: int) -> None:
        connection.update_item("page", actions=[HotCounter.views.add(1)])

    hot_result = run_load(sim_clock, RATE, 1, hot)
    spread_result = run_load(sim_clock, RATE, 1, lambda _: SpreadCounter.add("page", views=1))
    hot_usage = simulator.table_usage("hot-counter")
    spread_usage = simulator.table_usage("spread-counter")
    assert hot_usage.write_throttles > RATE // 2
    assert spread_usage.write_throttles == 0
    assert spread_result.failures == 0
    assert SpreadCounter.get("page").views == RATE
    assert hot_result.calls == RATE


def test_faults_cause_retries_but_the_count_is_exact(
    capacity_simulator: Callable[..., CapacitySimulator], dynamodb_tables: Callable[..., None]
) -> None:
    """8 threads x 250 increments with 10% injected faults reach exactly 2,000.

    Throttles and unsent requests are resent by botocore and then by add() itself; they
    never applied the write, so resending an untokened ADD is safe.
    """
    dynamodb_tables(SpreadCounter)
    faults = Faults(throttle=0.05, connection_error=0.05)
    simulator = capacity_simulator(SpreadCounter, faults=faults, seed=3, limits=UNLIMITED)
    errors = run_threads(8, 250, lambda w, n: SpreadCounter.add("page", views=1))
    assert errors == []
    assert sum(simulator.injected.values()) > 140  # about 10% of 2,000 attempts
    assert SpreadCounter.get("page").views == 2_000


def test_every_fault_kind_with_tokens_counts_exactly(
    capacity_simulator: Callable[..., CapacitySimulator], dynamodb_tables: Callable[..., None]
) -> None:
    """With tokens, even ambiguous faults (500s, lost responses) are resent safely.

    One thread: moto applies concurrent conditional updates non-atomically (the threaded
    tokened proof runs on dynalite, tests/integration/test_counters.py).
    """
    dynamodb_tables(SpreadCounter)
    faults = Faults(throttle=0.03, internal_error=0.03, connection_error=0.02, lost_response=0.02)
    simulator = capacity_simulator(SpreadCounter, faults=faults, seed=4, limits=UNLIMITED)
    errors = run_threads(8, 150, lambda w, n: SpreadCounter.add("tok", views=1, token=f"{w}:{n}"))
    assert errors == []
    assert simulator.injected["lost_response"] > 5 and simulator.injected["internal_error"] > 5
    assert SpreadCounter.get("tok").views == 1200


def test_lost_responses_never_count_a_tokened_increment_twice(
    capacity_simulator: Callable[..., CapacitySimulator], dynamodb_tables: Callable[..., None]
) -> None:
    """Writes applied but answered with a timeout are retried by botocore: tokens dedupe."""
    dynamodb_tables(SpreadCounter)
    simulator = capacity_simulator(
        SpreadCounter, faults=Faults(lost_response=0.2), seed=5, limits=UNLIMITED
    )
    errors = run_threads(4, 100, lambda w, n: SpreadCounter.add("t", views=1, token=f"{w}:{n}"))
    assert errors == []
    assert simulator.injected["lost_response"] > 20
    assert SpreadCounter.get("t").views == 400


def test_without_a_token_a_lost_response_counts_twice(
    capacity_simulator: Callable[..., CapacitySimulator], dynamodb_tables: Callable[..., None]
) -> None:
    """Why tokens exist: botocore resends a write whose response was lost."""
    dynamodb_tables(SpreadCounter)
    faults = Faults(lost_response=0.3, operations=["UpdateItem"])
    simulator = capacity_simulator(SpreadCounter, faults=faults, seed=9, limits=UNLIMITED)
    for _ in range(40):
        # when every attempt's response is lost the caller cannot know that it counted
        with contextlib.suppress(UpdateError):
            SpreadCounter.add("plain", views=1)
    applied = simulator.attempts  # every attempt was applied, lost responses included
    assert simulator.injected["lost_response"] > 5
    assert SpreadCounter.get("plain").views == applied > 40
