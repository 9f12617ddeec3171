"""DynamicShards on moto: settings, the metadata table, growth rules, shrink and compaction."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timezone

import boto3
import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from shardmodel import (
    Backoff,
    DynamicShards,
    RandomShards,
    ShardChange,
    ShardConfigurationError,
    ShardedKeyAttribute,
    ShardedModel,
    ShardKeyError,
    TimeBuckets,
    UnsupportedOperationError,
)
from shardmodel.engine import sharding_of
from shardmodel.testing import (
    CapacityLimits,
    CapacitySimulator,
    Faults,
    SimulatedClock,
)
from tests.models import DYNAMIC_CHANGES, DynamicEvent, DynamicViews
from tests.support import raw_items, run_threads

UNLIMITED = CapacityLimits(partition_wcu=1e9, partition_rcu=1e9)


def _serialized(*models: type[ShardedModel], **options: object) -> CapacitySimulator:
    """A simulator on the models and their metadata tables: one request at a time.

    DynamoDB applies each request atomically; moto called from many threads does not.
    The simulator keeps the models' own clock (their cooldowns and caches keep time on it).
    """
    first = sharding_of(models[0]).directory
    assert first is not None
    options.setdefault("clock", first.settings.clock)
    simulator = CapacitySimulator(**options)  # type: ignore[arg-type]
    for model in models:
        directory = sharding_of(model).directory
        assert directory is not None
        simulator.attach(model, directory.table())
    return simulator


# -- settings and declarations -----------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "names"),
    [
        ({"cooldown": -1}, "cooldown"),
        ({"jitter": "1"}, "jitter"),
        ({"growth_factor": 0.5}, "growth_factor"),
        ({"growth_factor": 1, "growth_step": 0}, "growth_step"),
        ({"growth_step": 1.5}, "growth_step"),
        ({"max_shards": 0}, "max_shards"),
        ({"max_shards": 5000}, "max_shards"),
        ({"table_name": ""}, "table_name"),
        ({"reader_cache_seconds": -2}, "reader_cache_seconds"),
    ],
)
def test_bad_settings_name_the_setting(options: dict[str, object], names: str) -> None:
    with pytest.raises(ShardConfigurationError, match=names):
        DynamicShards(**options)  # type: ignore[arg-type]


def test_growth_multiplies_and_steps_up_to_the_maximum() -> None:
    assert [DynamicShards().grown(n) for n in (1, 2, 3, 8)] == [2, 4, 6, 16]
    assert DynamicShards(growth_factor=1, growth_step=3).grown(4) == 7
    assert DynamicShards(max_shards=10).grown(8) == 10


def test_dynamic_index_keys_and_doubled_strategies_are_refused() -> None:
    with pytest.raises(ShardConfigurationError, match="table's partition key only"):

        class ByOwner(GlobalSecondaryIndex["Bad"]):
            class Meta:
                index_name = "by-owner"
                projection = AllProjection()

            owner = ShardedKeyAttribute(hash_key=True, strategy=DynamicShards())

        class Bad(ShardedModel):
            class Meta:
                table_name = "bad"

            key = UnicodeAttribute(hash_key=True)
            owner = ShardedKeyAttribute(strategy=DynamicShards())
            by_owner = ByOwner()

    with pytest.raises(ShardConfigurationError, match="one DynamicShards per key"):

        class Twice(ShardedModel):
            class Meta:
                table_name = "twice"

            key = ShardedKeyAttribute(hash_key=True, strategy=[DynamicShards(), DynamicShards()])


def test_a_dynamic_strategy_outside_a_model_says_how_to_use_it() -> None:
    from shardmodel.keyspace.strategies import KeyValues

    with pytest.raises(ShardConfigurationError, match="read through its model"):
        DynamicShards().candidates(KeyValues("k", {}, {}))


def test_fixed_count_models_have_no_shrink() -> None:
    class Fixed(ShardedModel):
        class Meta:
            table_name = "fixed"

        key = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(4))

    with pytest.raises(UnsupportedOperationError, match="DynamicShards"):
        Fixed.shrink_shards("k", 2)


# -- the metadata table ------------------------------------------------------------------


@pytest.mark.usefixtures("tables")
def test_create_table_makes_the_metadata_table_with_the_main_key() -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    table = client.describe_table(TableName="dynamic-events-shards")["Table"]
    assert table["KeySchema"] == [{"AttributeName": "user_id", "KeyType": "HASH"}]
    assert table["AttributeDefinitions"] == [{"AttributeName": "user_id", "AttributeType": "S"}]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    DynamicEvent("u", 1).save()
    (item,) = client.scan(TableName="dynamic-events-shards")["Items"]
    assert set(item) == {"user_id", "number_of_shards", "last_updated", "shard_history"}
    assert item["number_of_shards"] == {"N": "1"}
    assert list(item["shard_history"]) == ["SS"]
    assert item["shard_history"]["SS"] == [f"{item['last_updated']['N']}:1"]
    DynamicEvent.delete_table()
    assert "dynamic-events-shards" not in client.list_tables()["TableNames"]
    DynamicEvent.create_table(wait=True, billing_mode="PAY_PER_REQUEST")


@pytest.mark.usefixtures("tables")
def test_a_bad_history_entry_names_the_fix() -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    client.put_item(
        TableName="dynamic-events-shards",
        Item={
            "user_id": {"S": "bad"},
            "number_of_shards": {"N": "2"},
            "last_updated": {"N": "5"},
            "shard_history": {"SS": ["5:2", "yesterday"]},
        },
    )
    with pytest.raises(ShardKeyError, match="'yesterday' is not '<epoch>:<count>'"):
        list(DynamicEvent.query("bad"))


# -- growth rules ------------------------------------------------------------------------

CLOCK = SimulatedClock(start=1_800_000_000)
SEEN: list[ShardChange] = []


class Throttled(ShardedModel):
    """A dynamic key on the simulated clock, with a cooldown and a low maximum."""

    class Meta:
        table_name = "dynamic-throttled"
        region = "us-east-1"
        shard_backoff = Backoff(sleep=CLOCK.sleep, attempts=20, cap=1.0)

    key = ShardedKeyAttribute(
        hash_key=True,
        strategy=DynamicShards(
            cooldown=10, jitter=0, max_shards=4, clock=CLOCK, on_change=SEEN.append
        ),
    )
    seq = NumberAttribute(range_key=True)


class Provisioned(ShardedModel):
    """Like Throttled, on a provisioned table (the CloudWatch fallback compares with it)."""

    class Meta:
        table_name = "dynamic-provisioned"
        region = "us-east-1"
        read_capacity_units = 100
        write_capacity_units = 100
        shard_backoff = Backoff(sleep=CLOCK.sleep, attempts=20, cap=1.0)

    key = ShardedKeyAttribute(
        hash_key=True,
        strategy=DynamicShards(cooldown=0, jitter=0, clock=CLOCK, on_change=SEEN.append),
    )
    seq = NumberAttribute(range_key=True)


@pytest.fixture
def throttled(dynamodb_tables: Callable[..., None]) -> Iterator[None]:
    dynamodb_tables(Throttled, Provisioned)
    SEEN.clear()
    for model in (Throttled, Provisioned):
        assert sharding_of(model).directory is not None
        sharding_of(model).directory.clear_cache()
        sharding_of(model).cloudwatch = None
    yield


def _burst(model: type[ShardedModel], key: str, count: int, first: int = 0) -> None:
    """``count`` writes at one simulated instant (the clock moves only by back-off)."""
    for seq in range(first, first + count):
        model(key, seq).save()


@pytest.mark.usefixtures("throttled")
def test_a_partition_throttle_grows_once_per_cooldown_up_to_the_maximum() -> None:
    with _serialized(Throttled, clock=CLOCK, limits=CapacityLimits(partition_wcu=10)):
        _burst(Throttled, "k", 25)
        assert [(c.old_count, c.new_count) for c in SEEN] == [(1, 2)]  # then cooling
        CLOCK.advance(11)
        _burst(Throttled, "k", 25, first=25)
        CLOCK.advance(11)
        _burst(Throttled, "k", 60, first=50)
    assert [(c.kind, c.old_count, c.new_count) for c in SEEN] == [
        ("grow", 1, 2),
        ("grow", 2, 4),
    ]
    metadata = Throttled.shard_metadata("k")
    assert metadata is not None and metadata.latest == 4
    assert len(metadata.history) == 3
    assert sorted(int(i["seq"]["N"]) for i in raw_items(Throttled)) == list(range(110))


@pytest.mark.usefixtures("throttled")
def test_a_table_throttle_waits_instead_of_growing() -> None:
    limits = CapacityLimits(partition_wcu=1e9, table_wcu=10)
    with _serialized(Throttled, clock=CLOCK, limits=limits) as simulator:
        _burst(Throttled, "k", 30)
    assert simulator.throttles["TableWriteProvisionedThroughputExceeded"] > 0
    assert SEEN == []
    assert len(raw_items(Throttled)) == 30


def _consumed(table: str, units_per_second: float) -> None:
    boto3.client("cloudwatch", region_name="us-east-1").put_metric_data(
        Namespace="AWS/DynamoDB",
        MetricData=[
            {
                "MetricName": "ConsumedWriteCapacityUnits",
                "Dimensions": [{"Name": "TableName", "Value": table}],
                "Timestamp": datetime.now(timezone.utc),
                "Value": units_per_second * 60,
            }
        ],
    )


@pytest.mark.usefixtures("throttled")
@pytest.mark.parametrize(("consumed", "grows"), [(95.0, False), (5.0, True)])
def test_without_throttling_reasons_cloudwatch_decides(consumed: float, grows: bool) -> None:
    """No ThrottlingReasons: a table near its provisioned rate is full; else a partition is hot."""
    _consumed("dynamic-provisioned", consumed)
    limits = CapacityLimits(partition_wcu=10)
    with _serialized(Provisioned, clock=CLOCK, limits=limits, reasons=False) as simulator:
        _burst(Provisioned, "k", 15)
    assert simulator.throttles  # throttled, without reasons on the wire
    assert bool(SEEN) is grows
    assert len(raw_items(Provisioned)) == 15


@pytest.mark.usefixtures("throttled")
def test_an_on_demand_table_without_reasons_counts_as_a_hot_partition() -> None:
    with _serialized(
        Throttled, clock=CLOCK, limits=CapacityLimits(partition_wcu=10), reasons=False
    ):
        _burst(Throttled, "k", 15)
    assert [c.new_count for c in SEEN] == [2]


@pytest.mark.usefixtures("throttled")
def test_a_write_that_may_have_landed_is_resent_to_the_same_shard() -> None:
    """Lost responses (applied, answered with a timeout) then throttles: stored once each."""
    faults = Faults(lost_response=0.3, operations=["PutItem"])
    limits = CapacityLimits(partition_wcu=5)
    with _serialized(Throttled, clock=CLOCK, limits=limits, faults=faults, seed=3) as simulator:
        _burst(Throttled, "k", 40)
    assert simulator.injected["lost_response"] > 5
    assert simulator.throttles
    items = raw_items(Throttled)
    assert sorted(int(i["seq"]["N"]) for i in items) == list(range(40))


@pytest.mark.usefixtures("throttled")
def test_racing_writers_grow_a_key_once() -> None:
    """16 writers see the same count throttle at once: one growth, one history entry."""
    directory = sharding_of(Throttled).directory
    assert directory is not None
    with _serialized(Throttled, clock=CLOCK, limits=UNLIMITED):
        seen = directory.for_write("race")
        CLOCK.advance(1)
        errors = run_threads(16, 1, lambda w, n: directory.grow("race", seen) and None)
    assert errors == []
    assert [(c.old_count, c.new_count) for c in SEEN] == [(1, 2)]
    metadata = Throttled.shard_metadata("race")
    assert metadata is not None and len(metadata.history) == 2


@pytest.mark.usefixtures("throttled")
def test_racing_creators_agree_on_one_item() -> None:
    directory = sharding_of(Throttled).directory
    assert directory is not None
    made: list[object] = []
    with _serialized(Throttled, clock=CLOCK, limits=UNLIMITED):
        errors = run_threads(8, 1, lambda w, n: made.append(directory.create("new")))
    assert errors == []
    assert len({repr(m) for m in made}) == 1


def test_changes_are_logged(caplog: pytest.LogCaptureFixture, tables: None) -> None:
    directory = sharding_of(DynamicEvent).directory
    assert directory is not None
    DynamicEvent("logged", 1).save()
    with caplog.at_level(logging.INFO, logger="shardmodel.dynamic"):
        directory.grow("logged", directory.lookup("logged"))  # type: ignore[arg-type]
    assert "dynamic-events grow key 'logged': 1 -> 2 shards" in caplog.text


# -- reads, counters ---------------------------------------------------------------------


@pytest.mark.usefixtures("tables")
def test_reads_cover_every_shard_in_the_history() -> None:
    directory = sharding_of(DynamicEvent).directory
    assert directory is not None
    for seq in range(40):
        if seq in (10, 20):
            directory.grow("r", directory.lookup("r"))  # type: ignore[arg-type]
        DynamicEvent("r", seq, event_type="e").save()
    keys = {e.get_physical_key() for e in DynamicEvent.query("r")}
    assert len(keys) > 1 and keys <= {f"r#{n}" for n in range(4)}
    assert [e.timestamp for e in DynamicEvent.query("r")] == list(range(40))
    assert DynamicEvent.count("r") == 40
    assert DynamicEvent.get("r", 39).event_type == "e"
    found = DynamicEvent.batch_get([("r", 0), ("r", 39), ("r", 99)])
    assert sorted(e.timestamp for e in found) == [0, 39]


@pytest.mark.usefixtures("tables")
def test_a_key_never_written_reads_one_shard() -> None:
    query = DynamicEvent.query("nobody")
    assert list(query) == []
    assert query.requests == 1  # type: ignore[attr-defined]
    assert DynamicEvent.shard_metadata("nobody") is None


@pytest.mark.usefixtures("tables")
def test_counters_on_a_dynamic_key_sum_every_shard() -> None:
    directory = sharding_of(DynamicViews).directory
    assert directory is not None
    for n in range(30):
        if n in (5, 15):
            directory.grow("p", directory.lookup("p"))  # type: ignore[arg-type]
        DynamicViews.add("p", views=1)
    assert DynamicViews.get("p").views == 30
    assert len(raw_items(DynamicViews)) > 1
    with pytest.raises(UnsupportedOperationError, match="token"):
        DynamicViews.add("p", views=1, token="once")
    with pytest.raises(UnsupportedOperationError, match="counter"):
        DynamicViews.compact_shards("p")


class FreshReads(ShardedModel):
    """Readers that cache the count for 30 simulated seconds."""

    class Meta:
        table_name = "dynamic-cached-reads"
        region = "us-east-1"

    key = ShardedKeyAttribute(
        hash_key=True,
        strategy=DynamicShards(cooldown=0, jitter=0, reader_cache_seconds=30, clock=CLOCK),
    )
    seq = NumberAttribute(range_key=True)


def test_a_reader_cache_is_stale_for_at_most_its_seconds(
    dynamodb_tables: Callable[..., None],
) -> None:
    dynamodb_tables(FreshReads)
    directory = sharding_of(FreshReads).directory
    assert directory is not None
    FreshReads("k", 0).save()
    assert FreshReads.count("k") == 1  # caches one shard
    other = directory.table().get("k", consistent_read=True)
    other.update(actions=[directory.table().number_of_shards.set(8)])  # another process grew it
    for seq in range(1, 40):
        item = FreshReads("k", seq)
        item._physical_key = f"k#{seq % 8}"  # written by that process to all 8 shards
        item.save()
    assert FreshReads.count("k") < 40  # stale: still reading one shard
    CLOCK.advance(31)
    assert FreshReads.count("k") == 40


# -- shrink and compaction -----------------------------------------------------------------


def _fill(key: str, count: int, growths: tuple[int, ...] = (0, 0)) -> None:
    directory = sharding_of(DynamicEvent).directory
    assert directory is not None
    DynamicEvent(key, 0).save()
    for _ in growths:
        directory.grow(key, directory.lookup(key))  # type: ignore[arg-type]
    with DynamicEvent.batch_write() as batch:
        for seq in range(1, count):
            batch.save(DynamicEvent(key, seq, event_type=f"v{seq}"))


@pytest.mark.usefixtures("tables")
def test_shrink_and_compaction_never_hide_an_item_from_concurrent_readers() -> None:
    """Readers query, count and get all through a shrink and a compaction: all 120, once."""
    _fill("c", 120)
    assert len({i["user_id"]["S"] for i in raw_items(DynamicEvent)}) == 4
    stop = threading.Event()
    problems: list[str] = []
    reads = [0]

    def read(worker: int, _: int) -> None:
        while not stop.is_set():
            seen = [e.timestamp for e in DynamicEvent.query("c", page_size=37)]
            if seen != list(range(120)):
                problems.append(f"query saw {len(seen)} items, {len(set(seen))} distinct")
            if DynamicEvent.count("c") < 120:
                problems.append("count fell below 120")
            if DynamicEvent.get("c", 60 + worker).timestamp != 60 + worker:
                problems.append("get missed")
            reads[0] += 1

    with _serialized(DynamicEvent, limits=UNLIMITED):
        readers = threading.Thread(target=lambda: run_threads(3, 1, read))
        readers.start()
        DynamicEvent.shrink_shards("c", 1)
        moved = DynamicEvent.compact_shards("c", grace=0.3)
        stop.set()
        readers.join()
    assert problems == []
    assert reads[0] >= 3
    assert moved > 0
    assert {i["user_id"]["S"] for i in raw_items(DynamicEvent)} == {"c#0"}
    metadata = DynamicEvent.shard_metadata("c")
    assert metadata is not None and metadata.readable == 1
    assert [e.event_type for e in DynamicEvent.query("c")][1:] == [f"v{n}" for n in range(1, 120)]
    assert [c.kind for c in DYNAMIC_CHANGES if c.logical_key == "c"][-2:] == ["shrink", "prune"]


@pytest.mark.usefixtures("tables")
def test_a_cursor_taken_before_a_compaction_resumes_without_repeats() -> None:
    _fill("cur", 120)
    first = DynamicEvent.query("cur", limit=50)
    head = [e.timestamp for e in first]
    cursor = first.last_evaluated_key  # type: ignore[attr-defined]
    DynamicEvent.shrink_shards("cur", 1)
    DynamicEvent.compact_shards("cur", grace=0)
    rest = [e.timestamp for e in DynamicEvent.query("cur", last_evaluated_key=cursor)]
    assert head + rest == list(range(120))


class Updating(ShardedModel):
    """A dynamic key whose compaction grace lets the test update an item in place.

    No reader cache, so its growth takes effect at once (the test runs on the system clock).
    """

    class Meta:
        table_name = "dynamic-updating"
        region = "us-east-1"

    key = ShardedKeyAttribute(
        hash_key=True, strategy=DynamicShards(cooldown=0, jitter=0, reader_cache_seconds=0)
    )
    seq = NumberAttribute(range_key=True)
    note = UnicodeAttribute(null=True)


def test_an_item_updated_during_compaction_keeps_the_update(
    dynamodb_tables: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    dynamodb_tables(Updating)
    directory = sharding_of(Updating).directory
    assert directory is not None
    Updating("u", 0).save()
    directory.grow("u", directory.lookup("u"))  # type: ignore[arg-type]
    for seq in range(1, 30):
        Updating("u", seq, note="old").save()
    retired = next(e for e in Updating.query("u") if e.get_physical_key() == "u#1")
    Updating.shrink_shards("u", 1)
    sleeps: list[float] = []

    def update_once(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 2:  # the first grace: copied, not yet deleted
            retired.update(actions=[Updating.note.set("new")])  # lands on the retired copy

    monkeypatch.setattr(directory.settings.clock, "sleep", update_once)
    Updating.compact_shards("u", grace=1.0)
    assert sleeps[1:] == [1.0, 1.0]  # a second round re-copied the updated item
    assert Updating.get("u", retired.seq).note == "new"
    assert {i["key"]["S"] for i in raw_items(Updating)} == {"u#0"}


class CachedWriters(ShardedModel):
    """Writers that keep a key's count for 5 simulated seconds."""

    class Meta:
        table_name = "dynamic-cached-writers"
        region = "us-east-1"

    key = ShardedKeyAttribute(
        hash_key=True,
        strategy=DynamicShards(cooldown=0, jitter=0, writer_cache_seconds=5, clock=CLOCK),
    )
    seq = NumberAttribute(range_key=True)


