"""The phases of a layout change and what each means for one key's placement.

Pure key math, no I/O: the phases and the state every process reads
(:class:`MigrationState`), the rules of each phase (:data:`RULES`), an item's key in
either layout (:func:`key_in`) and :class:`ActiveMigration`, a migration as one process
sees it, which a :class:`~shardmodel.engine.placement.Placement` composes.

An item moves from its old key to its new key once, fenced: while a move holds its old
copy (``moving``) the content is frozen and still the one reads return; once moved, the
old copy is a tombstone and the new copy holds the item. Writes of a process that still
writes old keys are conditional on the old copy not being fenced, and go to the new key
when it is; a process writing new keys fences the old key first. So every item has
exactly one copy that holds it at any time, and every process reads that one. Until the
sweep, a delete at a new key leaves a tombstone too, so a move that stalled cannot bring
the item back with a late copy, and every item whose key changes keeps a row at its old
key, where a scan meets it once.

========= =============================== ========== ======= ==========================
phase     writes                          deletes    reads   job
========= =============================== ========== ======= ==========================
prepare   old key                         old key    both    (processes start following)
dual      old key, unless fenced          tombstone  both    (every process now fences)
backfill  old key, unless fenced          tombstone  both    move every old item
read_new  new key, the old fenced first   tombstone  both
new_only  new key, the old fenced first   tombstone  both    (no process writes old keys)
cleanup   new key, the old fenced first   tombstone  both    move what is left
drain     new key, the old fenced first   tombstone  new     (no move is under way)
done      new key                         delete     new     sweep the tombstones
========= =============================== ========== ======= ==========================
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any, Literal, TypeVar

from attrs import evolve, frozen

from shardmodel.capacity import MAX_ITEM_BYTES
from shardmodel.errors import ItemSizeError, ShardConfigurationError, UnknownShardError
from shardmodel.keyspace.keys import KeyLayout, PhysicalKey
from shardmodel.keyspace.ordered import OrderedShards
from shardmodel.keyspace.strategies import HashShards, KeyValues, RandomShards, Segment
from shardmodel.sizing import item_size

__all__ = [
    "COPY_MARKER",
    "DELETED",
    "FENCED",
    "MARKERS",
    "MOVED",
    "MOVE_MARKER",
    "MOVE_RESERVE_BYTES",
    "PHASES",
    "RULES",
    "ActiveMigration",
    "MigrationState",
    "Phase",
    "PhaseRules",
    "StrategySpec",
    "authority",
    "check_move_room",
    "is_tombstone",
    "key_in",
    "numbered_position",
    "resized_layout",
    "shard_count",
    "state_of",
    "unmarked",
]

Side = Literal["old", "new"]
_Raw = TypeVar("_Raw", bound=Mapping[str, Any])


class Phase(str, Enum):
    """The phases of a layout change, in order (see the resharding runbook)."""

    PREPARE = "prepare"  # processes start following; writes go to old keys
    DUAL_WRITE = "dual_write"  # every process follows: old-key writes respect fences
    BACKFILL = "backfill"  # the backfill moves every item to its new key
    READ_NEW = "read_new"  # writes go to new keys, fencing the old first
    NEW_ONLY = "new_only"  # no process writes old keys any more
    CLEANUP = "cleanup"  # the cleanup moves what is left
    DRAIN = "drain"  # reads use the new keys only; deletes still leave tombstones
    DONE = "done"  # the sweep deletes the tombstones; then the state is removed


#: Every phase in order.
PHASES: tuple[Phase, ...] = tuple(Phase)


@frozen
class StrategySpec:
    """A strategy swap's side, as the migration state records it (its count is the
    state's): ``RandomShards``, or ``HashShards`` with a named algorithm.

    Both sides are recorded, so code declaring either one can work out the other.
    """

    kind: str  # "random" or "hash"
    on: tuple[str, ...] = ()
    algorithm: str = "md5"
    joiner: str = ""

    @classmethod
    def of(cls, strategy: object) -> StrategySpec:
        """The record of a RandomShards or a HashShards (its algorithm named, not a function)."""
        if isinstance(strategy, RandomShards):
            return cls("random")
        if isinstance(strategy, HashShards) and isinstance(strategy.algorithm, str):
            return cls("hash", strategy.on, strategy.algorithm, strategy.joiner)
        raise ShardConfigurationError(
            f"{strategy!r}: a strategy swap records RandomShards or HashShards with a named "
            "algorithm ('md5' or 'sha256'); every process rebuilds it from the state"
        )

    def build(self, n: int) -> RandomShards | HashShards:
        """The strategy with ``n`` shards."""
        if self.kind == "random":
            return RandomShards(n)
        return HashShards(n, on=self.on, algorithm=self.algorithm, joiner=self.joiner)

    def describe(self, n: int) -> str:
        """``RandomShards(4)``, ``HashShards(8, on=seq)``."""
        if self.kind == "random":
            return f"RandomShards({n})"
        extra = "" if self.algorithm == "md5" else f", algorithm={self.algorithm}"
        extra += f", joiner={self.joiner!r}" if self.joiner else ""
        return f"HashShards({n}, on={','.join(self.on)}{extra})"


@frozen
class MigrationState:
    """One table's shard count change, as every process reads it.

    Attributes:
        table: the main table.
        old_count: the shard count the model declares (and the table holds) at the start
            (an OrderedShards key: its number of ranges).
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
    #: an OrderedShards change: the ranges' boundaries before and after (the counts are
    #: their numbers of ranges); None for a count change
    old_boundaries: tuple[str, ...] | None = None
    new_boundaries: tuple[str, ...] | None = None
    #: a strategy swap (RandomShards or HashShards to a HashShards of other attributes):
    #: both sides; None for a count or boundaries change
    old_strategy: StrategySpec | None = None
    new_strategy: StrategySpec | None = None
    #: a time series' count change: the label of the first bucket with the new count (set
    #: when the change leaves prepare); None otherwise
    series: bool = False
    cutover: str | None = None
    #: ``--abort`` was asked from backfill on: once done and swept, the change returns
    #: to the old layout (:meth:`returned`) instead of waiting for ``--finish``
    aborted: bool = False
    #: this change is the return of an aborted one: its new layout is the one the code
    #: declared before the aborted change began
    returning: bool = False
    #: ``--pause`` was asked: jobs stop at their next page and the phase does not advance
    #: until ``--resume``; reads and writes are unaffected
    paused: bool = False

    @property
    def change(self) -> str:
        """The change in words: ``16 -> 32 shards``, ``21 -> 24 ordered ranges``, or
        ``RandomShards(4) -> HashShards(8, on=seq)``."""
        if self.old_strategy is not None and self.new_strategy is not None:
            old = self.old_strategy.describe(self.old_count)
            text = f"{old} -> {self.new_strategy.describe(self.new_count)}"
        else:
            what = "shards" if self.new_boundaries is None else "ordered ranges"
            if self.series:
                start = "(bucket not chosen yet)" if self.cutover is None else self.cutover
                what = f"shards from bucket {start}"
            text = f"{self.old_count} -> {self.new_count} {what}"
        if self.aborted:
            return f"{text}, aborted: returns to {self.old_count} after done"
        if self.returning:
            return f"{text}, the return of an aborted change"
        return text

    def returned(self, now: float) -> MigrationState:
        """The change back to the old layout, in prepare: an aborted change's return.

        Its old layout is this change's new one and the reverse: code declaring the
        layout from before the aborted change follows it, and ``--finish`` expects it.
        A time series' return keeps the change's first bucket: its buckets go back.
        """
        return MigrationState(
            table=self.table,
            old_count=self.new_count,
            new_count=self.old_count,
            phase=Phase.PREPARE,
            changed_at=now,
            settle_seconds=self.settle_seconds,
            segments=self.segments,
            version=self.version,
            old_boundaries=self.new_boundaries,
            new_boundaries=self.old_boundaries,
            old_strategy=self.new_strategy,
            new_strategy=self.old_strategy,
            series=self.series,
            cutover=self.cutover,
            returning=True,
        )

    def same_change(self, other: MigrationState) -> bool:
        """True when ``other`` is this change in any phase (not its return, nor another)."""
        return _identity(self) == _identity(other)

    def layouts(self, model_name: str, declared: KeyLayout) -> tuple[KeyLayout, KeyLayout]:
        """The old and the new layout, from the declared one (either of them)."""
        old = resized_layout(
            model_name, declared, self.old_count, self.old_boundaries, self.old_strategy
        )
        new = resized_layout(
            model_name, declared, self.new_count, self.new_boundaries, self.new_strategy
        )
        return old, new

    def at(self, phase: Phase) -> bool:
        """True when the migration has reached ``phase`` (or a later one)."""
        return PHASES.index(self.phase) >= PHASES.index(phase)


