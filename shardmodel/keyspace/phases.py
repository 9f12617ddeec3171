"""The phases of a shard count change and what each means for one key's placement.

Pure key math, no I/O: the phases and the state every process reads
(:class:`MigrationState`), the rules of each phase (:data:`RULES`), an item's key in
either layout (:func:`key_in`) and :class:`ActiveMigration`, a migration as one process
sees it, which a :class:`~shardmodel.engine.placement.Placement` composes.

An item moves from its old key to its new key once, fenced: while a move holds its old
copy (``moving``) the content is frozen and still the one reads return; once moved, the
old copy is a tombstone and the new copy holds the item. Writes of a process that still
writes old keys are conditional on the old copy not being fenced, and go to the new key
when it is; a process writing new keys fences the old key first. So every item has
exactly one copy that holds it at any time, and every process reads that one.

======== ================================= ============ =============================
phase    writes                            reads        job
======== ================================= ============ =============================
prepare  old key                           old + new    (processes start following)
dual     old key, unless fenced            old + new    (every process now fences)
backfill old key, unless fenced            old + new    move every old item
read_new new key, after fencing the old    old + new
new_only new key, after fencing the old    old + new    (no process writes old keys)
cleanup  new key, after fencing the old    old + new    move what is left, then delete
                                                        the old copies
done     new key                           new
======== ================================= ============ =============================

(The phases keep the names of the dual-writing protocol they replaced.)
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any, Literal, TypeVar

from attrs import evolve, frozen

from shardmodel.errors import ShardConfigurationError, UnknownShardError
from shardmodel.keyspace.keys import KeyLayout, PhysicalKey
from shardmodel.keyspace.strategies import HashShards, KeyValues, RandomShards, Segment

__all__ = [
    "COPY_MARKER",
    "MOVED",
    "MOVE_MARKER",
    "PHASES",
    "RULES",
    "ActiveMigration",
    "MigrationState",
    "Phase",
    "PhaseRules",
    "authority",
    "copy_generation",
    "generation_of",
    "is_moved",
    "key_in",
    "moved",
    "moving",
    "numbered_position",
    "resized_layout",
    "shard_count",
    "state_of",
]

Side = Literal["old", "new"]
_Raw = TypeVar("_Raw", bound=Mapping[str, Any])


class Phase(str, Enum):
    """The phases of a shard count change, in order (see the resharding runbook)."""

    PREPARE = "prepare"  # processes start following; writes go to old keys
    DUAL_WRITE = "dual_write"  # every process follows: old-key writes respect fences
    BACKFILL = "backfill"  # the backfill moves every item to its new key
    READ_NEW = "read_new"  # writes go to new keys, fencing the old first
    NEW_ONLY = "new_only"  # no process writes old keys any more
    CLEANUP = "cleanup"  # the cleanup moves what is left and deletes the old copies
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


#: On an item's old copy: ``moving:<g>`` while move generation ``g`` holds it (its content
#: frozen, still the one reads return), ``moved:<g>`` once generation ``g``'s new copy took
#: over (the old copy is then a tombstone: the keys and this attribute alone; ``moved:0``
#: fences a key that held nothing). Each generation has one owner: a fence sets ``moving:1``
#: where nothing was fenced, a take-over of a stalled move ``moving:<g + 1>`` where it read
#: ``moving:<g>``, both conditionally.
MOVE_MARKER = "_shardmodel_move"
#: The prefix of :data:`MOVE_MARKER` on a tombstone.
MOVED = "moved"
#: On a new copy a move made, until the move is confirmed: the move's generation (a number,
#: so a copy is only ever replaced by a later generation's).
COPY_MARKER = "_shardmodel_copy"


def moving(generation: int) -> str:
    """The fence of move generation ``generation`` in progress."""
    return f"moving:{generation}"


def moved(generation: int) -> str:
    """The tombstone generation ``generation`` leaves (0: an empty key fenced)."""
    return f"{MOVED}:{generation}"


def generation_of(state: str | None) -> int:
    """The generation of a ``moving:<g>`` or ``moved:<g>`` state (0 when unfenced)."""
    if state is None:
        return 0
    _, _, number = state.partition(":")
    return int(number) if number.isdigit() else 0


def is_moved(state: str | None) -> bool:
    """True for a tombstone's state (``moved:<g>``)."""
    return state is not None and state.startswith(MOVED)


def copy_generation(raw: Mapping[str, Any] | None) -> int | None:
    """The generation a new copy is marked with (None: not marked, it is confirmed)."""
    if raw is None:
        return None
    marked = raw.get(COPY_MARKER)
    return None if marked is None else int(marked.get("N", 0))


