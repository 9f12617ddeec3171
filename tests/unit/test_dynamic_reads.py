"""Cached reads of dynamic keys: growths announced ahead, old items.

A reader keeps a key's metadata for ``reader_cache_seconds``; a growth is announced that
long plus the clock margin ahead, so no reader misses a shard a writer wrote. Each model
class below is one process (its own cache) on the same tables.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute

from shardmodel import DynamicShards, ShardedKeyAttribute, ShardedModel, ShardMetadataError
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
