"""How a process follows a model's layout: the watch, and what it refuses.

A process learns the phase from the migration state table through a
:class:`ReshardWatch` (cached for ``cache_seconds``); the model's engine composes the
migration it sees into every placement (see :mod:`shardmodel.keyspace.phases` for what
each phase means). A write takes one view at its start and follows that phase's rules to
its last request (``Sharding.operation``): a row mixed with the next one is not a row of
the rules' table.

Every model that can be resharded follows its table without being told: on first use it
gets a :class:`TableWatch` (the state table ``<table>-reshard``, cached five seconds, read
again at once after this process changed it). ``follow()`` is a tuning knob: another
cache time, a clock, another state table. With no change in progress the watch holds the
table's layout record (:mod:`shardmodel.keyspace.layout_record`): a declaration that
disagrees with it is refused by name before any read or write.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any

from pynamodb.constants import ALL
from pynamodb.indexes import LocalSecondaryIndex
from pynamodb.models import Model

from shardmodel.core.times import Clock, SystemClock
from shardmodel.engine.sharding import View, sharding_of
from shardmodel.errors import ShardConfigurationError
from shardmodel.keyspace.keys import KeyLayout
from shardmodel.keyspace.layout_record import LayoutRecord, disagreement
from shardmodel.keyspace.phases import (
    ActiveMigration,
    MigrationState,
    declared_boundaries,
    numbered_position,
    shard_count,
)
from shardmodel.keyspace.strategies import RandomShards
from shardmodel.migration.state import MigrationStore, changes_made_here

__all__ = [
    "ReshardWatch",
    "TableWatch",
    "check_reshardable",
    "declared_layout",
    "follow",
    "is_series",
    "table_watch",
    "unfollow",
]


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
        #: (read at, the migration, the layout record, the refusal of the declaration)
        self._cached: (
            tuple[float, ActiveMigration | None, LayoutRecord | None, Exception | None] | None
        ) = None

    def current(self) -> ActiveMigration | None:
        """The migration in progress (None: none), from the cache when fresh enough.

        Raises:
            ShardConfigurationError: the model's declaration disagrees with the table's
                change in progress or with its layout record (the message says what to
                declare).
        """
        return self.view()[0]

    def view(self) -> View:
        """The migration in progress and the layout record, from one read (see
        :meth:`current`)."""
        return _view(self._fresh())

    def peek_view(self) -> View:
        """:meth:`view` as last read, without a request (never read: none)."""
        with self._lock:
            cached = self._cached
        return (None, None) if cached is None else _view(cached)

    def peek(self) -> ActiveMigration | None:
        """The migration as last read, without a request (None: none, or never read)."""
        return self.peek_view()[0]

    def _fresh(
        self,
    ) -> tuple[float, ActiveMigration | None, LayoutRecord | None, Exception | None]:
        with self._lock:
            cached = self._cached
        if cached is None or self.clock.now() - cached[0] >= self.cache_seconds:
            return self._read()
        return cached

    def held(self) -> AbstractContextManager[ActiveMigration | None]:
        """One operation's view of the model's migration (``Sharding.operation``): every
        placement taken in this thread meanwhile sees the phase it began in."""
        return sharding_of(self.model).operation()

    def refresh(self) -> ActiveMigration | None:
        """Read the state table now (strongly consistent) and cache what it says."""
        return _view(self._read())[0]

    def _read(
        self,
    ) -> tuple[float, ActiveMigration | None, LayoutRecord | None, Exception | None]:
        now = self.clock.now()
        state, record = self.store.read_current()
        found: ActiveMigration | None = None
        refused: Exception | None = None
        try:
            found = self.active(state)
            if state is None and record is not None:
                self._check_record(record)
        except ShardConfigurationError as error:
            refused = error
        read = (now, found, record, refused)
        with self._lock:
            self._cached = read
        return read

    def _check_record(self, record: LayoutRecord) -> None:
        """Refuse a declaration the table's layout record contradicts."""
        name = self.model.__name__
        if is_series(self.model):
            series = self.model._series_layout  # type: ignore[attr-defined]
            reason = disagreement(record, name, series.pk().layout, series.schedule)
        else:
            key = sharding_of(self.model).spec.table_key()
            assert key is not None  # follow() checked the model
            reason = disagreement(record, name, key.layout)
        if reason is not None:
            raise ShardConfigurationError(reason)

    def active(self, state: MigrationState | None) -> ActiveMigration | None:
        """The migration ``state`` describes for this model's declared layout."""
        if state is None:
            return None
        if state.series:
            return self._series(state)
        name = self.model.__name__
        key = sharding_of(self.model).spec.table_key()
        assert key is not None  # follow() checked the model
        declared: KeyLayout = key.layout
        if state.new_boundaries is not None:
            return self._ordered(state, declared)
        if state.new_strategy is not None:
            return self._swap(state, declared)
        count = shard_count(name, declared)
        # code declaring either count follows the state: the state, not the code, says
        # which layout a phase writes, until --finish removes it
        if count not in (state.old_count, state.new_count):
            raise ShardConfigurationError(
                f"{name} declares {count} shards, but the migration of table {state.table!r} "
                f"moves {state.old_count} -> {state.new_count} (phase {state.phase.value}); "
                f"declare {state.old_count} or {state.new_count}"
            )
        return ActiveMigration(state, *state.layouts(name, declared))

    def _series(self, state: MigrationState) -> ActiveMigration:
        """A time series' count change: before its first bucket is chosen the code declares
        the old count; then the old count, or the new one with the change declared."""
        name = self.model.__name__
        layout = self.model._series_layout  # type: ignore[attr-defined]
        schedule = layout.schedule
        old, new, cutover = state.old_count, state.new_count, state.cutover
        if cutover is None:
            if schedule.last != old:
                raise ShardConfigurationError(
                    f"{name} declares {schedule.last} shards, but the count change of table "
                    f"{state.table!r} ({state.change}) has not chosen its first bucket yet "
                    f"(phase {state.phase.value}); declare {old} until reshard --step "
                    "chooses it"
                )
        elif state.returning:
            if not (schedule.before(cutover, new) or schedule.declares(cutover, new, old)):
                raise ShardConfigurationError(
                    f"{name} declares {schedule.last} shards with counts_before="
                    f"{schedule.describe()}, but the count change of table {state.table!r} "
                    f"was aborted and its buckets from {cutover!r} on return to {new} "
                    f"shards; declare HashShards({new}, ...) as before the change, or the "
                    f"aborted change (HashShards({old}, ...) with counts_before="
                    f"{{{cutover!r}: {new}}})"
                )
        elif schedule.last not in (old, new) or dict(schedule.changes).get(cutover, old) != old:
            # the new count may leave the cutover out: the change (and then the table's
            # layout record) holds it
            raise ShardConfigurationError(
                f"{name} declares {schedule.last} shards with counts_before="
                f"{schedule.describe()}, but the count change of table {state.table!r} "
                f"moves {old} -> {new} shards from bucket {cutover!r}; declare "
                f"HashShards({old}, ...) or HashShards({new}, ...) (counts_before may "
                f"leave the change out; if given, {{{cutover!r}: {old}}})"
            )
        return ActiveMigration(state, *state.layouts(name, layout.pk().layout))

    def _ordered(self, state: MigrationState, declared: KeyLayout) -> ActiveMigration:
        """An OrderedShards boundaries change: the code declares the old or the new ones."""
        name = self.model.__name__
        assert state.old_boundaries is not None and state.new_boundaries is not None
        if declared_boundaries(name, declared) not in (state.old_boundaries, state.new_boundaries):
            raise ShardConfigurationError(
                f"{name} declares OrderedShards boundaries that are neither the old nor the new "
                f"ones of the migration of table {state.table!r} ({state.change}, phase "
                f"{state.phase.value}); declare the old or the new boundaries"
            )
        return ActiveMigration(state, *state.layouts(name, declared))

    def _swap(self, state: MigrationState, declared: KeyLayout) -> ActiveMigration:
        """A strategy swap: the code declares the old or the new strategy."""
        name = self.model.__name__
        old, new = state.layouts(name, declared)
        position = numbered_position(name, declared)
        strategy = declared.strategies[position]
        if strategy not in (old.strategies[position], new.strategies[position]):
            raise ShardConfigurationError(
                f"{name} declares {strategy!r}, but the migration of "
                f"table {state.table!r} swaps {state.change} (phase {state.phase.value}); "
                "declare the old or the new strategy"
            )
        return ActiveMigration(state, old, new)


