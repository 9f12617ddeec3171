"""Queries and counts of sharded keys: a plan of the shards, then the merged iterator.

:func:`plan_query` turns a call into a :class:`QueryPlan` (the shard groups from the
placement, the cursor it resumes, what to fetch and how items combine) before any request
is sent; :func:`run_query` hands the plan to the merge over the executor's fetches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from attrs import frozen
from pynamodb.attributes import Attribute
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.operand import Path

from shardmodel._conditions import bounds_of, check_filter, check_key_condition, check_paging
from shardmodel.attributes import ShardedKeyAttribute
from shardmodel.counter_reads import check_countable, check_index_read, summed_filter
from shardmodel.cursor import Cursor, decode_cursor, encode_cursor
from shardmodel.engine.copies import index_copies
from shardmodel.engine.items import (
    check_logical,
    key_text,
    key_values,
    python_name,
    sharded,
    with_keys,
)
from shardmodel.engine.placement import Placement
from shardmodel.engine.reads import merge_shares
from shardmodel.engine.sharding import sharding_of
from shardmodel.errors import CursorError, ShardKeyError, UnsupportedOperationError
from shardmodel.keys import PhysicalKey
from shardmodel.keyspace.phases import COPY_MARKER
from shardmodel.query import (
    GroupedQuery,
    MergedQuery,
    QueryIdentity,
    count_shards,
    dynamodb_sort_key,
)
from shardmodel.request_bound import request_bound
from shardmodel.strategies import ShardCount, TimeBounds, TimeBuckets

__all__ = [
    "QueryPlan",
    "count",
    "cursor_secret",
    "parallelism_of",
    "query",
    "query_attribute",
    "query_groups",
    "resume",
]

_M = TypeVar("_M")
_RawItem = dict[str, dict[str, Any]]


def query_attribute(model: type[Any], index_name: str | None, which: str) -> Attribute[Any] | None:
    """The hash or range key attribute of the table or of an index."""
    if index_name is None:
        attr: Attribute[Any] | None = (
            model._hash_key_attribute() if which == "hash" else model._range_key_attribute()
        )
        return attr
    for candidate in model._indexes[index_name].Meta.attributes.values():
        if (candidate.is_hash_key and which == "hash") or (
            candidate.is_range_key and which == "range"
        ):
            return candidate  # type: ignore[no-any-return]
    return None


def query_keys(model: type[Any], index_name: str | None) -> list[Attribute[Any] | None]:
    """The partition and sort key of the table or of an index."""
    return [query_attribute(model, index_name, "hash"), query_attribute(model, index_name, "range")]


def query_sharding(model: type[Any], index_name: str | None) -> ShardedKeyAttribute | None:
    """The sharded attribute a query's partition key is, or None (a plain query)."""
    hash_attr = query_attribute(model, index_name, "hash")
    if hash_attr is None:
        return None
    return sharding_of(model).spec.attribute(hash_attr.attr_name)  # type: ignore[no-any-return]


def query_groups(
    model: type[Any],
    hash_key: Any,
    range_key_condition: Condition | None,
    index_name: str | None,
    time_range: TimeBounds | None,
    forward: bool,
    counts: ShardCount | None = None,
    max_requests: int | None = None,
) -> list[list[str]]:
    """The physical keys a query reads, grouped: groups are read one after another.

    ``counts``: a dynamic key's counts when already read (else they are read here).
    Raises :class:`FanOutLimitError` when they outnumber the request bound.
    """
    engine = sharding_of(model)
    attr = query_sharding(model, index_name) or sharded(model)
    check_key_condition(range_key_condition, query_attribute(model, index_name, "range"))
    if isinstance(hash_key, PhysicalKey):
        return engine.placement(attr).partitions(hash_key, what="", bound=1)
    logical = check_logical(model, hash_key, attr)
    sort_attr = query_attribute(model, index_name, "range")
    sort_name = python_name(model, sort_attr)
    values: dict[str, Any] = {}
    bounds: dict[str, TimeBounds] = {}
    if sort_attr is not None and sort_name is not None:
        found = bounds_of(range_key_condition, sort_attr)
        if found.equal is not None:
            values[sort_name] = found.equal
        bounds[sort_name] = (found.lower, found.upper)
    if time_range is not None:
        for strategy in attr.layout.strategies:
            if isinstance(strategy, TimeBuckets):
                bounds[strategy.on] = time_range
    known = {logical: counts} if counts is not None else None
    placement = engine.placement(attr, reading=[logical], counts=known)
    return placement.partitions(
        key_values(model, logical, values, attr),
        what=f"{model.__name__}.query({logical!r})",
        bound=request_bound(model, max_requests),
        bounds=bounds,
        sort_name=sort_name,
        forward=forward,
    )


