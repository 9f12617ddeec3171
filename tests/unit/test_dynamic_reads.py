"""Cached reads of dynamic keys: growths announced ahead, reads coalesced, old items.

A reader keeps a key's metadata for ``reader_cache_seconds``; a growth is announced that
long plus the clock margin ahead, so no reader misses a shard a writer wrote. Each model
class below is one process (its own cache) on the same tables.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute

from shardmodel import DynamicShards, ShardedKeyAttribute, ShardedModel, ShardMetadataError
from shardmodel.core import bridge
from shardmodel.dynamic.directory import ShardDirectory
from shardmodel.engine import sharding_of
from shardmodel.testing import SimulatedClock
from tests.support import raw_items

CLOCK = SimulatedClock(start=1_800_000_000)
TABLE = "dynamic-cached"


class SkewedClock:
    """A process's clock: the simulated time, ``offset`` seconds off."""

    def __init__(self, offset: float) -> None:
        self.offset = offset

    def now(self) -> float:
        return CLOCK.now() + self.offset

    def sleep(self, seconds: float) -> None:
        CLOCK.sleep(seconds)


def process(name: str, clock: Any = CLOCK, **settings: Any) -> type[ShardedModel]:
    """One process's model of the table: a 2 s reader cache, a 1 s clock margin."""
    strategy = DynamicShards(
        cooldown=0,
        jitter=0,
        reader_cache_seconds=2,
        clock_margin_seconds=1,
        clock=clock,
        **settings,
    )
    meta = type("Meta", (), {"table_name": TABLE, "region": "us-east-1"})
    namespace = {
        "Meta": meta,
        "key": ShardedKeyAttribute(hash_key=True, strategy=strategy),
        "seq": NumberAttribute(range_key=True),
    }
    return type(name, (ShardedModel,), namespace)


Reader = process("Reader")
Writer = process("Writer", writer_cache_seconds=5)


def directory_of(model: type[ShardedModel]) -> ShardDirectory:
    directory = sharding_of(model).directory
    assert directory is not None
    return directory


@pytest.fixture
def tables(dynamodb_tables: Callable[..., None]) -> Iterator[None]:
    dynamodb_tables(Reader)
    for model in (Reader, Writer):
        directory_of(model).clear_cache()
    yield


def _seqs(model: type[ShardedModel], key: str) -> list[int]:
    return sorted(int(item.seq) for item in model.query(key))


@pytest.mark.usefixtures("tables")
def test_a_cached_reader_reads_the_shards_a_growth_adds() -> None:
    """A reader caches one shard; another process grows the key to 4 and writes on.

    Every read, every 0.25 s for 6 s, returns every item written before it: the growth
    is in the item at once, writers use it only after the reader's cache (2 s) and the
    margin (1 s); the writes do reach the new shards afterwards. (Before: the writer
    wrote to 4 shards at once and the reader saw one of them for up to 2 s.)
    """
    Writer("k", 0).save()
    assert _seqs(Reader, "k") == [0]  # the reader keeps "one shard" for 2 s
    grown = Writer.grow_shards("k", to=4)
    grown_at = CLOCK.now()
    written = [0]
    for seq in range(1, 25):
        CLOCK.advance(0.25)
        for extra in range(4):  # several writes a step: some land on the new shards
            Writer("k", seq * 10 + extra).save()
            written.append(seq * 10 + extra)
        assert _seqs(Reader, "k") == sorted(written), f"{CLOCK.now() - grown_at} s after"
    shards = {item["key"]["S"] for item in raw_items(Reader)}
    assert shards > {"k#0"} and shards <= {f"k#{n}" for n in range(4)}
    assert grown.readable == 4 and grown.announced is not None
    assert grown.announced.epoch - grown_at >= 3  # the cache window and the margin


