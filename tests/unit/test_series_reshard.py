"""A time series' shard count change: the count changes from a bucket that has not begun.

SensorSeries is the time-series guide's production layout (sha256 of the sensor over 16
shards, hourly buckets). Every test runs on in-process moto with a simulated clock;
tests/integration/test_series_migration.py runs the change under a writer and readers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from pynamodb.attributes import UnicodeAttribute

from shardmodel import (
    BucketKeyAttribute,
    HashShards,
    SeriesKeyAttribute,
    SeriesTimeAttribute,
    ShardConfigurationError,
    ShardKeyError,
    TimeBuckets,
    TimeSeriesModel,
)
from shardmodel.cli import main
from shardmodel.keyspace.bucket_counts import CountSchedule, first_bucket_after
from shardmodel.migration import MigrationConflictError, Phase, Reshard, follow, unfollow
from shardmodel.testing import (
    SimulatedClock,
    bind_models,
    create_tables,
    drop_tables,
    mock_dynamodb,
)
from tests.migration_models import (
    MIGRATION_MODELS,
    SensorSeries,
    behind,
    series_redeployed,
    shard_moves,
)

UTC = timezone.utc
#: 2023-11-14T22:13:20Z: a settle time of 60 s makes the first new bucket 23:00
START = 1_700_000_000.0
SENSORS = [f"sensor-{i:03d}" for i in range(24)]
Key = tuple[str, datetime]


@pytest.fixture
def clock() -> Iterator[SimulatedClock]:
    with mock_dynamodb():
        bind_models(MIGRATION_MODELS, host=None)
        create_tables(MIGRATION_MODELS)
        yield SimulatedClock(start=START)
        for model in MIGRATION_MODELS:
            unfollow(model)
        drop_tables(MIGRATION_MODELS)


def at(hours: float) -> datetime:
    """``hours`` after 22:00 on the start's day."""
    return datetime(2023, 11, 14, 22, tzinfo=UTC) + timedelta(hours=hours)


def write(model: Any, ledger: dict[Key, int], sensor: str, moment: datetime, value: int) -> None:
    model(sensor_id=sensor, timestamp=moment, value=value).save()
    ledger[(sensor, moment)] = value


def expected(ledger: dict[Key, int], sensor: str, low: datetime, high: datetime) -> list[Any]:
    return sorted((t, v) for (s, t), v in ledger.items() if s == sensor and low <= t <= high)


