"""The shard directory: one model's access to its metadata table of dynamic shard counts.

Every change is a conditional write on what was read (``number_of_shards`` and
``last_updated``), so racing writers grow a key once: the losers read the winner's item.

Readers cache a key's metadata for ``reader_cache_seconds`` (one strong read per window,
shared by every concurrent reader of the process), and a growth is announced that long
plus the clock margin ahead (:attr:`DynamicShards.settle_seconds`): writers spread over
the new count only once every cached reader has read it. So the metadata item takes one
read per key, process and window, and no read misses a shard a writer wrote.
"""

from __future__ import annotations

import itertools
import logging
import math
import random
import threading
from typing import Any

from pynamodb.exceptions import PutError, UpdateError
from pynamodb.models import Model

from shardmodel.dynamic.flights import SingleFlight
from shardmodel.dynamic.metadata import MIRRORED_META, HistoryEntry, ShardMetadata, metadata_model
from shardmodel.errors import ShardKeyError
from shardmodel.keyspace.dynamic import DynamicShards, ShardChange
from shardmodel.keyspace.strategies import ONE_SHARD, ShardCount
from shardmodel.retry import is_condition_failure

__all__ = ["ShardDirectory"]

log = logging.getLogger("shardmodel.dynamic")

#: Keys a cache holds before it drops its expired entries (then its oldest half).
CACHE_KEYS = 4096


