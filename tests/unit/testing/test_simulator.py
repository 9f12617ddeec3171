"""How the simulator hooks a client: simulated back-off, reasons, detaching, the plugin."""

from __future__ import annotations

import contextlib
import sys
import threading
import warnings
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

import botocore.endpoint
import botocore.session
import pytest
from botocore.config import Config
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import PutError
from pynamodb.models import Model

import shardmodel.testing
from shardmodel.testing import (
    CapacityLimits,
    CapacitySimulator,
    SimulatedClock,
    SimulatorClockWarning,
    SimulatorError,
    run_load,
    throttling_reasons,
)


class Note(Model):
    """A plain PynamoDB model."""

    class Meta:
        table_name = "sim-notes"
        region = "us-east-1"

    pk = UnicodeAttribute(hash_key=True)
    sk = NumberAttribute(range_key=True)


class Hits(Model):
    """A plain PynamoDB counter."""

    class Meta:
        table_name = "sim-hits"
        region = "us-east-1"

    name = UnicodeAttribute(hash_key=True)
    hits = NumberAttribute(default=0)


def test_a_single_client_spends_back_off_on_the_simulated_clock(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
    sim_clock: SimulatedClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A throttled save is retried by botocore after a back-off that moves the clock, not time.

    One WCU per second: the second save in a second is refused, waits on the simulated
    clock into a later second, and is then admitted.
    """
    dynamodb_tables(Note)
    sim = capacity_simulator(Note, limits=CapacityLimits(partition_wcu=1), concurrent=False)
    slept: list[float] = []  # what botocore's retry loop asks time.sleep for, never waited
    monkeypatch.setattr(botocore.endpoint.time, "sleep", slept.append)

    for n in range(3):
        Note(pk="a", sk=n).save()

    assert sum(slept) == 0  # without the simulator botocore would have slept seconds
    assert sim.throttles["TableWriteKeyRangeThroughputExceeded"] >= 2
    assert sim_clock.now() == pytest.approx(sim.backoff_seconds)
    assert sim_clock.now() >= 2.0  # three seconds' capacity: the clock reached the third
    assert Note.count("a") == 3


def test_concurrent_calls_retry_on_their_own_timelines(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
    sim_clock: SimulatedClock,
) -> None:
    """With many simulated clients, a call's back-off does not move the shared clock."""
    dynamodb_tables(Note)
    sim = capacity_simulator(Note, limits=CapacityLimits(partition_wcu=1))

    Note(pk="a", sk=0).save()
    Note(pk="a", sk=1).save()  # refused now, admitted at its own later time

    assert sim_clock.now() == 0.0
    assert sim.backoff_seconds > 0
    assert Note.count("a") == 2


def test_throttling_reasons_tell_a_hot_partition_from_the_table_limit(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
    sim_clock: SimulatedClock,
) -> None:
    """PynamoDB's PutError carries DynamoDB's ThrottlingReasons: key range or table."""
    dynamodb_tables(Note)
    hot = capacity_simulator(Note, limits=CapacityLimits(partition_wcu=5))
    with pytest.raises(PutError) as partition_error:
        for n in range(200):
            Note(pk="hot", sk=n).save()
    hot.detach()

    capacity_simulator(Note, limits=CapacityLimits(table_wcu=5))
    with pytest.raises(PutError) as table_error:
        for n in range(200):
            Note(pk=f"cold-{n}", sk=n).save()

    assert throttling_reasons(partition_error.value) == ("TableWriteKeyRangeThroughputExceeded",)
    assert throttling_reasons(table_error.value) == ("TableWriteProvisionedThroughputExceeded",)
    assert throttling_reasons(ValueError("not a throttle")) == ()


def test_the_same_seed_gives_the_same_numbers(
    dynamodb_tables: Callable[..., None],
) -> None:
    """Two runs of one load with one seed throttle exactly the same requests."""
    dynamodb_tables(Note)

    def run(table_key: str) -> tuple[int, float]:
        clock = SimulatedClock()
        with CapacitySimulator(clock=clock, limits=CapacityLimits(partition_wcu=50), seed=7) as sim:
            sim.attach(Note)
            result = run_load(clock, 100, 3, lambda n: Note(pk=table_key, sk=n).save())
            return result.failures, sim.backoff_seconds

    first, second = run("run-1"), run("run-2")
    assert first == second
    assert first[0] > 0


def test_run_load_reports_how_far_the_writers_fell_behind(
    dynamodb_tables: Callable[..., None],
) -> None:
    """Back-off on the shared clock delays every later call: the result says by how much.

    One client (``concurrent=False``) writing 100 a second to a 50 WCU key waits out each
    throttle's back-off before its next write; the calls planned for 3 s start later and
    later. With ``concurrent=True`` each call waits on its own timeline: none is late.
    """
    dynamodb_tables(Note)

    def run(concurrent: bool) -> Any:
        clock = SimulatedClock()
        limits = CapacityLimits(partition_wcu=50)
        with CapacitySimulator(clock=clock, limits=limits, concurrent=concurrent, seed=7) as sim:
            sim.attach(Note)
            return run_load(clock, 100, 3, lambda n: Note(pk=f"lag-{concurrent}", sk=n).save())

    one_client = run(concurrent=False)
    assert one_client.late > 100 and one_client.lag > 1.0
    assert one_client.ended - one_client.started > 3 + one_client.lag / 2
    assert f"up to {one_client.lag:,.2f} s behind the planned rate" in str(one_client)
    many = run(concurrent=True)
    assert (many.lag, many.late) == (0.0, 0) and "every call on time" in str(many)


def test_a_dynamic_key_on_a_clock_of_its_own_is_named_when_attached() -> None:
    """DynamicShards keeping wall-clock time inside a simulated run: a warning names the fix."""
    from tests.models import DynamicViews

    simulator = CapacitySimulator(clock=SimulatedClock())
    with pytest.warns(SimulatorClockWarning, match=r"DynamicViews: .*DynamicShards\(clock=sim"):
        simulator.attach(DynamicViews)
    simulator.detach()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CapacitySimulator(clock=SimulatedClock()).attach(Note).detach()  # not dynamic: quiet


def test_detaching_restores_the_client(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
) -> None:
    """After detach the client sends straight to moto again and nothing is counted."""
    dynamodb_tables(Note)
    sim = capacity_simulator(Note, limits=CapacityLimits(partition_wcu=1))
    Note(pk="a", sk=0).save()
    sim.detach()
    attempts = sim.attempts

    for n in range(1, 4):
        Note(pk="a", sk=n).save()

    assert sim.attempts == attempts
    assert Note.count("a") == 4


def test_other_retry_modes_are_refused_with_the_fix(moto_dynamodb: None) -> None:
    """Legacy retry mode sleeps in ways the simulator cannot drive: attaching says what to set."""
    client = botocore.session.get_session().create_client(
        "dynamodb", region_name="us-east-1", config=Config(retries={"mode": "legacy"})
    )
    with pytest.raises(SimulatorError, match="standard"):
        CapacitySimulator().attach_client(client)


def test_the_report_names_the_hot_partition(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
) -> None:
    """The text report lists the busiest partition first, with its throttles."""
    dynamodb_tables(Note)
    sim = capacity_simulator(Note, limits=CapacityLimits(partition_wcu=2))
    for n in range(5):
        Note(pk=f"cold-{n}", sk=n).save()
    for n in range(5):
        with contextlib.suppress(PutError):
            Note(pk="busy", sk=n).save()

    header, first_row = sim.report().splitlines()[:2]
    assert "WCU total" in header  # units consumed over the test, not a rate
    assert first_row.split()[:2] == ["sim-notes", "busy"]


def test_the_plugin_is_registered_and_the_api_is_listed() -> None:
    """The pytest11 entry point names the plugin; __all__ lists exactly the public names."""
    plugins = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert plugins.get("shardmodel") == "shardmodel.testing.plugin"
    public = {
        name
        for name, value in vars(shardmodel.testing).items()
        if not name.startswith("_") and not isinstance(value, type(shardmodel.testing))
    }
    assert set(shardmodel.testing.__all__) == public


def test_a_missing_table_gets_the_servers_own_error(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
) -> None:
    """The simulator does not mask a request to a table that does not exist."""
    dynamodb_tables(Note)
    capacity_simulator(Note)
    Note.delete_table()

    with pytest.raises(PutError) as caught:
        Note(pk="a", sk=1).save()

    assert caught.value.cause_response_code == "ResourceNotFoundException"
    Note.create_table(wait=True, billing_mode="PAY_PER_REQUEST")  # for the fixture's teardown


def test_concurrent_increments_are_atomic_as_on_dynamodb(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
) -> None:
    """8 threads of ADDs on one item: bare moto can lose some, the simulated server cannot."""
    dynamodb_tables(Hits)
    capacity_simulator(Hits, limits=CapacityLimits(partition_wcu=1e9))
    connection = Hits._get_connection()

    def add() -> None:
        for _ in range(100):
            connection.update_item("page", actions=[Hits.hits.add(1)])

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often, inside moto's read-modify-write
    try:
        threads = [threading.Thread(target=add) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)

    assert Hits.get("page").hits == 8 * 100