def _view(
    read: tuple[float, ActiveMigration | None, LayoutRecord | None, Exception | None],
) -> View:
    """A read's (migration, record), or the refusal it cached raised."""
    if read[3] is not None:
        raise read[3]
    return read[1], read[2]


class TableWatch(ReshardWatch):
    """The watch a model has without ``follow()``: its table's default state table, the
    system clock, five seconds of cache, and a fresh read as soon as this process changed
    that state table itself (so a script that advances a phase reads the new one)."""

    def __init__(self, model: type[Model]) -> None:
        super().__init__(model, MigrationStore(model))
        self._seen = -1

    def _fresh(
        self,
    ) -> tuple[float, ActiveMigration | None, LayoutRecord | None, Exception | None]:
        made = changes_made_here(self.store.table_name)
        if made != self._seen:
            self._seen = made
            return self._read()
        return super()._fresh()


@contextmanager
def declared_layout(*models: type[Model]) -> Iterator[None]:
    """Compute keys of ``models`` with their declared layouts, asking no table.

    For offline tools and tests that compute keys (``get_physical_key``, ``serialize``)
    with no DynamoDB to ask. Never around reads or writes of a table another process may
    be changing: they would use the declaration instead of the table's layout.
    """
    with ExitStack() as stack:
        for model in models:
            stack.enter_context(sharding_of(model).declared())
        yield


