"""Planning a query before its first request: the shards, the cursor, what to fetch.

:func:`plan_query` is pure: given the model's declaration, the placement the query took
and the call's arguments, it returns a frozen :class:`QueryPlan` (the shard groups, the
cursor it resumes, the fixed arguments of every shard's Query, how items combine), or
raises before anything is sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attrs import evolve, frozen
from pynamodb.attributes import Attribute
from pynamodb.expressions.condition import Condition

from shardmodel.attributes import ShardedKeyAttribute
from shardmodel.core.times import text_span
from shardmodel.engine.cursor import (
    Cursor,
    conditions_digest,
    decode_cursor,
    raw_key,
    start_problem,
)
from shardmodel.engine.items import check_logical, key_values, python_name, sharded, with_keys
from shardmodel.engine.merge import QueryIdentity
from shardmodel.engine.placement import Placement
from shardmodel.engine.sharding import sharding_of
from shardmodel.errors import CursorError, ShardKeyError
from shardmodel.expressions.conditions import (
    bounds_of,
    check_filter,
    check_flag,
    check_key_condition,
    check_paging,
)
from shardmodel.expressions.filters import matches
from shardmodel.keyspace.keys import PhysicalKey
from shardmodel.keyspace.phases import COPY_MARKER, MOVE_MARKER
from shardmodel.keyspace.strategies import ShardCount, TimeBounds
from shardmodel.keyspace.time_buckets import TimeBuckets
from shardmodel.request_bound import request_bound

__all__ = [
    "QueryPlan",
    "cursor_secret",
    "parallelism_of",
    "plan_query",
    "query_attribute",
    "query_groups",
    "query_keys",
    "query_placement",
    "query_sharding",
    "resume",
]


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


def query_placement(
    model: type[Any], hash_key: Any, index_name: str | None, counts: ShardCount | None = None
) -> Placement:
    """The placement a query of ``hash_key`` takes (a dynamic key's counts read now).

    ``counts``: a dynamic key's counts when already read.
    """
    engine = sharding_of(model)
    attr = query_sharding(model, index_name) or sharded(model)
    if isinstance(hash_key, PhysicalKey) or not isinstance(hash_key, str) or not hash_key:
        return engine.placement(attr)
    known = {hash_key: counts} if counts is not None else None
    return engine.placement(attr, reading=[hash_key], counts=known)


def query_groups(
    model: type[Any],
    placement: Placement,
    hash_key: Any,
    range_key_condition: Condition | None,
    index_name: str | None,
    time_range: TimeBounds | None,
    forward: bool,
    max_requests: int | None = None,
) -> list[list[str]]:
    """The physical keys a query reads, grouped: groups are read one after another.

    Pure: ``placement`` is the one the query took (:func:`query_placement`).
    Raises :class:`FanOutLimitError` when they outnumber the request bound.
    """
    attr = query_sharding(model, index_name) or sharded(model)
    check_key_condition(range_key_condition, query_attribute(model, index_name, "range"))
    if isinstance(hash_key, PhysicalKey):
        return placement.partitions(hash_key, what="", bound=1)
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
        time_range = checked_time_range(model, time_range)
        for strategy in attr.layout.strategies:
            if isinstance(strategy, TimeBuckets):
                bounds[strategy.on] = time_range
    return placement.partitions(
        key_values(model, logical, values, attr),
        what=f"{model.__name__}.query({logical!r})",
        bound=request_bound(model, max_requests),
        bounds=bounds,
        sort_name=sort_name,
        forward=forward,
    )


def checked_time_range(model: type[Any], time_range: Any) -> TimeBounds:
    """``time_range`` as a (start, end) pair of times (None: that end unbounded).

    Raises:
        ShardKeyError: not a pair, or a bound that is no time, named as ``time_range``'s.
    """
    if isinstance(time_range, str | bytes) or not isinstance(time_range, Sequence):
        shape = None
    else:
        shape = len(time_range)
    if shape != 2:
        raise ShardKeyError(
            f"{model.__name__}: time_range={time_range!r:.80} is not a pair; pass "
            "time_range=(start, end), each epoch seconds, an aware datetime or an ISO 8601 "
            "string with an offset"
        )
    for end, bound in zip(("start", "end"), time_range, strict=True):
        if bound is not None:
            text_span(f"{model.__name__}: time_range's {end}", bound)
    return (time_range[0], time_range[1])


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


def resume(
    model: type[Any],
    token: Any,
    identity: QueryIdentity,
    groups: list[list[str]],
    secret: bytes | None,
    moving: bool,
    *,
    keys: Mapping[str, str] | None = None,
    partition: str | None = None,
    range_condition: Condition | None = None,
) -> Cursor | None:
    """Decode a cursor and check it belongs to this very query.

    ``moving``: the key's items may have moved since (a compaction retired shards, a
    migration changed the layout): a cursor naming other shards is still accepted, and
    what it saw is skipped by its last sort key (see :func:`_seen_by`).

    ``keys`` (name to type tag), ``partition`` and ``range_condition``: each shard's
    start key must name exactly the query's keys, each of its type, lie in the shard's
    own partition and within the range condition, as DynamoDB requires of an
    ExclusiveStartKey; a cursor forged with the model's secret is refused here, before
    any request.
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
    if cursor.conditions != identity.conditions:
        raise CursorError(
            "last_evaluated_key was taken with other conditions (range_key_condition, "
            "time_range or filter_condition, or a time series' start and end) than this "
            "query's; resume with the same conditions, or start over"
        )
    if keys is not None and partition is not None:
        _check_starts(cursor, keys, partition, range_condition)
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


