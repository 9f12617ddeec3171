"""Fault and latency injection: real errors, retried by botocore, PynamoDB and shardmodel."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.connection import Connection
from pynamodb.exceptions import GetError, PutError, TransactWriteError, UpdateError
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from shardmodel import Backoff, HashShards, ShardedKeyAttribute, ShardedModel
from shardmodel.testing import CapacitySimulator, Faults, Latency, SimulatedClock

RATE = 0.10
# every single-item write can suffer these four faults: together, 10% of its attempts
TEN_PERCENT = Faults(
    connection_error=RATE / 4,
    internal_error=RATE / 4,
    throttle=RATE / 4,
    lost_response=RATE / 4,
    unprocessed=RATE / 4,
)


class Reading(ShardedModel):
    """Sensor readings hashed over four shards by their time: a retry hits the same shard."""

    class Meta:
        table_name = "sim-readings"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(hash_key=True, strategy=HashShards(4, on=["at"]))
    at = NumberAttribute(range_key=True)
    value = UnicodeAttribute()


class Tally(Model):
    """A plain PynamoDB counter: incremented with UpdateItem ADD, which is not idempotent."""

    class Meta:
        table_name = "sim-tallies"
        region = "us-east-1"

    name = UnicodeAttribute(hash_key=True)
    hits = NumberAttribute(default=0)


def _retry(action: Callable[[], object], errors: tuple[type[Exception], ...]) -> None:
    """Our own retry, for the rare call that fails every botocore attempt."""
    for _ in range(5):
        try:
            action()
            return
        except errors:
            continue
    action()


def test_ten_percent_faults_over_1000_writes_lose_no_item(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
    sim_clock: SimulatedClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """500 saves and 500 batch-written items with faults on 10% of attempts: all 1,000 read back.

    Throttles, server errors and connection errors are retried by botocore; a lost response
    is retried too (a put is idempotent); unprocessed batch items are resent by PynamoDB;
    unprocessed keys of the read-back by shardmodel's backoff, on the simulated clock.
    """
    dynamodb_tables(Reading)
    sim = capacity_simulator(Reading, faults=TEN_PERCENT, seed=3)
    backoff = Backoff(sleep=sim_clock.sleep, rng=random.Random(4))
    monkeypatch.setattr(Reading.Meta, "shard_backoff", backoff, raising=False)
    expected = {n: f"value-{n}" for n in range(1000)}

    for n in range(500):
        _retry(lambda n=n: Reading(sensor="s-1", at=n, value=expected[n]).save(), (PutError,))

    def write_batch(first: int) -> None:
        with Reading.batch_write() as batch:
            for n in range(first, first + 25):
                batch.save(Reading(sensor="s-1", at=n, value=expected[n]))

    for first in range(500, 1000, 25):
        _retry(lambda first=first: write_batch(first), (PutError,))

    found: dict[int, str] = {}

    def read_back() -> None:
        found.update((r.at, r.value) for r in Reading.batch_get([("s-1", n) for n in expected]))

    _retry(read_back, (GetError,))
    assert found == expected
    assert int(Reading.describe_table()["ItemCount"]) == 1000  # no item on two shards
    assert set(sim.injected) == {
        "connection_error",
        "internal_error",
        "throttle",
        "lost_response",
        "unprocessed",
    }
    injected = sum(sim.injected.values())
    assert 0.05 < injected / sim.attempts < 0.15, sim.report()


def test_a_lost_response_applies_the_write_on_every_attempt(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
) -> None:
    """Every response to an ADD lost: each botocore attempt was applied, then the call fails."""
    dynamodb_tables(Tally)
    Tally(name="clicks").save()
    sim = capacity_simulator(Tally, faults=Faults(lost_response=1.0, operations={"UpdateItem"}))
    attempts = Tally._get_connection().connection.client.meta.config.retries["total_max_attempts"]

    with pytest.raises(UpdateError):
        Tally(name="clicks").update(actions=[Tally.hits.add(1)])

    assert sim.injected["lost_response"] == attempts
    assert Tally.get("clicks", consistent_read=True).hits == attempts


def test_transaction_conflicts_cancel_with_the_reason(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
) -> None:
    """A conflicted transaction raises TransactionCanceled naming TransactionConflict; no write."""
    dynamodb_tables(Tally)
    sim = capacity_simulator(Tally, faults=Faults(transaction_conflict=1.0))
    connection = Connection(region="us-east-1")
    sim.attach_client(connection.client)

    with pytest.raises(TransactWriteError) as caught:
        with TransactWrite(connection=connection) as transaction:
            transaction.save(Tally(name="a"))
            transaction.save(Tally(name="b"))

    codes = [reason.code if reason else None for reason in caught.value.cancellation_reasons]
    assert codes.count("TransactionConflict") == 1
    assert len(codes) == 2
    assert int(Tally.describe_table()["ItemCount"]) == 0


def test_batch_writes_return_unprocessed_items_and_store_the_rest(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
) -> None:
    """A batch call hit by the fault stores only part of its items and returns the others."""
    dynamodb_tables(Tally)
    capacity_simulator(Tally, faults=Faults(unprocessed=1.0, unprocessed_fraction=0.5), seed=9)
    items = [Tally(name=f"t-{n}").serialize() for n in range(25)]

    answer = Tally._get_connection().connection.batch_write_item("sim-tallies", put_items=items)

    unprocessed = answer["UnprocessedItems"]["sim-tallies"]
    assert 0 < len(unprocessed) < 25
    stored = int(Tally.describe_table()["ItemCount"])
    assert stored == 25 - len(unprocessed)
    left_out = {r["PutRequest"]["Item"]["name"]["S"] for r in unprocessed}
    for n in range(25):
        name = f"t-{n}"
        assert Tally.count(name) == (0 if name in left_out else 1)


@pytest.mark.parametrize("fault", ["internal_error", "connection_error", "throttle"])
def test_transient_faults_are_retried_by_botocore(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
    fault: str,
) -> None:
    """At 30% of attempts, 50 saves all succeed: botocore retried each failed attempt."""
    dynamodb_tables(Tally)
    sim = capacity_simulator(Tally, faults=Faults(**{fault: 0.3}), seed=1)

    for n in range(50):
        Tally(name=f"t-{n}").save()

    assert sim.injected[fault] > 0
    assert sim.attempts == 50 + sim.injected[fault]
    assert int(Tally.describe_table()["ItemCount"]) == 50


def test_latency_is_spent_on_the_clock_and_is_seeded(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
    sim_clock: SimulatedClock,
) -> None:
    """10 ms plus up to 5 ms of jitter per attempt advances a single client's clock by that."""
    dynamodb_tables(Tally)
    latency = Latency(fixed=0.010, jitter=0.005)
    sim = capacity_simulator(Tally, latency=latency, concurrent=False, seed=2)

    for n in range(20):
        Tally(name=f"t-{n}").save()

    assert 20 * 0.010 <= sim_clock.now() <= 20 * 0.015
    assert sim_clock.now() == pytest.approx(sim.latency_seconds)
    sim.detach()

    replay = CapacitySimulator(latency=latency, concurrent=False, seed=2).attach(Tally)
    with replay:
        for n in range(20):
            Tally(name=f"t-{n}").save()
    assert replay.latency_seconds == sim.latency_seconds  # same seed, same jitter


def test_fault_rates_must_be_probabilities() -> None:
    """A rate outside [0, 1] is refused when the Faults are built."""
    with pytest.raises(ValueError, match="probability"):
        Faults(throttle=1.5)
    with pytest.raises(ValueError, match="negative"):
        Latency(fixed=-1.0)


def test_a_lost_put_lands_after_the_buffered_ones(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
) -> None:
    """With buffered writes, a put whose response is lost still overwrites an earlier put."""
    dynamodb_tables(Reading)
    sim = capacity_simulator(Reading, buffer_writes=True)
    Reading(sensor="s-1", at=1, value="first").save()  # buffered
    sim.faults = Faults(lost_response=1.0)

    with pytest.raises(PutError):
        Reading(sensor="s-1", at=1, value="second").save()

    sim.faults = Faults()
    assert Reading.get("s-1", 1).value == "second"
