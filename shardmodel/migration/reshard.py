"""The operator's side of a shard count change: start, advance, backfill, clean up, plan."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone

from attrs import evolve
from pynamodb.exceptions import TableDoesNotExist
from pynamodb.models import Model

from shardmodel.core.times import Clock, SystemClock
from shardmodel.engine import sharding_of
from shardmodel.errors import ShardConfigurationError
from shardmodel.keyspace.bucket_counts import CountSchedule, first_bucket_after
from shardmodel.keyspace.keys import KeyLayout
from shardmodel.keyspace.layout_record import LayoutRecord, finished
from shardmodel.keyspace.ordered import OrderedShards
from shardmodel.keyspace.phases import (
    PHASES,
    RULES,
    MigrationState,
    Phase,
    StrategySpec,
    declared_boundaries,
    numbered_position,
    shard_count,
)
from shardmodel.keyspace.strategies import MAX_SHARDS, HashShards, RandomShards
from shardmodel.migration.backfill import Progress, ScanJob
from shardmodel.migration.estimate import Estimate, moving_fraction, sampled_size
from shardmodel.migration.recording import record_layout
from shardmodel.migration.rules import ReshardWatch, check_reshardable, is_series
from shardmodel.migration.series_cleanup import SeriesCleanup
from shardmodel.migration.state import (
    ChangePausedError,
    MigrationConflictError,
    MigrationStore,
    SegmentProgress,
)

__all__ = ["Estimate", "Reshard"]

#: What a change moves to: a shard count, an OrderedShards key's new boundaries, or a
#: HashShards that replaces a RandomShards or HashShards strategy.
Target = int | Sequence[str] | OrderedShards | HashShards

#: Phases that end with a scan job; the next phase (or --finish) waits for every segment.
JOBS = {phase: rules.job for phase, rules in RULES.items() if rules.job is not None}

#: A time series' count change: nothing moves but the readings a process that had not
#: seen the change wrote with the old count into buckets from the cutover on.
SERIES_PHASES = (Phase.PREPARE, Phase.READ_NEW, Phase.CLEANUP, Phase.DONE)
SERIES_JOBS = {Phase.CLEANUP: "cleanup"}
#: Seconds beyond the settle time before a series' new count begins: the operator's clock
#: may run behind the writers'
CLOCK_MARGIN = 60.0


#: DynamoDB's largest TotalSegments.
MAX_SEGMENTS = 1_000_000


def check_settle(settle_seconds: object) -> None:
    """A settle time is a finite number of seconds, 0 or more."""
    if (
        isinstance(settle_seconds, bool)
        or not isinstance(settle_seconds, int | float)
        or not math.isfinite(settle_seconds)
        or settle_seconds < 0
    ):
        raise ShardConfigurationError(
            f"reshard --settle {settle_seconds!r}: give the seconds between two phases, a "
            "finite number 0 or more (longer than any process's state cache plus its "
            "longest write; 30 by default)"
        )


def check_segments(segments: object) -> None:
    """Scan segments are an int from 1 to DynamoDB's 1,000,000."""
    if (
        isinstance(segments, bool)
        or not isinstance(segments, int)
        or not 1 <= segments <= MAX_SEGMENTS
    ):
        raise ShardConfigurationError(
            f"reshard --segments {segments!r}: give the number of parallel scan segments, "
            f"an int from 1 to {MAX_SEGMENTS:,}"
        )


def check_page_size(page_size: object) -> None:
    """A scan page holds 1 item or more."""
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise ShardConfigurationError(
            f"reshard --page-size {page_size!r}: give the items per scan page, an int of 1 or more"
        )


