"""The phases of a shard count change and what each means for one key's placement.

Pure key math, no I/O: the phases and the state every process reads
(:class:`MigrationState`), the rules of each phase (:data:`RULES`), an item's key in
either layout (:func:`key_in`) and :class:`ActiveMigration`, a migration as one process
sees it, which a :class:`~shardmodel.engine.placement.Placement` composes.

======== ============== ============== ========== ===========
phase    writes         deletes        reads      prefer copy
======== ============== ============== ========== ===========
prepare  old            old + new      old + new  old
dual     old, then new  old + new      old + new  old
backfill old, then new  old + new      old + new  old
read_new new, then old  old + new      old + new  new
new_only new            old, then new  old + new  new
cleanup  new            old, then new  old + new  new
done     new            new            new        new
======== ============== ============== ========== ===========
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from enum import Enum
from typing import Literal

from attrs import evolve, frozen

from shardmodel.errors import ShardConfigurationError, UnknownShardError
from shardmodel.keyspace.keys import KeyLayout, PhysicalKey
from shardmodel.keyspace.strategies import HashShards, KeyValues, RandomShards, Segment

__all__ = [
    "COPY_MARKER",
    "PHASES",
    "RULES",
    "ActiveMigration",
    "MigrationState",
    "Phase",
    "PhaseRules",
    "key_in",
    "numbered_position",
    "resized_layout",
    "shard_count",
]

Side = Literal["old", "new"]


class Phase(str, Enum):
    """The phases of a shard count change, in order (see the resharding runbook)."""

    PREPARE = "prepare"  # deletes reach both layouts; reads cover both
    DUAL_WRITE = "dual_write"  # writes go to old and new keys
    BACKFILL = "backfill"  # the backfill copies old-only items to their new keys
    READ_NEW = "read_new"  # reads prefer the new copy; writes still reach both
    NEW_ONLY = "new_only"  # writes go to the new keys only
    CLEANUP = "cleanup"  # the cleanup deletes the old copies
    DONE = "done"  # reads and writes use the new layout only


#: Every phase in order.
PHASES: tuple[Phase, ...] = tuple(Phase)


@frozen
class MigrationState:
    """One table's shard count change, as every process reads it.

    Attributes:
        table: the main table.
        old_count: the shard count the model declares (and the table holds) at the start.
        new_count: the shard count it moves to.
        phase: the current phase.
        changed_at: epoch seconds of the last phase change.
        settle_seconds: the least time between two phase changes: longer than any
            process's state cache plus its longest request, so no process lags by two.
        segments: how many parallel scan segments the backfill and cleanup use.
        version: the optimistic-lock counter (set by the store).
    """

    table: str
    old_count: int
    new_count: int
    phase: Phase
    changed_at: float
    settle_seconds: float
    segments: int = 1
    version: int = 0

    def at(self, phase: Phase) -> bool:
        """True when the migration has reached ``phase`` (or a later one)."""
        return PHASES.index(self.phase) >= PHASES.index(phase)


#: The attribute a backfill copy carries until it is checked against the old copy; reads
#: skip such copies (the old copy, if it still exists, is read instead).
COPY_MARKER = "_shardmodel_copy"


@frozen
class PhaseRules:
    """Which layouts a phase writes, deletes and reads, and which copy a read keeps."""

    writes: tuple[Side, ...]
    deletes: tuple[Side, ...]
    reads: tuple[Side, ...]
    prefer_new: bool
    #: a delete removes the old copy before the new one (the primary, which carries the
    #: delete's condition): once no reader prefers the old copy, a delete in flight then
    #: never looks to the cleanup like an old copy whose new copy was lost
    old_first: bool = False


_BOTH: tuple[Side, ...] = ("old", "new")
RULES: dict[Phase, PhaseRules] = {
    Phase.PREPARE: PhaseRules(("old",), _BOTH, _BOTH, False),
    Phase.DUAL_WRITE: PhaseRules(_BOTH, _BOTH, _BOTH, False),
    Phase.BACKFILL: PhaseRules(_BOTH, _BOTH, _BOTH, False),
    Phase.READ_NEW: PhaseRules(("new", "old"), _BOTH, _BOTH, True),
    Phase.NEW_ONLY: PhaseRules(("new",), _BOTH, _BOTH, True, old_first=True),
    Phase.CLEANUP: PhaseRules(("new",), _BOTH, _BOTH, True, old_first=True),
    Phase.DONE: PhaseRules(("new",), ("new",), ("new",), True),
}


def numbered_position(model_name: str, layout: KeyLayout) -> int:
    """The position of the one fixed numbered strategy (HashShards or RandomShards)."""
    found = [i for i, s in enumerate(layout.strategies) if isinstance(s, HashShards | RandomShards)]
    if len(found) != 1:
        raise ShardConfigurationError(
            f"{model_name}: a shard count change needs exactly one HashShards or RandomShards "
            f"in the partition key's strategies, found {len(found)}; DynamicShards keys "
            "change their counts by themselves"
        )
    return found[0]


def resized_layout(model_name: str, layout: KeyLayout, count: int) -> KeyLayout:
    """``layout`` with its numbered strategy's count set to ``count``."""
    position = numbered_position(model_name, layout)
    strategies = list(layout.strategies)
    strategies[position] = evolve(strategies[position], n=count)  # type: ignore[misc]
    return evolve(layout, strategies=tuple(strategies))