def cursor_secret(model: type[Any]) -> bytes | None:
    """``Meta.cursor_secret`` as bytes (None: cursors are checksummed, not signed)."""
    secret = getattr(model.Meta, "cursor_secret", None)
    if secret is None:
        return None
    return secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)


def parallelism_of(model: type[Any], parallelism: int | None) -> int:
    """Worker threads per query: at most the connection pool, so none waits for a socket."""
    pool = int(getattr(model.Meta, "max_pool_connections", 10) or 10)
    if parallelism is None:
        return pool
    if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
        raise ShardKeyError(
            f"parallelism={parallelism!r}: give a positive int (default: the connection "
            f"pool size, Meta.max_pool_connections = {pool})"
        )
    return min(parallelism, pool)


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


def resume(
    model: type[Any],
    token: Any,
    identity: QueryIdentity,
    groups: list[list[str]],
    secret: bytes | None,
    moving: bool,
) -> Cursor | None:
    """Decode a cursor and check it belongs to this very query.

    ``moving``: the key's items may have moved since (a compaction retired shards, a
    migration changed the layout): a cursor naming other shards is still accepted, and
    what it saw is skipped by its last sort key (see :func:`_seen_by`).
    """
    if token is None:
        return None
    cursor = decode_cursor(token, secret)
    mine = (identity.model, identity.index, identity.logical_key, identity.forward)
    theirs = (cursor.model, cursor.index, cursor.logical_key, cursor.forward)
    if mine != theirs:
        raise CursorError(
            f"last_evaluated_key belongs to another query ({theirs[0]}, key "
            f"{theirs[2]!r}, index {theirs[1]!r}, forward={theirs[3]}); resume with the "
            "same model, key, index and direction, or start over"
        )
    planned = {key for group in groups for key in group}
    listed = {p.key for p in cursor.shards}
    if not moving and listed != planned:
        change = (
            "names shards this query does not read"
            if listed - planned
            else ("lacks shards this query reads, which would restart from their beginning")
        )
        raise CursorError(
            f"last_evaluated_key {change} (the range condition or the shard layout "
            "changed, or the cursor was edited); resume with the same conditions"
        )
    return cursor


