"""The shard directory: one model's access to its metadata table of dynamic shard counts.

Every change is a conditional write on what was read (``number_of_shards`` and
``last_updated``), so racing writers grow a key once: the losers read the winner's item.
"""

from __future__ import annotations

import logging
import random
import threading
from typing import Any

from pynamodb.exceptions import PutError, UpdateError
from pynamodb.models import Model

from shardmodel.dynamic.metadata import MIRRORED_META, HistoryEntry, ShardMetadata, metadata_model
from shardmodel.errors import ShardKeyError
from shardmodel.keyspace.dynamic import DynamicShards, ShardChange
from shardmodel.keyspace.strategies import ONE_SHARD, ShardCount
from shardmodel.retry import is_condition_failure

__all__ = ["ShardDirectory"]

log = logging.getLogger("shardmodel.dynamic")


class ShardDirectory:
    """Reads, creates and changes the shard counts of one model's dynamic keys.

    Args:
        model: the main model.
        hash_name: the main table's partition key name.
        settings: the key's :class:`~shardmodel.keyspace.strategies.DynamicShards`.
    """

    def __init__(self, model: type[Model], hash_name: str, settings: DynamicShards) -> None:
        self.model = model
        self.settings = settings
        table = settings.table_name or f"{model.Meta.table_name}-shards"
        self.table_model = metadata_model(
            f"{model.__name__}ShardCounts", table, hash_name, model.Meta
        )
        self._rng = random.Random()
        self._lock = threading.Lock()
        self._writer_cache: dict[str, tuple[float, ShardMetadata]] = {}
        self._reader_cache: dict[str, tuple[float, ShardMetadata]] = {}
        self._grow_checks: dict[str, tuple[float, ShardMetadata]] = {}

    # -- the metadata table -------------------------------------------------------------

    def table(self) -> type[Model]:
        """The metadata model, following the main model's endpoint and credentials."""
        meta, mine = self.model.Meta, self.table_model.Meta
        changed = False
        for option in MIRRORED_META:
            value = getattr(meta, option, None)
            if getattr(mine, option, None) != value:
                setattr(mine, option, value)
                changed = True
        if changed:
            self.table_model._connection = None
            self.clear_cache()
        return self.table_model

    def clear_cache(self) -> None:
        """Forget every cached count (after rebinding, or to force fresh reads)."""
        with self._lock:
            self._writer_cache.clear()
            self._reader_cache.clear()
            self._grow_checks.clear()

    def lookup(self, logical: str, consistent: bool = True) -> ShardMetadata | None:
        """The key's metadata item, or None when it has none."""
        table = self.table()
        try:
            item = table.get(logical, consistent_read=consistent)
        except table.DoesNotExist:
            return None
        return ShardMetadata.from_item(item, self.settings.max_shards)

    def every_key(self) -> list[ShardMetadata]:
        """Every key's metadata item (a Scan of the metadata table), most shards first."""
        found = [
            ShardMetadata.from_item(item, self.settings.max_shards) for item in self.table().scan()
        ]
        return sorted(found, key=lambda m: (-m.readable, m.logical_key))

    def _now(self) -> int:
        return int(self.settings.clock.now())

    def _remember(self, found: ShardMetadata) -> ShardMetadata:
        now = self.settings.clock.now()
        with self._lock:
            self._writer_cache[found.logical_key] = (now, found)
            if self.settings.reader_cache_seconds is not None:
                self._reader_cache[found.logical_key] = (now, found)
        return found

    def _cached(
        self, cache: dict[str, tuple[float, ShardMetadata]], logical: str, ttl: float
    ) -> ShardMetadata | None:
        with self._lock:
            entry = cache.get(logical)
        if entry is None or self.settings.clock.now() - entry[0] >= ttl:
            return None
        return entry[1]

    # -- writers and readers ------------------------------------------------------------

    def for_write(self, logical: str) -> ShardMetadata:
        """The key's metadata for a new write: cached, read, or created with one shard."""
        self.table()  # forgets cached counts when the model was bound elsewhere
        cached = self._cached(self._writer_cache, logical, self.settings.writer_cache_seconds)
        if cached is not None:
            return cached
        found = self.lookup(logical, consistent=False)
        if found is None:
            found = self.create(logical)
        return self._remember(found)

    def for_read(self, logical: str) -> ShardCount:
        """The counts a read of the key must cover (strongly consistent unless cached)."""
        ttl = self.settings.reader_cache_seconds
        if ttl is not None:
            self.table()  # forgets cached counts when the model was bound elsewhere
            cached = self._cached(self._reader_cache, logical, ttl)
            if cached is not None:
                return cached.count
        found = self.lookup(logical, consistent=True)
        if found is None:
            return ONE_SHARD
        if ttl is not None:
            self._remember(found)
        return found.count

    def create(self, logical: str) -> ShardMetadata:
        """Create the key's item with one shard; if another writer won, read theirs."""
        table = self.table()
        now = self._now()
        item = table(
            logical,
            number_of_shards=1,
            last_updated=now,
            shard_history={str(HistoryEntry(now, 1))},
        )
        try:
            item.save(condition=table.key.does_not_exist())  # type: ignore[attr-defined]
        except PutError as error:
            if not is_condition_failure(error):
                raise
            found = self.lookup(logical, consistent=True)
            if found is None:  # pragma: no cover - deleted between the two calls
                return self.create(logical)
            return found
        return ShardMetadata.from_item(item, self.settings.max_shards)

    # -- changes ----------------------------------------------------------------------

    def grow(self, logical: str, seen: ShardMetadata) -> ShardMetadata:
        """Grow the key after a partition throttle on the space of ``seen``.

        Waits a random jitter, then re-reads: if another writer changed the count since
        ``seen``, or the last change is within the cooldown, or the count is at its
        maximum, returns what is there. Otherwise one conditional update grows it.

        In a throttling storm every throttled write asks to grow: the item is read at
        most once per cooldown per key in this process (the answer is kept), and not
        at all while ``seen`` itself was grown within the cooldown, so the metadata item
        does not become the next hot key.
        """
        cooldown = self.settings.cooldown
        checked_at = self.settings.clock.now()
        with self._lock:
            checked = self._grow_checks.get(logical)
        if checked is not None and checked_at - checked[0] < cooldown:
            return checked[1]
        if seen.grown and self._now() - seen.last_updated < cooldown:
            return seen
        self.settings.clock.sleep(self._rng.uniform(0, self.settings.jitter))
        current = self.lookup(logical, consistent=True)
        if current is None:  # pragma: no cover - the item was deleted by hand
            return self._remember(self.create(logical))
        changed = (current.number_of_shards, current.last_updated) != (
            seen.number_of_shards,
            seen.last_updated,
        )
        now = self._now()
        cooling = current.grown and now - current.last_updated < cooldown
        target = self.settings.grown(current.number_of_shards)
        if changed or cooling or target <= current.number_of_shards:
            result = self._remember(current)
        else:
            result = self._change(current, target, "grow", now)
        with self._lock:
            self._grow_checks[logical] = (checked_at, result)
        return result

    def grow_to(self, logical: str, count: int) -> ShardMetadata:
        """Raise the key's live count to ``count`` now (an operator's growth, no throttle).

        The same conditional update and history entry as an automatic growth; returns
        the item unchanged when it already has ``count`` shards.
        """
        limit = self.settings.max_shards
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= limit:
            raise ShardKeyError(
                f"grow_shards(to={count!r}): give the new live count, an int between 1 and "
                f"the key's max_shards ({limit})"
            )
        for _ in range(10):
            current = self.lookup(logical, consistent=True) or self.create(logical)
            if count == current.number_of_shards:
                return self._remember(current)
            if count < current.number_of_shards:
                raise ShardKeyError(
                    f"grow_shards({logical!r}, to={count}): the key has "
                    f"{current.number_of_shards} shards; give a larger count, or use "
                    "shrink_shards to lower it"
                )
            changed = self._try_change(current, count, "grow", self._now())
            if changed is not None:
                return changed
        raise ShardKeyError(  # pragma: no cover - ten lost races in a row
            f"grow_shards({logical!r}): the count kept changing; retry"
        )

    def shrink(self, logical: str, count: int) -> ShardMetadata:
        """Lower the key's live count to ``count``; readers keep reading the old shards."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ShardKeyError(
                f"shrink_shards(count={count!r}): give the new live count, an int of at least 1"
            )
        for _ in range(10):
            current = self.lookup(logical, consistent=True)
            if current is None:
                raise ShardKeyError(
                    f"shrink_shards({logical!r}): the key has no metadata item, so it has one "
                    "shard already"
                )
            if count >= current.number_of_shards:
                raise ShardKeyError(
                    f"shrink_shards({logical!r}, count={count}): the key has "
                    f"{current.number_of_shards} shards; give a smaller count"
                )
            changed = self._try_change(current, count, "shrink", self._now())
            if changed is not None:
                return changed
        raise ShardKeyError(  # pragma: no cover - ten lost races in a row
            f"shrink_shards({logical!r}): the count kept changing; retry"
        )

    def prune(self, seen: ShardMetadata) -> ShardMetadata | None:
        """Drop history entries above the live count; None if the item changed since ``seen``.

        Called by a compaction once the retired shards are empty.
        """
        keep = {e for e in seen.history if e.count <= seen.number_of_shards}
        now = self._now()
        if not keep:
            keep = {HistoryEntry(now, seen.number_of_shards)}
        table: Any = self.table()
        actions = [table.shard_history.set({str(e) for e in keep}), table.last_updated.set(now)]
        if not self._update_if_unchanged(seen, actions):
            return None
        pruned = ShardMetadata(seen.logical_key, seen.number_of_shards, now, keep)
        self._announce("prune", seen.logical_key, seen.readable, pruned.readable, now)
        return self._remember(pruned)

    def _update_if_unchanged(self, seen: ShardMetadata, actions: list[Any]) -> bool:
        """Apply ``actions`` to the key's item if its count and last_updated are as seen.

        The optimistic lock every change takes: False when another writer changed it.
        """
        table: Any = self.table()
        condition = (table.number_of_shards == seen.number_of_shards) & (
            table.last_updated == seen.last_updated
        )
        try:
            table(seen.logical_key).update(actions=actions, condition=condition)
        except UpdateError as error:
            if not is_condition_failure(error):
                raise
            return False
        return True

    def _try_change(
        self, current: ShardMetadata, target: int, kind: str, now: int
    ) -> ShardMetadata | None:
        table: Any = self.table()
        entry = HistoryEntry(now, target)
        actions = [
            table.number_of_shards.set(target),
            table.last_updated.set(now),
            table.shard_history.add({str(entry)}),
        ]
        if not self._update_if_unchanged(current, actions):
            return None
        changed = ShardMetadata(current.logical_key, target, now, (*current.history, entry))
        self._announce(kind, current.logical_key, current.number_of_shards, target, now)
        return self._remember(changed)

    def _change(self, current: ShardMetadata, target: int, kind: str, now: int) -> ShardMetadata:
        changed = self._try_change(current, target, kind, now)
        if changed is not None:
            return changed
        found = self.lookup(current.logical_key, consistent=True)  # another writer won
        return self._remember(found if found is not None else current)

    def _announce(self, kind: Any, logical: str, old: int, new: int, at: int) -> None:
        log.info(
            "%s %s key %r: %d -> %d shards", self.model.Meta.table_name, kind, logical, old, new
        )
        hook = self.settings.on_change
        if hook is not None:
            hook(ShardChange(kind, self.model.Meta.table_name, logical, old, new, at))
