"""Changing a fixed shard count online: phases, the state table and their jobs.

See the resharding runbook (docs/resharding.rst). Every process that reads or writes
the model calls :func:`follow` once; an operator drives the phases with
:class:`Reshard` or ``shardmodel reshard module:Model --to N``.
"""

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
from shardmodel.migration.rules import ReshardWatch, follow, unfollow
from shardmodel.migration.state import MigrationConflictError, MigrationStore, SegmentProgress
from shardmodel.migration.status import ReshardStatus, SegmentStatus, reshard_status

__all__ = [
    "COPY_MARKER",
    "MOVE_MARKER",
    "PHASES",
    "ActiveMigration",
    "Estimate",
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
    "follow",
    "reshard_status",
    "unfollow",
]