def _identity(state: MigrationState) -> tuple[Any, ...]:
    return (
        state.table,
        state.old_count,
        state.new_count,
        state.old_boundaries,
        state.new_boundaries,
        state.old_strategy,
        state.new_strategy,
        state.series,
        state.returning,
    )


#: The bookkeeping attribute of a migration's rows: ``moving:<token>`` on an old copy a
#: move holds (its content frozen, still the one reads return); :data:`MOVED` on an old
#: key whose item moved; :data:`FENCED` on an old key fenced while it held nothing;
#: :data:`DELETED` on a new key whose item was deleted. The last three are tombstones:
#: the keys, what the key is computed from, and this attribute.
MOVE_MARKER = "_shardmodel_move"
#: An old key whose item moved to its new key.
MOVED = "moved"
#: An old key fenced while it held nothing (the item, if any, lives at its new key).
FENCED = "fenced"
#: A new key whose item was deleted before the sweep.
DELETED = "deleted"
#: On a new copy a move made, until the move is confirmed: the move's token.
COPY_MARKER = "_shardmodel_copy"
#: The bookkeeping attributes reads strip.
MARKERS = (MOVE_MARKER, COPY_MARKER)
#: The bytes a layout change may add to an item: a move's marker on its old copy
#: (``_shardmodel_move`` = ``moving:`` and a 32-digit token, 54 bytes), and a new key
#: longer than the old (a shard number of more digits; 46 bytes are left for it).
MOVE_RESERVE_BYTES = 100