class Reshard:
    """Change a model's fixed shard count (or OrderedShards boundaries, or its strategy
    for a HashShards) online, one phase at a time.

    Args:
        model: the model, declaring the current (old) count.
        clock: epoch seconds and sleeping (inject a simulated clock in tests).
        table_name: the migration state table (default ``<main table>-reshard``).
    """

    def __init__(
        self, model: type[Model], clock: Clock | None = None, table_name: str | None = None
    ) -> None:
        check_reshardable(model)
        self.model = model
        self.series = is_series(model)
        self.clock = clock or SystemClock()
        self.store = MigrationStore(model, table_name)
        self.watch = ReshardWatch(model, self.store, cache_seconds=0, clock=self.clock)

    # -- state --------------------------------------------------------------------------

    def _layout(self) -> KeyLayout:
        """The declared layout of the key that changes (a time series: its bucket key)."""
        if self.series:
            return self.model._series_layout.pk().layout  # type: ignore[attr-defined,no-any-return]
        return sharding_of(self.model).key().layout

    def _key_name(self) -> str:
        if self.series:
            return self.model._series_layout.pk().attr_name  # type: ignore[attr-defined,no-any-return]
        return sharding_of(self.model).key().attr_name

    def job_of(self, state: MigrationState) -> str | None:
        """The scan job of the state's phase (None: it has none)."""
        return (SERIES_JOBS if state.series else JOBS).get(state.phase)

    def status(self) -> MigrationState | None:
        """The migration state, read strongly consistent (None: no migration)."""
        return self.store.read()

    def _required(self) -> MigrationState:
        state = self.status()
        if state is None:
            raise MigrationConflictError(
                f"{self.model.__name__}: no migration in progress; start one with --to N"
            )
        return state

    def target(self, to: Target) -> tuple[int, tuple[str, ...] | None]:
        """The count and (an OrderedShards key) the boundaries ``to`` asks for, checked.

        ``to``: a shard count; for an OrderedShards key, the new boundaries (a sequence
        of strings, or an ``OrderedShards`` such as ``OrderedShards.from_sample(...)``);
        a ``HashShards`` to swap the strategy (its count; the caller checks it with
        :meth:`swap_of` first).
        """
        name = self.model.__name__
        layout = self._layout()
        strategy = layout.strategies[numbered_position(name, layout)]
        if isinstance(to, HashShards):
            return to.n, None
        if not isinstance(strategy, OrderedShards):
            if isinstance(to, OrderedShards) or not isinstance(to, int | float | str):
                raise ShardConfigurationError(
                    f"reshard {name} to {to!r}: its key changes by a shard count; give an int"
                )
            return to, None  # type: ignore[return-value]  # start() checks the count
        if isinstance(to, OrderedShards) and to.overflow:
            raise ShardConfigurationError(
                f"reshard {name}: the new OrderedShards has overflow sub-shards, which do "
                "not change online; give boundaries without overflow"
            )
        if isinstance(to, str | bytes) or not isinstance(to, Sequence | OrderedShards):
            raise ShardConfigurationError(
                f"reshard {name} to {to!r}: its key is OrderedShards; give the new boundaries "
                "(a list of strings, or OrderedShards.from_sample(...))"
            )
        # checks them as a declaration would
        new = evolve(strategy, boundaries=_boundaries_of(to))
        if new.boundaries == strategy.boundaries:
            raise ShardConfigurationError(
                f"{name} already declares these {len(new.boundaries)} boundaries; nothing to do"
            )
        return new.shard_count, new.boundaries

    def swap_of(self, to: Target) -> tuple[StrategySpec, StrategySpec] | None:
        """The old and new strategy of a swap to ``to`` (None: ``to`` is no swap), checked.

        A swap is offered where every item's old and new keys can be found from the item:
        from RandomShards (any of its shards) or HashShards to a HashShards of the
        partition key or the sort key, with a named algorithm, on a model without
        secondary indexes or counters.
        """
        if not isinstance(to, HashShards):
            return None
        name = self.model.__name__
        layout = self._layout()
        strategy = layout.strategies[numbered_position(name, layout)]
        where = f"reshard {name} to {to!r}"
        if not isinstance(strategy, RandomShards | HashShards):
            raise ShardConfigurationError(
                f"{where}: only a RandomShards or HashShards strategy is swapped for "
                f"HashShards; {name} declares {type(strategy).__name__}, which changes by its "
                "boundaries"
            )
        if not isinstance(to.algorithm, str):
            raise ShardConfigurationError(
                f"{where}: a swap records the new strategy in the migration state for every "
                "process to rebuild; give a named algorithm ('md5' or 'sha256'), not a function"
            )
        attr = sharding_of(self.model).key()
        python = self._key_attributes()
        outside = [a for a in to.on if a not in python]
        if outside:
            raise ShardConfigurationError(
                f"{where}: HashShards(on=...) names {outside}, which are not in the table's "
                f"key; a swap hashes what every read by key knows: {python}"
            )
        to.check(name, self.model.get_attributes(), attr.layout.separator)
        old, new = StrategySpec.of(strategy), StrategySpec.of(to)
        if new.build(to.n) == strategy:
            raise ShardConfigurationError(f"{name} already declares {to!r}; nothing to do")
        spec = sharding_of(self.model).spec
        if spec.counters or getattr(self.model, "_indexes", None):
            raise ShardConfigurationError(
                f"{where}: a swap on a model with counters or secondary indexes is not "
                "supported (an increment's shard and an index copy's owner are told apart by "
                "the old shard number, which a swap does not keep); create a new table"
            )
        if not 1 <= to.n <= MAX_SHARDS:
            raise ShardConfigurationError(f"{where}: give a shard count between 1 and {MAX_SHARDS}")
        return old, new

    def _key_attributes(self) -> list[str]:
        """The model's attributes that are the table's key: what a swap may hash, so that
        every read by key works out an item's shard."""
        attr = sharding_of(self.model).key()
        keys = [attr.attr_name, *([self.model._range_keyname] if self.model._range_keyname else [])]
        return [n for n, a in self.model.get_attributes().items() if a.attr_name in keys]

    def _check_count(self, to: int, old: int) -> None:
        """A new shard count: a whole number in range, not the current one, and not a
        shrink a random layout cannot do online."""
        name = self.model.__name__
        if isinstance(to, bool) or not isinstance(to, int) or not 1 <= to <= MAX_SHARDS:
            raise ShardConfigurationError(
                f"reshard --to {to!r}: give a shard count between 1 and {MAX_SHARDS}"
            )
        if to == old:
            raise ShardConfigurationError(f"{name} already has {old} shards; nothing to do")
        refused = self._shrink_refused(old, to)
        if refused is not None:
            what, why = refused
            raise ShardConfigurationError(
                f"{name}: shrinking {what} is not supported: {why}; keep the count (extra "
                "shards cost only reads), or grow instead"
            )

    def _shrink_refused(self, old: int, to: int) -> tuple[str, str] | None:
        """A RandomShards shrink ``old -> to`` that is not made online: what shrinks and
        why (None: the change is no such shrink)."""
        layout = self._layout()
        numbered = layout.strategies[numbered_position(self.model.__name__, layout)]
        if not isinstance(numbered, RandomShards) or to >= old:
            return None
        if sharding_of(self.model).spec.counters:
            return (
                f"a counter model's RandomShards ({old} -> {to})",
                "a retired shard's partial sums would move while readers sum the shards one "
                "request at a time, so a read could count a moved share twice or not at all",
            )
        if getattr(self.model, "_indexes", None):
            return (
                f"RandomShards ({old} -> {to}) on a model with secondary indexes",
                "an index read keeps one copy by that copy alone, and an item moved from "
                f"shard s and one born on s mod {to} look alike there",
            )
        return None

    def start(self, to: Target, settle_seconds: float = 30.0, segments: int = 1) -> MigrationState:
        """Begin a change to ``to`` shards (an OrderedShards key: to the boundaries ``to``;
        a ``HashShards``: a strategy swap, see :meth:`swap_of`): phase prepare."""
        name = self.model.__name__
        layout = self._layout()
        old = shard_count(name, layout)
        self._check_series_target(to)
        swap = self.swap_of(to)
        to, boundaries = self.target(to)
        if boundaries is None and swap is None:
            self._check_count(to, old)
        check_settle(settle_seconds)
        check_segments(segments)
        self.check_table()  # before the state table exists: a typo leaves nothing behind
        self.watch.refresh()  # a declaration the table's layout record contradicts: refused
        self.store.ensure_table()
        if self.status() is not None:
            raise MigrationConflictError(
                f"{name}: a migration is already in progress; see reshard --status"
            )
        state = MigrationState(
            table=self.model.Meta.table_name,
            old_count=old,
            new_count=to,
            phase=Phase.PREPARE,
            changed_at=self.clock.now(),
            settle_seconds=settle_seconds,
            segments=segments,
            old_boundaries=declared_boundaries(name, layout) if boundaries else None,
            new_boundaries=boundaries,
            old_strategy=swap[0] if swap else None,
            new_strategy=swap[1] if swap else None,
            series=self.series,
        )
        return self.store.write(state)

    def _check_series_target(self, to: Target) -> None:
        """A time series changes its shard count only."""
        if self.series and not isinstance(to, int | float | str):
            raise ShardConfigurationError(
                f"reshard {self.model.__name__} to {to!r}: a time series changes its "
                "HashShards count from a bucket on (give --to N); its strategy and buckets "
                "stay"
            )

    def check_table(self) -> None:
        """The main table exists and its key schema is the model's.

        Raises:
            ShardConfigurationError: naming the table, the endpoint and what differs.
        """
        model = self.model
        table = model.Meta.table_name
        where = getattr(model.Meta, "host", None) or f"region {model.Meta.region}"
        try:
            described = model._get_connection().describe_table()
        except TableDoesNotExist:
            raise ShardConfigurationError(
                f"reshard {model.__name__}: table {table!r} does not exist at {where}; "
                "check Meta.table_name and --host (nothing was written)"
            ) from None
        schema = {k["KeyType"]: k["AttributeName"] for k in described.get("KeySchema", [])}
        range_attr = model._range_key_attribute()  # type: ignore[no-untyped-call]
        expected = {"HASH": self._key_name()}
        if range_attr is not None:
            expected["RANGE"] = range_attr.attr_name
        if schema != expected:
            raise ShardConfigurationError(
                f"reshard {model.__name__}: table {table!r} has the key schema {schema}, but "
                f"the model declares {expected}; is this the model of that table? (nothing "
                "was written)"
            )

    def settle_left(self, state: MigrationState) -> float:
        """Seconds until the next phase may start (every process has seen this one)."""
        return max(0.0, state.changed_at + state.settle_seconds - self.clock.now())

    def job_progress(self, state: MigrationState) -> list[SegmentProgress]:
        """Every segment's progress of the current phase's job (empty without a job)."""
        job = self.job_of(state)
        return [] if job is None else self.store.progress(job, state.segments)

    def pause(self) -> MigrationState:
        """Pause the change: every job stops at its next page (checkpoint kept) and the
        phase does not advance until :meth:`unpause`. Reads and writes go on as before."""
        state = self._required()
        return state if state.paused else self.store.write(evolve(state, paused=True))

    def unpause(self) -> MigrationState:
        """Let a paused change go on (its jobs resume from their checkpoints when run)."""
        state = self._required()
        return self.store.write(evolve(state, paused=False)) if state.paused else state

    def advance(self) -> MigrationState:
        """Move to the next phase once this one has settled and its job has finished."""
        state = self._required()
        if state.paused:
            raise ChangePausedError(
                f"{self.model.__name__}: the change is paused in phase {state.phase.value}; "
                "run reshard --resume first"
            )
        if state.phase == Phase.DONE and not state.aborted:
            raise MigrationConflictError(
                "the migration is done: run the sweep (reshard --step), deploy the code that "
                "declares the new count, then reshard --finish"
            )
        left = self.settle_left(state)
        if left > 0:
            raise MigrationConflictError(
                f"phase {state.phase.value} started {state.settle_seconds - left:.0f}s ago; "
                f"wait {left:.0f}s more so every process has seen it (settle_seconds)"
            )
        unfinished = [p.segment for p in self.job_progress(state) if not p.done]
        if unfinished:
            raise MigrationConflictError(
                f"the {self.job_of(state)} has not finished segments {unfinished}; run them "
                "(reshard --step, or --segments N --segment i on each host)"
            )
        now = self.clock.now()
        if state.phase == Phase.DONE:  # aborted, swept: the return begins
            # its jobs must not find this change's finished segments
            self.store.clear_progress()
            return self.store.write(state.returned(now))
        if state.series:
            following = SERIES_PHASES[SERIES_PHASES.index(state.phase) + 1]
            cutover = state.cutover
            if following == Phase.READ_NEW:
                # every process sees the bucket before it begins: a settle time ahead
                ahead = state.settle_seconds + CLOCK_MARGIN
                cutover = first_bucket_after(
                    self.model._series_layout.bucket_format(),  # type: ignore[attr-defined]
                    datetime.fromtimestamp(now + ahead, timezone.utc),
                )
            changed = evolve(state, phase=following, changed_at=now, cutover=cutover)
            return self.store.write(changed)
        following = PHASES[PHASES.index(state.phase) + 1]
        return self.store.write(evolve(state, phase=following, changed_at=now))

    def run_job(
        self,
        segment: int | None = None,
        page_size: int = 100,
        progress: Progress | None = None,
        fault: Callable[[str], None] | None = None,
    ) -> list[SegmentProgress]:
        """Run the current phase's job: one segment, or every unfinished one in turn."""
        check_page_size(page_size)
        sleep = self.clock.sleep
        migration = self.watch.refresh()
        if migration is None:
            raise MigrationConflictError(f"{self.model.__name__}: no migration in progress")
        job = self.job_of(migration.state)
        if job is None:
            raise MigrationConflictError(
                f"phase {migration.state.phase.value} has no job to run (backfill, cleanup "
                "and sweep have their own phases); advance it with reshard --step"
            )
        left = self.settle_left(migration.state)
        if job == "sweep" and left > 0:
            raise MigrationConflictError(
                f"the sweep deletes tombstones a move one phase behind still relies on; wait "
                f"{left:.0f}s more (settle_seconds) so no process is in phase drain"
            )
        total = migration.state.segments
        if segment is not None and (
            isinstance(segment, bool) or not isinstance(segment, int) or not 0 <= segment < total
        ):
            raise ShardConfigurationError(
                f"--segment {segment!r}: the migration scans {total} segments; give an int "
                f"0..{total - 1}"
            )
        chosen = range(total) if segment is None else [segment]
        if migration.state.series:
            return [
                SeriesCleanup(
                    self.model, migration, self.store, i, page_size, progress, fault
                ).run()
                for i in chosen
            ]
        return [
            ScanJob(
                self.model, migration, self.store, job, i, page_size, progress, fault, sleep
            ).run()
            for i in chosen
        ]

    def finish(self) -> None:
        """Remove the migration state once done (after the code declares the new count)
        and record the layout the table now holds."""
        state = self._required()
        if state.aborted:
            raise MigrationConflictError(
                f"the migration ({state.change}) was aborted: its items go back to "
                f"{state.old_count} once it is done; run reshard --step until the return "
                "is done, then --finish"
            )
        if state.phase != Phase.DONE:
            raise MigrationConflictError(
                f"the migration is in phase {state.phase.value}; finish it before removing it"
            )
        unfinished = [p.segment for p in self.job_progress(state) if not p.done]
        if unfinished:
            raise MigrationConflictError(
                f"the sweep has not finished segments {unfinished}: its tombstones would stay "
                "in the table; run it first (reshard --step)"
            )
        name = self.model.__name__
        layout = self._layout()
        if state.series:
            self._finish_series(state)
            return
        if state.new_boundaries is not None:
            if declared_boundaries(name, layout) != state.new_boundaries:
                raise MigrationConflictError(
                    f"{name} still declares its old OrderedShards boundaries: once the state is "
                    "removed, that code would read and write the old ranges' keys, where no "
                    f"item is; deploy the code that declares the {state.new_count} new "
                    f"boundaries (from {state.new_boundaries[1]!r} to "
                    f"{state.new_boundaries[-1]!r}), then run --finish from it"
                )
            self._finished(state)
            return
        if state.new_strategy is not None:
            position = numbered_position(name, layout)
            wanted = state.new_strategy.build(state.new_count)
            if layout.strategies[position] != wanted:
                raise MigrationConflictError(
                    f"{name} still declares {layout.strategies[position]!r}: once the state "
                    "is removed, that code would read and write the old keys, where no item "
                    "is; deploy the code that declares "
                    f"{state.new_strategy.describe(state.new_count)}, then run --finish from it"
                )
            self._finished(state)
            return
        declared = shard_count(name, layout)
        if declared != state.new_count:
            raise MigrationConflictError(
                f"{name} still declares {declared} shards: once the state is removed, code "
                f"declaring {declared} would read and write the old keys, where no item is; "
                f"deploy the code that declares {state.new_count}, then run --finish from it"
            )
        self._finished(state)

    def _finished(self, state: MigrationState, schedule: CountSchedule | None = None) -> None:
        """Remove the finished change's state and record the layout the table now holds
        (every process reads it: code declaring another layout is refused by name);
        ``schedule``: a time series' counts by bucket after the change."""
        previous, version = self.store.layout()
        record = finished(
            self.model.__name__,
            state.table,
            self._layout(),
            schedule,
            previous,
            state.change,
            self.clock.now(),
        )
        self.store.remove()
        self.store.write_layout(record, version)

    def record(self) -> LayoutRecord:
        """Record the declared layout as the table's (``reshard --record``: a table laid
        out before layout records), after checking a sample of its items; see
        :mod:`shardmodel.migration.recording`."""
        self.check_table()
        return record_layout(self.model, self.store, self.watch, self.clock.now())

    def _finish_series(self, state: MigrationState) -> None:
        """Remove a time series' count change once the code declares it."""
        series = self.model._series_layout  # type: ignore[attr-defined]
        old, new, cutover = state.old_count, state.new_count, state.cutover
        assert cutover is not None  # set when the change left prepare
        if state.returning:
            if not series.schedule.before(cutover, new):
                raise MigrationConflictError(
                    f"{self.model.__name__} declares {series.schedule.last} shards with "
                    f"counts_before={series.schedule.describe()}: the aborted change's "
                    f"buckets from {cutover!r} on are back at {new} shards; run --finish from "
                    f"the code that declares HashShards({new}, ...) as before the change "
                    f"(no counts_before entry {cutover!r})"
                )
            self._finished(state, series.schedule)
            return
        schedule = series.schedule
        if schedule.last != new or dict(schedule.changes).get(cutover, old) != old:
            raise MigrationConflictError(
                f"{self.model.__name__} declares {series.schedule.last} shards with "
                f"counts_before={series.schedule.describe()}: once the state is removed, that "
                f"code would read and write the buckets from {cutover!r} on with the wrong "
                f"count; deploy the code that declares HashShards({new}, ...) (the table "
                f"records that the buckets before {cutover!r} have {old}: counts_before may "
                "leave them out), then run --finish from it"
            )
        self._finished(state, schedule.with_cutover(cutover, old, new))

    def abort(self) -> MigrationState:
        """Abort the migration; returns its state as it was.

        Before ``backfill`` every item is at its old key and no key is fenced: the state
        is removed and every process returns to the declared layout at once. From
        ``backfill`` on, items live at their new keys: the change goes on to ``done``
        (its sweep included) and then returns to the old layout by the same phases, a
        change in the other direction (``resume``, ``reshard --step``), which the code
        declaring the old layout follows; ``--finish`` then removes the state. Nothing is
        deployed and nothing is lost.

        Raises:
            MigrationConflictError: no migration, an aborted one or its return, a time
                series past its cutover, or a change whose return is not made online.
        """
        state = self._required()
        if state.returning:
            raise MigrationConflictError(
                f"this migration ({state.change}) takes the items back to the layout the "
                "code declares; stopping it would leave them where no process looks; take "
                "it to done (reshard --step), then --finish"
            )
        if state.aborted:
            raise MigrationConflictError(
                f"the migration ({state.change}) is aborted already; run reshard --step "
                "until its return is done, then --finish"
            )
        if state.series and state.cutover is not None:
            return self._abort_series(state)
        if not state.at(Phase.BACKFILL) or self._nothing_moved(state):
            self.store.remove()
            return state
        self._check_return(state)
        self.store.write(evolve(state, aborted=True))
        return state

    def _abort_series(self, state: MigrationState) -> MigrationState:
        """A time series' count change in read_new whose first bucket has not begun yet
        (and will not within a settle time): its buckets return to the old count in
        every process, and a cleanup moves the readings (dated ahead of the clock)
        written there with the new count back."""
        cutover = state.cutover
        assert cutover is not None
        fmt = self.model._series_layout.bucket_format()  # type: ignore[attr-defined]
        now = self.clock.now()
        soonest = first_bucket_after(
            fmt, datetime.fromtimestamp(now + state.settle_seconds + CLOCK_MARGIN, timezone.utc)
        )
        if state.phase != Phase.READ_NEW or cutover < soonest:
            raise MigrationConflictError(
                f"the count change is in phase {state.phase.value} and its first bucket "
                f"{cutover!r} begins within a settle time: readings of it are (or will be, "
                f"before every process sees an abort) written with {state.new_count} shards "
                "as they happen, and going back would hide them until a cleanup moved them; "
                "take it forward to done (reshard --step), then start a change back"
            )
        self.store.write(evolve(state.returned(now), phase=Phase.READ_NEW))
        return state

    def _nothing_moved(self, state: MigrationState) -> bool:
        """A RandomShards grow in backfill: items keep their shards and every write still
        goes to an old shard, so no item is anywhere but under the old layout."""
        if state.phase != Phase.BACKFILL or state.new_boundaries is not None:
            return False
        if state.new_strategy is not None or state.new_count < state.old_count:
            return False
        layout = self._layout()
        return isinstance(layout.strategies[numbered_position("", layout)], RandomShards)

    def _check_return(self, state: MigrationState) -> None:
        """Refuse an abort whose return (the change in the other direction) ``start``
        would refuse, before anything is written."""
        name = self.model.__name__
        where = f"--abort of {name}'s migration ({state.change}) in phase {state.phase.value}"
        forward = "; take it forward to done and --finish, then start a change of your choice"
        if state.old_strategy is not None:
            back = state.old_strategy
            if back.kind != "hash" or not set(back.on) <= set(self._key_attributes()):
                raise ShardConfigurationError(
                    f"{where}: the return would swap back to "
                    f"{back.describe(state.old_count)}, under which a process cannot work "
                    f"out a moved item's key from the item{forward}"
                )
            return
        back_counts = (state.new_count, state.old_count)  # the return shrinks where it grew
        refused = None if state.new_boundaries else self._shrink_refused(*back_counts)
        if refused is not None:
            what, why = refused
            raise ShardConfigurationError(
                f"{where}: the return would shrink {what}, which is not made online: {why}{forward}"
            )

    def steps(
        self, to: Target, settle_seconds: float = 30.0, segments: int = 1, page_size: int = 100
    ) -> Iterator[MigrationState]:
        """Every step to ``to`` shards, waiting out each settle time; yields each state."""
        state = self.status() or self.start(to, settle_seconds, segments)
        if state.aborted or state.returning:
            raise MigrationConflictError(
                f"the migration ({state.change}) was aborted; take it and its return to "
                "done with resume() (reshard --step), then --finish"
            )
        if state.new_strategy is not None or isinstance(to, HashShards):
            asked = (StrategySpec.of(to), to.n) if isinstance(to, HashShards) else None
            if asked != (state.new_strategy, state.new_count):
                raise MigrationConflictError(
                    f"a migration ({state.change}) is in progress; give the target it started with"
                )
        elif state.new_boundaries is not None:
            if _boundaries_of(to) != state.new_boundaries:
                raise MigrationConflictError(
                    f"a migration to other boundaries is in progress ({state.change}); "
                    "give the boundaries it started with"
                )
        elif state.new_count != to:
            raise MigrationConflictError(
                f"a migration to {state.new_count} shards is in progress, not to {to}"
            )
        yield from self._through(state, page_size)

    def resume(self, page_size: int = 100) -> Iterator[MigrationState]:
        """Every remaining step of the migration in progress to its ``done``, waiting out
        each settle time (an aborted change: through its return); yields each state."""
        check_page_size(page_size)
        yield from self._through(self._required(), page_size)

    def _through(self, state: MigrationState, page_size: int) -> Iterator[MigrationState]:
        yield state
        total: int | None = None  # a segment's items for the progress line, estimated once
        while True:
            job = self.job_of(state)
            if job == "sweep":
                self.clock.sleep(self.settle_left(state))  # the sweep waits for drain to pass
            if job is not None:
                if total is None:
                    total = self.estimate().items // max(state.segments, 1) or None
                self.run_job(page_size=page_size, progress=Progress(job, total))
            if state.phase == Phase.DONE and not state.aborted:
                return
            self.clock.sleep(self.settle_left(state))
            state = self.advance()
            yield state

    def _series_plan(self, old: int, to: int, settle: float, segments: int) -> str:
        cost = self._estimate(to)
        name, table = self.model.__name__, self.model.Meta.table_name
        return _series_text(name, table, old, to, settle, segments, cost)

    # -- the plan -----------------------------------------------------------------------

    def estimate(self, to: Target | None = None) -> Estimate:
        """The cost of the migration to ``to`` shards (default: the one in progress)."""
        if to is None:
            state = self._required()
            return self._estimate(state.new_count, state.new_strategy is not None)
        swap = self.swap_of(to)
        return self._estimate(self.target(to)[0], swap is not None)

    def _estimate(self, count: int, swap: bool = False) -> Estimate:
        name = self.model.__name__
        layout = self._layout()
        old = shard_count(name, layout)
        table = self.model._get_connection().describe_table()
        items = int(table.get("ItemCount", 0))
        size = int(table.get("TableSizeBytes", 0))
        source = "DescribeTable (refreshed about every six hours)"
        if items == 0:  # new, or not yet counted: look
            items, size, source = sampled_size(self.model)
        avg = size / items if items else 0.0
        if self.series:  # one scan; only readings a lagging process wrote past the cutover move
            return Estimate(
                items=items,
                avg_item_bytes=avg,
                moving=0,
                requests=math.ceil(items / 100) if items else 1,
                read_units=math.ceil(size / 4096),
                write_units=0,
                source=source,
            )
        numbered = layout.strategies[numbered_position(name, layout)]
        moving = round(items * moving_fraction(numbered, old, count, swap))
        pages = math.ceil(items / 100) if items else 1
        read_unit = max(1, math.ceil(avg / 4096)) if items else 1
        write_unit = max(1, math.ceil(avg / 1024)) if items else 1
        scan_units = 3 * math.ceil(size / 4096)  # three consistent scans: backfill, cleanup, sweep
        return Estimate(
            items=items,
            avg_item_bytes=avg,
            moving=moving,
            # scans; per moved item: fence, get, copy, tombstone, get, unmark; the sweep's delete
            requests=3 * pages + 7 * moving,
            read_units=scan_units + 2 * moving * read_unit,
            write_units=5 * moving * write_unit,
            source=source,
        )

    def plan(self, to: Target, settle_seconds: float = 30.0, segments: int = 1) -> str:
        """The dry-run text: the phases to ``to`` shards and what they will cost."""
        name = self.model.__name__
        old = shard_count(name, self._layout())
        self._check_series_target(to)
        swap = self.swap_of(to)
        to, boundaries = self.target(to)
        if self.series:
            check_settle(settle_seconds)
            check_segments(segments)
            self._check_count(to, old)
            return self._series_plan(old, to, settle_seconds, segments)
        cost = self._estimate(to, swap is not None)
        what = "shards" if boundaries is None else "ordered ranges"
        change, declare = f"{old} -> {to} {what}", f"{to} {what}"
        fences = "its old key (one more conditional put)"
        if swap is not None:
            change = f"{swap[0].describe(old)} -> {swap[1].describe(to)}"
            declare = swap[1].describe(to)
            if swap[0].kind == "random":
                others = (
                    f"{old - 1} others"
                    if to <= old
                    else f"{old - 1} others (all {old} where its new shard is beyond them)"
                )
                fences = (
                    "every old shard the item may be on (a batch read, and a conditional put "
                    f"on each of the {others} not fenced yet)"
                )
        lines = [
            f"reshard {name} (table {self.model.Meta.table_name}): {change}, "
            f"{segments} scan segment(s), {settle_seconds:g}s settle between phases",
            "",
            "  1. prepare     processes start following; writes go to old keys",
            "  2. dual_write  old-key writes respect the fences of moves",
            f"  3. backfill    move {cost.moving:,} of ~{cost.items:,} items to their new keys",
            "  4. read_new    writes go to new keys, fencing the old first",
            "  5. new_only    no process writes old keys any more",
            "  6. cleanup     move what is left, confirm the moves' copies",
            "  7. drain       reads use the new keys only",
            f"  8. done        sweep the {cost.moving:,} tombstones; declare {declare} in the "
            "code, then reshard --finish",
            "",
            f"estimate: ~{cost.requests:,} requests, {cost.read_units:,.0f} RCU, "
            f"{cost.write_units:,.0f} WCU (items of ~{cost.avg_item_bytes:,.0f} bytes, from "
            f"{cost.source}); "
            f"a write to a new key first fences {fences}, and "
            f"reads cover {max(old, to)} shards until drain",
            f"shortest duration: {7 * settle_seconds:g}s of settling plus the three scans",
        ]
        return "\n".join(lines)


