"""shardmodel.testing: prove sharding in your own tests on in-process moto.

Importing this package has no side effects; the pytest plugin (registered under the
``pytest11`` entry point as ``shardmodel``) provides the fixtures ``moto_dynamodb``,
``dynamodb_tables``, ``sim_clock`` and ``capacity_simulator``.
"""

from shardmodel.testing.backend import FAKE_CREDENTIALS, mock_dynamodb
from shardmodel.testing.burst import BurstResult, run_burst
from shardmodel.testing.capacity import (
    CapacityLimits,
    PartitionId,
    PartitionUsage,
    Throttle,
)
from shardmodel.testing.clock import Clock, SimulatedClock
from shardmodel.testing.faults import FAULT_KINDS, Faults, Latency
from shardmodel.testing.load import LoadResult, run_load
from shardmodel.testing.servers import dynalite_server, free_port, wait_for_port
from shardmodel.testing.simulator import (
    CapacitySimulator,
    SimulatorClockWarning,
    SimulatorError,
    throttling_reasons,
)
from shardmodel.testing.sizing import attribute_value_size, item_size, read_units, write_units
from shardmodel.testing.tables import bind_models, create_tables, drop_tables
from shardmodel.testing.verify import MAX_VERIFY_REQUESTS, PlanRun, verify_plan

__all__ = [
    "FAKE_CREDENTIALS",
    "FAULT_KINDS",
    "MAX_VERIFY_REQUESTS",
    "BurstResult",
    "CapacityLimits",
    "CapacitySimulator",
    "Clock",
    "Faults",
    "Latency",
    "LoadResult",
    "PartitionId",
    "PartitionUsage",
    "PlanRun",
    "SimulatedClock",
    "SimulatorClockWarning",
    "SimulatorError",
    "Throttle",
    "attribute_value_size",
    "bind_models",
    "create_tables",
    "drop_tables",
    "dynalite_server",
    "free_port",
    "item_size",
    "mock_dynamodb",
    "read_units",
    "run_burst",
    "run_load",
    "throttling_reasons",
    "verify_plan",
    "wait_for_port",
    "write_units",
]
