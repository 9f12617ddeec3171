"""The rules of a shard count change, phase by phase, on key layouts alone (no table).

Which keys a write, a delete and a read reach in each phase, which copy a read keeps,
how a process's view of the phase is cached and held, and which models are refused.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.indexes import (
    AllProjection,
    GlobalSecondaryIndex,
    IncludeProjection,
    KeysOnlyProjection,
    LocalSecondaryIndex,
)
from pynamodb.models import Model

from shardmodel import (
    CounterAttribute,
    DynamicShards,
    HashShards,
    KeyLayout,
    RandomShards,
    ShardConfigurationError,
    ShardedKeyAttribute,
    ShardedModel,
    TimeBuckets,
    UnknownShardError,
)
from shardmodel.engine import sharding_of
from shardmodel.keyspace.phases import (
    DELETED,
    FENCED,
    MOVE_MARKER,
    MOVED,
    authority,
    is_tombstone,
    key_in,
    numbered_position,
    resized_layout,
    shard_count,
    state_of,
)
from shardmodel.keyspace.strategies import KeyValues
from shardmodel.migration import (
    ActiveMigration,
    MigrationState,
    MigrationStore,
    Phase,
    PhaseRules,
    ReshardWatch,
    TableWatch,
    follow,
    unfollow,
)
from shardmodel.migration.rules import check_reshardable
from shardmodel.testing import SimulatedClock

KEY = KeyValues("k", {}, {})


def state(phase: Phase, old: int = 16, new: int = 32) -> MigrationState:
    return MigrationState(
        table="phase-rules",
        old_count=old,
        new_count=new,
        phase=phase,
        changed_at=0.0,
        settle_seconds=30.0,
    )


def random_shrink(phase: Phase) -> ActiveMigration:
    """RandomShards 32 -> 16: new shard t receives old shards t and t + 16."""
    old, new = KeyLayout(RandomShards(32)), KeyLayout(RandomShards(16))
    return ActiveMigration(state(phase, 32, 16), old, new)


def random_grow(phase: Phase) -> ActiveMigration:
    old, new = KeyLayout(RandomShards(16)), KeyLayout(RandomShards(32))
    return ActiveMigration(state(phase), old, new)


def hash_grow(phase: Phase) -> ActiveMigration:
    old = KeyLayout(HashShards(16, on=["seq"]))
    new = KeyLayout(HashShards(32, on=["seq"]))
    return ActiveMigration(state(phase), old, new)


def seq_key(seq: int) -> KeyValues:
    return KeyValues("k", {"seq": seq}, {"seq": str(seq)})


def moving_seq() -> int:
    """A sequence number whose hash shard differs between 16 and 32 shards."""
    return next(s for s in range(100) if hashed(16, s) != hashed(32, s))


def hashed(count: int, seq: int) -> str:
    return f"k#{HashShards(count, on=['seq']).shard_of([str(seq)])}"


# -- the phase table -------------------------------------------------------------------

#: The runbook's table (docs/resharding.rst): phase -> (writes, old-key writes fenced,
#: new-key writes fence the old first, deletes leave tombstones, reads, scans return items
#: at their old keys, the phase's job)
TABLE = {
    Phase.PREPARE: ("old", False, False, False, ("old", "new"), True, None),
    Phase.DUAL_WRITE: ("old", True, False, True, ("old", "new"), True, None),
    Phase.BACKFILL: ("old", True, False, True, ("old", "new"), True, "backfill"),
    Phase.READ_NEW: ("new", True, True, True, ("old", "new"), True, None),
    Phase.NEW_ONLY: ("new", True, True, True, ("old", "new"), True, None),
    Phase.CLEANUP: ("new", True, True, True, ("old", "new"), True, "cleanup"),
    Phase.DRAIN: ("new", True, True, True, ("new",), False, None),
    Phase.DONE: ("new", True, False, False, ("new",), False, "sweep"),
}


@pytest.mark.parametrize("phase", list(Phase))
def test_each_phase_follows_the_runbooks_table(phase: Phase) -> None:
    """Writes, fences, tombstones, reads, scans and the job of every phase."""
    assert hash_grow(phase).rules == PhaseRules(*TABLE[phase])


def test_reads_cover_both_layouts_until_drain() -> None:
    """Every phase before drain reads the union of both layouts' keys; drain and done the new."""
    migration = hash_grow(Phase.CLEANUP)
    assert migration.read_layouts() == [migration.old, migration.new]
    for phase in (Phase.DRAIN, Phase.DONE):
        assert hash_grow(phase).read_layouts() == [hash_grow(phase).new]
    assert migration.layout("old") is migration.old
    assert migration.layout("new") is migration.new


