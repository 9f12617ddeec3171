"""Counters spread over shard items: ``add`` writes one shard, reads sum them all.

Also a counter model's other writes (its other attributes on the home shard, a delete of
every shard item), its cached totals, and its scan, which returns each logical item once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from typing import Any, TypeVar

from pynamodb.constants import NUMBER
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.operand import Path

from shardmodel.core.canonical import storable_number
from shardmodel.counters import (
    TOTAL_PREFIX,
    TokenWindow,
    check_increments,
    check_recorded,
    increments_print,
    token_attempts,
    token_shard,
)
from shardmodel.engine.codec import check_counters_unchanged, home_key, physical_condition
from shardmodel.engine.counter_reads import CounterScan, check_index_read, summed_filter
from shardmodel.engine.items import (
    check_logical,
    key_values,
    range_value,
    range_values,
    sharded,
    with_keys,
)
from shardmodel.engine.reads import candidate_keys, merge_shares
from shardmodel.engine.scans import logical_scan, tests_sharded_key
from shardmodel.engine.sharding import sharding_of
from shardmodel.errors import ShardKeyError, UnsupportedOperationError
from shardmodel.expressions.conditions import check_flag, check_paging
from shardmodel.request_bound import request_bound
from shardmodel.retry import is_condition_failure, is_throttle, is_transient, is_unsent

__all__ = [
    "TOKEN_RACE_RETRIES",
    "add",
    "delete_all_shards",
    "get_cached",
    "rollup",
    "save_other_attributes",
    "scan",
]

_M = TypeVar("_M")
_RawItem = dict[str, dict[str, Any]]

#: How often ``add`` with a token retries when concurrent writers rotate its window.
TOKEN_RACE_RETRIES = 8


def _range_ident(stored: dict[str, Any] | None) -> Any:
    """A stored sort key value as a hashable, DynamoDB-equal-means-equal value."""
    if stored is None:
        return None
    ((kind, value),) = stored.items()
    if kind == NUMBER:
        return kind, storable_number(Decimal(value))
    return kind, bytes(value) if isinstance(value, bytearray | memoryview) else value


def token_window(model: type[Any]) -> TokenWindow:
    """``Meta.counter_tokens``: how long increment tokens are remembered."""
    window = getattr(model.Meta, "counter_tokens", None)
    return window if isinstance(window, TokenWindow) else TokenWindow()


def counter_key(model: type[Any], range_key: Any) -> dict[str, Any]:
    """The sort key argument of a shard item's request (none on a hash-only model)."""
    range_attr = model._range_key_attribute()
    return {} if range_attr is None else {"range_key": range_attr.serialize(range_key)}


def add(
    model: type[Any], hash_key: Any, range_key: Any, token: str | None, increments: dict[str, Any]
) -> None:
    """Add to counters of one logical item: one ``UpdateItem ADD`` on one shard."""
    from shardmodel.engine.growth import write_counter_growing

    engine = sharding_of(model)
    spec = engine.spec
    if not spec.counters:
        raise UnsupportedOperationError(
            f"{model.__name__}.add(): the model has no CounterAttribute; declare one, "
            "e.g. views = CounterAttribute(default=0)"
        )
    check_increments(model.__name__, spec.counters, increments)
    if token is not None and (not isinstance(token, str) or not token):
        raise ShardKeyError(f"{model.__name__}.add(token={token!r}): a token is a non-empty str")
    attributes = model.get_attributes()
    # sent in canonical form: Decimals too (PynamoDB serializes numbers with json)
    actions = [
        attributes[name].add({NUMBER: storable_number(value)}) for name, value in increments.items()
    ]
    key = counter_key(model, range_key)
    connection = engine.executor.connection()
    if token is None:

        def update(physical: str) -> Any:
            return connection.update_item(physical, actions=actions, **key)

        if engine.directory is not None:
            write_counter_growing(model, hash_key, range_key, update)
            return
        candidates = _increment_keys(model, hash_key, range_key, token=False)
        physical = candidates[sharded(model).rng.randrange(len(candidates))]
        # past botocore's own retries, resend only what surely was not applied: an
        # untokened ADD applied twice would count twice
        engine.executor.resend(
            lambda: update(physical), lambda error: is_throttle(error) or is_unsent(error)
        )
        return
    if engine.directory is not None:
        raise UnsupportedOperationError(
            f"{model.__name__}.add(token=...): a token is remembered on the shard it hashes "
            "to among a fixed count, and a DynamicShards count changes; use "
            "RandomShards(n) for idempotent counters, or add without a token"
        )
    candidates = _increment_keys(model, hash_key, range_key, token=True)
    physical = candidates[token_shard(token, len(candidates))]
    _add_once(model, physical, key, actions, token, increments_print(increments))


def _increment_keys(model: type[Any], hash_key: Any, range_key: Any, token: bool) -> list[str]:
    """The shards an increment may go to (see ``Placement.increment_keys``)."""
    logical = check_logical(model, hash_key)
    key = key_values(model, logical, range_values(model, range_key))
    placement = sharding_of(model).placement(reading=[logical])
    what = f"{model.__name__}.get({logical!r})"
    return placement.increment_keys(key, token, what=what, bound=request_bound(model))