@frozen
class QueryPlan:
    """A query worked out before its first request.

    Attributes:
        groups: the shards read, in groups read one after another.
        identity: what a cursor must match to resume it.
        resumed: the cursor it resumes (None: from the start).
        fetch: the fixed arguments of every shard's Query.
        key_names: the key attributes a cursor records.
        projection: what to return (None: everything).
        counters: a counter model's table query: shard shares are summed.
        moving: items may sit under two keys (a migration, a compaction): copies collapse.
        local_filter: a filter applied to summed items on the client (counters).
        forward: ascending order.
    """

    groups: tuple[tuple[str, ...], ...]
    identity: QueryIdentity
    resumed: Cursor | None
    fetch: dict[str, Any]
    key_names: tuple[str, ...]
    projection: tuple[str, ...] | None
    counters: bool
    moving: bool
    local_filter: Condition | None
    forward: bool


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
        copies, last_evaluated_key = index_copies(model, last_evaluated_key)
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
    plan = plan_query(
        model,
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
    return run_query(model, plan, limit, page_size, parallelism_of(model, parallelism))


def plan_query(
    model: type[Any],
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
    *,
    time_range: TimeBounds | None,
    max_requests: int | None,
) -> QueryPlan:
    """Check a merged query and work it out, before any request."""
    engine = sharding_of(model)
    spec = engine.spec
    check_paging(limit, page_size)
    check_filter(filter_condition, query_keys(model, index_name))
    forward = scan_index_forward is not False
    table = index_name is None
    migrating = table and engine.migration() is not None
    if table and not spec.counters and migrating:
        # an unchecked backfill copy: its original is read instead (counters: no copies)
        unchecked = Path(COPY_MARKER).does_not_exist()
        filter_condition = unchecked if filter_condition is None else filter_condition & unchecked
    groups = query_groups(
        model,
        hash_key,
        range_key_condition,
        index_name,
        time_range,
        forward,
        max_requests=max_requests,
    )
    identity = QueryIdentity(
        model=f"{model.Meta.table_name}:{model.__name__}",
        index=index_name,
        logical_key=str(hash_key),
        forward=forward,
    )
    moving = table and (engine.directory is not None or migrating)
    resumed = resume(model, last_evaluated_key, identity, groups, cursor_secret(model), moving)
    key_attrs = [
        model._hash_key_attribute(),
        model._range_key_attribute(),
        query_attribute(model, index_name, "hash"),
        query_attribute(model, index_name, "range"),
    ]
    key_names = tuple(dict.fromkeys(a.attr_name for a in key_attrs if a is not None))
    projection = with_keys(model, attributes_to_get, key_names)
    counters = bool(spec.counters) and table
    # a counter model's filter must see summed items: applied after summing, on whole
    # items, and the projection after it (shardmodel.filters)
    local_filter = filter_condition if counters else None
    fetch = {
        "range_key_condition": range_key_condition,
        "filter_condition": None if counters else filter_condition,
        "attributes_to_get": projection if local_filter is None else None,
        "consistent_read": consistent_read,
        "index_name": index_name,
        "return_consumed_capacity": "TOTAL",
        "scan_index_forward": scan_index_forward,
    }
    return QueryPlan(
        groups=tuple(tuple(g) for g in groups),
        identity=identity,
        resumed=resumed,
        fetch=fetch,
        key_names=key_names,
        projection=None if projection is None else tuple(projection),
        counters=counters,
        moving=moving,
        local_filter=local_filter,
        forward=forward,
    )


def run_query(
    model: type[_M], plan: QueryPlan, limit: int | None, page_size: int | None, parallelism: int
) -> Iterator[_M]:
    """The merged iterator of a plan: fetched by the executor, merged, combined, built."""
    engine = sharding_of(model)
    secret = cursor_secret(model)
    sort_key = dynamodb_sort_key(query_attribute(model, plan.identity.index, "range"))
    collapse = plan.counters or plan.moving
    merged: MergedQuery[Any] = MergedQuery(
        fetch=engine.executor.query_fetcher(**plan.fetch),
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
    )
    if not collapse:
        return merged
    seen = _seen_by(plan.resumed, sort_key, plan.forward) if plan.moving else None
    projection = None if plan.projection is None else list(plan.projection)
    after = (plan.local_filter, projection) if plan.local_filter is not None else None
    return _grouped(model, merged, limit, plan.counters, seen, after)


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
    from shardmodel.engine.reads import _raw_key_values

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

    def combine(run: list[dict[str, Any]]) -> dict[str, Any]:
        item = run[0]
        if not counters:
            return placement.current(run, lambda raw: _raw_key_values(model, raw))
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
    groups = query_groups(
        model, hash_key, range_key_condition, index_name, time_range, True, counts, max_requests
    )
    fetch = engine.executor.query_fetcher(
        range_key_condition=range_key_condition,
        filter_condition=filter_condition,
        consistent_read=consistent_read,
        index_name=index_name,
        select="COUNT",
    )
    counted = count_shards(
        fetch, [key for group in groups for key in group], parallelism_of(model, parallelism)
    )
    return counted if limit is None else min(counted, limit)