# -- layouts ---------------------------------------------------------------------------


def test_the_numbered_strategy_is_found_among_the_others() -> None:
    """The one HashShards or RandomShards is the strategy whose count changes."""
    layout = KeyLayout([TimeBuckets("at"), HashShards(16, on=["at"])])
    assert numbered_position("Day", layout) == 1
    assert numbered_position("Click", KeyLayout(RandomShards(4))) == 0
    assert shard_count("Day", layout) == 16
    resized = resized_layout("Day", layout, 40)
    assert resized.strategies == (TimeBuckets("at"), HashShards(40, on=["at"]))
    assert resized.separator == layout.separator


@pytest.mark.parametrize(
    ("strategies", "found"),
    [([TimeBuckets("at")], 0), ([RandomShards(2), HashShards(2, on=["at"])], 2)],
    ids=["none", "two"],
)
def test_a_layout_without_exactly_one_numbered_strategy_is_refused(
    strategies: Any, found: int
) -> None:
    """No numbered strategy, or two: the count to change is ambiguous."""
    with pytest.raises(ShardConfigurationError) as caught:
        numbered_position("Day", KeyLayout(strategies))
    assert str(caught.value) == (
        "Day: a layout change needs exactly one HashShards, RandomShards or OrderedShards in "
        f"the partition key's strategies, found {found}; DynamicShards keys change their "
        "counts by themselves"
    )


def test_an_items_key_in_a_layout_recomputes_hashes_and_keeps_random_shards() -> None:
    """Deterministic segments are computed again; random ones are kept as stored."""
    seq = moving_seq()
    assert key_in(KeyLayout(HashShards(32, on=["seq"])), seq_key(seq), hashed(16, seq)) == (
        hashed(32, seq)
    )
    assert key_in(KeyLayout(RandomShards(32)), KEY, "k#7") == "k#7"


def test_a_retired_random_shard_maps_to_its_number_modulo_the_new_count() -> None:
    """Retiring, shard 28 of 32 becomes 12 of 16; without retire it stays (a grown shard)."""
    sixteen = KeyLayout(RandomShards(16))
    assert key_in(sixteen, KEY, "k#28", retire=True) == "k#12"
    assert key_in(sixteen, KEY, "k#16", retire=True) == "k#0"
    assert key_in(sixteen, KEY, "k#15", retire=True) == "k#15"
    assert key_in(sixteen, KEY, "k#28") == "k#28"
    one_based = KeyLayout(RandomShards(16), first_shard=1)  # "k#17" is shard 16
    assert key_in(one_based, KEY, "k#17", retire=True) == "k#1"
    assert key_in(one_based, KEY, "k#16", retire=True) == "k#16"


# -- where writes and deletes go -------------------------------------------------------


def test_a_write_goes_to_the_layout_its_phase_writes() -> None:
    """Before read_new the old key; from read_new on, the new key."""
    seq = moving_seq()
    rng = random.Random(0)
    assert hash_grow(Phase.BACKFILL).write_key(seq_key(seq), None, rng) == hashed(16, seq)
    assert hash_grow(Phase.READ_NEW).write_key(seq_key(seq), None, rng) == hashed(32, seq)
    stored = hashed(16, seq)
    assert hash_grow(Phase.READ_NEW).write_key(seq_key(seq), stored, rng) == hashed(32, seq)
    assert random_shrink(Phase.READ_NEW).write_key(KEY, "k#20", rng) == "k#4"
    assert random_shrink(Phase.BACKFILL).write_key(KEY, "k#20", rng) == "k#20"
    assert random_grow(Phase.READ_NEW).write_key(KEY, "k#20", rng) == "k#20"
    fresh = {random_shrink(Phase.READ_NEW).write_key(KEY, None, rng) for _ in range(80)}
    assert fresh == {f"k#{n}" for n in range(16)}  # a new item: a random new-layout shard


def test_a_stored_random_item_needs_its_shard() -> None:
    """A random item never loaded nor saved has no known key: refused, saying to load it."""
    with pytest.raises(UnknownShardError) as caught:
        random_shrink(Phase.BACKFILL).stored_key(KEY, None)
    assert str(caught.value) == (
        "key 'k' has no known shard: its strategy is random and this instance was neither "
        "loaded nor saved; load it with get(...) first"
    )
    seq = moving_seq()
    assert hash_grow(Phase.BACKFILL).stored_key(seq_key(seq), None) == hashed(16, seq)
    assert random_shrink(Phase.READ_NEW).stored_key(KEY, "k#31") == "k#15"
    assert random_shrink(Phase.PREPARE).stored_key(KEY, "k#31") == "k#31"


