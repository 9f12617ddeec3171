"""shardmodel: shard hot DynamoDB partition keys transparently on PynamoDB models."""

from shardmodel.attributes import ShardedKeyAttribute
from shardmodel.errors import (
    DuplicateItemError,
    ShardConfigurationError,
    ShardKeyError,
    ShardModelError,
    UnknownShardError,
    UnsupportedOperationError,
)
from shardmodel.keys import KeyLayout, PhysicalKey
from shardmodel.models import ShardedModel
from shardmodel.retry import Backoff
from shardmodel.strategies import HashShards, RandomShards, ShardStrategy, TimeBuckets

__version__ = "0.1.0"

__all__ = [
    "Backoff",
    "DuplicateItemError",
    "HashShards",
    "KeyLayout",
    "PhysicalKey",
    "RandomShards",
    "ShardConfigurationError",
    "ShardKeyError",
    "ShardModelError",
    "ShardStrategy",
    "ShardedKeyAttribute",
    "ShardedModel",
    "TimeBuckets",
    "UnknownShardError",
    "UnsupportedOperationError",
    "__version__",
]
