"""Placement: where one operation finds and puts a logical key's items.

A :class:`Placement` is taken once at the start of an operation and does not change
while it runs. Its sources compose into it: the declared layout of the key attribute,
the shard count change in progress as the process saw it then (an
:class:`~shardmodel.keyspace.phases.ActiveMigration`), and the shard counts of the
dynamic keys the operation touches. Every path asks it, and nothing else works out
keys:

* :meth:`Placement.partitions`: the physical keys a read touches, grouped in the order
  groups are read (a get's candidates are one group); the one enumeration;
* :meth:`Placement.write_key`, :meth:`Placement.stored_key`: the key a write goes to
  (during a layout change, the item's old or new key as the phase says);
* :meth:`Placement.fence_keys`: the old keys a write to a new key fences first;
* :meth:`Placement.current`: which of an item's copies found together holds it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from attrs import evolve, field, frozen

from shardmodel.errors import UnknownShardError
from shardmodel.keyspace.dynamic import DynamicShards
from shardmodel.keyspace.keys import KeyLayout, PhysicalKey
from shardmodel.keyspace.phases import (
    FENCED,
    MOVED,
    ActiveMigration,
    authority,
    is_tombstone,
    state_of,
    unmarked,
)
from shardmodel.keyspace.strategies import KeyValues, Segment, ShardCount, TimeBounds
from shardmodel.request_bound import check_fan_out

__all__ = ["Placement"]

_RawItem = dict[str, dict[str, Any]]


@frozen
class Placement:
    """Where one operation finds and writes the items of a key attribute.

    Attributes:
        layout: the key attribute's declared layout.
        migration: the shard count change in progress, as the operation began (None:
            none, or not this attribute's: index keys keep their layout).
        counts: a dynamic key's shard counts, by logical key, as read for this
            operation (reads: every shard the key ever had; writes: its live count).
    """

    layout: KeyLayout
    migration: ActiveMigration | None = None
    counts: Mapping[str, ShardCount] = field(factory=dict)
    #: the stored name of the key attribute (how raw items name their physical key)
    key_name: str = ""

    @property
    def moving(self) -> bool:
        """True when an item may be stored under two keys (a migration or a compaction)."""
        return self.migration is not None or self.dynamic

    @property
    def dynamic(self) -> bool:
        return any(isinstance(s, DynamicShards) for s in self.layout.strategies)

    def layouts(self) -> list[KeyLayout]:
        """The layouts a read covers: the declared one, or both of a migration's."""
        return [self.layout] if self.migration is None else self.migration.read_layouts()

    def _counted(self, key: KeyValues) -> KeyValues:
        counts = self.counts.get(key.logical_key)
        return key if counts is None else evolve(key, shards=counts)

    # -- reads --------------------------------------------------------------------------

    def partitions(
        self,
        key: KeyValues | PhysicalKey,
        *,
        what: str,
        bound: int,
        bounds: Mapping[str, TimeBounds] | None = None,
        sort_name: str | None = None,
        forward: bool = True,
    ) -> list[list[str]]:
        """The physical keys a read of ``key`` touches, in groups read one after another.

        ``bounds`` None: a read by full key (get, batch_get, refresh): every candidate,
        one group. Otherwise a query with these bounds on attributes: an ordered
        strategy on ``sort_name`` (time buckets, ordered shards) splits the keys into
        groups in ascending order of the sort key (descending unless ``forward``).

        Raises:
            FanOutLimitError: more partitions than ``bound``, before any request.
        """
        if isinstance(key, PhysicalKey):
            self.layout.split(key)  # refuses a key of another layout
            return [[key]]
        key = self._counted(key)
        layouts = self.layouts()
        if bounds is None:
            plans = [[s.candidates(key) for s in lay.strategies] for lay in layouts]
        else:
            plans = [[s.query_candidates(key, bounds) for s in lay.strategies] for lay in layouts]
        check_fan_out(what, max(math.prod(len(c) for c in plan) for plan in plans), bound)
        splits = [
            i
            for i, s in enumerate(self.layout.strategies)
            if bounds is not None
            and s.ordered
            and sort_name is not None
            and sort_name in s.attributes
        ]
        groups: dict[tuple[int, ...], list[str]] = {}
        for lay, per_strategy in zip(layouts, plans, strict=True):
            # an ordered strategy may put several segments in one range (OrderedShards'
            # overflow sub-shards): its group_of names the range, merged within
            ranks: list[Callable[[Segment], int] | None] = [
                getattr(s, "group_of", None) for s in lay.strategies
            ]
            for combo, segments, physical in lay.expand(key.logical_key, per_strategy):
                group = tuple(
                    combo[i] if (rank := ranks[i]) is None else rank(segments[i]) for i in splits
                )
                if physical not in groups.get(group, ()):
                    groups.setdefault(group, []).append(physical)
        if len(layouts) > 1:  # the union's exact size, still before the first request
            check_fan_out(what, sum(len(g) for g in groups.values()), bound)
        migration = self.migration
        if migration is not None and any(
            migration.old.strategies[i] != migration.new.strategies[i] for i in splits
        ):
            # ranges that change (OrderedShards boundaries): until --finish a range's key
            # may hold a row of the other layout's ranges (a tombstone, a copy), so one
            # group, merged by the sort key, keeps the order and meets an item's copies
            # together
            return [list(dict.fromkeys(k for g in sorted(groups) for k in groups[g]))]
        ordered = [groups[g] for g in sorted(groups)]
        return ordered if forward else ordered[::-1]

    def read_keys(self, key: KeyValues | PhysicalKey, *, what: str, bound: int) -> list[str]:
        """Every physical key a read of ``key`` by full key touches, in shard order."""
        return [k for group in self.partitions(key, what=what, bound=bound) for k in group]

    def home_key(self, key: KeyValues, *, what: str, bound: int) -> str:
        """The first candidate shard of ``key``: where a counter item keeps its other
        attributes (shard 0 exists at every dynamic count, so no count is needed)."""
        one = evolve(key, shards=ShardCount(1, 1))
        return evolve(self, counts={}).read_keys(one, what=what, bound=bound)[0]

    def increment_keys(self, key: KeyValues, token: bool, *, what: str, bound: int) -> list[str]:
        """The shards a counter increment may go to.

        During a shard count change an untokened increment goes to a shard of the layout
        the phase writes first (reads sum both layouts, so a reader one phase behind
        still counts it); a tokened one keeps the old layout throughout, so its retry in
        a later phase meets its own record on the same shard.
        """
        if self.migration is None:
            return self.read_keys(key, what=what, bound=bound)
        layout = self.migration.layout("old" if token else self.migration.rules.writes)
        return Placement(layout, counts=self.counts).read_keys(key, what=what, bound=bound)

    def dynamic_keys(self, logical: str, shards: range) -> list[str]:
        """The keys of a dynamic key's shards ``shards`` (DynamicShards its only strategy)."""
        return [self.layout.compose(logical, [s]) for s in shards]

    def current(
        self,
        copies: Sequence[_RawItem],
        key_of: Callable[[_RawItem], KeyValues],
        lookup: Callable[[str, _RawItem], _RawItem | None] | None = None,
    ) -> _RawItem | None:
        """Of one item's copies found together, the one that holds it (None: none does).

        During a layout change: the old copy while it is not fenced or its move is in
        progress, else the new copy (:func:`~shardmodel.keyspace.phases.authority`); a
        tombstone alone means the item moved after the read passed its new key: ``lookup``
        (a consistent read of a key, given one of the item's rows) then reads the new copy
        the move made. While a compaction moves a
        dynamic key's item: the copy on the retired (highest-numbered) shard, the one it
        was loaded from before the compaction.
        """
        migration = self.migration
        if migration is not None:
            old: list[_RawItem] = []
            news: list[_RawItem] = []
            for raw in copies:
                physical = self._physical_of(raw)
                if migration.is_old_key(key_of(raw), physical):
                    old.append(raw)
                else:
                    news.append(raw)
            # random shards keep their numbers: a deleted item's tombstone and the item
            # saved again on another shard are both at their own new keys
            new = next((raw for raw in news if not is_tombstone(raw)), None)
            if new is None and news:
                new = news[0]
            found = authority(old, new)
            if found is None and new is None and lookup is not None:
                moved = next((raw for raw in old if state_of(raw) in (MOVED, FENCED)), None)
                if moved is not None:
                    target = migration.new_key(key_of(moved), self._physical_of(moved))
                    found = authority([], lookup(target, moved))
            return None if found is None else unmarked(found)
        if len(copies) == 1:
            return copies[0]
        return max(copies, key=self._dynamic_shard)

    def _physical_of(self, raw: _RawItem) -> str:
        return str(raw[self.key_name]["S"])

    def _dynamic_shard(self, raw: _RawItem) -> int:
        layout = self.layout
        position = next(i for i, s in enumerate(layout.strategies) if isinstance(s, DynamicShards))
        return int(layout.split(self._physical_of(raw))[1][position]) - layout.first_shard

    # -- writes -------------------------------------------------------------------------

    def write_key(self, key: KeyValues, existing: str | None, rng: random.Random) -> str:
        """The physical key a write of this item goes to first: the stored item's own
        shard when ``existing`` is one of its keys, else a new pick.

        A dynamic key's ``key.shards`` must hold its live count for a new pick.
        """
        known = existing if self.belongs(existing, key.logical_key) else None
        if self.migration is not None:
            return self.migration.write_key(key, known, rng)
        if known is not None:
            return self.layout.repick(key, known, rng)
        return self.layout.pick(key, rng)

    def stored_key(
        self, key: KeyValues, existing: str | None, model_name: str, attr_name: str
    ) -> str:
        """The physical key of this stored item (update, delete, refresh).

        Raises:
            UnknownShardError: the item's shard is random and it was neither loaded nor
                saved, so its key is not known.
        """
        known = existing if self.belongs(existing, key.logical_key) else None
        if self.migration is not None:
            return self.migration.stored_key(key, known)
        if known is not None:
            return known
        if self.layout.deterministic:
            return self.layout.pick(key, random.Random(0))
        raise UnknownShardError(
            f"{model_name}({attr_name}={key.logical_key!r}) has no known shard: its strategy "
            "is random and this instance was neither loaded nor saved; load it with "
            f"{model_name}.get(...) first, or shard with HashShards(on=[...]) so the shard "
            "follows from the item"
        )

    def belongs(self, existing: str | None, logical: str) -> bool:
        """True when ``existing``, a remembered physical key, is one of ``logical``'s."""
        return existing is not None and self.layout.logical_key(existing) == logical

    def fence_keys(self, key: KeyValues, new_key: str) -> list[str]:
        """The old keys a write at ``new_key`` fences first (none outside a migration)."""
        return [] if self.migration is None else self.migration.fence_keys(key, new_key)

    @property
    def writes_new(self) -> bool:
        """True when writes go to new keys, fencing the old first."""
        return self.migration is not None and self.migration.rules.writes == "new"

    @property
    def fenced(self) -> bool:
        """True when old-key writes carry the condition that the old copy is not fenced."""
        return self.migration is not None and self.migration.rules.fenced
