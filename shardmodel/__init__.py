"""shardmodel: shard hot DynamoDB partition keys transparently on PynamoDB models."""

from shardmodel.attributes import ShardedKeyAttribute
from shardmodel.counters import CounterAttribute, TokenWindow
from shardmodel.errors import (
    CursorError,
    DuplicateItemError,
    IdempotentParameterMismatchError,
    ShardConfigurationError,
    ShardKeyError,
    ShardModelError,
    UnknownShardError,
    UnsupportedOperationError,
)
from shardmodel.keys import KeyLayout, PhysicalKey
from shardmodel.metadata import HistoryEntry, ShardMetadata
from shardmodel.models import ShardedBatchWrite, ShardedModel
from shardmodel.query import MergedQuery
from shardmodel.retry import Backoff
from shardmodel.strategies import (
    DynamicShards,
    HashShards,
    RandomShards,
    ShardChange,
    ShardCount,
    ShardStrategy,
    TimeBuckets,
)
from shardmodel.throttles import throttling_reasons

__version__ = "0.1.0"

__all__ = [
    "Backoff",
    "CounterAttribute",
    "CursorError",
    "DuplicateItemError",
    "DynamicShards",
    "HashShards",
    "HistoryEntry",
    "IdempotentParameterMismatchError",
    "KeyLayout",
    "MergedQuery",
    "PhysicalKey",
    "RandomShards",
    "ShardChange",
    "ShardConfigurationError",
    "ShardCount",
    "ShardKeyError",
    "ShardMetadata",
    "ShardModelError",
    "ShardStrategy",
    "ShardedBatchWrite",
    "ShardedKeyAttribute",
    "ShardedModel",
    "TimeBuckets",
    "TokenWindow",
    "UnknownShardError",
    "UnsupportedOperationError",
    "__version__",
    "throttling_reasons",
]
