"""Queries of sharded keys: one ordered, resumable stream merged from every shard.

:func:`query` takes the placement, has the query planned
(:func:`~shardmodel.engine.query_plan.plan_query`), then merges the executor's pages
(:class:`~shardmodel.engine.merge.MergedQuery`), collapsing an item's copies or summing a
counter item's shares where the plan says so.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from pynamodb.expressions.condition import Condition
from pynamodb.indexes import GlobalSecondaryIndex

from shardmodel.engine.copies import index_copies
from shardmodel.engine.counter_reads import check_index_read, summed_filter
from shardmodel.engine.cursor import Cursor, encode_cursor
from shardmodel.engine.grouping import GroupedQuery
from shardmodel.engine.items import key_text, physical_hint, sharded
from shardmodel.engine.merge import MergedQuery, dynamodb_sort_key
from shardmodel.engine.placement import Placement
from shardmodel.engine.query_plan import (
    QueryPlan,
    cursor_secret,
    parallelism_of,
    plan_query,
    query_attribute,
    query_placement,
    query_sharding,
)
from shardmodel.engine.reads import merge_shares
from shardmodel.engine.sharding import sharding_of
from shardmodel.errors import (
    PhysicalKeyWarning,
    ShardConfigurationError,
    ShardModelError,
    UnsupportedOperationError,
)
from shardmodel.keyspace.strategies import TimeBounds

__all__ = ["query", "run_query"]

_M = TypeVar("_M")


def _seen_by(
    resumed: Cursor | None, sort_key: Callable[[Any], Any], forward: bool
) -> Callable[[dict[str, Any]], bool] | None:
    """Items a resumed query already returned: at or before the cursor's last sort key.

    A moving key's item can appear on another shard after the cursor was taken (a
    compaction or a migration copied it); like an unsharded query resuming after its
    ExclusiveStartKey, the resumed query skips what sorts at or before that point.
    """
    if resumed is None:
        return None
    marks = [sort_key(p.start) for p in resumed.shards if p.start is not None]
    if not marks:
        return None
    if forward:
        high = max(marks)
        return lambda item: bool(sort_key(item) <= high)
    low = min(marks)
    return lambda item: bool(sort_key(item) >= low)


def query(
    model: type[_M],
    hash_key: Any,
    range_key_condition: Condition | None,
    filter_condition: Condition | None,
    consistent_read: bool,
    index_name: str | None,
    scan_index_forward: bool | None,
    limit: int | None,
    last_evaluated_key: Any,
    attributes_to_get: Sequence[str] | None,
    page_size: int | None,
    rate_limit: float | None,
    *,
    parallelism: int | None,
    time_range: TimeBounds | None,
    max_requests: int | None,
    plain: Callable[..., Iterator[_M]],
    all_copies: bool = False,
) -> Iterator[_M]:
    """Query one logical key across its shards as one ordered, resumable stream.

    ``plain`` is PynamoDB's own ``query``, for a key that is not sharded.
    """
    engine = sharding_of(model)
    spec = engine.spec
    if spec.counters and index_name is not None:
        check_index_read(model, "query", attributes_to_get, filter_condition is not None)
    if index_name is not None and not all_copies and spec.table_key() is not None:
        # during a shard count change an index holds an item's two copies: keep one
        copies, last_evaluated_key = index_copies(
            model,
            last_evaluated_key,
            query_attribute(model, index_name, "range"),
            scan_index_forward is not False,
        )
        if copies is not None:
            results = query(
                model,
                hash_key,
                range_key_condition,
                filter_condition,
                consistent_read,
                index_name,
                scan_index_forward,
                None,
                last_evaluated_key,
                copies.projection(model, attributes_to_get),
                page_size,
                rate_limit,
                parallelism=parallelism,
                time_range=time_range,
                max_requests=max_requests,
                plain=plain,
                all_copies=True,
            )
            return copies.wrap(results, limit)
    if query_sharding(model, index_name) is None:
        return plain(
            hash_key,
            range_key_condition,
            filter_condition,
            consistent_read,
            index_name,
            scan_index_forward,
            limit,
            last_evaluated_key,
            attributes_to_get,
            page_size,
            rate_limit,
        )
    if rate_limit is not None:
        raise UnsupportedOperationError(
            f"{model.__name__}.query(rate_limit=...): a merged query reads shards in "
            "parallel and cannot share one rate limiter; lower parallelism instead"
        )

    def planned(placement: Placement) -> QueryPlan:
        return plan_query(
            model,
            placement,
            hash_key,
            range_key_condition,
            filter_condition,
            consistent_read,
            index_name,
            scan_index_forward,
            limit,
            last_evaluated_key,
            attributes_to_get,
            page_size,
            time_range=time_range,
            max_requests=max_requests,
        )

    try:
        placement = query_placement(model, hash_key, index_name)
    except ShardModelError:
        raise
    except Exception:
        # the table's layout could not be read (no endpoint, no credentials): a call
        # that is wrong whatever the layout is named first, as with DynamoDB there
        with engine.declared():
            planned(query_placement(model, hash_key, index_name))
        raise
    return run_query(
        model, planned(placement), limit, page_size, parallelism_of(model, parallelism)
    )


def run_query(
    model: type[_M], plan: QueryPlan, limit: int | None, page_size: int | None, parallelism: int
) -> Iterator[_M]:
    """The merged iterator of a plan: fetched by the executor, merged, combined, built."""
    secret = cursor_secret(model)
    sort_key = dynamodb_sort_key(query_attribute(model, plan.identity.index, "range"))
    collapse = plan.counters or plan.moving
    merged: MergedQuery[Any] = MergedQuery(
        fetch=_spread_fetch(model, plan.fetch),
        groups=[list(g) for g in plan.groups],
        sort_key=sort_key,
        forward=plan.forward,
        build=(lambda raw: raw) if collapse else model.from_raw_data,  # type: ignore[attr-defined]
        key_names=plan.key_names,
        identity=plan.identity,
        encode=lambda cursor: encode_cursor(cursor, secret),
        limit=None if collapse else limit,
        page_size=page_size,
        parallelism=parallelism,
        resume=plan.resumed,
        runner=sharding_of(model).executor.runner(),
        on_empty=_empty_hint(model, plan),
    )
    if not collapse:
        return merged
    seen = _seen_by(plan.resumed, sort_key, plan.forward) if plan.moving else None
    projection = None if plan.projection is None else list(plan.projection)
    after = (plan.local_filter, projection) if plan.local_filter is not None else None
    return _grouped(model, merged, limit, plan.counters, seen, after)


def read_indexes(model: type[Any]) -> tuple[str, ...]:
    """``Meta.read_indexes``: same-schema GSIs a table read may go to instead (checked).

    Each must be a global secondary index of the model with the table's own partition
    and sort key attributes and every attribute projected, so that it answers a Query
    exactly as the table does (eventually consistent).
    """
    names = getattr(model.Meta, "read_indexes", None) or ()
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise ShardConfigurationError(
            f"{model.__name__}.Meta.read_indexes = {names!r}: give a tuple of index names"
        )
    range_key = model._range_key_attribute()
    table_keys = (model._hash_key_attribute().attr_name, range_key and range_key.attr_name)
    for name in names:
        index = model._indexes.get(name)
        keys = None
        if isinstance(index, GlobalSecondaryIndex):
            attributes = index.Meta.attributes.values()
            keys = (
                next((a.attr_name for a in attributes if a.is_hash_key), None),
                next((a.attr_name for a in attributes if a.is_range_key), None),
            )
        projection = getattr(getattr(index, "Meta", None), "projection", None)
        if keys != table_keys or getattr(projection, "projection_type", None) != "ALL":
            raise ShardConfigurationError(
                f"{model.__name__}.Meta.read_indexes: {name!r} is not a global secondary "
                f"index with the table's keys {table_keys} and AllProjection(); declare one "
                "or drop it from read_indexes"
            )
    return tuple(names)


def _spread_fetch(model: type[Any], fixed: dict[str, Any]) -> Callable[..., Any]:
    """The plan's shard fetcher, or, opted in, one that spreads shards over copies.

    With ``Meta.read_indexes`` and an eventually consistent read of the table, each
    shard is read from the table or one of the same-schema GSIs, picked at random and
    kept for every page of that shard in this query (a resumed cursor may pick again:
    a same-schema index's page keys are the table's).
    """
    executor = sharding_of(model).executor
    indexes = read_indexes(model)
    if not indexes or fixed.get("index_name") is not None or fixed.get("consistent_read"):
        return executor.query_fetcher(**fixed)
    targets = [executor.query_fetcher(**fixed)]
    targets += [executor.query_fetcher(**{**fixed, "index_name": name}) for name in indexes]
    rng = sharded(model).rng
    chosen: dict[str, Callable[..., Any]] = {}
    lock = threading.Lock()

    def fetch(key: str, exclusive_start_key: Any = None, limit: int | None = None) -> Any:
        with lock:
            target = chosen.setdefault(key, targets[rng.randrange(len(targets))])
        return target(key, exclusive_start_key, limit)

    return fetch


def _grouped(
    model: type[_M],
    merged: MergedQuery[Any],
    limit: int | None,
    counters: bool,
    seen: Callable[[dict[str, Any]], bool] | None,
    after: tuple[Condition, list[str] | None] | None = None,
) -> Iterator[_M]:
    """One item per logical item from the merge, where one may sit on several shards.

    Counter models keep a share of each item on several shards: the shares are summed.
    A moving item sits under two keys while a compaction or a migration copies it: the
    current copy is kept. ``after``: a filter to apply to combined items, and the
    projection after it.
    """
    from shardmodel.engine.codec import home_key
    from shardmodel.engine.reads import _raw_key_values, moved_copy

    range_attr = model._range_key_attribute()  # type: ignore[attr-defined]
    layout = sharded(model).layout
    placement: Placement = sharding_of(model).placement()

    def same(first: dict[str, Any], other: dict[str, Any]) -> bool:
        if range_attr is None:
            return True
        name, kind = range_attr.attr_name, range_attr.attr_type
        return bool(
            key_text(range_attr, first[name][kind]) == key_text(range_attr, other[name][kind])
        )

    def combine(run: list[dict[str, Any]]) -> dict[str, Any] | None:
        item = run[0]
        if not counters:
            return placement.current(
                run, lambda raw: _raw_key_values(model, raw), moved_copy(model)
            )
        range_key = None
        if range_attr is not None:
            range_key = range_attr.deserialize(item[range_attr.attr_name][range_attr.attr_type])
        logical = layout.logical_key(item[placement.key_name]["S"])
        return merge_shares(model, run, home_key(model, logical, range_key))

    build = model.from_raw_data  # type: ignore[attr-defined]
    if after is None:
        return GroupedQuery(merged, same, combine, build, limit, seen)
    keep, build = summed_filter(model, *after)
    return GroupedQuery(merged, same, combine, build, limit, seen, keep)


#: (model, logical key) pairs already warned about: a loop over keys copied from the
#: table (``user-1#3``, ``user-1#7``) warns once for ``user-1``, not once per key.
_HINTED: set[tuple[str, str]] = set()


def _empty_hint(model: type[Any], plan: QueryPlan) -> Callable[[], None] | None:
    """A warning for a query that finds nothing under a key that reads as physical,
    once per model and logical key it reads as."""
    if plan.resumed is not None or plan.identity.index is not None:
        return None
    key = plan.identity.logical_key
    hint = physical_hint(model, key)
    if hint is None:
        return None
    pattern = (plan.identity.model, str(sharded(model).layout.looks_physical(key)))

    def warn() -> None:
        if pattern not in _HINTED:
            _HINTED.add(pattern)
            warnings.warn(hint, PhysicalKeyWarning, stacklevel=4)

    return warn