def _add_once(
    model: type[Any],
    physical: str,
    key: dict[str, Any],
    actions: list[Any],
    token: str,
    fingerprint: str,
) -> None:
    """Apply an increment unless its token is recorded; safe to call again on a retry."""
    executor = sharding_of(model).executor
    connection = executor.connection()
    for _ in range(TOKEN_RACE_RETRIES):
        window = token_window(model).current()
        for extra, condition in token_attempts(token, window, fingerprint):
            update = functools.partial(
                connection.update_item,
                physical,
                actions=[*actions, *extra],
                condition=condition,
                **key,
            )
            try:
                # idempotent: a resend that was applied fails its condition
                executor.resend(update, is_transient)
                return
            except Exception as error:
                if not is_condition_failure(error):
                    raise
        stored = executor.resend(
            lambda: connection.get_item(physical, consistent_read=True, **key), is_transient
        ).get("Item")
        if check_recorded(stored, token, fingerprint, model.__name__):
            return  # counted before: a retry after a lost response
    raise UnsupportedOperationError(
        f"{model.__name__}.add(token={token!r}): concurrent writers kept rotating the "
        "token window; retry the call (it is idempotent)"
    )


def rollup(model: type[_M], hash_key: Any, range_key: Any = None) -> _M:
    """Read the exact totals and cache them on the home shard with the time read."""
    item = model.get(hash_key, range_key, consistent_read=True)  # type: ignore[attr-defined]
    attributes = model.get_attributes()  # type: ignore[attr-defined]
    now = int(token_window(model).clock())
    actions = [Path("sm_total_at").set(now)]
    for name in sharding_of(model).spec.counters:
        total = getattr(item, name)
        actions.append(Path(TOTAL_PREFIX + attributes[name].attr_name).set(total or 0))
    sharding_of(model).executor.connection().update_item(
        home_key(model, hash_key, range_key), actions=actions, **counter_key(model, range_key)
    )
    return item  # type: ignore[no-any-return]


def get_cached(model: type[_M], hash_key: Any, range_key: Any = None, max_age: float = 60) -> _M:
    """Totals at most ``max_age`` seconds old, from one read of the home shard."""
    home = home_key(model, hash_key, range_key)
    response = (
        sharding_of(model).executor.connection().get_item(home, **counter_key(model, range_key))
    )
    stored = response.get("Item")
    now = token_window(model).clock()
    if stored and "sm_total_at" in stored:
        age = now - float(Decimal(stored["sm_total_at"][NUMBER]))
        if age <= max_age:
            cached = dict(stored)
            for name in sharding_of(model).spec.counter_fields:
                total = stored.get(TOTAL_PREFIX + name)
                if total is not None:
                    cached[name] = total
            return model.from_raw_data(merge_shares(model, [cached], home))  # type: ignore[attr-defined,no-any-return]
    return rollup(model, hash_key, range_key)


def save_other_attributes(item: Any, condition: Condition | None) -> dict[str, Any]:
    """``save`` on a counter model: set the non-counter attributes on the home shard.

    A PutItem would overwrite the home shard's share of the counters, so the other
    attributes are written with an UpdateItem that leaves counters alone. A counter
    changed on the instance (``p.views += 5``) is refused, not dropped: counters change
    only through ``add``.
    """
    model = type(item)
    check_counters_unchanged(item)
    attributes = model.get_attributes()
    skip = {model._hash_keyname, model._range_keyname, *sharding_of(model).spec.counters}
    actions = []
    for name, attr in attributes.items():
        if name in skip:
            continue
        value = getattr(item, name)
        actions.append(attr.remove() if value is None else attr.set(value))
    range_key = range_value(item)
    logical = getattr(item, sharded(model).attr_name)
    home = home_key(model, logical, range_key)
    if not actions:
        actions = [Path("sm_total_at").remove()]  # create the home item, nothing else
    response: dict[str, Any] = (
        sharding_of(model)
        .executor.connection()
        .update_item(
            home,
            actions=actions,
            condition=physical_condition(item, condition, home),
            **counter_key(model, range_key),
        )
    )
    item._physical_key = home
    return response


def delete_all_shards(item: Any) -> None:
    """``delete`` on a counter model: every shard item of the logical item goes."""
    model = type(item)
    range_key = range_value(item)
    logical = getattr(item, sharded(model).attr_name)
    connection = sharding_of(model).executor.connection()
    key = counter_key(model, range_key)
    for physical in candidate_keys(model, logical, range_key):
        connection.delete_item(physical, **key)


# -- scans: one item per logical item ------------------------------------------------------