def check_move_room(model_name: str, data: Mapping[str, Mapping[str, Any]]) -> None:
    """Refuse an item a layout change could not move (:data:`MOVE_RESERVE_BYTES`)."""
    size = item_size(data)
    if size > MAX_ITEM_BYTES - MOVE_RESERVE_BYTES:
        raise ItemSizeError(
            f"{model_name}: the item is {size:,} bytes; a sharded model keeps "
            f"{MOVE_RESERVE_BYTES} of DynamoDB's {MAX_ITEM_BYTES:,} for a layout change "
            f"(a move marks the item, and its new key may be longer), so at most "
            f"{MAX_ITEM_BYTES - MOVE_RESERVE_BYTES:,}: store fewer bytes in the item "
            "(large values belong in S3, the item holding their address)"
        )


@frozen
class PhaseRules:
    """What a phase means for a process's writes and reads.

    Attributes:
        writes: ``"old"``: writes go to the item's old key; ``"new"``: to its new key.
        fenced: old-key writes carry the condition that the old copy is not fenced, and
            go to the new key when it is (no move can start before every process does).
        fence: a new-key write first fences the item's old keys with a tombstone where
            nothing is stored, and moves an item still there.
        tombstones: a delete at a new key leaves a :data:`DELETED` tombstone (a move a
            phase behind may still copy the item there).
        reads: the layouts reads cover; an item found under both keys is read from the
            copy that holds it (:func:`authority`).
        scan_old: a scan meets each moving item at its old key (every such item keeps a
            row there while every process fences); else (from drain on, when no item is
            at an old key any more and none moves) it returns every live row. Drain
            cannot keep the old-key rule: a process a phase ahead, in done, writes new
            keys without fencing the old ones. So the segments of a parallel scan begun
            one in cleanup and one in drain apply different rules (see the resharding
            runbook, "Scans and cursors").
        job: the scan job the phase runs (``"backfill"``, ``"cleanup"``, ``"sweep"``).
    """

    writes: Side
    fenced: bool
    fence: bool
    tombstones: bool
    reads: tuple[Side, ...]
    scan_old: bool
    job: str | None = None


_BOTH: tuple[Side, ...] = ("old", "new")
_NEW: tuple[Side, ...] = ("new",)
RULES: dict[Phase, PhaseRules] = {
    Phase.PREPARE: PhaseRules("old", False, False, False, _BOTH, True),
    Phase.DUAL_WRITE: PhaseRules("old", True, False, True, _BOTH, True),
    Phase.BACKFILL: PhaseRules("old", True, False, True, _BOTH, True, "backfill"),
    Phase.READ_NEW: PhaseRules("new", True, True, True, _BOTH, True),
    Phase.NEW_ONLY: PhaseRules("new", True, True, True, _BOTH, True),
    Phase.CLEANUP: PhaseRules("new", True, True, True, _BOTH, True, "cleanup"),
    Phase.DRAIN: PhaseRules("new", True, True, True, _NEW, False),
    Phase.DONE: PhaseRules("new", True, False, False, _NEW, False, "sweep"),
}


def unmarked(raw: _Raw) -> _Raw:
    """A row as reads show it: without a move's bookkeeping attributes (:data:`MARKERS`)."""
    if MOVE_MARKER not in raw and COPY_MARKER not in raw:
        return raw
    return {k: v for k, v in raw.items() if k not in MARKERS}  # type: ignore[return-value]


def state_of(raw: Mapping[str, Any] | None) -> str | None:
    """A row's migration state: None (an item, not fenced), ``moving:<token>``,
    :data:`MOVED`, :data:`FENCED` or :data:`DELETED`."""
    if raw is None:
        return None
    marked = raw.get(MOVE_MARKER)
    return None if marked is None else str(marked.get("S"))


def is_tombstone(raw: Mapping[str, Any] | None) -> bool:
    """True for a tombstone row (moved, fenced or deleted): it holds no item."""
    state = state_of(raw)
    return state is not None and not state.startswith("moving:")