def test_a_new_key_write_fences_the_old_key_from_read_new_to_drain() -> None:
    """The old key a write at the new key fences first: none before read_new (writes go
    to old keys) and none at done (the sweep may delete tombstones)."""
    seq = moving_seq()
    old, new = hashed(16, seq), hashed(32, seq)
    for phase in Phase:
        fenced = hash_grow(phase).fence_keys(seq_key(seq), new)
        assert fenced == ([old] if TABLE[phase][2] else []), phase
    same = next(s for s in range(100) if hashed(16, s) == hashed(32, s))
    assert hash_grow(Phase.READ_NEW).fence_keys(seq_key(same), hashed(32, same)) == []


def test_shrinking_random_shards_a_new_key_has_every_old_key_that_folds_into_it() -> None:
    """New shard 4 of 16 may hold the items of old shards 4 and 20; a retired key is itself."""
    migration = random_shrink(Phase.READ_NEW)
    assert migration.many_old_keys is True
    assert migration.old_keys(KEY, "k#4") == ["k#4", "k#20"]
    assert migration.old_keys(KEY, "k#20") == ["k#20"]
    assert migration.new_key(KEY, "k#20") == "k#4"
    assert migration.fence_keys(KEY, "k#4") == ["k#20"]
    assert migration.is_old_key(KEY, "k#20") is True
    assert migration.is_old_key(KEY, "k#4") is False  # its new key too
    wider = ActiveMigration(
        state(Phase.READ_NEW, 40, 16), KeyLayout(RandomShards(40)), KeyLayout(RandomShards(16))
    )
    assert wider.old_keys(KEY, "k#3") == ["k#3", "k#19", "k#35"]
    assert wider.old_keys(KEY, "k#16") == ["k#16"]  # retired: its own key only
    assert wider.new_key(KEY, "k#35") == "k#3"


def test_only_a_shrink_of_random_shards_is_a_random_shrink() -> None:
    """Growing, or changing a hash count, never folds several old keys into one."""
    assert random_grow(Phase.READ_NEW).many_old_keys is False
    hash_shrink = ActiveMigration(
        state(Phase.READ_NEW, 32, 16),
        KeyLayout(HashShards(32, on=["seq"])),
        KeyLayout(HashShards(16, on=["seq"])),
    )
    assert hash_shrink.many_old_keys is False
    assert random_grow(Phase.READ_NEW).old_keys(KEY, "k#4") == ["k#4"]
    assert random_grow(Phase.READ_NEW).old_keys(KEY, "k#20") == ["k#20"]  # born there
    same = ActiveMigration(
        state(Phase.READ_NEW, 16, 16), KeyLayout(RandomShards(16)), KeyLayout(RandomShards(16))
    )
    assert same.many_old_keys is False


# -- which copy holds an item ----------------------------------------------------------


def row(marker: str | None, value: str = "v") -> dict[str, Any]:
    found: dict[str, Any] = {"value": {"S": value}}
    if marker is not None:
        found[MOVE_MARKER] = {"S": marker}
    return found


def test_a_rows_state_and_tombstones() -> None:
    """Moved, fenced and deleted rows are tombstones; a move's fenced copy still holds."""
    assert [state_of(row(m)) for m in (None, "moving:t", MOVED)] == [None, "moving:t", MOVED]
    assert state_of(None) is None
    assert [is_tombstone(row(m)) for m in (None, "moving:t", MOVED, FENCED, DELETED)] == [
        False,
        False,
        True,
        True,
        True,
    ]


def test_the_old_copy_holds_the_item_until_it_is_a_tombstone() -> None:
    """authority: an old copy not fenced, or frozen by a move, holds the item; then the
    new copy does, unless a delete left a tombstone there."""
    old, frozen, new = row(None, "old"), row("moving:t", "frozen"), row(None, "new")
    assert authority([old], new) is old
    assert authority([frozen], new) is frozen
    assert authority([row(MOVED)], new) is new
    assert authority([row(FENCED)], new) is new
    assert authority([row(MOVED)], row(DELETED)) is None
    assert authority([row(MOVED)], None) is None
    assert authority([], new) is new
    assert authority([row(FENCED), old], new) is old  # a random shrink: one old key holds it