def shard_count(model_name: str, layout: KeyLayout) -> int:
    """The count of the layout's numbered strategy."""
    strategy = layout.strategies[numbered_position(model_name, layout)]
    return int(strategy.n)  # type: ignore[attr-defined]


def key_in(layout: KeyLayout, key: KeyValues, physical: str, retire: bool = False) -> str:
    """The item's key in ``layout``: deterministic segments recomputed, random ones kept.

    ``retire`` (for a migration's new layout): a random shard beyond ``layout``'s count
    (a shrink's retired shard) becomes its number modulo the count, so each retired
    shard has one destination. Never for the old layout: growing, a shard beyond the old
    count is a new shard, not a retired one, and has no old key but its own.
    """
    _, texts = layout.split(physical)
    segments: list[Segment] = []
    rng = random.Random(0)  # unused: deterministic strategies ignore it
    for strategy, text in zip(layout.strategies, texts, strict=True):
        if strategy.deterministic:
            segments.append(strategy.pick(key, rng))
        elif retire and isinstance(strategy, RandomShards) and _shard(layout, text) >= strategy.n:
            segments.append(_shard(layout, text) % strategy.n)
        else:
            segments.append(text)
    return PhysicalKey(layout.compose(key.logical_key, segments))


def _shard(layout: KeyLayout, text: str) -> int:
    return int(text) - layout.first_shard


