"""What each phase of a shard count change means for a model's writes and reads.

A process learns the phase from the migration state table through a
:class:`ReshardWatch` (cached for ``cache_seconds``). The rules of each phase are
chosen so that a process one phase behind is still correct (see the runbook). A
write reads the phase once and follows that row to its last request
(:meth:`ReshardWatch.held`): a row mixed with the next one is not a row of this table.

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

import functools
import random
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from attrs import evolve, frozen
from pynamodb.constants import ALL
from pynamodb.indexes import LocalSecondaryIndex
from pynamodb.models import Model

from shardmodel._time import Clock, SystemClock
from shardmodel.errors import ShardConfigurationError, UnknownShardError
from shardmodel.keys import KeyLayout, PhysicalKey
from shardmodel.migration.state import MigrationState, MigrationStore, Phase
from shardmodel.strategies import HashShards, KeyValues, RandomShards, Segment

__all__ = [
    "COPY_MARKER",
    "ActiveMigration",
    "PhaseRules",
    "ReshardWatch",
    "follow",
    "holding",
    "numbered_position",
    "one_phase",
]

Side = Literal["old", "new"]
_P = ParamSpec("_P")
_R = TypeVar("_R")
_S = TypeVar("_S")

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


class ReshardWatch:
    """One process's view of a model's migration state, cached for ``cache_seconds``.

    Args:
        model: the model (its declared layout is the old one until the code changes).
        store: the migration state table access.
        cache_seconds: how long a read state is reused; must stay below the migration's
            ``settle_seconds`` minus the longest write (all its requests), so a write
            lags at most one phase.
        clock: epoch seconds (inject a simulated clock in tests).
    """

    def __init__(
        self,
        model: type[Model],
        store: MigrationStore,
        cache_seconds: float = 5.0,
        clock: Clock | None = None,
    ) -> None:
        self.model = model
        self.store = store
        self.cache_seconds = cache_seconds
        self.clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._cached: tuple[float, ActiveMigration | None] | None = None
        self._held = threading.local()

    def current(self) -> ActiveMigration | None:
        """The migration in progress (None: none), from the cache when fresh enough.

        Inside :meth:`held`, the view the calling thread's operation began with.
        """
        held: list[ActiveMigration | None] | None = getattr(self._held, "view", None)
        if held is not None:
            return held[0]
        with self._lock:
            cached = self._cached
        if cached is not None and self.clock.now() - cached[0] < self.cache_seconds:
            return cached[1]
        return self.refresh()

    @contextmanager
    def held(self) -> Iterator[ActiveMigration | None]:
        """One operation's view: every :meth:`current` in this thread returns it meanwhile.

        A write follows one phase's rules from its first request to its last. A view
        refreshed in between would mix two phases: a delete begun in ``backfill`` removes
        the old key (that phase's primary), and, its other keys worked out in
        ``read_new`` (whose primary is the new key), removes the old key again and
        never the new one, which every read then returns. Holding the view, the write
        lags at most one phase, which the rules tolerate. Nested holds keep the outer one.
        """
        outer: list[ActiveMigration | None] | None = getattr(self._held, "view", None)
        if outer is not None:
            yield outer[0]
            return
        view = self.current()
        self._held.view = [view]
        try:
            yield view
        finally:
            self._held.view = None

    def refresh(self) -> ActiveMigration | None:
        """Read the state table now (strongly consistent) and cache what it says."""
        now = self.clock.now()
        found = self.active(self.store.read())
        with self._lock:
            self._cached = (now, found)
        return found

    def active(self, state: MigrationState | None) -> ActiveMigration | None:
        """The migration ``state`` describes for this model's declared layout."""
        if state is None:
            return None
        name = self.model.__name__
        declared: KeyLayout = self.model._sharded().layout  # type: ignore[attr-defined]
        count = shard_count(name, declared)
        if state.phase == Phase.DONE and count == state.new_count:
            return None  # finished, and the code already declares the new count
        if count != state.old_count:
            raise ShardConfigurationError(
                f"{name} declares {count} shards, but the migration of table {state.table!r} "
                f"moves {state.old_count} -> {state.new_count} (phase {state.phase.value}); "
                f"declare {state.old_count} until the migration is done, then "
                f"{state.new_count}"
            )
        old = resized_layout(name, declared, state.old_count)
        return ActiveMigration(state, old, resized_layout(name, declared, state.new_count))


def holding(model: Any) -> AbstractContextManager[Any]:
    """One view of the migration for an operation on ``model`` (see ``ReshardWatch.held``)."""
    watch: ReshardWatch | None = getattr(model, "_reshard", None)
    return nullcontext() if watch is None else watch.held()


def one_phase(method: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], _R]:
    """Run a model instance's write under one view of the migration (see ``holding``)."""

    def run(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with holding(self):
            return method(self, *args, **kwargs)

    functools.update_wrapper(run, method)
    return run


def check_reshardable(model: type[Model]) -> None:
    """Refuse models a shard count change does not support, naming what to change."""
    name = model.__name__
    attr = getattr(model, "_shard_attribute", lambda: None)()
    if attr is None:
        indexed = [a.attr_name for a in getattr(model, "_index_shard_box", ())]
        hint = (
            f"; an index's sharded key ({', '.join(indexed)}) keeps its count: declare a new "
            "index attribute with the new count, save the items again, switch the queries"
            if indexed
            else ""
        )
        raise ShardConfigurationError(f"{name}: no sharded partition key to reshard{hint}")
    numbered = attr.layout.strategies[numbered_position(name, attr.layout)]
    if getattr(model, "_counter_names", ()) and not isinstance(numbered, RandomShards):
        raise ShardConfigurationError(
            f"{name}: a counter model is resharded only on RandomShards (it grows by "
            "reading the new shards too); under HashShards each increment sits on a shard "
            "whose number changes, and moving partial sums under concurrent adds is not "
            "exact; create a new table and roll the counters up"
        )
    for index_name, index in (getattr(model, "_indexes", None) or {}).items():
        _check_index(model, attr, index_name, index)


def _check_index(model: type[Model], attr: Any, index_name: str, index: Any) -> None:
    """An index read keeps one copy by the item's table key: the index must hold its inputs."""
    name = model.__name__
    if isinstance(index, LocalSecondaryIndex):
        raise ShardConfigurationError(
            f"{name}: local secondary index {index_name!r} shares the table's partition "
            "key, whose shard count would change under it (its cursors name the old "
            "layout's shards); resharding a model with a local index is not supported, "
            "use a global secondary index"
        )
    projection = index.Meta.projection
    if projection.projection_type == ALL:
        return
    attributes = model.get_attributes()
    held = {a.attr_name for a in attributes.values() if a.is_hash_key or a.is_range_key}
    held |= {a.attr_name for a in index.Meta.attributes.values()}
    held |= set(projection.non_key_attributes or ())
    needed = [attributes[n].attr_name for n in attr.layout.attributes]
    missing = [n for n in needed if n not in held]
    if missing:
        raise ShardConfigurationError(
            f"{name}: index {index_name!r} does not project {', '.join(missing)}, which the "
            "partition key's shard is computed from; an index read during the shard count "
            "change tells an item's two copies apart by it: project it (IncludeProjection "
            "or AllProjection)"
        )


def follow(
    model: type[Model],
    cache_seconds: float = 5.0,
    clock: Clock | None = None,
    table_name: str | None = None,
) -> ReshardWatch:
    """Make ``model`` follow its table's migration state (call it in every process).

    Reads and writes then obey the current phase's rules. Returns the watch (its
    ``refresh()`` forces a fresh read).
    """
    check_reshardable(model)
    watch = ReshardWatch(model, MigrationStore(model, table_name), cache_seconds, clock)
    model._reshard = watch  # type: ignore[attr-defined]
    return watch


def unfollow(model: type[Model]) -> None:
    """Stop following the migration state (after the code declares the new count)."""
    model._reshard = None  # type: ignore[attr-defined]
