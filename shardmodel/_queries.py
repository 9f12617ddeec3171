"""Queries and counts of sharded keys: planning the shards, then the merged iterator."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from pynamodb.attributes import Attribute
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.operand import Path

from shardmodel._conditions import bounds_of, check_filter, check_key_condition, check_paging
from shardmodel._keyed import KeyedModel
from shardmodel.attributes import ShardedKeyAttribute
from shardmodel.counter_reads import check_countable, check_index_read, summed_filter
from shardmodel.cursor import Cursor, decode_cursor, encode_cursor
from shardmodel.errors import (
    CursorError,
    ShardKeyError,
    UnsupportedOperationError,
)
from shardmodel.keys import PhysicalKey
from shardmodel.migration.copies import index_copies
from shardmodel.migration.rules import COPY_MARKER
from shardmodel.query import (
    GroupedQuery,
    MergedQuery,
    QueryIdentity,
    count_shards,
    dynamodb_sort_key,
)
from shardmodel.request_bound import check_fan_out, request_bound
from shardmodel.strategies import ShardCount, TimeBounds, TimeBuckets

_M = TypeVar("_M", bound="Queries")


def _seen_by(
    resume: Cursor | None, sort_key: Callable[[Any], Any], forward: bool
) -> Callable[[dict[str, Any]], bool] | None:
    """Items a resumed query already returned: at or before the cursor's last sort key.

    A dynamic key's item can appear on another shard after the cursor was taken (a
    compaction copied it); like an unsharded query resuming after its
    ExclusiveStartKey, the resumed query skips what sorts at or before that point.
    """
    if resume is None:
        return None
    marks = [sort_key(p.start) for p in resume.shards if p.start is not None]
    if not marks:
        return None
    if forward:
        high = max(marks)
        return lambda item: bool(sort_key(item) <= high)
    low = min(marks)
    return lambda item: bool(sort_key(item) >= low)


class Queries(KeyedModel):
    """``query`` and ``count`` over every shard of a logical key."""

    @classmethod
    def _query_attribute(cls, index_name: str | None, which: str) -> Attribute[Any] | None:
        """The hash or range key attribute of the table or of an index."""
        if index_name is None:
            attr: Attribute[Any] | None = (
                cls._hash_key_attribute() if which == "hash" else cls._range_key_attribute()
            )
            return attr
        for candidate in cls._indexes[index_name].Meta.attributes.values():
            if (candidate.is_hash_key and which == "hash") or (
                candidate.is_range_key and which == "range"
            ):
                return candidate  # type: ignore[no-any-return]
        return None

    @classmethod
    def _query_keys(cls, index_name: str | None) -> list[Attribute[Any] | None]:
        """The partition and sort key of the table or of an index."""
        return [cls._query_attribute(index_name, "hash"), cls._query_attribute(index_name, "range")]

    @classmethod
    def _query_sharding(cls, index_name: str | None) -> ShardedKeyAttribute | None:
        """The sharded attribute a query's partition key is, or None (a plain query)."""
        hash_attr = cls._query_attribute(index_name, "hash")
        if hash_attr is None:
            return None
        for attr in (*cls._shard_box, *cls._index_shard_box):
            if attr.attr_name == hash_attr.attr_name:
                return attr
        return None

    @classmethod
    def _query_groups(
        cls,
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
        attr = cls._query_sharding(index_name) or cls._sharded()
        layout = attr.layout
        check_key_condition(range_key_condition, cls._query_attribute(index_name, "range"))
        if isinstance(hash_key, PhysicalKey):
            layout.split(hash_key)
            return [[hash_key]]
        logical = cls._check_logical(hash_key, attr)
        sort_attr = cls._query_attribute(index_name, "range")
        sort_name = cls._python_name(sort_attr)
        values: dict[str, Any] = {}
        bounds: dict[str, TimeBounds] = {}
        if sort_attr is not None and sort_name is not None:
            found = bounds_of(range_key_condition, sort_attr)
            if found.equal is not None:
                values[sort_name] = found.equal
            bounds[sort_name] = (found.lower, found.upper)
        if time_range is not None:
            for strategy in layout.strategies:
                if isinstance(strategy, TimeBuckets):
                    bounds[strategy.on] = time_range
        counts = counts or cls._read_counts(logical, attr)
        key = cls._key_values(logical, values, attr, counts)
        migration = cls._migration() if attr is cls._shard_attribute() else None
        # during a shard count change: the union of both layouts' keys (same time buckets)
        layouts = [layout] if migration is None else migration.read_layouts()
        plans = [[s.query_candidates(key, bounds) for s in lay.strategies] for lay in layouts]
        what, bound = f"{cls.__name__}.query({logical!r})", request_bound(cls, max_requests)
        check_fan_out(what, max(math.prod(len(c) for c in plan) for plan in plans), bound)
        splits = [
            i
            for i, s in enumerate(layout.strategies)
            if s.ordered and sort_name is not None and sort_name in s.attributes
        ]
        groups: dict[tuple[int, ...], list[str]] = {}
        for lay, per_strategy in zip(layouts, plans, strict=True):
            ranges = [range(len(c)) for c in per_strategy]
            # an ordered strategy may put several segments in one range (OrderedShards'
            # overflow sub-shards): its group_of names the range, merged within
            ranks = [getattr(s, "group_of", None) for s in lay.strategies]
            for combo in itertools.product(*ranges):
                segments = [per_strategy[i][j] for i, j in enumerate(combo)]
                group = tuple(
                    combo[i] if ranks[i] is None else ranks[i](segments[i])  # type: ignore[misc]
                    for i in splits
                )
                physical = lay.readable(logical, segments)  # None: too long to be stored
                if physical is not None and physical not in groups.get(group, ()):
                    groups.setdefault(group, []).append(physical)
        if len(layouts) > 1:  # the union's exact size, still before the first request
            check_fan_out(what, sum(len(g) for g in groups.values()), bound)
        ordered = [groups[g] for g in sorted(groups)]
        return ordered if forward else ordered[::-1]

    @classmethod
    def _cursor_secret(cls) -> bytes | None:
        secret = getattr(cls.Meta, "cursor_secret", None)
        if secret is None:
            return None
        return secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)

    @classmethod
    def _parallelism(cls, parallelism: int | None) -> int:
        """Worker threads per query: at most the connection pool, so none waits for a socket."""
        pool = int(getattr(cls.Meta, "max_pool_connections", 10) or 10)
        if parallelism is None:
            return pool
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
            raise ShardKeyError(
                f"parallelism={parallelism!r}: give a positive int (default: the connection "
                f"pool size, Meta.max_pool_connections = {pool})"
            )
        return min(parallelism, pool)

    @classmethod
    def _shard_fetcher(cls, **fixed: Any) -> Callable[..., dict[str, Any]]:
        """fetch(physical key, exclusive start key, page limit): one Query of one shard.

        PynamoDB builds the request once (:class:`~shardmodel.lean.prepared.PreparedQuery`);
        each shard's copy differs in its key, start key and limit.

        The botocore client is built here, in the caller's thread: PynamoDB builds it
        lazily without a lock, so many cold worker threads would each build one. Its
        Query responses are parsed by :mod:`shardmodel.fastparse` (same result, less CPU).
        Requests go on the lean path (:mod:`shardmodel.lean`) unless
        ``Meta.lean_requests`` is False.
        """
        from shardmodel.fastparse import install  # kept local: a one-function change
        from shardmodel.lean import table_connection
        from shardmodel.lean.prepared import PreparedQuery

        install(cls._get_connection().connection.client)
        connection = table_connection(cls)
        connection.connection.client  # noqa: B018 - build the lean client here, too
        return PreparedQuery(connection, **fixed)

    @classmethod
    def query(  # type: ignore[override]
        cls: type[_M],
        hash_key: Any,
        range_key_condition: Condition | None = None,
        filter_condition: Condition | None = None,
        consistent_read: bool = False,
        index_name: str | None = None,
        scan_index_forward: bool | None = None,
        limit: int | None = None,
        last_evaluated_key: Any = None,
        attributes_to_get: Sequence[str] | None = None,
        page_size: int | None = None,
        rate_limit: float | None = None,
        *,
        parallelism: int | None = None,
        time_range: TimeBounds | None = None,
        max_requests: int | None = None,
        _all_copies: bool = False,
    ) -> Iterator[_M]:
        """Query one logical key across its shards as one ordered, resumable stream.

        Keeps PynamoDB's signature. ``limit`` applies to the merged order, exactly.
        ``last_evaluated_key`` of the returned iterator is an opaque cursor string; pass
        it back to resume. ``parallelism`` caps the threads reading shards at once
        (default and maximum: ``Meta.max_pool_connections``). ``time_range=(start, end)``
        bounds the buckets of a ``TimeBuckets`` key whose time is not the sort key.
        ``max_requests`` bounds the partitions (buckets x shards) read (default
        ``Meta.max_requests``, else 1,000); a query over more raises before sending.
        """
        if cls._counter_names and index_name is not None:
            check_index_read(cls, "query", attributes_to_get, filter_condition is not None)
        if index_name is not None and not _all_copies and cls._shard_box:
            # during a shard count change an index holds an item's two copies: keep one
            copies, last_evaluated_key = index_copies(cls, last_evaluated_key)
            if copies is not None:
                results = cls.query(
                    hash_key,
                    range_key_condition,
                    filter_condition,
                    consistent_read,
                    index_name,
                    scan_index_forward,
                    None,
                    last_evaluated_key,
                    copies.projection(cls, attributes_to_get),
                    page_size,
                    rate_limit,
                    parallelism=parallelism,
                    time_range=time_range,
                    max_requests=max_requests,
                    _all_copies=True,
                )
                return copies.wrap(results, limit)
        if cls._query_sharding(index_name) is None:
            return super().query(
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
                f"{cls.__name__}.query(rate_limit=...): a merged query reads shards in "
                "parallel and cannot share one rate limiter; lower parallelism instead"
            )
        check_paging(limit, page_size)
        check_filter(filter_condition, cls._query_keys(index_name))
        forward = scan_index_forward is not False
        if index_name is None and not cls._counter_names and cls._migration() is not None:
            # an unchecked backfill copy: its original is read instead (counters: no copies)
            unchecked = Path(COPY_MARKER).does_not_exist()
            filter_condition = (
                unchecked if filter_condition is None else filter_condition & unchecked
            )
        groups = cls._query_groups(
            hash_key,
            range_key_condition,
            index_name,
            time_range,
            forward,
            max_requests=max_requests,
        )
        identity = QueryIdentity(
            model=f"{cls.Meta.table_name}:{cls.__name__}",
            index=index_name,
            logical_key=str(hash_key),
            forward=forward,
        )
        secret = cls._cursor_secret()
        resume = cls._resume(last_evaluated_key, identity, groups, secret)
        key_attrs = [
            cls._hash_key_attribute(),
            cls._range_key_attribute(),
            cls._query_attribute(index_name, "hash"),
            cls._query_attribute(index_name, "range"),
        ]
        key_names = list(dict.fromkeys(a.attr_name for a in key_attrs if a is not None))
        projection = cls._with_keys(attributes_to_get, key_names)
        counters = bool(cls._counter_names) and index_name is None
        # a counter model's filter must see summed items: applied after summing, on whole
        # items, and the projection after it (shardmodel.filters)
        local_filter = filter_condition if counters else None
        fetch = cls._shard_fetcher(
            range_key_condition=range_key_condition,
            filter_condition=None if counters else filter_condition,
            attributes_to_get=projection if local_filter is None else None,
            consistent_read=consistent_read,
            index_name=index_name,
            return_consumed_capacity="TOTAL",
            scan_index_forward=scan_index_forward,
        )
        moving = cls._shard_directory is not None or cls._migration() is not None
        dynamic = moving and index_name is None
        sort_key = dynamodb_sort_key(cls._query_attribute(index_name, "range"))
        merged: MergedQuery[Any] = MergedQuery(
            fetch=fetch,
            groups=groups,
            sort_key=sort_key,
            forward=forward,
            build=(lambda raw: raw) if counters or dynamic else cls.from_raw_data,
            key_names=key_names,
            identity=identity,
            encode=lambda cursor: encode_cursor(cursor, secret),
            limit=None if counters or dynamic else limit,
            page_size=page_size,
            parallelism=cls._parallelism(parallelism),
            resume=resume,
        )
        if not counters and not dynamic:
            return merged
        seen = _seen_by(resume, sort_key, forward) if dynamic else None
        after = (local_filter, projection) if local_filter is not None else None
        return cls._grouped(merged, limit, counters, seen, after)

    @classmethod
    def _grouped(
        cls: type[_M],
        merged: MergedQuery[Any],
        limit: int | None,
        counters: bool,
        seen: Callable[[dict[str, Any]], bool] | None,
        after: tuple[Condition, list[str] | None] | None = None,
    ) -> Iterator[_M]:
        """One item per logical item from the merge, where one may sit on several shards.

        Counter models keep a share of each item on several shards: the shares are
        summed. A dynamic key's item sits on two shards while a compaction copies it:
        the copy on the retired (higher) shard, the one updates still go to, is kept.
        ``after``: a filter to apply to combined items, and the projection after it.
        """
        range_attr = cls._range_key_attribute()
        hash_name = cls._sharded().attr_name
        layout = cls._sharded().layout

        def same(first: dict[str, Any], other: dict[str, Any]) -> bool:
            if range_attr is None:
                return True
            name, kind = range_attr.attr_name, range_attr.attr_type
            return bool(
                cls._key_text(range_attr, first[name][kind])
                == cls._key_text(range_attr, other[name][kind])
            )

        def combine(run: list[dict[str, Any]]) -> dict[str, Any]:
            item = run[0]
            if not counters:
                return cls._current_copy(run)
            range_key = None
            if range_attr is not None:
                range_key = range_attr.deserialize(item[range_attr.attr_name][range_attr.attr_type])
            logical = layout.logical_key(item[hash_name]["S"])
            return cls._merge_shards(run, cls._home_key(logical, range_key))

        if after is None:
            return GroupedQuery(merged, same, combine, cls.from_raw_data, limit, seen)
        keep, build = summed_filter(cls, *after)
        return GroupedQuery(merged, same, combine, build, limit, seen, keep)

    @classmethod
    def _resume(
        cls,
        token: Any,
        identity: QueryIdentity,
        groups: list[list[str]],
        secret: bytes | None,
    ) -> Cursor | None:
        """Decode a cursor and check it belongs to this very query."""
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
        # a dynamic key's compaction may have retired shards since: their items moved to
        # live shards, where the cursor's last sort key (see _seen_by) tells seen from not
        moving = cls._shard_directory is not None or cls._migration() is not None
        compacted = moving and identity.index is None
        listed = {p.key for p in cursor.shards}
        if not compacted and listed != planned:
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

    @classmethod
    def count(
        cls,
        hash_key: Any = None,
        range_key_condition: Condition | None = None,
        filter_condition: Condition | None = None,
        consistent_read: bool = False,
        index_name: str | None = None,
        limit: int | None = None,
        rate_limit: float | None = None,
        *,
        parallelism: int | None = None,
        time_range: TimeBounds | None = None,
        max_requests: int | None = None,
    ) -> int:
        """Count one logical key's items, summed over its shards (or the table's, keyless)."""
        if cls._counter_names and index_name is not None:
            check_index_read(cls, "count", [], filter_condition is not None)
        if index_name is not None and hash_key is not None and cls._migration() is not None:
            # an index holds a moving item twice: count the query's items, one per item
            keys = [
                a.attr_name for a in (cls._hash_key_attribute(), cls._range_key_attribute()) if a
            ]
            found = cls.query(
                hash_key,
                range_key_condition,
                filter_condition,
                consistent_read,
                index_name,
                limit=limit,
                attributes_to_get=keys,
                parallelism=parallelism,
                time_range=time_range,
                max_requests=max_requests,
            )
            return sum(1 for _ in found)
        if cls._counter_names and index_name is None:
            # a counter item's shard items are shares of one item: count summed items
            check_countable(cls, hash_key)
            items = cls.query(
                hash_key,
                range_key_condition,
                filter_condition,
                consistent_read,
                limit=limit,
                rate_limit=rate_limit,
                attributes_to_get=[cls._sharded().attr_name],
                parallelism=parallelism,
                time_range=time_range,
                max_requests=max_requests,
            )
            return sum(1 for _ in items)
        if hash_key is None or cls._query_sharding(index_name) is None:
            total: int = super().count(
                hash_key,
                range_key_condition,
                filter_condition,
                consistent_read,
                index_name,
                limit,
                rate_limit,
            )
            return total
        check_paging(limit, None)
        check_filter(filter_condition, cls._query_keys(index_name))
        counts = None
        migrating = index_name is None and cls._migration() is not None
        if (cls._shard_directory is not None and index_name is None) or migrating:
            counts = cls._read_counts(cls._check_logical(hash_key))
            if migrating or (counts is not None and counts.readable > counts.live):
                # a compaction may hold items on two shards: count the merged query's
                # items, one per logical item, instead of summing per-shard counts
                keys = [
                    a.attr_name
                    for a in (cls._hash_key_attribute(), cls._range_key_attribute())
                    if a
                ]
                items = cls.query(
                    hash_key,
                    range_key_condition,
                    filter_condition,
                    consistent_read,
                    attributes_to_get=keys,
                    parallelism=parallelism,
                    time_range=time_range,
                    max_requests=max_requests,
                )
                counted = sum(1 for _ in items)
                return counted if limit is None else min(counted, limit)
        groups = cls._query_groups(
            hash_key, range_key_condition, index_name, time_range, True, counts, max_requests
        )
        fetch = cls._shard_fetcher(
            range_key_condition=range_key_condition,
            filter_condition=filter_condition,
            consistent_read=consistent_read,
            index_name=index_name,
            select="COUNT",
        )
        counted = count_shards(
            fetch, [key for group in groups for key in group], cls._parallelism(parallelism)
        )
        return counted if limit is None else min(counted, limit)
