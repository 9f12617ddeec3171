"""Opt-in GSI read balancing: a hot key's shard reads spread over same-schema GSIs."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex, KeysOnlyProjection

from shardmodel import RandomShards, ShardedKeyAttribute, ShardedModel
from shardmodel.errors import ShardConfigurationError
from shardmodel.testing import CapacitySimulator


class CopyOne(GlobalSecondaryIndex["Feed"]):
    class Meta:
        index_name = "feed-copy-1"
        projection = AllProjection()

    key = UnicodeAttribute(hash_key=True)
    seq = NumberAttribute(range_key=True)


class CopyTwo(GlobalSecondaryIndex["Feed"]):
    class Meta:
        index_name = "feed-copy-2"
        projection = AllProjection()

    key = UnicodeAttribute(hash_key=True)
    seq = NumberAttribute(range_key=True)


class KeysOnly(GlobalSecondaryIndex["Feed"]):
    class Meta:
        index_name = "feed-keys"
        projection = KeysOnlyProjection()

    key = UnicodeAttribute(hash_key=True)
    seq = NumberAttribute(range_key=True)


class Feed(ShardedModel):
    """A hot feed: its reads may go to the table or either copy."""

    class Meta:
        table_name = "read-spread-feed"
        region = "us-east-1"
        read_indexes: tuple[str, ...] = ("feed-copy-1", "feed-copy-2")

    key = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(8))
    seq = NumberAttribute(range_key=True)
    note = UnicodeAttribute(null=True)
    copy_one = CopyOne()
    copy_two = CopyTwo()
    keys_only = KeysOnly()


def test_reads_of_a_hot_key_spread_over_the_table_and_its_copies(
    dynamodb_tables: Callable[..., None],
) -> None:
    dynamodb_tables(Feed)
    for seq in range(40):
        Feed("hot", seq, note=f"n{seq}").save()
    simulator = CapacitySimulator()
    with simulator.attach(Feed):
        for _ in range(10):
            items = list(Feed.query("hot"))
            assert [(i.seq, i.note) for i in items] == [(n, f"n{n}") for n in range(40)]
    table = "read-spread-feed"
    reads = [simulator.table_usage(table, index).reads for index in (None, *Feed.Meta.read_indexes)]
    assert sum(reads) == 80 and all(r > 10 for r in reads), reads  # 10 queries x 8 shards
    with simulator.attach(Feed):
        assert len(list(Feed.query("hot", consistent_read=True))) == 40
    assert simulator.table_usage(table).reads == reads[0] + 8  # strong reads: the table only


def test_an_index_that_is_not_a_same_schema_copy_is_refused(
    dynamodb_tables: Callable[..., None],
) -> None:
    dynamodb_tables(Feed)
    for bad in (("feed-keys",), ("nowhere",), "feed-copy-1"):
        Feed.Meta.read_indexes = bad  # type: ignore[assignment]
        try:
            with pytest.raises(ShardConfigurationError, match="read_indexes"):
                list(Feed.query("hot"))
        finally:
            Feed.Meta.read_indexes = ("feed-copy-1", "feed-copy-2")
