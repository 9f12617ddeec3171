"""DynamicShards end to end on real servers (moto server and dynalite, both on loopback).

The metadata table's wire schema, hand-made metadata and shards, racing growers, a
shrink and compaction under concurrent readers, and counters on a dynamic key.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import DynamicShards, ShardedKeyAttribute, ShardedModel, UnsupportedOperationError
from shardmodel.dynamic.directory import ShardDirectory
from shardmodel.dynamic.metadata import HistoryEntry, ShardMetadata
from shardmodel.engine import sharding_of
from shardmodel.testing import bind_models, create_tables, drop_tables
from tests.integration.conftest import CREDENTIALS, unbind
from tests.models import DYNAMIC_CHANGES, DynamicEvent, DynamicViews
from tests.support import raw_items, run_threads
from tests.tier import STRESS

METADATA_TABLE = "dynamic-events-shards"


def _directory() -> ShardDirectory:
    directory = sharding_of(DynamicEvent).directory
    assert directory is not None
    return directory


def _client() -> Any:
    """The botocore client of the metadata model: the same endpoint, raw requests."""
    return _directory().table()._get_connection().connection.client


def _grow(key: str) -> ShardMetadata:
    """Grow a key now (cooldown and jitter are 0), creating its metadata if needed."""
    directory = _directory()
    seen = directory.lookup(key) or directory.create(key)
    grown = directory.grow(key, seen)
    assert grown.number_of_shards > seen.number_of_shards
    return grown


def _placement(key: str) -> dict[int, list[str]]:
    """Timestamp to the physical keys of the main-table items of ``key`` (a raw scan)."""
    placed: dict[int, list[str]] = {}
    for raw in raw_items(DynamicEvent):
        physical = raw["user_id"]["S"]
        if physical.rpartition("#")[0] == key:
            placed.setdefault(int(raw["timestamp"]["N"]), []).append(physical)
    return placed


def test_metadata_items_have_the_promised_wire_schema(backend: str) -> None:
    """The metadata item is {user_id S, number_of_shards N, last_updated N, shard_history SS}.

    Read raw from the server: the schema a hand-made table and other languages rely on.
    """
    before = int(time.time())
    DynamicEvent(user_id="schema", timestamp=1, event_type="e").save()
    _grow("schema")
    client = _client()
    item = client.get_item(
        TableName=METADATA_TABLE, Key={"user_id": {"S": "schema"}}, ConsistentRead=True
    )["Item"]
    types = {name: next(iter(value)) for name, value in item.items()}
    assert types == {
        "user_id": "S",
        "number_of_shards": "N",
        "last_updated": "N",
        "shard_history": "SS",
    }
    assert item["user_id"]["S"] == "schema"  # the logical key, unsuffixed
    assert item["number_of_shards"]["N"] == "2"
    updated = int(item["last_updated"]["N"])
    assert before - 5 <= updated <= int(time.time()) + 5  # epoch seconds, not millis
    history = sorted(HistoryEntry.parse(text) for text in item["shard_history"]["SS"])
    assert [entry.count for entry in history] == [1, 2]
    assert history[-1].epoch == updated
    assert all(str(entry) == f"{entry.epoch}:{entry.count}" for entry in history)
    table = client.describe_table(TableName=METADATA_TABLE)["Table"]
    assert table["KeySchema"] == [{"AttributeName": "user_id", "KeyType": "HASH"}]
    assert table["AttributeDefinitions"] == [{"AttributeName": "user_id", "AttributeType": "S"}]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert not table.get("GlobalSecondaryIndexes") and not table.get("LocalSecondaryIndexes")


def test_hand_made_metadata_and_shards_are_read_and_written(backend: str) -> None:
    """A metadata item and shard items written by hand (another tool) work unchanged."""
    client = _client()
    client.put_item(
        TableName=METADATA_TABLE,
        Item={
            "user_id": {"S": "k"},
            "number_of_shards": {"N": "3"},
            "last_updated": {"N": "200"},
            "shard_history": {"SS": ["100:1", "200:3"]},
        },
    )
    for ts in range(9):
        client.put_item(
            TableName="dynamic-events",
            Item={
                "user_id": {"S": f"k#{ts % 3}"},
                "timestamp": {"N": str(ts)},
                "event_type": {"S": f"hand{ts}"},
            },
        )
    metadata = DynamicEvent.shard_metadata("k")
    assert metadata == ShardMetadata("k", 3, 200, (HistoryEntry(100, 1), HistoryEntry(200, 3)))
    assert [(e.timestamp, e.event_type) for e in DynamicEvent.query("k")] == [
        (ts, f"hand{ts}") for ts in range(9)
    ]
    assert [e.timestamp for e in DynamicEvent.query("k", scan_index_forward=False)] == list(
        range(8, -1, -1)
    )
    assert DynamicEvent.count("k") == 9
    assert DynamicEvent.count("k", DynamicEvent.timestamp > 5) == 3
    for ts in range(9):
        found = DynamicEvent.get("k", ts)
        assert (found.event_type, found.get_physical_key()) == (f"hand{ts}", f"k#{ts % 3}")
    assert sorted(e.timestamp for e in DynamicEvent.batch_get([("k", 2), ("k", 7)])) == [2, 7]
    saved = [DynamicEvent(user_id="k", timestamp=100 + n, event_type="new") for n in range(30)]
    for event in saved:
        event.save()
    physical = {event.get_physical_key() for event in saved}
    assert physical <= {"k#0", "k#1", "k#2"} and len(physical) > 1  # 30 on one: p = 3**-29
    placed = _placement("k")
    assert sorted(placed) == [*range(9), *range(100, 130)]
    assert all(len(keys) == 1 for keys in placed.values())
    assert {keys[0] for keys in placed.values()} <= {"k#0", "k#1", "k#2"}
    assert DynamicEvent.count("k") == 39
    assert DynamicEvent.shard_metadata("k") == metadata  # writes read it, never rewrite it


def test_racing_growers_grow_a_key_exactly_once(backend: str) -> None:
    """16 threads create the key's item, then all grow from the same count: one growth.

    Creating again afterwards (a writer that missed the item) keeps the grown item.
    """
    if backend == "moto":
        pytest.skip(
            "moto server applies concurrent conditional updates non-atomically (two "
            "writers can both pass one condition); the race is proven on dynalite"
        )
    directory = _directory()
    DYNAMIC_CHANGES.clear()
    start = threading.Barrier(16, timeout=60)
    created: list[ShardMetadata] = []
    grown: list[ShardMetadata] = []
    seen: list[ShardMetadata] = []
    again: list[ShardMetadata] = []

    def work(worker: int, _: int) -> None:
        mine = directory.create("race")
        created.append(mine)
        if worker == 0:
            seen.append(directory.lookup("race"))  # type: ignore[arg-type]
        start.wait()  # every creator done, the initial count read: all grow at once
        grown.append(directory.grow("race", seen[0]))
        start.wait()  # every growth done: creating again must keep the grown item
        again.append(directory.create("race"))

    assert run_threads(16, 1, work) == []
    assert len(created) == 16 and all(c == created[0] for c in created)
    assert seen[0] == created[0]
    assert seen[0].number_of_shards == 1
    assert [(g.number_of_shards, len(g.history)) for g in grown] == [(2, 2)] * 16
    metadata = DynamicEvent.shard_metadata("race")
    assert metadata is not None
    assert again == [metadata] * 16
    assert (metadata.number_of_shards, len(metadata.history)) == (2, 2)
    changes = [c for c in DYNAMIC_CHANGES if c.logical_key == "race"]
    assert [(c.kind, c.old_count, c.new_count) for c in changes] == [("grow", 1, 2)]


def _fill(key: str, count: int, growths: tuple[int, ...]) -> None:
    """Save ``count`` items (timestamps 0..count-1), growing the key before each position."""
    for position in range(count):
        if position in growths:
            _grow(key)
        DynamicEvent(user_id=key, timestamp=position, event_type=f"v{position}").save()


def test_shrink_and_compaction_hide_nothing_from_concurrent_readers(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """200 items on 4 shards; shrink to 1 and compact while 4 threads read: all 200, once.

    Queries (all at once, in pages, both directions, stopped and resumed) and gets see
    every item exactly once throughout, and so does a count. Cursors taken before the
    shrink and inside the compaction's waits resume afterwards without a repeat or a gap.
    Afterwards every item sits on shard 0 and reads touch shard 0 only.
    """
    if backend == "moto" and not STRESS:
        pytest.skip("make stress runs it on moto's server too (22 s there): dynalite here")
    key = "e2e"
    total = 200
    _fill(key, total, growths=(40, 120))
    metadata = DynamicEvent.shard_metadata(key)
    assert metadata is not None and metadata.number_of_shards == 4
    before = _placement(key)
    assert sorted(before) == list(range(total))
    assert len({keys[0] for keys in before.values()}) > 1
    everything = list(range(total))
    stop = threading.Event()
    problems: list[str] = []
    reads = [0] * 4

    def read(worker: int, _: int) -> None:
        round_ = 0
        while True:
            round_ += 1
            forward = worker % 2 == 0
            seen = [
                e.timestamp
                for e in DynamicEvent.query(key, page_size=20 + worker, scan_index_forward=forward)
            ]
            if seen != (everything if forward else everything[::-1]):
                problems.append(f"query saw {len(seen)} items, {len(set(seen))} distinct")
            first = DynamicEvent.query(key, limit=70 + worker)
            head = [e.timestamp for e in first]
            cursor = first.last_evaluated_key  # type: ignore[attr-defined]
            rest = [e.timestamp for e in DynamicEvent.query(key, last_evaluated_key=cursor)]
            if head + rest != everything:
                problems.append(f"a resumed query saw {len(head + rest)} items")
            counted = DynamicEvent.count(key)
            if counted != total:
                problems.append(f"count {counted}, not {total}")
            ts = (worker * 53 + round_ * 17) % total
            if DynamicEvent.get(key, ts).event_type != f"v{ts}":
                problems.append(f"get of {ts} saw another item")
            reads[worker] += 1
            if stop.wait(0.2):  # pace the readers: the compaction shares the machine
                return

    cursors: list[tuple[bool, list[int], str]] = []

    def take_cursors() -> None:
        """Stop a query in each direction just after an item on a retired shard."""
        for forward in (True, False):
            order = everything if forward else everything[::-1]
            limit = next(
                n + 1 for n, ts in enumerate(order) if n >= 60 and before[ts] != [f"{key}#0"]
            )
            first = DynamicEvent.query(key, scan_index_forward=forward, limit=limit)
            head = [e.timestamp for e in first]
            assert head == order[:limit]
            cursors.append((forward, head, first.last_evaluated_key))  # type: ignore[attr-defined]

    take_cursors()
    clock = _directory().settings.clock
    real_sleep = clock.sleep

    def sleep(seconds: float) -> None:  # the compaction's waits: copies may exist twice
        take_cursors()
        real_sleep(seconds)

    monkeypatch.setattr(clock, "sleep", sleep)
    readers = threading.Thread(target=lambda: problems.extend(map(repr, run_threads(4, 1, read))))
    readers.start()
    try:
        shrunk = DynamicEvent.shrink_shards(key, 1)
        assert (shrunk.number_of_shards, shrunk.readable) == (1, 4)
        moved = DynamicEvent.compact_shards(key, grace=1.0)
    finally:
        stop.set()
        readers.join()
    assert problems == []
    assert min(reads) >= 1
    assert moved == sum(1 for keys in before.values() if keys[0] != f"{key}#0")
    after = _placement(key)
    assert sorted(after) == everything
    assert all(keys == [f"{key}#0"] for keys in after.values())
    metadata = DynamicEvent.shard_metadata(key)
    assert metadata is not None and (metadata.number_of_shards, metadata.readable) == (1, 1)
    query = DynamicEvent.query(key)
    assert [(e.timestamp, e.event_type) for e in query] == [(n, f"v{n}") for n in everything]
    assert query.shard_count == 1  # type: ignore[attr-defined]
    assert DynamicEvent.count(key) == total
    assert len(cursors) >= 4  # before the shrink and in at least one wait of the compaction
    for forward, head, cursor in cursors:
        rest = DynamicEvent.query(key, scan_index_forward=forward, last_evaluated_key=cursor)
        assert head + [e.timestamp for e in rest] == (everything if forward else everything[::-1])


def test_counters_on_a_dynamic_key_sum_every_shard(backend: str) -> None:
    """50 untokened adds with growths in between sum to 50; a token is refused."""
    directory = sharding_of(DynamicViews).directory
    assert directory is not None
    for n in range(50):
        if n in (10, 25, 40):
            seen = directory.lookup("page") or directory.create("page")
            directory.grow("page", seen)
        DynamicViews.add("page", views=1)
    metadata = DynamicViews.shard_metadata("page")
    assert metadata is not None and metadata.number_of_shards == 8
    assert DynamicViews.get("page").views == 50
    shards = {raw["page"]["S"] for raw in raw_items(DynamicViews)}
    assert len(shards) > 1 and shards <= {f"page#{n}" for n in range(8)}
    with pytest.raises(UnsupportedOperationError, match="token"):
        DynamicViews.add("page", views=1, token="t")
    assert DynamicViews.get("page").views == 50


# -- regressions: found by these tests, fixed in the library --


def test_count_during_a_compaction_counts_each_item_once(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """compact_shards promises that meanwhile reads see both copies and return one."""
    _fill("counted", 40, growths=(0, 0))
    DynamicEvent.shrink_shards("counted", 1)
    during: list[tuple[int, int]] = []

    def sleep(seconds: float) -> None:  # in the grace sleep: copied, not yet deleted
        during.append((len(list(DynamicEvent.query("counted"))), DynamicEvent.count("counted")))

    monkeypatch.setattr(_directory().settings.clock, "sleep", sleep)
    assert DynamicEvent.compact_shards("counted", grace=1.0) > 0
    assert during and all(returned == 40 for returned, _ in during)  # a query returns one
    assert [counted for _, counted in during] == [40] * len(during)  # not 40 + copies


class WriterProcess(ShardedModel):
    """One application process: DynamicEvent's tables, a writer cache of 60 s (and, as
    DynamicEvent, no reader cache: its growths take effect at once)."""

    class Meta:
        table_name = "dynamic-events"
        region = "us-east-1"

    user_id = ShardedKeyAttribute(
        hash_key=True,
        strategy=DynamicShards(
            cooldown=0, jitter=0, writer_cache_seconds=60, reader_cache_seconds=0
        ),
    )
    timestamp = NumberAttribute(range_key=True)
    event_type = UnicodeAttribute(null=True)


class OperatorProcess(ShardedModel):
    """Another process of the same application (same settings): it shrinks and compacts."""

    class Meta:
        table_name = "dynamic-events"
        region = "us-east-1"

    user_id = ShardedKeyAttribute(
        hash_key=True,
        strategy=DynamicShards(
            cooldown=0, jitter=0, writer_cache_seconds=60, reader_cache_seconds=0
        ),
    )
    timestamp = NumberAttribute(range_key=True)
    event_type = UnicodeAttribute(null=True)


def _bind(models: list[type[ShardedModel]], host: str | None, region: str) -> None:
    """Point extra models (not in ALL_MODELS) at an endpoint, as the backend fixture does."""
    bind_models(models, host=host, **{**CREDENTIALS, "region": region})


def test_a_compaction_moves_items_written_with_a_cached_pre_shrink_count(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes share a key; one shrinks and compacts while the other keeps writing.

    The writer's cached count (4) predates the shrink, so its new items land on retired
    shards while the compaction waits (for the writer caches, then its grace): they are
    moved too, never pruned out of sight.
    """
    processes: list[type[ShardedModel]] = [WriterProcess, OperatorProcess]
    _bind(processes, DynamicEvent.Meta.host, "us-east-1")
    writers, operator = sharding_of(WriterProcess).directory, sharding_of(OperatorProcess).directory
    assert writers is not None and operator is not None
    writers.clear_cache()
    operator.clear_cache()
    key = f"shared-{backend}"
    try:
        WriterProcess(user_id=key, timestamp=0).save()
        for _ in range(2):  # the writer process grew the key to 4 (and caches that count)
            writers.grow(key, writers.lookup(key))  # type: ignore[arg-type]
        for ts in range(1, 40):
            WriterProcess(user_id=key, timestamp=ts).save()
        OperatorProcess.shrink_shards(key, 1)
        late = iter([range(100, 120), range(200, 220)])
        landed: set[str | None] = set()

        def sleep(seconds: float) -> None:  # each of the first two waits: 20 stale writes
            for ts in next(late, ()):
                event = WriterProcess(user_id=key, timestamp=ts)
                event.save()
                landed.add(event.get_physical_key())

        monkeypatch.setattr(operator.settings.clock, "sleep", sleep)
        OperatorProcess.compact_shards(key, grace=1.0)
        assert next(late, None) is None  # both batches were written during the compaction
        assert landed <= {f"{key}#{n}" for n in range(4)} and len(landed) > 1  # retired ones
        expected = [*range(40), *range(100, 120), *range(200, 220)]
        placed = _placement(key)
        assert sorted(placed) == expected
        assert {ts: keys for ts, keys in placed.items() if keys != [f"{key}#0"]} == {}
        assert [e.timestamp for e in OperatorProcess.query(key)] == expected
        assert OperatorProcess.count(key) == len(expected)
    finally:
        unbind(processes, region="us-east-1")


def test_rebinding_forgets_counts_cached_from_the_old_endpoint(moto_url: str) -> None:
    """A process moves WriterProcess from one region (endpoint) to another: no stale count.

    table() documents that it follows the main model's endpoint and forgets cached counts
    when it changes; two regions of the moto server are two independent databases.
    """
    processes: list[type[ShardedModel]] = [WriterProcess]
    regions = ("us-west-2", "eu-west-1")
    try:
        for region in regions:
            _bind(processes, moto_url, region)
            drop_tables(processes)
            create_tables(processes)
        _bind(processes, moto_url, regions[0])
        writers = sharding_of(WriterProcess).directory
        assert writers is not None
        WriterProcess(user_id="moved", timestamp=0).save()
        for _ in range(2):  # grown to 4 in the first region, cached for 60 s
            writers.grow("moved", writers.lookup("moved"))  # type: ignore[arg-type]
        _bind(processes, moto_url, regions[1])
        for ts in range(1, 21):
            WriterProcess(user_id="moved", timestamp=ts).save()
        assert [e.timestamp for e in WriterProcess.query("moved")] == list(range(1, 21))
    finally:
        for region in regions:
            _bind(processes, moto_url, region)
            drop_tables(processes)
        unbind(processes, region="us-east-1")