def check_reads(
    model: Any,
    ledger: dict[Key, int],
    low: datetime,
    high: datetime,
    hidden: dict[Key, int] | None = None,
) -> None:
    """Every read path returns each reading once, with its value; ``hidden``: readings
    a lagging process wrote past the cutover with the old count, which only a scan sees
    until the cleanup moves them."""
    for sensor in SENSORS:
        want = expected(ledger, sensor, low, high)
        got = [(r.timestamp, r.value) for r in model.query_series(sensor, low, high)]
        assert got == want, sensor
        newest = [
            (r.timestamp, r.value)
            for r in model.query_series(sensor, low, high, scan_index_forward=False, limit=3)
        ]
        assert newest == want[::-1][:3], sensor
        assert model.count_series(sensor, low, high) == len(want), sensor
        hours = int((high - low.replace(minute=0)).total_seconds() // 3600) + 1
        assert [(r.timestamp, r.value) for r in model.latest(sensor, hours, now=high)] == [
            w for w in want if w[0] >= high.replace(minute=0) - timedelta(hours=hours - 1)
        ]
        for moment, value in want:
            assert model.get_reading(sensor, moment, consistent_read=True).value == value
    rows = [(r.sensor_id, r.timestamp, r.value) for r in model.scan()]
    stored = {**ledger, **(hidden or {})}
    assert sorted(rows) == sorted((s, t, v) for (s, t), v in stored.items())


@pytest.mark.slow
def test_the_count_changes_from_a_future_bucket_and_every_read_stays_exact(
    clock: SimulatedClock,
) -> None:
    ledger: dict[Key, int] = {}
    for n, sensor in enumerate(SENSORS):
        for minutes in (-90, -30, 5, 12):  # 20:30 .. 22:12, before the start
            write(SensorSeries, ledger, sensor, at(minutes / 60), n)
    follow(SensorSeries, cache_seconds=0, clock=clock)
    lagging = series_redeployed(16)  # a process that has not seen the change yet
    behind(lagging, clock)
    operator = Reshard(SensorSeries, clock=clock)
    state = operator.start(32, settle_seconds=60)
    assert (state.phase, state.cutover) == (Phase.PREPARE, None)
    low, high = at(-2), at(3)
    check_reads(SensorSeries, ledger, low, high)
    clock.advance(60)
    state = operator.advance()
    assert (state.phase, state.cutover) == (Phase.READ_NEW, "2023-11-14T23")
    # a cursor of the old layout, over a range across the cutover, taken before readings
    # exist there; resumed below after the new count's readings are written
    page = SensorSeries.query_series(SENSORS[0], low, high, limit=2)
    first = [(r.timestamp, r.value) for r in page]
    cursor = page.last_evaluated_key
    for n, sensor in enumerate(SENSORS):
        for minutes in (20, 50, 65, 110, 170):  # 22:20 .. 00:50, across the cutover
            write(SensorSeries, ledger, sensor, at(minutes / 60), 100 + n)
    # a process a phase behind writes ahead of the clock into the new count's buckets
    strays = [s for s in SENSORS if shard_moves(s)][:3]
    for sensor in strays:
        lagging(sensor_id=sensor, timestamp=at(2.5), value=7).save()
    hidden = {(s, at(2.5)): 7 for s in strays}
    check_reads(SensorSeries, ledger, low, high, hidden)
    # the new count's buckets hold 32 partitions' worth of keys
    keys = {SensorSeries._series_layout.partition_key(s, at(1), None) for s in SENSORS}
    assert keys <= {f"{n}#2023-11-14T23" for n in range(16)}
    stored = {r.pk for r in SensorSeries.scan() if r.timestamp >= at(1)}
    assert any(int(k.split("#")[0]) >= 16 for k in stored)
    assert not any(k.endswith("T22") and int(k.split("#")[0]) >= 16 for k in stored)
    resumed = SensorSeries.query_series(SENSORS[0], low, high, last_evaluated_key=cursor)
    assert first + [(r.timestamp, r.value) for r in resumed] == expected(
        ledger, SENSORS[0], low, high
    )
    # code declaring the new count follows the same change
    renewed = series_redeployed(32, {"2023-11-14T23": 16})
    follow(renewed, cache_seconds=0, clock=clock)
    check_reads(renewed, ledger, low, high, hidden)
    with pytest.raises(MigrationConflictError, match="wait 60s more"):
        operator.advance()
    clock.advance(60)
    assert operator.advance().phase == Phase.CLEANUP
    crashes = iter([True])

    def crash_once(point: str) -> None:
        if point == "copied" and next(crashes, False):
            raise RuntimeError("killed between the copy and the delete")

    with pytest.raises(RuntimeError, match="killed"):
        operator.run_job(page_size=5, fault=crash_once)
    # killed between its copy and its delete: range reads see the copy once; only a scan
    # meets both rows until the resumed cleanup deletes the old one (documented)
    copied = {k: v for k, v in hidden.items() if SensorSeries.count_series(k[0], k[1], k[1])}
    assert len(copied) == 1
    rows = [(r.sensor_id, r.timestamp) for r in SensorSeries.scan()]
    assert len(rows) == len(ledger) + len(hidden) + 1
    clock.advance(60)
    with pytest.raises(MigrationConflictError, match="not finished"):
        operator.advance()
    done = operator.run_job(page_size=5)
    # each stray once: the crashed move is finished, its copy kept (a put where one is)
    assert sum(p.changed for p in done) == len(strays)
    ledger.update(hidden)
    check_reads(SensorSeries, ledger, low, high)
    check_reads(renewed, ledger, low, high)
    assert operator.advance().phase == Phase.DONE
    # --finish refuses the code that still declares 16 shards, naming the declaration
    with pytest.raises(MigrationConflictError, match=r"declares HashShards\(32, \.\.\.\)"):
        operator.finish()
    assert operator.status() is not None
    Reshard(renewed, clock=clock).finish()
    assert operator.status() is None
    unfollow(renewed)
    check_reads(renewed, ledger, low, high)  # its declaration and the table's record agree
    # code declaring the new count without counts_before reads the earlier buckets with
    # the counts the table recorded at --finish; code still declaring 16 is refused
    bare = series_redeployed(32)
    check_reads(bare, ledger, low, high)
    with pytest.raises(
        ShardConfigurationError,
        match=r"holds HashShards\(32, .*; declare HashShards\(32, .*may be left out",
    ):
        SensorSeries.get_reading(SENSORS[0], at(0.5))
    with pytest.raises(ShardConfigurationError, match="not the table's"):
        series_redeployed(32, {"2023-11-14T22": 16}).get_reading(SENSORS[0], at(0.5))


def test_an_update_of_a_reading_loaded_from_its_old_partition_is_refused(
    clock: SimulatedClock,
) -> None:
    """A reading a lagging process wrote past the cutover with the old count: update and
    delete would act on the old row the cleanup moves; a whole save goes to the new one."""
    follow(SensorSeries, cache_seconds=0, clock=clock)
    lagging = series_redeployed(16)
    behind(lagging, clock)
    operator = Reshard(SensorSeries, clock=clock)
    operator.start(32, settle_seconds=0)
    operator.advance()
    sensor = next(s for s in SENSORS if shard_moves(s))
    lagging(sensor_id=sensor, timestamp=at(3), value=1).save()
    stray = next(iter(SensorSeries.scan()))
    with pytest.raises(ShardKeyError, match="save\\(\\) it whole"):
        stray.update(actions=[SensorSeries.value.set(2)])
    with pytest.raises(ShardKeyError, match="save\\(\\) it whole"):
        stray.delete()
    stray.value = 3
    stray.save()
    assert SensorSeries.get_reading(sensor, at(3)).value == 3
    operator.advance()
    assert sum(p.changed for p in operator.run_job()) == 1  # the old row, deleted
    assert [(r.sensor_id, r.value) for r in SensorSeries.scan()] == [(sensor, 3)]


def test_abort_in_prepare_removes_the_state_and_is_refused_once_the_bucket_is_near(
    clock: SimulatedClock,
) -> None:
    """In prepare the state is removed. In read_new an abort is refused once the first
    bucket with the new count begins within a settle time (plus the clock margin): its
    readings are written with the new count as they happen; and in cleanup."""
    operator = Reshard(SensorSeries, clock=clock)
    operator.start(32, settle_seconds=60)
    assert operator.abort().phase == Phase.PREPARE
    assert operator.status() is None
    operator.start(32, settle_seconds=60)
    clock.advance(60)
    assert operator.advance().cutover == "2023-11-14T23"  # at 22:14:20
    clock.advance(44 * 60)  # 22:58:20: 23:00 begins within 60 s + the 60 s margin
    state = operator.status()
    with pytest.raises(MigrationConflictError, match="begins within a settle time"):
        operator.abort()
    assert operator.status() == state
    clock.advance(60)
    operator.advance()  # cleanup
    with pytest.raises(MigrationConflictError, match="phase cleanup"):
        operator.abort()


def test_an_aborted_count_change_returns_its_buckets_to_the_old_count(
    clock: SimulatedClock, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Aborted in read_new before its first bucket begins: every process writes and reads
    the old count again at once; readings a follower wrote ahead of the clock with the
    new count are found once the return's cleanup moved them (a scan sees them all
    along); --finish wants the code from before the change."""
    ledger: dict[Key, int] = {}
    for n, sensor in enumerate(SENSORS):
        for minutes in (-30, 5):
            write(SensorSeries, ledger, sensor, at(minutes / 60), n)
    follow(SensorSeries, cache_seconds=0, clock=clock)
    renewed = series_redeployed(32, {"2023-11-14T23": 16})  # the aborted change's code
    follow(renewed, cache_seconds=0, clock=clock)
    operator = Reshard(SensorSeries, clock=clock)
    operator.start(32, settle_seconds=60)
    clock.advance(60)
    assert operator.advance().cutover == "2023-11-14T23"
    ahead = [s for s in SENSORS if shard_moves(s)][:4]
    for sensor in ahead:  # dated ahead of the clock, written with 32 shards
        write(SensorSeries, ledger, sensor, at(1.5), 7)
    low, high = at(-2), at(3)
    check_reads(SensorSeries, ledger, low, high)
    page = SensorSeries.query_series(ahead[0], low, high, limit=1)
    first = [(r.timestamp, r.value) for r in page]
    cursor = page.last_evaluated_key
    monkeypatch.setattr("shardmodel.migration.reshard.SystemClock", lambda: clock)
    assert main(["reshard", "tests.migration_models:SensorSeries", "--abort"]) == 0
    assert "buckets return to 16 shards in every process" in capsys.readouterr().out
    state = operator.status()
    assert state is not None and state.returning and state.phase == Phase.READ_NEW
    assert (state.old_count, state.new_count, state.cutover) == (32, 16, "2023-11-14T23")
    hidden = {(s, at(1.5)): 7 for s in ahead}
    shown = {k: v for k, v in ledger.items() if k not in hidden}
    for model in (SensorSeries, renewed):  # both declarations follow the return
        check_reads(model, shown, low, high, hidden)
    for n, sensor in enumerate(SENSORS):  # written now with 16 shards, past the cutover too
        write(renewed, shown, sensor, at(0.5), 200 + n)
        write(SensorSeries, shown, sensor, at(2), 300 + n)
    keys = {r.pk for r in SensorSeries.scan() if r.timestamp == at(2)}
    assert all(int(k.split("#")[0]) < 16 for k in keys)
    with pytest.raises(ShardConfigurationError, match="return to 16"):
        follow(series_redeployed(24), cache_seconds=0, clock=clock).refresh()
    with pytest.raises(MigrationConflictError, match="takes the items back"):
        operator.abort()
    clock.advance(60)
    assert operator.advance().phase == Phase.CLEANUP
    assert sum(p.changed for p in operator.run_job(page_size=5)) == len(ahead)
    ledger = {**shown, **hidden}
    for model in (SensorSeries, renewed):
        check_reads(model, ledger, low, high)
    rest = SensorSeries.query_series(ahead[0], low, high, last_evaluated_key=cursor)
    assert first + [(r.timestamp, r.value) for r in rest] == expected(ledger, ahead[0], low, high)
    clock.advance(60)
    assert operator.advance().phase == Phase.DONE
    with pytest.raises(MigrationConflictError, match="as before the change"):
        Reshard(renewed, clock=clock).finish()
    operator.finish()
    unfollow(SensorSeries)
    check_reads(SensorSeries, ledger, low, high)  # from its declaration alone
    assert all(int(r.pk.split("#")[0]) < 16 for r in SensorSeries.scan())


def test_the_declaration_must_match_the_change(clock: SimulatedClock) -> None:
    operator = Reshard(SensorSeries, clock=clock)
    operator.start(32, settle_seconds=0)
    early = series_redeployed(32, {"2023-11-14T23": 16})
    with pytest.raises(ShardConfigurationError, match="declare 16 until"):
        follow(early, cache_seconds=0, clock=clock).refresh()
    operator.advance()
    # the new count without counts_before: the change (then the table) holds the cutover
    undeclared = series_redeployed(32)
    assert follow(undeclared, cache_seconds=0, clock=clock).refresh() is not None
    wrong = series_redeployed(32, {"2023-11-14T23": 8})
    with pytest.raises(ShardConfigurationError, match=r"if given, \{'2023-11-14T23': 16\}"):
        follow(wrong, cache_seconds=0, clock=clock).refresh()
    other = series_redeployed(24)
    with pytest.raises(ShardConfigurationError, match="declare HashShards\\(16"):
        follow(other, cache_seconds=0, clock=clock).refresh()


def test_a_series_change_is_a_count_only_and_validated_before_anything_is_written(
    clock: SimulatedClock,
) -> None:
    operator = Reshard(SensorSeries, clock=clock)
    with pytest.raises(ShardConfigurationError, match="give --to N"):
        operator.start(HashShards(32, on="sensor_id"), settle_seconds=0)
    for bad in (0, 16, "32", 10**9):
        with pytest.raises(ShardConfigurationError):
            operator.start(bad, settle_seconds=0)
    with pytest.raises(ShardConfigurationError, match="settle"):
        operator.start(32, settle_seconds=float("nan"))
    assert not operator.store.items().exists()
    plan = operator.plan(32, settle_seconds=60)
    assert "16 -> 32 shards from a bucket that has not begun yet" in plan
    assert "counts_before" in plan


def test_the_command_line_runs_a_series_change(
    clock: SimulatedClock, capsys: pytest.CaptureFixture[str]
) -> None:
    model = "tests.migration_models:SensorSeries"
    assert main(["reshard", model, "--to", "32", "--dry-run"]) == 0
    assert "read_new" in capsys.readouterr().out
    assert main(["reshard", model, "--to", "32", "--settle", "0", "--step"]) == 0
    assert "16 -> 32 shards from bucket (bucket not chosen yet)" in capsys.readouterr().out
    assert main(["reshard", model, "--step"]) == 0
    assert "from bucket 20" in capsys.readouterr().out
    assert main(["reshard", model, "--step"]) == 0  # cleanup
    assert main(["reshard", model, "--step"]) == 0  # its job
    assert main(["reshard", model, "--step"]) == 0  # done
    assert main(["reshard", model, "--step"]) == 0
    out = capsys.readouterr().out
    assert "phase done" in out
    assert "deploy the code that declares HashShards(32, ...) with counts_before={'20" in out
    assert main(["reshard", model, "--finish"]) == 1
    assert "counts_before" in capsys.readouterr().err


def series_model(strategy: Any, counts_before: Any = None) -> Any:
    """A time-series model class of this partition key strategy (no table behind it)."""
    return type(
        "Declared",
        (TimeSeriesModel,),
        {
            "Meta": type("Meta", (), {"table_name": "t", "region": "us-east-1"}),
            "__module__": __name__,
            "pk": BucketKeyAttribute(strategy=strategy, counts_before=counts_before),
            "sk": SeriesKeyAttribute(entity="sensor_id", time="timestamp"),
            "sensor_id": UnicodeAttribute(),
            "timestamp": SeriesTimeAttribute(),
        },
    )


def test_counts_before_is_checked_when_the_class_is_defined() -> None:
    hourly = [HashShards(8, on="sensor_id"), TimeBuckets("timestamp", "hour")]
    declared = series_model(hourly, {"2026-11-25T04": 4, "2026-01-01T00": 2})
    assert declared._series_layout.schedule == CountSchedule(
        (("2026-01-01T00", 2), ("2026-11-25T04", 4)), 8
    )
    with pytest.raises(ShardConfigurationError, match="'2026-11-25' is not a bucket label"):
        series_model(hourly, {"2026-11-25": 4})
    with pytest.raises(ShardConfigurationError, match="is 0; give an int from 1"):
        series_model(hourly, {"2026-11-25T04": 0})
    with pytest.raises(ShardConfigurationError, match="is True; give an int"):
        series_model(hourly, {"2026-11-25T04": True})
    with pytest.raises(ShardConfigurationError, match="give a dict"):
        series_model(hourly, [("2026-11-25T04", 4)])
    with pytest.raises(ShardConfigurationError, match="one HashShards and one TimeBuckets"):
        series_model([TimeBuckets("timestamp", "hour")], {"2026-11-25T04": 4})


def test_buckets_before_a_declared_change_keep_their_count(clock: SimulatedClock) -> None:
    """After --finish the declaration alone says each bucket's count: readings written
    at 16 shards before the change and at 32 after are each found in their partition."""
    ledger: dict[Key, int] = {}
    for sensor in SENSORS:
        write(SensorSeries, ledger, sensor, at(0.5), 1)
    renewed = series_redeployed(32, {"2023-11-14T23": 16})
    for sensor in SENSORS:
        write(renewed, ledger, sensor, at(1.5), 2)
    check_reads(renewed, ledger, at(0), at(2))
    shards = {int(r.pk.split("#")[0]) for r in renewed.scan() if r.timestamp == at(1.5)}
    assert max(shards) >= 16 > max(int(r.pk.split("#")[0]) for r in renewed.scan() if r.value == 1)


def test_a_schedule_names_each_buckets_count() -> None:
    schedule = CountSchedule((("2026-01-01T00", 4), ("2026-06-01T00", 8)), 16)
    assert [schedule.count(b) for b in ("2025-12-31T23", "2026-01-01T00", "2026-06-01T00")] == [
        4,
        8,
        16,
    ]
    assert first_bucket_after("%Y-%m-%dT%H", datetime(2026, 1, 1, 3, 0, tzinfo=UTC)) == (
        "2026-01-01T03"
    )
    assert first_bucket_after("%Y-%m-%dT%H", datetime(2026, 1, 1, 3, 0, 1, tzinfo=UTC)) == (
        "2026-01-01T04"
    )
    assert first_bucket_after("%Y-%m-%d", datetime(2026, 12, 31, 5, tzinfo=UTC)) == "2027-01-01"


def test_a_hot_sensors_sub_partitions_follow_the_change(clock: SimulatedClock) -> None:
    """A hot sensor's readings spread over sub-partitions of each bucket: across the
    cutover, and a stray in a sub-partition moves to the same sub-partition of its new
    bucket."""
    sensor = next(s for s in SENSORS if shard_moves(s))
    SensorSeries.Meta.hot_entities = {sensor: 4}  # type: ignore[attr-defined]
    try:
        lagging = series_redeployed(16)
        behind(lagging, clock)
        follow(SensorSeries, cache_seconds=0, clock=clock)
        operator = Reshard(SensorSeries, clock=clock)
        operator.start(32, settle_seconds=0)
        ledger: dict[Key, int] = {}
        for n in range(12):
            write(SensorSeries, ledger, sensor, at(0.5) + timedelta(seconds=n), n)
        operator.advance()  # read_new: 23:00 on
        for n in range(12):
            write(SensorSeries, ledger, sensor, at(1.5) + timedelta(seconds=n), 100 + n)
        hidden: dict[Key, int] = {}
        for n in range(12):
            write(lagging, hidden, sensor, at(2.5) + timedelta(seconds=n), 200 + n)
        low, high = at(0), at(3)
        got = [r.value for r in SensorSeries.query_series(sensor, low, high)]
        assert got == [v for _, v in expected(ledger, sensor, low, high)]
        operator.advance()
        assert sum(p.changed for p in operator.run_job()) == 12
        ledger.update(hidden)
        got = [r.value for r in SensorSeries.query_series(sensor, low, high)]
        assert got == [v for _, v in expected(ledger, sensor, low, high)]
        keys = {r.pk for r in SensorSeries.scan() if r.timestamp >= at(1)}
        assert len({k.split("#")[0] for k in keys}) == 1  # one new shard, its sub-partitions
        assert any(k.count("#") == 2 for k in keys)
    finally:
        SensorSeries.Meta.hot_entities = None  # type: ignore[attr-defined]


def test_a_missing_table_leaves_no_state(clock: SimulatedClock) -> None:
    misspelt = series_redeployed(16)
    misspelt.Meta.table_name = "reshard-sensor-serie"
    operator = Reshard(misspelt, clock=clock)
    with pytest.raises(ShardConfigurationError, match="does not exist"):
        operator.start(32, settle_seconds=0)
    assert not operator.store.items().exists()


def test_the_async_twins_follow_a_series_change(clock: SimulatedClock) -> None:
    """asave, aquery_series, acount_series and aget_reading see the same counts as the
    sync calls: the old count before the cutover bucket, the new one from it."""
    follow(SensorSeries, cache_seconds=0, clock=clock)
    operator = Reshard(SensorSeries, clock=clock)
    operator.start(32, settle_seconds=0)
    operator.advance()  # read_new: the new count from 23:00
    sensors = [s for s in SENSORS if shard_moves(s)][:4]

    async def run() -> list[Any]:
        for n, sensor in enumerate(sensors):
            for hours in (0.5, 1.5):
                await SensorSeries(sensor_id=sensor, timestamp=at(hours), value=n).asave()
        found = []
        for sensor in sensors:
            listed = [r.value async for r in SensorSeries.aquery_series(sensor, at(0), at(2))]
            counted = await SensorSeries.acount_series(sensor, at(0), at(2))
            late = await SensorSeries.aget_reading(sensor, at(1.5), consistent_read=True)
            found.append((listed, counted, late.value))
        return found

    found = asyncio.run(run())
    assert found == [([n, n], 2, n) for n in range(len(sensors))]
    shards = {r.timestamp: int(r.pk.split("#")[0]) for r in SensorSeries.scan()}
    assert {s for t, s in shards.items() if t == at(0.5)} <= set(range(16))
    assert any(s >= 16 for t, s in shards.items() if t == at(1.5))
