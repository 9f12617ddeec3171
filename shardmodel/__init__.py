"""shardmodel: shard hot DynamoDB partition keys transparently on PynamoDB models."""

from shardmodel.attributes import ShardedKeyAttribute
from shardmodel.counters import CounterAttribute, TokenWindow
from shardmodel.errors import (
    CursorError,
    DuplicateItemError,
    ShardConfigurationError,
    ShardKeyError,
    ShardModelError,
    UnknownShardError,
    UnsupportedOperationError,
)
from shardmodel.keys import KeyLayout, PhysicalKey
from shardmodel.models import ShardedBatchWrite, ShardedModel
from shardmodel.query import MergedQuery
from shardmodel.retry import Backoff
from shardmodel.strategies import HashShards, RandomShards, ShardStrategy, TimeBuckets

__version__ = "0.1.0"

__all__ = [
    "Backoff",
    "CounterAttribute",
    "CursorError",
    "DuplicateItemError",
    "HashShards",
    "KeyLayout",
    "MergedQuery",
    "PhysicalKey",
    "RandomShards",
    "ShardConfigurationError",
    "ShardKeyError",
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
]
