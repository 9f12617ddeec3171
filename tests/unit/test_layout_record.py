"""The layout record a finished change leaves in the table, and the watch every model has.

The record's values and refusals (no server), its place in the state table (moto in
process), the watch a model gets without ``follow()``, what that costs in requests, and
that computing a key (``serialize``, ``get_physical_key``) asks the table nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from shardmodel import HashShards, OrderedShards, RandomShards, ShardedKeyAttribute
from shardmodel.engine import sharding_of
from shardmodel.errors import ShardConfigurationError
from shardmodel.keyspace.bucket_counts import CountSchedule
from shardmodel.keyspace.keys import KeyLayout
from shardmodel.keyspace.layout_record import (
    LayoutRecord,
    disagreement,
    finished,
    record_of,
    recorded_schedule,
)
from shardmodel.migration import (
    MigrationConflictError,
    MigrationStore,
    Phase,
    Reshard,
    TableWatch,
    declared_layout,
    follow,
    unfollow,
)
from shardmodel.migration.reshard import JOBS
from shardmodel.testing import (
    SimulatedClock,
    bind_models,
)
from tests.migration_models import Reading, redeployed
from tests.unit.test_migration import migration_tables

__all__ = ["migration_tables"]  # a fixture used by name

SETTLE = 10.0


def layout(*strategies: Any) -> KeyLayout:
    return ShardedKeyAttribute(hash_key=True, strategy=list(strategies)).layout


# -- the record's values ----------------------------------------------------------------


def test_a_record_names_the_declaration_that_agrees_with_it() -> None:
    hashed = record_of("M", "t", layout(HashShards(8, on="seq")), change="4 -> 8 shards")
    assert hashed.describe() == "HashShards(8, on=seq)"
    assert disagreement(hashed, "M", layout(HashShards(8, on="seq"))) is None
    refused = disagreement(hashed, "M", layout(HashShards(4, on="seq")))
    assert refused is not None
    assert "M declares HashShards(4, on=seq), but table 't' holds HashShards(8, on=seq)" in refused
    assert refused.endswith("since its change 4 -> 8 shards; declare HashShards(8, on=seq)")
    other = disagreement(hashed, "M", layout(HashShards(8, on="other")))
    assert other is not None and "declare HashShards(8, on=seq)" in other
    randomly = record_of("M", "t", layout(RandomShards(4)))
    assert randomly.describe() == "RandomShards(4)"
    assert disagreement(randomly, "M", layout(HashShards(4, on="seq"))) is not None
    ordered = record_of("M", "t", layout(OrderedShards(["", "m"], on="seq")))
    assert (ordered.count, ordered.boundaries) == (2, ("", "m"))
    moved = disagreement(ordered, "M", layout(OrderedShards(["", "n"], on="seq")))
    assert moved is not None and "OrderedShards with 2 ranges" in moved


def test_a_series_may_leave_the_tables_history_out_but_not_contradict_it() -> None:
    series = layout(HashShards(32, on="sensor"))
    history = CountSchedule((("2026-11-25T04", 16),), 32)
    record = record_of("S", "t", series, history)
    assert recorded_schedule(record) == history
    assert disagreement(record, "S", series, CountSchedule((), 32)) is None  # left out
    assert disagreement(record, "S", series, history) is None  # declared alike
    wrong = disagreement(record, "S", series, CountSchedule((("2026-11-25T04", 8),), 32))
    assert wrong is not None and "not the table's" in wrong
    behind = disagreement(record, "S", layout(HashShards(16, on="sensor")), CountSchedule((), 16))
    assert behind is not None and "counts_before may be left out" in behind
    # --finish keeps what the table held with what the finishing code declares
    later = finished(
        "S",
        "t",
        layout(HashShards(64, on="sensor")),
        CountSchedule((("2026-12-01T00", 32),), 64),
        record,
        "32 -> 64",
        1.0,
    )
    assert later.counts_before == (("2026-11-25T04", 16), ("2026-12-01T00", 32))
    assert recorded_schedule(None) is None
    assert recorded_schedule(LayoutRecord("t", 8)) is None


# -- in the state table -------------------------------------------------------------------


@pytest.fixture
def clock(migration_tables: SimulatedClock) -> SimulatedClock:
    """The migration models' tables on in-process moto, and a simulated clock."""
    return migration_tables


def _change(clock: SimulatedClock, to: int = 32) -> None:
    """Reading's change 16 -> ``to`` from start to --finish, by code declaring ``to``."""
    follow(Reading, cache_seconds=0, clock=clock)
    operator = Reshard(Reading, clock=clock)
    state = operator.start(to, settle_seconds=SETTLE)
    while True:
        clock.advance(SETTLE)
        if state.phase in JOBS:
            operator.run_job()
        if state.phase == Phase.DONE:
            break
        state = operator.advance()
    unfollow(Reading)
    Reshard(redeployed(Reading, to), clock=clock).finish()


