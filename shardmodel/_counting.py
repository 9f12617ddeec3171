"""Counter methods of ShardedModel: add, exact and cached totals, counter-aware writes."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any, TypeVar

from pynamodb.constants import NUMBER
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.operand import Path
from pynamodb.expressions.update import Action

from shardmodel._reads import PointReads
from shardmodel.counters import (
    TOTAL_PREFIX,
    TokenWindow,
    check_increments,
    token_attempts,
    token_recorded,
    token_shard,
)
from shardmodel.errors import ShardKeyError, UnsupportedOperationError
from shardmodel.retry import is_condition_failure, is_throttle, is_transient, is_unsent

__all__ = ["Counting"]

_M = TypeVar("_M", bound="Counting")
_RawItem = dict[str, dict[str, Any]]

#: How often ``add`` with a token retries when concurrent writers rotate its window.
TOKEN_RACE_RETRIES = 8


class Counting(PointReads):
    """Counters spread over shard items: ``add`` writes one shard, reads sum all."""

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
        actions = [attributes[name].add(value) for name, value in increments.items()]
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
        candidates = cls._candidate_keys(hash_key, range_key)
        physical = candidates[token_shard(token, len(candidates))]
        cls._add_once(physical, key, actions, token)

    @classmethod
    def _write_counter(cls, hash_key: Any, range_key: Any, update: Callable[[str], Any]) -> None:
        """An untokened increment: ``update(physical key)`` on a random shard."""
        candidates = cls._candidate_keys(hash_key, range_key)
        physical = candidates[cls._sharded().rng.randrange(len(candidates))]
        # past botocore's own retries, resend only what surely was not applied: an
        # untokened ADD applied twice would count twice
        cls._resend(lambda: update(physical), lambda error: is_throttle(error) or is_unsent(error))

    @classmethod
    def _add_once(cls, physical: str, key: dict[str, Any], actions: list[Any], token: str) -> None:
        """Apply an increment unless its token is recorded; safe to call again on a retry."""
        connection = cls._get_connection()
        for _ in range(TOKEN_RACE_RETRIES):
            window = cls._token_window().current()
            for extra, condition in token_attempts(token, window):
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
            if token_recorded(stored, token):
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
                raise ShardKeyError(
                    f"{type(self).__name__}.{name} is a counter spread over shards; change it "
                    f"with {type(self).__name__}.add(key, {name}=amount), not update()"
                )

    def _save_other_attributes(self, condition: Condition | None) -> dict[str, Any]:
        """``save`` on a counter model: set the non-counter attributes on the home shard.

        A PutItem would overwrite the home shard's share of the counters, so the other
        attributes are written with an UpdateItem that leaves counters alone.
        """
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

    def _delete_all_shards(self) -> None:
        """``delete`` on a counter model: every shard item of the logical item goes."""
        range_key = self._range_value()
        logical = getattr(self, self._sharded().attr_name)
        connection = self._get_connection()
        key = self._counter_key(logical, range_key)
        for physical in self._candidate_keys(logical, range_key):
            connection.delete_item(physical, **key)