# -- a process's view of the phase -----------------------------------------------------


class PhaseModel(ShardedModel):
    """Declares 16 hash shards of ``seq``."""

    class Meta:
        table_name = "phase-rules"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(hash_key=True, strategy=HashShards(16, on=["seq"]))
    seq = NumberAttribute(range_key=True)


class Store:
    """Stands in for the state table: returns ``found`` and counts the reads."""

    def __init__(self, found: MigrationState | None) -> None:
        self.found = found
        self.reads = 0

    def read_current(self) -> tuple[MigrationState | None, None]:
        """The state and (none) layout record, as the state table gives both at once."""
        self.reads += 1
        return self.found, None


def watch_of(found: MigrationState | None, cache: float = 5.0) -> tuple[ReshardWatch, Any]:
    store, clock = Store(found), SimulatedClock(start=1000.0)
    watch = ReshardWatch(PhaseModel, store, cache_seconds=cache, clock=clock)  # type: ignore[arg-type]
    return watch, clock


def test_no_state_means_no_migration() -> None:
    """Without a state item the model reads and writes its declared layout."""
    watch, _ = watch_of(None)
    assert watch.current() is None
    assert watch.active(None) is None


def test_the_state_gives_both_layouts_from_the_declared_one() -> None:
    """The old and new layouts are the declared one with the old and new counts."""
    watch, _ = watch_of(state(Phase.BACKFILL))
    active = watch.current()
    assert active is not None
    assert active.state == state(Phase.BACKFILL)
    assert active.old.strategies == (HashShards(16, on=["seq"]),)
    assert active.new.strategies == (HashShards(32, on=["seq"]),)


def test_code_declaring_either_count_follows_until_the_state_is_removed() -> None:
    """Done, with the new count declared: still the migration (the sweep may not have run)."""
    watch, _ = watch_of(None)
    for old, new in ((8, 16), (16, 32)):
        still = watch.active(state(Phase.DONE, old=old, new=new))
        assert still is not None and still.rules.reads == ("new",)


def test_a_declared_count_that_is_neither_side_is_refused() -> None:
    """The code must declare the old or the new count."""
    watch, _ = watch_of(None)
    with pytest.raises(ShardConfigurationError) as caught:
        watch.active(state(Phase.BACKFILL, old=8, new=32))
    assert str(caught.value) == (
        "PhaseModel declares 16 shards, but the migration of table 'phase-rules' moves "
        "8 -> 32 (phase backfill); declare 8 or 32"
    )


def test_the_state_is_cached_for_cache_seconds() -> None:
    """Read once, reused for less than cache_seconds, read again from then on."""
    watch, clock = watch_of(state(Phase.BACKFILL), cache=5.0)
    store = watch.store
    watch.current()
    clock.advance(4.9)
    watch.current()
    assert store.reads == 1
    clock.advance(0.1)
    watch.current()
    assert store.reads == 2
    watch.refresh()
    assert store.reads == 3
    uncached, _ = watch_of(None, cache=0)
    uncached.current()
    uncached.current()
    assert uncached.store.reads == 2


def test_an_operation_holds_one_view_of_the_phase() -> None:
    """Inside an operation the model's migration keeps the view it began with, nested too."""
    watch, clock = watch_of(state(Phase.BACKFILL), cache=0)
    store = watch.store
    engine = sharding_of(PhaseModel)
    engine.watch = watch
    try:
        with engine.operation() as view:
            assert view is not None and view.state.phase == Phase.BACKFILL
            store.found = state(Phase.READ_NEW)  # type: ignore[attr-defined]
            clock.advance(60)
            assert engine.migration() is view
            assert engine.placement().migration is view
            with watch.held() as inner:
                assert inner is view
            assert engine.migration() is view
        after = engine.migration()
        assert after is not None and after.state.phase == Phase.READ_NEW
    finally:
        engine.watch = None


def test_a_write_sees_one_view_of_the_phase() -> None:
    """A write holds one view from its first request to its last; after unfollow() the
    model follows its table's own watch (no follow() needed), and inside declared() none."""
    watch = follow(PhaseModel, cache_seconds=0, clock=SimulatedClock(start=1000.0))
    engine = sharding_of(PhaseModel)
    try:
        store = Store(state(Phase.BACKFILL))
        watch.store = store  # type: ignore[assignment]
        with engine.operation() as first:
            store.found = state(Phase.READ_NEW)
            assert engine.migration() is first
            assert store.reads == 1
        with engine.operation() as view:
            assert view is not None and view.state.phase == Phase.READ_NEW
    finally:
        unfollow(PhaseModel)
    assert isinstance(engine.source(), TableWatch)
    with engine.declared(), engine.operation() as nothing:
        assert nothing is None


