"""Counter methods of ShardedModel: add, exact and cached totals, counter-aware writes."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from typing import Any, TypeVar

from pynamodb.constants import NUMBER
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.operand import Path
from pynamodb.expressions.update import Action

from shardmodel._canonical import storable_number as canonical_number
from shardmodel._reads import PointReads
from shardmodel.counter_reads import CounterScan, check_index_read, summed_filter
from shardmodel.counters import (
    TOTAL_PREFIX,
    TokenWindow,
    check_increments,
    check_recorded,
    increments_print,
    token_attempts,
    token_shard,
)
from shardmodel.errors import ShardKeyError, UnsupportedOperationError
from shardmodel.retry import is_condition_failure, is_throttle, is_transient, is_unsent

__all__ = ["Counting"]

_M = TypeVar("_M", bound="Counting")
_RawItem = dict[str, dict[str, Any]]

#: How often ``add`` with a token retries when concurrent writers rotate its window.
TOKEN_RACE_RETRIES = 8


def _range_ident(stored: dict[str, Any] | None) -> Any:
    """A stored sort key value as a hashable, DynamoDB-equal-means-equal value."""
    if stored is None:
        return None
    ((kind, value),) = stored.items()
    if kind == NUMBER:
        return kind, canonical_number(Decimal(value))
    return kind, bytes(value) if isinstance(value, bytearray | memoryview) else value


def _number_text(value: Any) -> str | None:
    """A counter value compared by number: ``1``, ``1.0`` and ``Decimal('1E+0')`` agree."""
    if value is None:
        return None
    try:
        return canonical_number(value)
    except (ValueError, TypeError):
        return repr(value)


class Counting(PointReads):
    """Counters spread over shard items: ``add`` writes one shard, reads sum all."""

    # per instance: the counters as loaded (None: a new instance, compared to defaults)
    _loaded_counters: dict[str, Any] | None = None

    @classmethod
    def _token_window(cls) -> TokenWindow:
        window = getattr(cls.Meta, "counter_tokens", None)
        return window if isinstance(window, TokenWindow) else TokenWindow()

    @classmethod
    def _counter_key(cls, hash_key: Any, range_key: Any) -> dict[str, Any]:
        range_attr = cls._range_key_attribute()
        return {} if range_attr is None else {"range_key": range_attr.serialize(range_key)}

    @classmethod
    def add(
        cls,
        hash_key: Any,
        range_key: Any = None,
        *,
        token: str | None = None,
        **increments: Any,
    ) -> None:
        """Add to counters of one logical item: one ``UpdateItem ADD`` on one shard.

        Args:
            hash_key: the logical key.
            range_key: the sort key, on models that have one.
            token: makes the increment idempotent: the same token counts once within
                the token window (``Meta.counter_tokens``, 10 to 20 minutes by default).
            **increments: counter name to amount (negative amounts decrement).

        Raises:
            IdempotentParameterMismatchError: ``token`` was used with other amounts
                within the window; nothing is applied.
        """
        if not cls._counter_names:
            raise UnsupportedOperationError(
                f"{cls.__name__}.add(): the model has no CounterAttribute; declare one, "
                "e.g. views = CounterAttribute(default=0)"
            )
        check_increments(cls.__name__, cls._counter_names, increments)
        if token is not None and (not isinstance(token, str) or not token):
            raise ShardKeyError(f"{cls.__name__}.add(token={token!r}): a token is a non-empty str")
        attributes = cls.get_attributes()
        # sent in canonical form: Decimals too (PynamoDB serializes numbers with json)
        actions = [
            attributes[name].add({NUMBER: canonical_number(value)})
            for name, value in increments.items()
        ]
        key = cls._counter_key(hash_key, range_key)
        if token is None:
            cls._write_counter(
                hash_key,
                range_key,
                lambda physical: cls._get_connection().update_item(
                    physical, actions=actions, **key
                ),
            )
            return
        if cls._shard_directory is not None:
            raise UnsupportedOperationError(
                f"{cls.__name__}.add(token=...): a token is remembered on the shard it hashes "
                "to among a fixed count, and a DynamicShards count changes; use "
                "RandomShards(n) for idempotent counters, or add without a token"
            )
        candidates = cls._counter_shards(hash_key, range_key, token=True)
        physical = candidates[token_shard(token, len(candidates))]
        cls._add_once(physical, key, actions, token, increments_print(increments))

    @classmethod
    def _write_counter(cls, hash_key: Any, range_key: Any, update: Callable[[str], Any]) -> None:
        """An untokened increment: ``update(physical key)`` on a random shard."""
        candidates = cls._counter_shards(hash_key, range_key, token=False)
        physical = candidates[cls._sharded().rng.randrange(len(candidates))]
        # past botocore's own retries, resend only what surely was not applied: an
        # untokened ADD applied twice would count twice
        cls._resend(lambda: update(physical), lambda error: is_throttle(error) or is_unsent(error))

    @classmethod
    def _counter_shards(cls, hash_key: Any, range_key: Any, token: bool) -> list[str]:
        """The shards an increment may go to.

        During a shard count change (RandomShards growth) reads sum both layouts'
        shards, and an increment goes to one shard of the layout the phase writes (the
        old one until ``read_new``), so a reader one phase behind still sums it. A
        tokened increment keeps the old layout throughout: a retry of it in a later
        phase meets its own record on the same shard.
        """
        migration = cls._migration()
        if migration is None:
            return cls._candidate_keys(hash_key, range_key)
        layout = migration.layout("old" if token else migration.rules.writes[0])
        values = {} if cls._range_keyname is None else {cls._range_keyname: range_key}
        key = cls._key_values(cls._check_logical(hash_key), values)
        return layout.candidates(key, layout.candidate_segments(key))

    @classmethod
    def _add_once(
        cls, physical: str, key: dict[str, Any], actions: list[Any], token: str, fingerprint: str
    ) -> None:
        """Apply an increment unless its token is recorded; safe to call again on a retry."""
        connection = cls._get_connection()
        for _ in range(TOKEN_RACE_RETRIES):
            window = cls._token_window().current()
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
                    cls._resend(update, is_transient)
                    return
                except Exception as error:
                    if not is_condition_failure(error):
                        raise
            stored = cls._resend(
                lambda: connection.get_item(physical, consistent_read=True, **key), is_transient
            ).get("Item")
            if check_recorded(stored, token, fingerprint, cls.__name__):
                return  # counted before: a retry after a lost response
        raise UnsupportedOperationError(
            f"{cls.__name__}.add(token={token!r}): concurrent writers kept rotating the "
            "token window; retry the call (it is idempotent)"
        )

    @classmethod
    def _resend(cls, call: Callable[[], Any], safe: Callable[[Exception], bool]) -> Any:
        """Call, resending with backoff (``Meta.shard_backoff``) while failures are safe."""
        waits = cls._backoff().waits()
        while True:
            try:
                return call()
            except Exception as error:
                if not safe(error) or next(waits, None) is None:
                    raise

    # -- cheap reads ------------------------------------------------------------------

    @classmethod
    def rollup(cls: type[_M], hash_key: Any, range_key: Any = None) -> _M:
        """Read the exact totals and cache them on the home shard with the time read."""
        item = cls.get(hash_key, range_key, consistent_read=True)
        attributes = cls.get_attributes()
        now = int(cls._token_window().clock())
        actions = [Path("sm_total_at").set(now)]
        for name in cls._counter_names:
            total = getattr(item, name)
            actions.append(Path(TOTAL_PREFIX + attributes[name].attr_name).set(total or 0))
        cls._get_connection().update_item(
            cls._home_key(hash_key, range_key),
            actions=actions,
            **cls._counter_key(hash_key, range_key),
        )
        return item

    @classmethod
    def get_cached(cls: type[_M], hash_key: Any, range_key: Any = None, max_age: float = 60) -> _M:
        """Totals at most ``max_age`` seconds old, from one read of the home shard.

        When the cached totals are older (or absent), reads every shard and refreshes
        the cache (:meth:`rollup`). The counters shown include every increment made up
        to ``max_age`` seconds ago; later ones may be missing.
        """
        home = cls._home_key(hash_key, range_key)
        response = cls._get_connection().get_item(home, **cls._counter_key(hash_key, range_key))
        stored = response.get("Item")
        now = cls._token_window().clock()
        if stored and "sm_total_at" in stored:
            age = now - float(Decimal(stored["sm_total_at"][NUMBER]))
            if age <= max_age:
                cached = dict(stored)
                for name in cls._counter_attr_names():
                    total = stored.get(TOTAL_PREFIX + name)
                    if total is not None:
                        cached[name] = total
                return cls.from_raw_data(cls._merge_shards([cached], home))
        return cls.rollup(hash_key, range_key)

    # -- scans: one item per logical item ------------------------------------------------

    @classmethod
    def scan(  # type: ignore[override]
        cls: type[_M],
        filter_condition: Condition | None = None,
        segment: int | None = None,
        total_segments: int | None = None,
        limit: int | None = None,
        last_evaluated_key: dict[str, dict[str, Any]] | None = None,
        page_size: int | None = None,
        consistent_read: bool | None = None,
        index_name: str | None = None,
        rate_limit: float | None = None,
        attributes_to_get: Sequence[str] | None = None,
    ) -> Iterator[_M]:
        """Scan; on a counter model, each logical item once with its counters summed.

        A counter model's scan reads the shard items' keys, and for each logical item it
        finds reads every shard item of it (BatchGetItem, 100 keys a call): up to ``n``
        keys per shard item scanned on ``n`` shards. ``filter_condition`` is applied to
        the summed items on the client. Parallel segments together return each
        logical item once: the segment holding its lowest-numbered shard item emits it.
        """
        if index_name is not None and cls._counter_names:
            check_index_read(cls, "scan", attributes_to_get, filter_condition is not None)
        if not cls._counter_names or index_name is not None:
            return super().scan(
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
        name = cls.__name__
        if rate_limit is not None:
            raise UnsupportedOperationError(
                f"{name}.scan(rate_limit=...): a counter model's scan reads every shard of "
                "each item it finds, which rate_limit cannot bound; scan without it"
            )
        key_names = cls._with_keys([]) or []
        connection = cls._get_connection()

        def page(start: _RawItem | None, size: int | None) -> dict[str, Any]:
            response: dict[str, Any] = connection.scan(
                exclusive_start_key=start,  # type: ignore[arg-type]
                segment=segment,
                total_segments=total_segments,
                limit=size,
                consistent_read=consistent_read,
                attributes_to_get=key_names,
            )
            return response

        fetched = None if filter_condition is not None else cls._with_keys(attributes_to_get)
        if filter_condition is None:
            keep: Callable[[_RawItem], bool] = lambda raw: True  # noqa: E731
            build: Callable[[_RawItem], Any] = cls.from_raw_data
        else:
            keep, build = summed_filter(cls, filter_condition, cls._with_keys(attributes_to_get))
        return CounterScan(
            page=page,
            emit=lambda rows: cls._scan_emits(rows, consistent_read, fetched),
            keep=keep,
            build=build,
            limit=limit,
            page_size=page_size if page_size is not None else limit,
            start=last_evaluated_key,
        )

    @classmethod
    def _scan_emits(
        cls,
        rows: list[_RawItem],
        consistent_read: bool | None,
        attributes_to_get: list[str] | None,
    ) -> list[_RawItem | None]:
        """For each scanned shard item, the summed item it emits, or None.

        Every shard of each logical item found is read; the lowest-numbered shard item
        that exists emits the item (a logical item's shard items may fall in different
        pages or segments, and exactly one of them is that one).
        """
        hash_name = cls._sharded().attr_name
        layout = cls._sharded().layout
        range_attr = cls._range_key_attribute()
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
                found[ident] = (cls._candidate_keys(logical, range_key), stored)
        keys = []
        for candidates, stored in found.values():
            for physical in candidates:
                key: dict[str, Any] = {hash_name: {"S": physical}}
                if range_name is not None:
                    key[range_name] = stored
                keys.append(key)
        shard_items: dict[tuple[str, Any], _RawItem] = {}
        for raw in cls._fetch_raw(keys, consistent_read, attributes_to_get):
            stored = raw[range_name] if range_name is not None else None
            shard_items[(raw[hash_name]["S"], _range_ident(stored))] = raw
        emitters: dict[tuple[str, Any], _RawItem] = {}
        for candidates, stored in found.values():
            ident_range = _range_ident(stored)
            hits = [p for p in candidates if (p, ident_range) in shard_items]
            if hits:
                items = [shard_items[(p, ident_range)] for p in hits]
                emitters[(hits[0], ident_range)] = cls._merge_shards(items, candidates[0])
        return [
            emitters.get(
                (row[hash_name]["S"], _range_ident(row[range_name] if range_name else None))
            )
            for row in rows
        ]

    # -- writes of a counter item's other attributes ------------------------------------

    def _stored_key(self) -> str:
        """A counter item's updates go to its home shard, where its other attributes live."""
        if not self._counter_names:
            return super()._stored_key()
        logical = self._check_logical(getattr(self, self._sharded().attr_name))
        return self._home_key(logical, self._range_value())

    def _check_actions(self, actions: Sequence[Action]) -> None:
        """Besides the key checks, refuse actions on counters: they change only by add()."""
        super()._check_actions(actions)
        attributes = self.get_attributes()
        counters = {attributes[n].attr_name: n for n in self._counter_names}
        for action in actions:
            path = action.values[0]
            if isinstance(path, Path) and path.path and path.path[0] in counters:
                name = counters[path.path[0]]
                raise UnsupportedOperationError(
                    f"{type(self).__name__}.{name} is a counter spread over shards; change it "
                    f"with {type(self).__name__}.add(key, {name}=amount), not update()"
                )

    def _save_other_attributes(self, condition: Condition | None) -> dict[str, Any]:
        """``save`` on a counter model: set the non-counter attributes on the home shard.

        A PutItem would overwrite the home shard's share of the counters, so the other
        attributes are written with an UpdateItem that leaves counters alone. A counter
        changed on the instance (``p.views += 5``) is refused, not dropped: counters
        change only through ``add``.
        """
        self._check_counters_unchanged()
        attributes = self.get_attributes()
        skip = {self._hash_keyname, self._range_keyname, *self._counter_names}
        actions = []
        for name, attr in attributes.items():
            if name in skip:
                continue
            value = getattr(self, name)
            actions.append(attr.remove() if value is None else attr.set(value))
        range_key = self._range_value()
        logical = getattr(self, self._sharded().attr_name)
        home = self._home_key(logical, range_key)
        if not actions:
            actions = [Path("sm_total_at").remove()]  # create the home item, nothing else
        response: dict[str, Any] = self._get_connection().update_item(
            home,
            actions=actions,
            condition=self._physical_condition(condition, home),
            **self._counter_key(logical, range_key),
        )
        self._physical_key = home
        return response

    def _check_counters_unchanged(self) -> None:
        """Refuse a save whose counters differ from those loaded (or the defaults, if new)."""
        loaded = self._loaded_counters
        attributes = self.get_attributes()
        for name in self._counter_names:
            if loaded is not None:
                before = loaded.get(name)
            else:
                default = attributes[name].default
                before = default() if callable(default) else default
            now = getattr(self, name)
            if _number_text(now) != _number_text(before):
                model = type(self).__name__
                try:
                    amount = repr(now - before) if loaded is not None else "amount"
                except TypeError:
                    amount = "amount"
                raise UnsupportedOperationError(
                    f"{model}.{name} was changed on the instance ({before!r} to {now!r}), "
                    f"which save() would not write: a counter spread over shards changes "
                    f"only by {model}.add(key, {name}={amount}); call add() and leave the "
                    "attribute as loaded"
                )

    @classmethod
    def from_raw_data(cls: type[_M], data: _RawItem) -> _M:
        """Build an instance, remembering its counters to tell a changed one at save."""
        instance: _M = super().from_raw_data(data)
        instance._remember_counters()
        return instance

    def deserialize(self, attribute_values: _RawItem) -> None:
        super().deserialize(attribute_values)
        self._remember_counters()

    def _remember_counters(self) -> None:
        if self._counter_names:
            self._loaded_counters = {n: getattr(self, n) for n in self._counter_names}

    def _delete_all_shards(self) -> None:
        """``delete`` on a counter model: every shard item of the logical item goes."""
        range_key = self._range_value()
        logical = getattr(self, self._sharded().attr_name)
        connection = self._get_connection()
        key = self._counter_key(logical, range_key)
        for physical in self._candidate_keys(logical, range_key):
            connection.delete_item(physical, **key)