def _trim(cache: dict[str, tuple[float, Any]], now: float, ttl: float) -> None:
    """Keep a cache of many keys bounded: drop what expired, then the oldest (locked)."""
    if len(cache) <= CACHE_KEYS:
        return
    for key in [k for k, (stamp, _) in cache.items() if not 0 <= now - stamp < ttl]:
        del cache[key]
    if len(cache) > CACHE_KEYS:
        oldest = sorted(cache, key=lambda k: cache[k][0])[: len(cache) // 2]
        for key in oldest:
            del cache[key]


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
        self._reader_cache: dict[str, tuple[float, ShardMetadata | None]] = {}
        self._grow_checks: dict[str, tuple[float, ShardMetadata]] = {}
        self._reads: SingleFlight[ShardMetadata | None] = SingleFlight(settings.clock)
        self._grows: SingleFlight[ShardMetadata] = SingleFlight(settings.clock)

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

    def _remember(self, found: ShardMetadata, read_at: float | None = None) -> ShardMetadata:
        """Keep ``found`` for writers; for readers too when it was read strongly (or
        written) by a request sent at ``read_at``."""
        now = self.settings.clock.now()
        with self._lock:
            self._writer_cache[found.logical_key] = (now, found)
            _trim(self._writer_cache, now, self.settings.writer_cache_seconds)
        if read_at is not None:
            self._remember_read(found.logical_key, read_at, found)
        return found

    def _remember_read(self, logical: str, read_at: float, found: ShardMetadata | None) -> None:
        """Keep a strong read sent at ``read_at`` for readers (unless a newer one is kept)."""
        if self.settings.reader_cache <= 0:
            return
        with self._lock:
            kept = self._reader_cache.get(logical)
            if kept is None or kept[0] <= read_at:
                self._reader_cache[logical] = (read_at, found)
                _trim(self._reader_cache, read_at, self.settings.reader_cache)

    def _cached(self, cache: dict[str, tuple[float, Any]], logical: str, ttl: float) -> Any:
        """The kept entry ``(stamp, value)`` while younger than ``ttl``, else None.

        A clock that moved back past the stamp expires it.
        """
        with self._lock:
            entry = cache.get(logical)
        if entry is None or not 0 <= self.settings.clock.now() - entry[0] < ttl:
            return None
        return entry

    # -- writers and readers ------------------------------------------------------------

    def for_write(self, logical: str) -> ShardMetadata:
        """The key's metadata for a new write: cached, read, or created with one shard."""
        self.table()  # forgets cached counts when the model was bound elsewhere
        cached = self._cached(self._writer_cache, logical, self.settings.writer_cache_seconds)
        if cached is not None:
            return cached[1]  # type: ignore[no-any-return]
        found = self.lookup(logical, consistent=False)
        if found is None:
            found = self.create(logical)
        return self._remember(found)

    def for_read(self, logical: str) -> ShardCount:
        """The counts a read of the key must cover.

        Read strongly consistent, and kept for ``reader_cache_seconds``: concurrent
        readers of the key share one read in flight. Growths are announced that long
        ahead, so a kept count still names every shard a writer may have written.
        """
        ttl = self.settings.reader_cache
        if ttl <= 0:
            found = self.lookup(logical, consistent=True)
            return ONE_SHARD if found is None else found.count
        self.table()  # forgets cached counts when the model was bound elsewhere
        cached = self._cached(self._reader_cache, logical, ttl)
        if cached is None:
            cached = self._reads.run(logical, lambda started: self._read(logical, started), ttl)
        found = cached[1]
        return ONE_SHARD if found is None else found.count

    def _read(self, logical: str, started: float) -> ShardMetadata | None:
        """A reader's strong read of the key's item, sent after ``started``, kept."""
        found = self.lookup(logical, consistent=True)
        self._remember_read(logical, started, found)
        return found

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
        at all while ``seen`` itself was grown within the cooldown (or its announced
        growth has not taken effect yet), and the writes (threads or coroutines) of
        this process asking at once share one check, so the metadata item does not
        become the next hot key.
        """
        checked_at = self.settings.clock.now()
        cooldown = self._paced(seen, checked_at)[1]
        with self._lock:
            checked = self._grow_checks.get(logical)
        if checked is not None and checked_at - checked[0] < cooldown:
            return checked[1]
        if seen.grown and self._now() - seen.last_updated < cooldown:
            return seen
        if seen.pending_at(self.settings.clock.now()):
            return seen
        return self._grows.run(logical, lambda _: self._grow_check(logical, seen), math.inf)[1]

    def _grow_check(self, logical: str, seen: ShardMetadata) -> ShardMetadata:
        """One process's check of a throttled key: re-read it and grow it if still ``seen``."""
        checked_at = self.settings.clock.now()
        self.settings.clock.sleep(self._rng.uniform(0, self.settings.jitter))
        read_at = self.settings.clock.now()
        current = self.lookup(logical, consistent=True)
        if current is None:  # pragma: no cover - the item was deleted by hand
            return self._remember(self.create(logical))
        changed = (current.number_of_shards, current.last_updated, current.announced) != (
            seen.number_of_shards,
            seen.last_updated,
            seen.announced,
        )
        now = self._now()
        streak, cooldown = self._paced(current, now)
        cooling = current.grown and now - current.last_updated < cooldown
        cooling = cooling or current.pending_at(self.settings.clock.now())
        target = self.settings.grown(current.latest, streak)
        if changed or cooling or target <= current.latest:
            result = self._remember(current, read_at)
        else:
            result = self._change(current, target, "grow", now)
        with self._lock:
            self._grow_checks[logical] = (checked_at, result)
        return result

    def _paced(self, metadata: ShardMetadata, now: float) -> tuple[int, float]:
        """The growths just before ``now`` in a row (``DynamicShards.streak``), and the
        cooldown after the key's last growth (longer the fewer preceded it)."""
        if self.settings.pace == "fixed":  # every throttled write asks: no history walk
            return 0, self.settings.cooldown
        history = metadata.history
        growths = [
            float(entry.epoch)
            for before, entry in itertools.pairwise(history)
            if entry.count > before.count
        ]
        streak = self.settings.streak(growths, now)
        last = self.settings.streak(growths[:-1], growths[-1]) if growths else 0
        return streak, self.settings.cooldown_after(last)

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
            read_at = self.settings.clock.now()
            current = self.lookup(logical, consistent=True) or self.create(logical)
            if count == current.latest:
                return self._remember(current, read_at)
            if count < current.latest:
                raise ShardKeyError(
                    f"grow_shards({logical!r}, to={count}): the key has "
                    f"{current.latest} shards; give a larger count, or use "
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
            if count >= current.latest:
                raise ShardKeyError(
                    f"shrink_shards({logical!r}, count={count}): the key has "
                    f"{current.latest} shards; give a smaller count"
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
        keep = {e for e in seen.history if e.count <= seen.latest}
        read_at = self.settings.clock.now()
        now = self._now()
        if not keep:
            keep = {HistoryEntry(now, seen.latest)}
        table: Any = self.table()
        actions = [table.shard_history.set({str(e) for e in keep}), table.last_updated.set(now)]
        if not self._update_if_unchanged(seen, actions):
            return None
        pruned = ShardMetadata(seen.logical_key, seen.number_of_shards, now, keep, seen.announced)
        self._announce("prune", seen.logical_key, seen.readable, pruned.readable, now)
        return self._remember(pruned, read_at)

    def _update_if_unchanged(self, seen: ShardMetadata, actions: list[Any]) -> bool:
        """Apply ``actions`` to the key's item if its count, last_updated and announced
        growth are as seen.

        The optimistic lock every change takes: False when another writer changed it.
        (An announced growth leaves the count as it was, and ``last_updated`` has whole
        seconds: the announcement tells two changes in one second apart.)
        """
        table: Any = self.table()
        announced = seen.announced
        same_announced = (
            table.announced.does_not_exist()
            if announced is None
            else table.announced == str(announced)
        )
        condition = (
            (table.number_of_shards == seen.number_of_shards)
            & (table.last_updated == seen.last_updated)
            & same_announced
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
        """Set the key's count to ``target`` if the item is still ``current``.

        The count enters ``shard_history`` at once, so every reader that reads the item
        from now on reads its shards. A growth with a reader cache is announced ahead:
        writers keep the count they use now until every reader's cached metadata has
        expired (``settle_seconds``); a shrink takes effect at once, its shards staying
        in the history until a compaction empties them.
        """
        table: Any = self.table()
        read_at = self.settings.clock.now()
        entry = HistoryEntry(now, target)
        settle = self.settings.settle_seconds
        actions = [table.last_updated.set(now), table.shard_history.add({str(entry)})]
        live, announced = target, None
        if kind == "grow" and settle > 0:
            live = current.live_at(read_at)
            announced = HistoryEntry(math.ceil(read_at + settle), target)
            actions.append(table.announced.set(str(announced)))
        else:
            actions.append(table.announced.remove())
        actions.append(table.number_of_shards.set(live))
        if not self._update_if_unchanged(current, actions):
            return None
        history = (*current.history, entry)
        changed = ShardMetadata(current.logical_key, live, now, history, announced)
        self._announce(kind, current.logical_key, current.latest, target, now)
        return self._remember(changed, read_at)

    def _change(self, current: ShardMetadata, target: int, kind: str, now: int) -> ShardMetadata:
        changed = self._try_change(current, target, kind, now)
        if changed is not None:
            return changed
        read_at = self.settings.clock.now()
        found = self.lookup(current.logical_key, consistent=True)  # another writer won
        if found is None:  # pragma: no cover - deleted by hand meanwhile
            return self._remember(current)
        return self._remember(found, read_at)

    def _announce(self, kind: Any, logical: str, old: int, new: int, at: int) -> None:
        log.info(
            "%s %s key %r: %d -> %d shards", self.model.Meta.table_name, kind, logical, old, new
        )
        hook = self.settings.on_change
        if hook is not None:
            hook(ShardChange(kind, self.model.Meta.table_name, logical, old, new, at))