def test_follow_checks_the_model_and_names_its_state_table() -> None:
    """follow() refuses models it cannot reshard; its store is '<table>-reshard' or given."""
    clock = SimulatedClock(start=5.0)
    try:
        watch = follow(PhaseModel, cache_seconds=2.5, clock=clock)
        assert watch.cache_seconds == 2.5
        assert watch.clock is clock
        assert watch.model is PhaseModel
        assert watch.store.table_name == "phase-rules-reshard"
        assert follow(PhaseModel, table_name="states").store.table_name == "states"
    finally:
        unfollow(PhaseModel)
    with pytest.raises(ShardConfigurationError):
        follow(CountedByDay)
    assert isinstance(MigrationStore(PhaseModel).table_name, str)


def test_the_state_is_cached_for_five_seconds_by_default() -> None:
    """The documented default cache of a process's view, for follow() and a watch alike."""
    try:
        assert follow(PhaseModel).cache_seconds == 5.0
    finally:
        unfollow(PhaseModel)
    watch = ReshardWatch(PhaseModel, Store(None))  # type: ignore[arg-type]
    assert watch.cache_seconds == 5.0


def test_a_watched_model_without_a_numbered_strategy_is_named() -> None:
    """A model whose layout has no count to change is refused by its name."""
    watch = ReshardWatch(GrowsByItself, Store(None))  # type: ignore[arg-type]
    with pytest.raises(ShardConfigurationError, match=r"^GrowsByItself: a layout change"):
        watch.active(state(Phase.BACKFILL))
    layout = KeyLayout(TimeBuckets("at"))
    for call in (lambda: shard_count("Day", layout), lambda: resized_layout("Day", layout, 2)):
        with pytest.raises(ShardConfigurationError, match=r"^Day: a layout change"):
            call()


# -- models a shard count change refuses -----------------------------------------------


class Plain(Model):
    class Meta:
        table_name = "plain"

    key = UnicodeAttribute(hash_key=True)


class ByTeam(GlobalSecondaryIndex["TeamIndexed"]):
    class Meta:
        index_name = "by-team"
        projection = AllProjection()

    team = UnicodeAttribute(hash_key=True)


class TeamIndexed(ShardedModel):
    """Only an index key is sharded."""

    class Meta:
        table_name = "team-indexed"
        region = "us-east-1"

    key = UnicodeAttribute(hash_key=True)
    team = ShardedKeyAttribute(strategy=RandomShards(4), null=True)
    by_team = ByTeam()


class GrowsByItself(ShardedModel):
    """Dynamic shards: no fixed count to change."""

    class Meta:
        table_name = "grows-by-itself"
        region = "us-east-1"

    key = ShardedKeyAttribute(hash_key=True, strategy=DynamicShards())


class ByTeams(GlobalSecondaryIndex["TeamsAndRegions"]):
    class Meta:
        index_name = "by-team"
        projection = AllProjection()

    team = UnicodeAttribute(hash_key=True)


class ByRegion(GlobalSecondaryIndex["TeamsAndRegions"]):
    class Meta:
        index_name = "by-region"
        projection = AllProjection()

    region = UnicodeAttribute(hash_key=True)


class TeamsAndRegions(ShardedModel):
    """Two sharded index keys, no sharded table key."""

    class Meta:
        table_name = "teams-and-regions"
        region = "us-east-1"

    key = UnicodeAttribute(hash_key=True)
    team = ShardedKeyAttribute(strategy=RandomShards(4), null=True)
    region = ShardedKeyAttribute(strategy=RandomShards(2), null=True)
    by_team = ByTeams()
    by_region = ByRegion()


class CountedByDay(ShardedModel):
    class Meta:
        table_name = "counted-by-day"
        region = "us-east-1"

    page = ShardedKeyAttribute(hash_key=True, strategy=HashShards(8, on=["day"]))
    day = UnicodeAttribute(range_key=True)
    views = CounterAttribute(default=0)


class CountedAtRandom(ShardedModel):
    class Meta:
        table_name = "counted-at-random"
        region = "us-east-1"

    page = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(8))
    views = CounterAttribute(default=0)