def authority(old: Sequence[_Raw], new: _Raw | None) -> _Raw | None:
    """Of an item's copies, the one that holds it (None: the item does not exist).

    ``old``: its copies found at keys of the old layout (random shrinks have several
    candidates; at most one holds the item); ``new``: its copy at its new key. An old copy
    not fenced, or fenced by a move in progress (its content frozen), holds the item; once
    moved or fenced (a tombstone) or gone, the new copy does, unless it is a tombstone.
    """
    for raw in old:
        if not is_tombstone(raw):
            return raw
    return None if new is None or is_tombstone(new) else new


def numbered_position(model_name: str, layout: KeyLayout) -> int:
    """The position of the one strategy a layout change changes: a HashShards or
    RandomShards count, or OrderedShards boundaries."""
    found = [
        i
        for i, s in enumerate(layout.strategies)
        if isinstance(s, HashShards | RandomShards | OrderedShards)
    ]
    if len(found) != 1:
        raise ShardConfigurationError(
            f"{model_name}: a layout change needs exactly one HashShards, RandomShards or "
            f"OrderedShards in the partition key's strategies, found {len(found)}; "
            "DynamicShards keys change their counts by themselves"
        )
    return found[0]


def resized_layout(
    model_name: str,
    layout: KeyLayout,
    count: int,
    boundaries: Sequence[str] | None = None,
    spec: StrategySpec | None = None,
) -> KeyLayout:
    """``layout`` with its numbered strategy's count set to ``count`` (an OrderedShards
    strategy: its boundaries set to ``boundaries``; ``spec``: that strategy instead)."""
    position = numbered_position(model_name, layout)
    strategies = list(layout.strategies)
    strategy = strategies[position]
    if spec is not None:
        strategies[position] = spec.build(count)
    elif isinstance(strategy, OrderedShards):
        assert boundaries is not None and len(boundaries) == count
        strategies[position] = evolve(strategy, boundaries=tuple(boundaries))
    else:
        strategies[position] = evolve(strategy, n=count)  # type: ignore[misc]
    return evolve(layout, strategies=tuple(strategies))


def shard_count(model_name: str, layout: KeyLayout) -> int:
    """The count of the layout's numbered strategy (OrderedShards: its ranges)."""
    strategy = layout.strategies[numbered_position(model_name, layout)]
    if isinstance(strategy, OrderedShards):
        return strategy.shard_count
    return int(strategy.n)  # type: ignore[attr-defined]


def declared_boundaries(model_name: str, layout: KeyLayout) -> tuple[str, ...] | None:
    """The boundaries of the layout's OrderedShards strategy (None: it has none)."""
    strategy = layout.strategies[numbered_position(model_name, layout)]
    return strategy.boundaries if isinstance(strategy, OrderedShards) else None


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
        ``t``, ``t + N``, ``t + 2N`` ... (N the new count), and at most one holds it; and
        for a swap from RandomShards to HashShards: any old shard may hold it.
        """
        if not self.many_old_keys:
            return [key_in(self.old, key, physical)]
        position = numbered_position("", self.old)
        _, texts = self.old.split(physical)
        count = self.old.strategies[position].n  # type: ignore[attr-defined]
        numbers: range = range(count)
        if not self.new.strategies[position].deterministic:
            shard = _shard(self.old, texts[position])
            step = self.new.strategies[position].n  # type: ignore[attr-defined]
            if shard >= step:
                return [physical]
            numbers = range(shard, count, step)
        keys: list[str] = []
        for number in numbers:
            segments: list[Segment] = list(texts)
            segments[position] = number
            keys.append(PhysicalKey(self.old.compose(key.logical_key, segments)))
        return keys

    def fence_keys(self, key: KeyValues, new_key: str) -> list[str]:
        """The old keys a write at ``new_key`` fences first: every one that is not it
        (none once the sweep may delete the tombstones)."""
        if not self.rules.fence:
            return []
        return self.other_old_keys(key, new_key)

    def other_old_keys(self, key: KeyValues, new_key: str) -> list[str]:
        """The old keys of the item at ``new_key`` that are not ``new_key`` itself."""
        return [k for k in self.old_keys(key, new_key) if k != new_key]

    @property
    def many_old_keys(self) -> bool:
        """True when a new key has several old ones: a RandomShards count shrinks, or
        RandomShards is swapped for HashShards."""
        position = numbered_position("", self.old)
        old, new = self.old.strategies[position], self.new.strategies[position]
        if not isinstance(old, RandomShards):
            return False
        return isinstance(new, HashShards) or (isinstance(new, RandomShards) and new.n < old.n)

    def is_old_key(self, key: KeyValues, physical: str) -> bool:
        """True when ``physical`` is an old key of the item that is not its new key."""
        return physical != self.new_key(key, physical)