@frozen
class PhaseRules:
    """What a phase means for a process's writes and reads.

    Attributes:
        writes: ``"old"``: writes go to the item's old key; ``"new"``: to its new key.
        fenced: old-key writes carry the condition that the old copy is not fenced, and
            go to the new key when it is (no move can start before every process does).
        fence: what a new-key write does to the item's old keys first: ``"tombstone"``
            (fence an empty one, move an item still there: a process a phase behind may
            still write old keys), ``"move"`` (move an item still there; no process
            writes old keys any more, so an empty one stays empty), ``"none"``.
        reads: the layouts reads cover; an item found under both keys is read from the
            copy that holds it (:func:`authority`).
    """

    writes: Side
    fenced: bool
    fence: Literal["none", "tombstone", "move"]
    reads: tuple[Side, ...]


_BOTH: tuple[Side, ...] = ("old", "new")
RULES: dict[Phase, PhaseRules] = {
    Phase.PREPARE: PhaseRules("old", False, "none", _BOTH),
    Phase.DUAL_WRITE: PhaseRules("old", True, "none", _BOTH),
    Phase.BACKFILL: PhaseRules("old", True, "none", _BOTH),
    Phase.READ_NEW: PhaseRules("new", True, "tombstone", _BOTH),
    Phase.NEW_ONLY: PhaseRules("new", True, "move", _BOTH),
    Phase.CLEANUP: PhaseRules("new", True, "move", _BOTH),
    Phase.DONE: PhaseRules("new", True, "none", ("new",)),
}


def state_of(raw: Mapping[str, Any] | None) -> str | None:
    """An old copy's move state: None (not fenced), ``moving:<g>`` or ``moved:<g>``."""
    if raw is None:
        return None
    marked = raw.get(MOVE_MARKER)
    return None if marked is None else str(marked.get("S"))


def authority(old: Sequence[_Raw], new: _Raw | None) -> _Raw | None:
    """Of an item's copies, the one that holds it (None: the item does not exist).

    ``old``: its copies found at keys of the old layout (random shrinks have several
    candidates; at most one holds the item); ``new``: its copy at its new key. An old copy
    not fenced, or fenced by a move in progress (its content frozen), holds the item; once
    moved (a tombstone) or gone, the new copy does, unless it is marked by a generation no
    tombstone names: a superseded move's late copy, after the item moved and was deleted
    (a move's own copy always has its tombstone until the cleanup confirms the copy).
    """
    generations: set[int] = set()
    for raw in old:
        state = state_of(raw)
        if state is None or not is_moved(state):
            return raw
        generations.add(generation_of(state))
    marked = copy_generation(new)
    if marked is not None and marked not in generations:
        return None
    return new


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

    def write_key(self, key: KeyValues, existing: str | None, rng: random.Random) -> str:
        """The key a write of this item goes to in this phase: its old or its new key.

        ``existing``: the key the item was loaded from or saved under (None: a new pick).
        """
        layout = self.layout(self.rules.writes)
        if existing is not None:
            return key_in(layout, key, existing, retire=layout is self.new)
        return layout.pick(key, rng)

    def stored_key(self, key: KeyValues, existing: str | None) -> str:
        """The key of a stored item in this phase (random items must have been loaded)."""
        layout = self.layout(self.rules.writes)
        if existing is None and not layout.deterministic:
            raise UnknownShardError(
                f"key {key.logical_key!r} has no known shard: its strategy is random and this "
                "instance was neither loaded nor saved; load it with get(...) first"
            )
        return self.write_key(key, existing, random.Random(0))

    def new_key(self, key: KeyValues, physical: str) -> str:
        """The item's key in the new layout, given any of its keys."""
        return key_in(self.new, key, physical, retire=True)

    def old_keys(self, key: KeyValues, physical: str) -> list[str]:
        """The keys of the old layout that may hold the item at ``physical`` (any layout).

        One, but for a RandomShards shrink: a new shard ``t`` receives the items of
        ``t``, ``t + N``, ``t + 2N`` ... (N the new count), and at most one holds it.
        """
        if not self.random_shrink:
            return [key_in(self.old, key, physical)]
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

    def fence_keys(self, key: KeyValues, new_key: str) -> list[str]:
        """The old keys a write at ``new_key`` fences first: every one that is not it
        (none once no process can write old keys and the cleanup has emptied them)."""
        if self.rules.fence == "none":
            return []
        return self.other_old_keys(key, new_key)

    def other_old_keys(self, key: KeyValues, new_key: str) -> list[str]:
        """The old keys of the item at ``new_key`` that are not ``new_key`` itself."""
        return [k for k in self.old_keys(key, new_key) if k != new_key]

    @property
    def random_shrink(self) -> bool:
        """True when a RandomShards count shrinks: a new key has several old ones."""
        position = numbered_position("", self.old)
        old, new = self.old.strategies[position], self.new.strategies[position]
        return isinstance(old, RandomShards) and new.n < old.n  # type: ignore[attr-defined]

    def is_old_key(self, key: KeyValues, physical: str) -> bool:
        """True when ``physical`` is an old key of the item that is not its new key."""
        return physical != self.new_key(key, physical)