def scan(
    model: type[_M],
    filter_condition: Condition | None,
    segment: int | None,
    total_segments: int | None,
    limit: int | None,
    last_evaluated_key: dict[str, dict[str, Any]] | None,
    page_size: int | None,
    consistent_read: bool | None,
    index_name: str | None,
    rate_limit: float | None,
    attributes_to_get: Sequence[str] | None,
    plain: Callable[..., Iterator[_M]],
) -> Iterator[_M]:
    """Scan; on a counter model, each logical item once with its counters summed.

    A counter model's scan reads the shard items' keys, and for each logical item it
    finds reads every shard item of it (BatchGetItem, 100 keys a call): up to ``n`` keys
    per shard item scanned on ``n`` shards. ``filter_condition`` is applied to the summed
    items on the client. Parallel segments together return each logical item once: the
    segment holding its lowest-numbered shard item emits it. ``plain`` is PynamoDB's
    own ``scan``.

    A ``limit`` or ``page_size`` that is no positive int, or a ``consistent_read`` that is
    no bool, is refused before sending, as :meth:`query` refuses it (a client-side filter
    would otherwise give ``limit=2.5`` a meaning PynamoDB's scan does not).
    """
    check_paging(limit, page_size)
    check_flag("consistent_read", consistent_read)
    spec = sharding_of(model).spec
    if index_name is not None and spec.counters:
        check_index_read(model, "scan", attributes_to_get, filter_condition is not None)
    if not spec.counters or index_name is not None:
        if filter_condition is not None and tests_sharded_key(model, filter_condition):
            return logical_scan(
                model,
                filter_condition,
                segment,
                total_segments,
                limit,
                last_evaluated_key,
                page_size,
                consistent_read,
                index_name,
                rate_limit,
                attributes_to_get,
            )
        return plain(
            filter_condition,
            segment,
            total_segments,
            limit,
            last_evaluated_key,
            page_size,
            consistent_read,
            index_name,
            rate_limit,
            attributes_to_get,
        )
    if rate_limit is not None:
        raise UnsupportedOperationError(
            f"{model.__name__}.scan(rate_limit=...): a counter model's scan reads every "
            "shard of each item it finds, which rate_limit cannot bound; scan without it"
        )
    key_names = with_keys(model, []) or []
    connection = sharding_of(model).executor.connection()

    def page(start: _RawItem | None, size: int | None) -> dict[str, Any]:
        response: dict[str, Any] = connection.scan(
            exclusive_start_key=start,
            segment=segment,
            total_segments=total_segments,
            limit=size,
            consistent_read=consistent_read,
            attributes_to_get=key_names,
        )
        return response

    fetched = None if filter_condition is not None else with_keys(model, attributes_to_get)
    build: Callable[[_RawItem], Any] = model.from_raw_data  # type: ignore[attr-defined]
    keep: Callable[[_RawItem], bool] = lambda raw: True  # noqa: E731
    if filter_condition is not None:
        keep, build = summed_filter(model, filter_condition, with_keys(model, attributes_to_get))
    return CounterScan(
        page=page,
        emit=lambda rows: _scan_emits(model, rows, consistent_read, fetched),
        keep=keep,
        build=build,
        limit=limit,
        page_size=page_size if page_size is not None else limit,
        start=last_evaluated_key,
    )


def _scan_emits(
    model: type[Any],
    rows: list[_RawItem],
    consistent_read: bool | None,
    attributes_to_get: list[str] | None,
) -> list[_RawItem | None]:
    """For each scanned shard item, the summed item it emits, or None.

    Every shard of each logical item found is read; the lowest-numbered shard item that
    exists emits the item (a logical item's shard items may fall in different pages or
    segments, and exactly one of them is that one).
    """
    attr = sharded(model)
    hash_name, layout = attr.attr_name, attr.layout
    range_attr = model._range_key_attribute()
    range_name = range_attr.attr_name if range_attr is not None else None
    found: dict[tuple[str, Any], tuple[list[str], dict[str, Any] | None]] = {}
    for row in rows:
        logical = layout.logical_key(row[hash_name]["S"])
        stored = row[range_name] if range_name is not None else None
        ident = (logical, _range_ident(stored))
        if ident not in found:
            range_key = None
            if range_attr is not None and stored is not None:
                range_key = range_attr.deserialize(stored[range_attr.attr_type])
            found[ident] = (candidate_keys(model, logical, range_key), stored)
    keys = []
    for candidates, stored in found.values():
        for physical in candidates:
            key: dict[str, Any] = {hash_name: {"S": physical}}
            if range_name is not None:
                key[range_name] = stored
            keys.append(key)
    shard_items: dict[tuple[str, Any], _RawItem] = {}
    executor = sharding_of(model).executor
    for raw in executor.batch_get(keys, consistent_read, attributes_to_get):
        stored = raw[range_name] if range_name is not None else None
        shard_items[(raw[hash_name]["S"], _range_ident(stored))] = raw
    emitters: dict[tuple[str, Any], _RawItem] = {}
    for candidates, stored in found.values():
        ident_range = _range_ident(stored)
        hits = [p for p in candidates if (p, ident_range) in shard_items]
        if hits:
            items = [shard_items[(p, ident_range)] for p in hits]
            emitters[(hits[0], ident_range)] = merge_shares(model, items, candidates[0])
    return [
        emitters.get((row[hash_name]["S"], _range_ident(row[range_name] if range_name else None)))
        for row in rows
    ]