def test_compaction_waits_out_writers_with_a_count_from_before_the_shrink(
    dynamodb_tables: Callable[..., None],
) -> None:
    """A writer's cached count still names the retired shards for a while: moved too."""
    dynamodb_tables(CachedWriters)
    directory = sharding_of(CachedWriters).directory
    assert directory is not None
    CachedWriters("w", 0).save()
    for _ in range(2):  # each growth announced ahead: wait until it takes effect
        directory.grow("w", directory.lookup("w"))  # type: ignore[arg-type]
        CLOCK.advance(directory.settings.settle_seconds + 1)
    before = directory.lookup("w")
    assert before is not None and before.live_at(CLOCK.now()) == 4
    CachedWriters.shrink_shards("w", 1)
    directory._writer_cache["w"] = (CLOCK.now(), before)  # another process's stale cache
    for seq in range(1, 40):  # that writer still spreads over 4
        CachedWriters("w", seq).save()
    assert {e.get_physical_key() for e in CachedWriters.query("w")} > {"w#0"}
    started = CLOCK.now()
    CachedWriters.compact_shards("w", grace=0)
    assert CLOCK.now() - started >= 5  # waited until no cached count could be older
    assert {i["key"]["S"] for i in raw_items(CachedWriters)} == {"w#0"}
    assert [e.seq for e in CachedWriters.query("w")] == list(range(40))