def _check_starts(
    cursor: Cursor, keys: Mapping[str, str], partition: str, condition: Condition | None
) -> None:
    """Refuse a start key DynamoDB would refuse as ExclusiveStartKey of this query."""
    for shard in cursor.shards:
        if shard.start is None:
            continue
        problem = start_problem(shard.start, dict(keys), partition, shard.key)
        if problem is None and not matches(condition, raw_key(shard.start)):
            problem = "does not match the range key predicate"
        if problem is not None:
            raise CursorError(
                f"last_evaluated_key's start of shard {shard.key!r} {problem}, so it is no "
                "position of this query (the cursor was edited); pass the cursor of this "
                "query unchanged, or start over"
            )


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


def plan_query(
    model: type[Any],
    placement: Placement,
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
    """Check a merged query and work it out, before any request.

    Pure: the placement is the one the query took when it began (its migration view
    and dynamic counts); nothing here sends a request or reads a clock.
    """
    spec = sharding_of(model).spec
    check_paging(limit, page_size)
    check_flag("scan_index_forward", scan_index_forward)
    check_flag("consistent_read", consistent_read)
    check_filter(filter_condition, query_keys(model, index_name))
    # what the caller asked, before the filter gains a migration's copy test
    conditions = conditions_digest(range_key_condition, filter_condition, time_range)
    forward = scan_index_forward is not False
    table = index_name is None
    migrating = table and placement.migration is not None
    groups = query_groups(
        model,
        placement,
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
        conditions=conditions,
    )
    moving = table and placement.moving
    key_attrs = [
        model._hash_key_attribute(),
        model._range_key_attribute(),
        query_attribute(model, index_name, "hash"),
        query_attribute(model, index_name, "range"),
    ]
    key_types = {a.attr_name: a.attr_type for a in key_attrs if a is not None}
    key_names = tuple(key_types)
    resumed = resume(
        model,
        last_evaluated_key,
        identity,
        groups,
        cursor_secret(model),
        moving,
        keys=key_types,
        partition=key_attrs[2].attr_name if key_attrs[2] is not None else None,
        range_condition=range_key_condition,
    )
    projection = with_keys(model, attributes_to_get, key_names)
    counters = bool(spec.counters) and table
    # a counter model's filter must see summed items, and during a layout change the
    # filter must see the copy that holds each item (another copy may match it or not):
    # applied on the client to whole combined items, and the projection after it
    local = counters or migrating
    local_filter = filter_condition if local else None
    fetched = projection
    if migrating and projection is not None:  # which copy holds an item: their markers say
        fetched = [*projection, MOVE_MARKER, COPY_MARKER]
    if moving and resumed is not None:
        _check_owned(resumed, placement, identity.logical_key)
        resumed = _restart_at_mark(resumed, groups, key_names, forward, model)
    fetch = {
        "range_key_condition": range_key_condition,
        "filter_condition": None if local else filter_condition,
        "attributes_to_get": fetched if local_filter is None else None,
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


def _check_owned(cursor: Cursor, placement: Placement, logical: str) -> None:
    """Refuse a moving key's cursor naming a shard of another key.

    Such a cursor may name shards the query no longer reads (a layout it was taken
    under), but only shards of its own key under one of the layouts read now.
    """
    for shard in cursor.shards:
        if not any(_owner(layout, shard.key) == logical for layout in placement.layouts()):
            raise CursorError(
                f"last_evaluated_key names the shard {shard.key!r}, which is no shard of key "
                f"{logical!r} (the cursor was edited); pass the cursor of this query "
                "unchanged, or start over"
            )


def _owner(layout: Any, physical: str) -> str | None:
    try:
        owner: str = layout.logical_key(physical)
    except ShardKeyError:
        return None
    return owner


def _restart_at_mark(
    resumed: Cursor,
    groups: list[list[str]],
    key_names: tuple[str, ...],
    forward: bool,
    model: type[Any],
) -> Cursor:
    """A moving key's cursor, restarted on every shard after what it returned last.

    Items of a key being moved (a layout change, a compaction) can land on a shard after
    the cursor recorded it finished, even one that did not exist yet; so every shard the
    query reads now starts after the cursor's last sort key, and what sorts at it was
    returned already (the merge skips it).
    """
    from shardmodel.engine.cursor import ShardPosition
    from shardmodel.engine.merge import dynamodb_sort_key

    range_attr = model._range_key_attribute()
    marks = [p.start for p in resumed.shards if p.start is not None]
    if range_attr is None or not marks:
        return evolve(
            resumed,
            shards=tuple(ShardPosition(key, None, False) for group in groups for key in group),
        )
    sort_key = dynamodb_sort_key(range_attr)
    mark = (max if forward else min)(marks, key=sort_key)
    hash_name, range_name = key_names[0], range_attr.attr_name
    positions = tuple(
        ShardPosition(key, {hash_name: {"S": key}, range_name: mark[range_name]}, False)
        for group in groups
        for key in group
    )
    return evolve(resumed, shards=positions)
