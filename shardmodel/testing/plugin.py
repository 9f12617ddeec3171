"""The pytest plugin: in-process moto DynamoDB, model tables, and the capacity simulator.

Registered through the ``pytest11`` entry point, so installing shardmodel makes these
fixtures available to every test suite:

* ``moto_dynamodb``: in-process moto with fake credentials and region;
* ``dynamodb_tables``: call with models (sharded or plain PynamoDB) to create their
  tables; they are dropped after the test;
* ``sim_clock``: a :class:`~shardmodel.testing.SimulatedClock` at 0;
* ``capacity_simulator``: call with models (and any
  :class:`~shardmodel.testing.CapacitySimulator` option) to attach a simulator on
  ``sim_clock``; it is detached after the test, and a failing test's report shows the
  busiest partitions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pynamodb.models import Model

from shardmodel.testing.backend import mock_dynamodb
from shardmodel.testing.clock import SimulatedClock
from shardmodel.testing.simulator import CapacitySimulator
from shardmodel.testing.tables import bind_models, create_tables, drop_tables


@pytest.fixture
def moto_dynamodb() -> Iterator[None]:
    """In-process moto DynamoDB with fake credentials and region for one test."""
    with mock_dynamodb():
        yield


@pytest.fixture
def dynamodb_tables(moto_dynamodb: None) -> Iterator[Callable[..., None]]:
    """Call with models to create their tables on moto; they are dropped after the test."""
    created: list[type[Model]] = []

    def make(*models: type[Model]) -> None:
        bind_models(models, host=None)
        create_tables(models)
        created.extend(models)

    yield make
    drop_tables(reversed(created))
    bind_models(created, host=None)


@pytest.fixture
def sim_clock() -> SimulatedClock:
    """A simulated clock at 0 that only the test moves."""
    return SimulatedClock()


@pytest.fixture
def capacity_simulator(
    request: pytest.FixtureRequest,
    dynamodb_tables: Callable[..., None],
    sim_clock: SimulatedClock,
) -> Iterator[Callable[..., CapacitySimulator]]:
    """Call with models and simulator options to attach a simulator on ``sim_clock``.

    ``capacity_simulator(Event, limits=CapacityLimits(partition_wcu=500))`` returns the
    attached :class:`~shardmodel.testing.CapacitySimulator`; create the tables first.
    """
    made: list[CapacitySimulator] = []

    def make(*models: type[Model], **options: Any) -> CapacitySimulator:
        simulator = CapacitySimulator(clock=sim_clock, **options)
        made.append(simulator)
        return simulator.attach(*models)

    yield make
    for simulator in made:
        simulator.detach()
        request.node.add_report_section("teardown", "shardmodel capacity", simulator.report())
