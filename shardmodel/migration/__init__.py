"""Changing a fixed shard count online: phases, the state table and their jobs.

See the resharding runbook (docs/resharding.rst). Every process that reads or writes
a model follows its table's state by itself (importing shardmodel is enough;
:func:`follow` only tunes it); an operator drives the phases with :class:`Reshard` or
``shardmodel reshard module:Model --to N``.
"""

from shardmodel.engine.sharding import follow_tables_by_default
from shardmodel.keyspace.layout_record import LayoutRecord
from shardmodel.keyspace.phases import (
    COPY_MARKER,
    MOVE_MARKER,
    PHASES,
    ActiveMigration,
    MigrationState,
    Phase,
    PhaseRules,
)
from shardmodel.migration.backfill import Progress, ScanJob
from shardmodel.migration.estimate import Estimate
from shardmodel.migration.reshard import Reshard
from shardmodel.migration.rules import (
    ReshardWatch,
    TableWatch,
    declared_layout,
    follow,
    table_watch,
    unfollow,
)
from shardmodel.migration.state import MigrationConflictError, MigrationStore, SegmentProgress
from shardmodel.migration.status import ReshardStatus, SegmentStatus, reshard_status

follow_tables_by_default(table_watch)

__all__ = [
    "COPY_MARKER",
    "MOVE_MARKER",
    "PHASES",
    "ActiveMigration",
    "Estimate",
    "LayoutRecord",
    "MigrationConflictError",
    "MigrationState",
    "MigrationStore",
    "Phase",
    "PhaseRules",
    "Progress",
    "Reshard",
    "ReshardStatus",
    "ReshardWatch",
    "ScanJob",
    "SegmentProgress",
    "SegmentStatus",
    "TableWatch",
    "declared_layout",
    "follow",
    "reshard_status",
    "unfollow",
]