def test_compaction_refuses_composed_keys(dynamodb_tables: Callable[..., None]) -> None:
    class Daily(ShardedModel):
        class Meta:
            table_name = "dynamic-daily"
            region = "us-east-1"

        key = ShardedKeyAttribute(
            hash_key=True, strategy=[TimeBuckets("ts"), DynamicShards(cooldown=0, jitter=0)]
        )
        ts = NumberAttribute(range_key=True)

    dynamodb_tables(Daily)
    Daily("d", 1_700_000_000).save()
    assert [e.ts for e in Daily.query("d", Daily.ts.between(1_699_990_000, 1_700_010_000))] == [
        1_700_000_000
    ]
    sharding_of(Daily).directory.grow("d", Daily.shard_metadata("d"))  # type: ignore[union-attr,arg-type]
    Daily.shrink_shards("d", 1)
    with pytest.raises(UnsupportedOperationError, match="only strategy"):
        Daily.compact_shards("d")


@pytest.mark.usefixtures("tables")
def test_shrink_checks_its_count() -> None:
    with pytest.raises(ShardKeyError, match="no metadata item"):
        DynamicEvent.shrink_shards("none", 1)
    DynamicEvent("s", 1).save()
    with pytest.raises(ShardKeyError, match="give a smaller count"):
        DynamicEvent.shrink_shards("s", 1)
    with pytest.raises(ShardKeyError, match="at least 1"):
        DynamicEvent.shrink_shards("s", 0)
    assert DynamicEvent.compact_shards("s") == 0


def test_pace_history_speeds_growths_that_follow_each_other() -> None:
    """A spike still rising: each growth close after others multiplies more, and the
    cooldown after it is shorter; a key that grew once long ago grows as with 'fixed'."""
    fixed = DynamicShards(cooldown=60)
    paced = DynamicShards(cooldown=60, pace="history")
    assert [fixed.grown(2, s) for s in (0, 1, 2, 3)] == [4, 4, 4, 4]
    assert [paced.grown(2, s) for s in (0, 1, 2, 3)] == [4, 8, 16, 16]  # at most cubed
    assert [paced.cooldown_after(s) for s in (0, 1, 2, 3)] == [60, 30, 15, 15]
    assert paced.grown(64, 2) == 100  # max_shards
    assert paced.streak([], 1000) == 0
    assert paced.streak([0.0], 60) == 1 and paced.streak([0.0], 121) == 0  # two cooldowns
    assert paced.streak([0.0, 60.0], 90) == 2
    assert paced.streak([0.0, 200.0], 230) == 1  # the earlier one is too far back
    with pytest.raises(ShardConfigurationError, match=r"pace='fast'.*'history'"):
        DynamicShards(pace="fast")