@pytest.mark.usefixtures("tables")
@pytest.mark.parametrize("skew", [0.0, 0.9])
def test_growths_racing_writers_and_readers_miss_nothing(skew: float) -> None:
    """Three writers, a grower and three readers (each one process, its own cache),
    interleaved at random over 20 simulated seconds while the key grows 1 -> 2 -> 4 -> 8.

    The grower's clock runs ``skew / 2`` behind, one writer's ``skew / 2`` ahead (within
    the 1 s margin), and that writer reads the count for every write: every read returns
    every item written before it.
    """
    grower = process(f"Grower{int(skew * 10)}", SkewedClock(-skew / 2))
    writers = [  # one reads the count for every write, two keep it for 5 s
        process(
            f"Writer{n}{int(skew * 10)}",
            SkewedClock(skew / 2 if n == 0 else 0.0),
            writer_cache_seconds=0 if n == 0 else 5,
        )
        for n in range(3)
    ]
    readers = [process(f"Reader{n}{int(skew * 10)}") for n in range(3)]
    for model in (grower, *writers, *readers):
        directory_of(model).clear_cache()
    rng = random.Random(11)
    written: list[int] = []
    growths = iter([2, 4, 8])
    for step in range(200):
        CLOCK.advance(0.1)
        if step % 60 == 25:  # at 2.5, 8.5 and 14.5 s
            grower.grow_shards("race", to=next(growths))
        for _ in range(rng.randrange(3)):
            writer = rng.choice(writers)
            writer("race", len(written)).save()
            written.append(len(written))
        for reader in readers:
            assert _seqs(reader, "race") == written, f"step {step}"
    metadata = grower.shard_metadata("race")
    assert metadata is not None and metadata.latest == 8
    assert len({item["key"]["S"] for item in raw_items(Reader)}) >= 5


@pytest.mark.usefixtures("tables")
def test_concurrent_readers_of_a_key_share_one_metadata_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Eight threads read one key at once: one metadata read, not eight."""
    Writer("k", 0).save()
    directory = directory_of(Reader)
    lookups: list[bool] = []
    lookup = directory.lookup

    def slow(logical: str, consistent: bool = True) -> Any:
        lookups.append(consistent)
        time.sleep(0.3)  # real time: every thread arrives while the read is in flight
        return lookup(logical, consistent)

    monkeypatch.setattr(directory, "lookup", slow)
    start = threading.Barrier(8)
    found: list[int] = []

    def read() -> None:
        start.wait()
        found.append(int(Reader.get("k", 0).seq))

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == [0] * 8
    assert lookups == [True]  # one strong read for all eight


@pytest.mark.usefixtures("tables")
def test_concurrent_coroutines_share_one_metadata_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight coroutines ``aget`` one key at once: one metadata read, and the event loop
    serves the others while it is in flight."""
    Writer("k", 0).save()
    directory = directory_of(Reader)
    lookups: list[bool] = []
    lookup = directory.lookup

    def slow(logical: str, consistent: bool = True) -> Any:
        lookups.append(consistent)
        bridge.await_(asyncio.sleep(0.05))  # the loop runs the other coroutines meanwhile
        return lookup(logical, consistent)

    monkeypatch.setattr(directory, "lookup", slow)

    async def run() -> list[Any]:
        return await asyncio.gather(*(Reader.aget("k", 0) for _ in range(8)))

    with asyncio.Runner() as runner:
        found = runner.run(run())
    assert [int(item.seq) for item in found] == [0] * 8
    assert lookups == [True]