def test_finish_records_the_layout_and_the_old_declaration_is_refused_by_name(
    clock: SimulatedClock,
) -> None:
    for seq in range(6):
        Reading(sensor="s", seq=seq, value=str(seq)).save()
    store = MigrationStore(Reading)
    assert store.read_current() == (None, None)  # no change has finished: no record
    _change(clock)
    state, record = store.read_current()  # both in one request
    assert state is None and record is not None
    assert (record.count, record.change) == (32, "16 -> 32 shards")
    assert record.recorded_at == clock.now()
    assert store.read_layout() == record
    # Reading still declares 16: refused before any request, named, with the fix
    with pytest.raises(ShardConfigurationError, match=r"declare HashShards\(32, on=seq\)"):
        Reading.get("s", 1)
    with pytest.raises(ShardConfigurationError, match="holds HashShards"):
        Reading.count("s")
    with pytest.raises(ShardConfigurationError, match="holds HashShards"):
        Reading(sensor="s", seq=99).save()
    with pytest.raises(ShardConfigurationError, match="holds HashShards"):
        Reshard(Reading, clock=clock).start(64, settle_seconds=SETTLE)  # nothing written
    assert store.read_current()[0] is None
    renewed = redeployed(Reading, 32)
    assert [i.value for i in renewed.query("s")] == [str(s) for s in range(6)]
    # a later change starts from the recorded layout and keeps a record of its own
    Reshard(renewed, clock=clock).start(64, settle_seconds=SETTLE)
    assert store.read_current()[0] is not None


def test_a_model_follows_its_table_without_follow_at_one_read_per_cache_window(
    clock: SimulatedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every model has a watch of its own; it reads the state table (one request for the
    state and the record) once per five seconds, and at once after this process changed
    it (a script that advances a phase and then reads)."""
    plain = redeployed(Reading, 16)
    watch = sharding_of(plain).source()
    assert isinstance(watch, TableWatch) and watch.cache_seconds == 5.0
    watch.clock = clock
    reads: list[int] = []
    original = MigrationStore.read_current

    def counted(store: MigrationStore) -> Any:
        reads.append(1)
        return original(store)

    monkeypatch.setattr(MigrationStore, "read_current", counted)
    for seq in range(50):
        plain(sensor="s", seq=seq, value="v").save()
        plain.get("s", seq)
    assert len(reads) == 1  # 100 operations in one window: one read
    clock.advance(5.0)
    plain.get("s", 0)
    assert len(reads) == 2
    operator = Reshard(Reading, clock=clock)
    operator.start(32, settle_seconds=SETTLE)  # this process changed the state
    before = len(reads)
    assert plain.get("s", 3).value == "v"
    view = watch.peek()
    assert view is not None and view.state.phase == Phase.PREPARE
    assert len(reads) > before
    # follow() is a tuning knob: its watch replaces the table's; after unfollow() the
    # model has a watch of its table again, read afresh
    tuned = follow(plain, cache_seconds=1.0, clock=clock)
    assert sharding_of(plain).source() is tuned
    unfollow(plain)
    again = sharding_of(plain).source()
    assert isinstance(again, TableWatch) and again is not watch and again.peek() is None


def test_computing_a_key_asks_the_table_nothing() -> None:
    """serialize() and get_physical_key() are pure: with no DynamoDB to ask (an endpoint
    nothing listens on) they work out the declared layout's keys; declared_layout() says
    so for code that computes keys offline around other calls."""
    bind_models([Reading], host="http://127.0.0.1:9")
    try:
        item = Reading(sensor="s", seq=5, value="v")
        physical = item.get_physical_key()
        assert physical is not None and physical.startswith("s#")
        assert item.serialize()["sensor"] == {"S": physical}
        with declared_layout(Reading), sharding_of(Reading).operation() as view:
            assert view is None
            assert Reading(sensor="s", seq=5).serialize()["sensor"] == {"S": physical}
    finally:
        bind_models([Reading], host=None)


def test_a_table_laid_out_before_records_is_given_one_after_a_sample_check(
    clock: SimulatedClock, capsys: pytest.CaptureFixture[str]
) -> None:
    """``reshard --record``: the declared layout becomes the table's record once a sample
    of the stored items sits where it says; a wrong declaration records nothing."""
    from shardmodel.cli import main

    for seq in range(30):
        Reading(sensor="s", seq=seq, value=str(seq)).save()
    store = MigrationStore(Reading)
    # code that declares 32 shards for items laid out with 16: refused, nothing written
    wrong = redeployed(Reading, 32)
    with pytest.raises(ShardConfigurationError, match="is not where the declared layout"):
        Reshard(wrong, clock=clock).record()
    assert store.read_current() == (None, None)
    assert main(["reshard", "tests.migration_models:Reading", "--record"]) == 0
    assert "records HashShards(16, on=seq)" in capsys.readouterr().out
    record = store.read_layout()
    assert record is not None and (record.count, record.change) == (16, "recorded")
    with pytest.raises(ShardConfigurationError, match=r"holds HashShards\(16, on=seq\)"):
        wrong.get("s", 1)
    assert Reading.get("s", 1).value == "1"
    Reshard(Reading, clock=clock).start(32, settle_seconds=SETTLE)
    with pytest.raises(MigrationConflictError, match="its --finish records"):
        Reshard(Reading, clock=clock).record()