@frozen
class ActiveMigration:
    """A migration in progress as one process sees it: its state and both layouts."""

    state: MigrationState
    old: KeyLayout
    new: KeyLayout

    @property
    def rules(self) -> PhaseRules:
        return RULES[self.state.phase]

    def layout(self, side: Side) -> KeyLayout:
        return self.old if side == "old" else self.new

    def read_layouts(self) -> list[KeyLayout]:
        """The layouts a read covers (their keys' union)."""
        return [self.layout(side) for side in self.rules.reads]

    def primary_key(self, key: KeyValues, existing: str | None, rng: random.Random) -> str:
        """The key a write goes to first (an update's or a conditional save's key)."""
        layout = self.layout(self.rules.writes[0])
        if existing is not None:
            return key_in(layout, key, existing, retire=layout is self.new)
        return layout.pick(key, rng)

    def stored_key(self, key: KeyValues, existing: str | None) -> str:
        """The primary key of a stored item (random items must have been loaded)."""
        layout = self.layout(self.rules.writes[0])
        if existing is None and not layout.deterministic:
            raise UnknownShardError(
                f"key {key.logical_key!r} has no known shard: its strategy is random and this "
                "instance was neither loaded nor saved; load it with get(...) first"
            )
        return self.primary_key(key, existing, random.Random(0))

    def mirror_keys(self, key: KeyValues, primary: str) -> list[str]:
        """The other keys a write of the item at ``primary`` also goes to."""
        return self._others(self.rules.writes, key, primary)

    def delete_keys(self, key: KeyValues, primary: str) -> list[str]:
        """The other keys a delete of the item at ``primary`` also removes."""
        return self._others(self.rules.deletes, key, primary)

    def _others(self, sides: Sequence[Side], key: KeyValues, primary: str) -> list[str]:
        keys = [k for side in sides for k in self.keys_in(side, key, primary)]
        return [k for k in dict.fromkeys(keys) if k != primary]

    @property
    def random_shrink(self) -> bool:
        """True when a RandomShards count shrinks: a new key has several old ones."""
        position = numbered_position("", self.old)
        old, new = self.old.strategies[position], self.new.strategies[position]
        return isinstance(old, RandomShards) and new.n < old.n  # type: ignore[attr-defined]

    def keys_in(self, side: Side, key: KeyValues, physical: str) -> list[str]:
        """The item's keys in one side's layout.

        Shrinking RandomShards, a new shard ``t`` receives the items of ``t``,
        ``t + N``, ``t + 2N`` ... (N the new count): an item at a new key may have its
        original at any of them (at most one holds it: an item has one logical key).
        """
        if side == "new" or not self.random_shrink:
            return [key_in(self.layout(side), key, physical, retire=side == "new")]
        position = numbered_position("", self.old)
        _, texts = self.old.split(physical)
        shard = _shard(self.old, texts[position])
        step = self.new.strategies[position].n  # type: ignore[attr-defined]
        count = self.old.strategies[position].n  # type: ignore[attr-defined]
        if shard >= step:
            return [physical]
        keys: list[str] = []
        for number in range(shard, count, step):
            segments: list[Segment] = list(texts)
            segments[position] = number
            keys.append(PhysicalKey(self.old.compose(key.logical_key, segments)))
        return keys

    def only_if_stored(self, primary: str, other: str) -> bool:
        """True when a write at ``primary`` reaches ``other`` only if an item is there.

        Shrinking RandomShards, a write at a new key mirrors to the retired keys that
        may hold its original; a retired key without it must stay empty (an item born
        on a new shard has no original), so those writes are conditional.
        """
        return self.random_shrink and not self.is_moved_key(primary) and self.is_moved_key(other)

    def is_moved_key(self, physical: str) -> bool:
        """True for a key on a shard the new layout does not have."""
        position = numbered_position("", self.old)
        _, texts = self.old.split(physical)
        count: int = self.new.strategies[position].n  # type: ignore[attr-defined]
        return _shard(self.old, texts[position]) >= count

    def is_preferred(self, key: KeyValues, physical: str) -> bool:
        """True when ``physical`` is the item's key in the layout reads prefer."""
        layout = self.new if self.rules.prefer_new else self.old
        return key_in(layout, key, physical, retire=layout is self.new) == physical

    def is_current(self, key: KeyValues, physical: str) -> bool:
        """Of an item's copies found together, True for the one reads return.

        Shrinking RandomShards, both the original on a retired shard and its copy are
        at valid old keys: before ``read_new`` the original (retired) one is current.
        """
        if self.random_shrink and not self.rules.prefer_new:
            return self.is_moved_key(physical)
        return self.is_preferred(key, physical)

    def is_moved(self, key: KeyValues, physical: str) -> tuple[bool, str]:
        """Whether the item at ``physical`` (an old key) has another new key, and that key."""
        target = key_in(self.new, key, physical, retire=True)
        return target != physical, target