@pytest.mark.usefixtures("tables")
def test_a_failed_shared_read_fails_every_reader_that_waited(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The leader's error reaches the threads that waited on it; the next read reads again."""
    directory = directory_of(Reader)
    calls: list[int] = []

    def failing(logical: str, consistent: bool = True) -> Any:
        calls.append(1)
        time.sleep(0.2)
        raise RuntimeError("metadata table down")

    monkeypatch.setattr(directory, "lookup", failing)
    start = threading.Barrier(4)
    errors: list[str] = []

    def read() -> None:
        start.wait()
        try:
            directory.for_read("k")
        except RuntimeError as error:
            errors.append(str(error))

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == ["metadata table down"] * 4 and calls == [1]
    monkeypatch.undo()
    assert directory.for_read("k").readable == 1


@pytest.mark.usefixtures("tables")
def test_an_item_from_before_announcements_reads_and_writes_as_before() -> None:
    """An item without ``announced`` (hand-made, or grown before announcements): its
    count is live at once for writers, every shard in its history is read."""
    table = directory_of(Reader).table()
    table("old", number_of_shards=4, last_updated=1, shard_history={"1:1", "1:4", "2:6"}).save()
    for seq in range(6):  # items of the old writers on every shard of the history
        item = Reader("old", seq)
        item._physical_key = f"old#{seq}"
        item.save()
    assert _seqs(Reader, "old") == list(range(6))
    metadata = Reader.shard_metadata("old")
    assert metadata is not None and metadata.announced is None
    assert (metadata.live_at(CLOCK.now()), metadata.readable) == (4, 6)
    for seq in range(6, 40):
        Writer("old", seq).save()
    assert _seqs(Reader, "old") == list(range(40))
    new_shards = {i["key"]["S"] for i in raw_items(Reader) if int(i["seq"]["N"]) >= 6}
    assert len(new_shards) > 1 and new_shards <= {f"old#{n}" for n in range(4)}


@pytest.mark.usefixtures("tables")
def test_a_bad_announcement_names_the_field_and_the_fix() -> None:
    table = directory_of(Reader).table()
    table("bad", number_of_shards=1, last_updated=1, announced="soon:4").save()
    with pytest.raises(ShardMetadataError, match="announced entry 'soon:4' is not"):
        Reader.query("bad").__next__()


@pytest.mark.usefixtures("tables")
def test_the_reader_cache_of_many_keys_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process reading many keys keeps at most CACHE_KEYS of them (expired ones first)."""
    monkeypatch.setattr("shardmodel.dynamic.directory.CACHE_KEYS", 8)
    directory = directory_of(Reader)
    for n in range(30):
        directory.for_read(f"key-{n}")
        CLOCK.advance(0.1)
    assert len(directory._reader_cache) <= 8
    assert "key-29" in directory._reader_cache  # the newest is kept


@pytest.mark.usefixtures("tables")
def test_a_clock_moved_back_expires_the_reader_cache() -> None:
    """A cached count stamped in the future (a clock stepped back) is read again."""
    directory = directory_of(Reader)
    directory._reader_cache["k"] = (CLOCK.now() + 60, None)
    Writer("k", 0).save()
    Writer.grow_shards("k", to=2)
    assert directory.for_read("k").readable == 2


@pytest.mark.usefixtures("tables")
def test_a_hot_key_tracker_leaves_an_announced_growth_to_take_effect() -> None:
    """Writes still land on the old shards until an announced growth takes effect: the
    tracker sees the key hot there, but does not grow it again (nor to a smaller count)."""
    from shardmodel.ops import HotKeyTracker

    Writer("h", 0).save()
    Writer.grow_shards("h", to=8)  # announced: writers use 8 shards 3 s from now
    tracker = HotKeyTracker(Writer, window=10, grow=True, clock=CLOCK)
    start = CLOCK.now() - 10
    keys = [{"key": {"S": "h#0"}, "seq": {"N": str(n)}} for n in range(9000)]
    burst = [
        {
            "eventName": "INSERT",
            "dynamodb": {"ApproximateCreationDateTime": start + n / 900, "Keys": k, "NewImage": k},
        }
        for n, k in enumerate(keys)
    ]
    result = tracker.handler({"Records": burst}, None)
    assert [hot[0] for hot in result["hot"]] == ["h"] and result["grown"] == {}
    metadata = Writer.shard_metadata("h")
    assert metadata is not None and metadata.latest == 8
