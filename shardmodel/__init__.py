"""shardmodel: shard hot DynamoDB partition keys transparently on PynamoDB models."""

from shardmodel.attributes import ShardedKeyAttribute
from shardmodel.core.telemetry import instrument, uninstrument
from shardmodel.counters import CounterAttribute, TokenWindow
from shardmodel.dynamic.metadata import HistoryEntry, ShardMetadata
from shardmodel.engine import sharding_of
from shardmodel.engine.merge import MergedQuery
from shardmodel.errors import (
    CursorError,
    DuplicateItemError,
    FanOutLimitError,
    IdempotentParameterMismatchError,
    ItemSizeError,
    PhysicalKeyWarning,
    ShardConfigurationError,
    ShardKeyError,
    ShardMetadataError,
    ShardModelError,
    UnknownShardError,
    UnsupportedOperationError,
)
from shardmodel.keyspace.dynamic import DynamicShards, ShardChange
from shardmodel.keyspace.keys import KeyLayout, PhysicalKey
from shardmodel.keyspace.normalization import NormalizedAttribute
from shardmodel.keyspace.ordered import BoundaryWarning, OrderedShards
from shardmodel.keyspace.strategies import HashShards, RandomShards, ShardCount, ShardStrategy
from shardmodel.keyspace.time_buckets import TimeBuckets
from shardmodel.model.aio import AsyncBatchWrite, AsyncIndex, AsyncResultIterator
from shardmodel.model.sharded import ShardedBatchWrite, ShardedModel
from shardmodel.model.transactions import TransactGet, TransactWrite

# every model follows its table's layout and changes without being told (see
# shardmodel.migration): importing the package registers that
import shardmodel.migration  # noqa: F401  isort: skip
from shardmodel.retry import Backoff
from shardmodel.throttles import throttling_reasons
from shardmodel.timeseries import (
    BucketKeyAttribute,
    SeriesKeyAttribute,
    SeriesTimeAttribute,
    TimeSeriesModel,
    herd_offset,
)

__version__ = "0.1.0"

__all__ = [
    "AsyncBatchWrite",
    "AsyncIndex",
    "AsyncResultIterator",
    "Backoff",
    "BoundaryWarning",
    "BucketKeyAttribute",
    "CounterAttribute",
    "CursorError",
    "DuplicateItemError",
    "DynamicShards",
    "FanOutLimitError",
    "HashShards",
    "HistoryEntry",
    "IdempotentParameterMismatchError",
    "ItemSizeError",
    "KeyLayout",
    "MergedQuery",
    "NormalizedAttribute",
    "OrderedShards",
    "PhysicalKey",
    "PhysicalKeyWarning",
    "RandomShards",
    "SeriesKeyAttribute",
    "SeriesTimeAttribute",
    "ShardChange",
    "ShardConfigurationError",
    "ShardCount",
    "ShardKeyError",
    "ShardMetadata",
    "ShardMetadataError",
    "ShardModelError",
    "ShardStrategy",
    "ShardedBatchWrite",
    "ShardedKeyAttribute",
    "ShardedModel",
    "TimeBuckets",
    "TimeSeriesModel",
    "TokenWindow",
    "TransactGet",
    "TransactWrite",
    "UnknownShardError",
    "UnsupportedOperationError",
    "__version__",
    "herd_offset",
    "instrument",
    "sharding_of",
    "throttling_reasons",
    "uninstrument",
]
