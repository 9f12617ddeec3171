"""Counts of sharded keys: ``Select=COUNT`` summed over the shards, or a merged query's
items where copies or counter shares must collapse first."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pynamodb.expressions.condition import Condition

from shardmodel.engine.counter_reads import check_countable, check_index_read
from shardmodel.engine.items import check_logical, sharded
from shardmodel.engine.merge import count_shards
from shardmodel.engine.query_plan import (
    parallelism_of,
    query_groups,
    query_keys,
    query_placement,
    query_sharding,
)
from shardmodel.engine.sharding import sharding_of
from shardmodel.expressions.conditions import check_filter, check_flag, check_paging
from shardmodel.keyspace.strategies import TimeBounds

__all__ = ["count"]


def count(
    model: type[Any],
    hash_key: Any,
    range_key_condition: Condition | None,
    filter_condition: Condition | None,
    consistent_read: bool,
    index_name: str | None,
    limit: int | None,
    rate_limit: float | None,
    *,
    parallelism: int | None,
    time_range: TimeBounds | None,
    max_requests: int | None,
    plain: Callable[..., int],
    query_model: Callable[..., Iterator[Any]],
) -> int:
    """Count one logical key's items, summed over its shards (or the table's, keyless).

    ``plain`` is PynamoDB's own ``count``; ``query_model`` the model's own ``query``
    (counts that must collapse copies count a query's items).
    """
    engine = sharding_of(model)
    spec = engine.spec
    if spec.counters and index_name is not None:
        check_index_read(model, "count", [], filter_condition is not None)
    key_fields = [
        a.attr_name for a in (model._hash_key_attribute(), model._range_key_attribute()) if a
    ]
    migrating = spec.table_key() is not None and engine.migration() is not None
    if index_name is not None and hash_key is not None and migrating:
        # an index holds a moving item twice: count the query's items, one per item
        found = query_model(
            hash_key,
            range_key_condition,
            filter_condition,
            consistent_read,
            index_name,
            limit=limit,
            attributes_to_get=key_fields,
            parallelism=parallelism,
            time_range=time_range,
            max_requests=max_requests,
        )
        return sum(1 for _ in found)
    if spec.counters and index_name is None:
        # a counter item's shard items are shares of one item: count summed items
        check_countable(model, hash_key)
        items = query_model(
            hash_key,
            range_key_condition,
            filter_condition,
            consistent_read,
            limit=limit,
            rate_limit=rate_limit,
            attributes_to_get=[sharded(model).attr_name],
            parallelism=parallelism,
            time_range=time_range,
            max_requests=max_requests,
        )
        return sum(1 for _ in items)
    if hash_key is None or query_sharding(model, index_name) is None:
        return plain(
            hash_key,
            range_key_condition,
            filter_condition,
            consistent_read,
            index_name,
            limit,
            rate_limit,
        )
    check_paging(limit, None)
    check_flag("consistent_read", consistent_read)
    check_filter(filter_condition, query_keys(model, index_name))
    counts = None
    table_migrating = index_name is None and migrating
    if (engine.directory is not None and index_name is None) or table_migrating:
        logical = check_logical(model, hash_key)
        if engine.directory is not None:
            counts = engine.directory.for_read(logical)
        if table_migrating or (counts is not None and counts.readable > counts.live):
            # a compaction or a migration may hold items on two shards: count the merged
            # query's items, one per logical item, instead of summing per-shard counts
            items = query_model(
                hash_key,
                range_key_condition,
                filter_condition,
                consistent_read,
                attributes_to_get=key_fields,
                parallelism=parallelism,
                time_range=time_range,
                max_requests=max_requests,
            )
            counted = sum(1 for _ in items)
            return counted if limit is None else min(counted, limit)
    placement = query_placement(model, hash_key, index_name, counts)
    groups = query_groups(
        model, placement, hash_key, range_key_condition, index_name, time_range, True, max_requests
    )
    fetch = engine.executor.query_fetcher(
        range_key_condition=range_key_condition,
        filter_condition=filter_condition,
        consistent_read=consistent_read,
        index_name=index_name,
        select="COUNT",
    )
    counted = count_shards(
        fetch,
        [key for group in groups for key in group],
        parallelism_of(model, parallelism),
        engine.executor.runner(),
    )
    return counted if limit is None else min(counted, limit)