def table_watch(model: type[Model]) -> TableWatch | None:
    """The watch of a model that never called ``follow()`` (None: it cannot be resharded,
    so it has no change to follow)."""
    try:
        check_reshardable(model)
    except ShardConfigurationError:
        return None
    return TableWatch(model)


def check_reshardable(model: type[Model]) -> None:
    """Refuse models a shard count change does not support, naming what to change."""
    name = model.__name__
    try:
        spec = sharding_of(model).spec
    except ShardConfigurationError:
        raise ShardConfigurationError(f"{name}: no sharded partition key to reshard") from None
    if is_series(model):
        if model._series_layout.schedule is None:  # type: ignore[attr-defined]
            raise ShardConfigurationError(
                f"{name}: a time-series model's shard count changes from a bucket on, so its "
                "partition key needs exactly one HashShards and one TimeBuckets"
            )
        return
    attr = spec.table_key()
    if attr is None:
        indexed = [a.attr_name for a in spec.index_keys]
        hint = (
            f"; an index's sharded key ({', '.join(indexed)}) keeps its count: declare a new "
            "index attribute with the new count, save the items again, switch the queries"
            if indexed
            else ""
        )
        raise ShardConfigurationError(f"{name}: no sharded partition key to reshard{hint}")
    # OrderedShards on a table key has no overflow (refused at class definition), so
    # every range's keys can be worked out from the item
    numbered = attr.layout.strategies[numbered_position(name, attr.layout)]
    if spec.counters and not isinstance(numbered, RandomShards):
        raise ShardConfigurationError(
            f"{name}: a counter model is resharded only on RandomShards (it grows by "
            "reading the new shards too); under HashShards each increment sits on a shard "
            "whose number changes, and moving partial sums under concurrent adds is not "
            "exact; create a new table and roll the counters up"
        )
    for index_name, index in (getattr(model, "_indexes", None) or {}).items():
        _check_index(model, attr, index_name, index)


def is_series(model: type[Model]) -> bool:
    """True for a TimeSeriesModel (its metaclass gives it a series layout)."""
    return getattr(model, "_series_layout", None) is not None


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
    """Tune how ``model`` follows its table's migration state (optional).

    Every model follows its table without this call (:class:`TableWatch`: five seconds
    of cache on the system clock); ``follow()`` replaces that watch with one of its own
    cache time, clock or state table. Returns the watch (its ``refresh()`` forces a
    fresh read).
    """
    check_reshardable(model)
    watch = ReshardWatch(model, MigrationStore(model, table_name), cache_seconds, clock)
    sharding_of(model).watch = watch
    return watch


def unfollow(model: type[Model]) -> None:
    """Drop the watch ``follow()`` gave (the model follows its table's own again, read
    afresh)."""
    engine = sharding_of(model)
    engine.watch = None
    engine.forget_table()