def _series_text(
    name: str, table: str, old: int, to: int, settle: float, segments: int, cost: Estimate
) -> str:
    lines = [
        f"reshard {name} (table {table}): {old} -> {to} shards from a bucket that has not "
        f"begun yet, {segments} scan segment(s), {settle:g}s settle between phases",
        "",
        "  1. prepare     processes start following; every bucket keeps its count",
        f"  2. read_new    the first bucket at least {settle + CLOCK_MARGIN:g}s ahead gets {to} "
        "shards, and "
        "every later one; earlier buckets keep theirs (nothing moves)",
        "  3. cleanup     move the readings dated in those buckets, ahead of the clock, that "
        "were written with the old count before read_new reached every process",
        f"  4. done        declare HashShards({to}, ...) with counts_before={{<bucket>: {old}}} "
        "in the code, then reshard --finish",
        "",
        f"estimate: ~{cost.requests:,} requests and {cost.read_units:,.0f} RCU for the cleanup "
        f"scan of ~{cost.items:,} readings (from {cost.source}); no read covers more "
        "partitions than before: each bucket has one count",
        f"shortest duration: {3 * settle:g}s of settling plus the scan",
    ]
    return "\n".join(lines)


def _boundaries_of(to: Target) -> tuple[str, ...]:
    """The boundaries an OrderedShards target names (its own, or the sequence given)."""
    return tuple(to.boundaries if isinstance(to, OrderedShards) else to)  # type: ignore[arg-type]