class BySeq(LocalSecondaryIndex["LocallyIndexed"]):
    class Meta:
        index_name = "by-seq"
        projection = AllProjection()

    sensor = UnicodeAttribute(hash_key=True)
    other = NumberAttribute(range_key=True)


class LocallyIndexed(ShardedModel):
    class Meta:
        table_name = "locally-indexed"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(hash_key=True, strategy=HashShards(16, on=["seq"]))
    seq = NumberAttribute(range_key=True)
    other = NumberAttribute(null=True)
    by_seq = BySeq()


def hashed_on(on: list[str], projection: Any) -> type[ShardedModel]:
    """A model sharded by a hash of ``on``, with an index on ``note`` of this projection."""

    class ByNote(GlobalSecondaryIndex[Any]):
        class Meta:
            index_name = "by-note"

        note = UnicodeAttribute(hash_key=True)

    ByNote.Meta.projection = projection  # type: ignore[attr-defined]
    namespace: dict[str, Any] = {
        "Meta": type("Meta", (), {"table_name": "by-value", "region": "us-east-1"}),
        "sensor": ShardedKeyAttribute(hash_key=True, strategy=HashShards(16, on=on)),
        "seq": NumberAttribute(range_key=True),
        "value": UnicodeAttribute(null=True),
        "other": UnicodeAttribute(null=True),
        "note": UnicodeAttribute(null=True),
        "by_note": ByNote(),
    }
    return type("ByValue", (ShardedModel,), namespace)


def refusal(model: Any) -> str:
    with pytest.raises(ShardConfigurationError) as caught:
        check_reshardable(model)
    return str(caught.value)


def test_a_model_without_a_sharded_partition_key_is_refused() -> None:
    """Nothing to reshard; an index's sharded key is named with how to change it."""
    assert refusal(Plain) == "Plain: no sharded partition key to reshard"
    assert refusal(TeamIndexed) == (
        "TeamIndexed: no sharded partition key to reshard; an index's sharded key (team) "
        "keeps its count: declare a new index attribute with the new count, save the items "
        "again, switch the queries"
    )
    assert refusal(TeamsAndRegions).startswith(
        "TeamsAndRegions: no sharded partition key to reshard; an index's sharded key "
        "(region, team) keeps its count"
    )
    assert refusal(GrowsByItself).startswith("GrowsByItself: a layout change needs")


def test_a_counter_model_is_resharded_only_on_random_shards() -> None:
    """Counters under HashShards are refused; under RandomShards they are accepted."""
    assert refusal(CountedByDay) == (
        "CountedByDay: a counter model is resharded only on RandomShards (it grows by "
        "reading the new shards too); under HashShards each increment sits on a shard whose "
        "number changes, and moving partial sums under concurrent adds is not exact; create "
        "a new table and roll the counters up"
    )
    check_reshardable(CountedAtRandom)
    check_reshardable(PhaseModel)


def test_a_local_index_is_refused() -> None:
    """A local index shares the partition key whose count would change under it."""
    assert refusal(LocallyIndexed) == (
        "LocallyIndexed: local secondary index 'by-seq' shares the table's partition key, "
        "whose shard count would change under it (its cursors name the old layout's "
        "shards); resharding a model with a local index is not supported, use a global "
        "secondary index"
    )


def test_an_index_must_project_what_the_shard_is_computed_from() -> None:
    """Keys-only without the hashed attribute: refused; projected or all: accepted."""
    assert refusal(hashed_on(["value"], KeysOnlyProjection())) == (
        "ByValue: index 'by-note' does not project value, which the partition key's shard is "
        "computed from; an index read during the shard count change tells an item's two "
        "copies apart by it: project it (IncludeProjection or AllProjection)"
    )
    assert "does not project value, other, which" in refusal(
        hashed_on(["value", "other"], KeysOnlyProjection())
    )
    check_reshardable(hashed_on(["value"], IncludeProjection(["value"])))
    check_reshardable(hashed_on(["value"], AllProjection()))


def test_an_index_holds_the_table_keys_and_its_own_keys() -> None:
    """Every index holds the table's keys and its own: sharding on those needs no projection."""
    check_reshardable(hashed_on(["seq"], KeysOnlyProjection()))  # the table's range key
    check_reshardable(hashed_on(["note"], KeysOnlyProjection()))  # the index's hash key
    check_reshardable(hashed_on(["seq"], IncludeProjection(["other"])))
    assert "does not project value" in refusal(
        hashed_on(["seq", "value"], IncludeProjection(["other"]))
    )
