"""Models of the resharding tests: one table key per strategy a migration supports."""

from __future__ import annotations

from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import HashShards, RandomShards, ShardedKeyAttribute, ShardedModel, TimeBuckets


class Reading(ShardedModel):
    """Hash-sharded on the sort key: one-shard gets, the case a count change breaks."""

    class Meta:
        table_name = "reshard-readings"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(hash_key=True, strategy=HashShards(16, on=["seq"]))
    seq = NumberAttribute(range_key=True)
    value = UnicodeAttribute(null=True)


class WideReading(ShardedModel):
    """32 hash shards: the model a shrink to 16 starts from."""

    class Meta:
        table_name = "reshard-wide-readings"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(hash_key=True, strategy=HashShards(32, on=["seq"]))
    seq = NumberAttribute(range_key=True)
    value = UnicodeAttribute(null=True)


class Click(ShardedModel):
    """Append-only clicks on random shards."""

    class Meta:
        table_name = "reshard-clicks"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(16))
    seq = NumberAttribute(range_key=True)
    value = UnicodeAttribute(null=True)


class DayReading(ShardedModel):
    """Daily time buckets composed with a hash of the sort key."""

    class Meta:
        table_name = "reshard-day-readings"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(
        hash_key=True, strategy=[TimeBuckets(on="at", granularity="day"), HashShards(16, on=["at"])]
    )
    at = UnicodeAttribute(range_key=True)
    value = UnicodeAttribute(null=True)


MIGRATION_MODELS = (Reading, WideReading, Click, DayReading)
