"""The async API under concurrency: many coroutines on one event loop, one hot key.

200 coroutines write and read one ``DynamicShards`` key while it grows on the capacity
simulator, and nothing is lost; a read cancelled between pages leaves a cursor that
resumes with nothing lost or repeated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import DynamicShards, RandomShards, ShardChange, ShardedKeyAttribute, ShardedModel
from shardmodel.engine import sharding_of
from shardmodel.testing import (
    CapacityLimits,
    CapacitySimulator,
    Faults,
    Latency,
    SimulatedClock,
)

COROUTINES = 200
WRITES_EACH = 5
RATE = 500  # writes per simulated second, on one key: 5x a partition of 100 WCU/s
COOLDOWN = 1.0

CLOCK = SimulatedClock(start=1_800_000_000)
CHANGES: list[ShardChange] = []


class AsyncHotEvents(ShardedModel):
    """Events of one very hot key, written and read through the coroutine twins."""

    class Meta:
        table_name = "async-dynamic-hot"
        region = "us-east-1"

    key = ShardedKeyAttribute(
        hash_key=True,
        strategy=DynamicShards(
            cooldown=COOLDOWN,
            jitter=0.1,
            writer_cache_seconds=0.5,
            max_shards=32,
            clock=CLOCK,
            on_change=CHANGES.append,
        ),
    )
    seq = NumberAttribute(range_key=True)
    body = UnicodeAttribute()


class Wide(ShardedModel):
    """A key on 16 random shards."""

    class Meta:
        table_name = "async-wide"
        region = "us-east-1"

    key = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(16))
    seq = NumberAttribute(range_key=True)


@pytest.fixture
def hot(dynamodb_tables: Callable[..., None]) -> Iterator[CapacitySimulator]:
    """AsyncHotEvents' tables, the simulator on its table and its metadata table."""
    dynamodb_tables(AsyncHotEvents)
    CHANGES.clear()
    directory = sharding_of(AsyncHotEvents).directory
    assert directory is not None
    directory.clear_cache()
    simulator = CapacitySimulator(
        clock=CLOCK, limits=CapacityLimits(partition_wcu=100), buffer_writes=True, seed=7
    )
    simulator.attach(AsyncHotEvents, directory.table())
    yield simulator
    simulator.detach()


def test_200_coroutines_write_and_read_a_growing_key_and_lose_nothing(
    hot: CapacitySimulator,
) -> None:
    """200 coroutines, 500 writes a simulated second on one key (5x a partition).

    Each coroutine saves its items (``asave``) and reads each one back at once
    (``aget``, strongly consistent); the key grows while they do. Afterwards ``aquery``
    and ``query`` both return every write exactly once, and the simulator saw the
    growth's throttles: the async writes went through it.
    """
    start = CLOCK.now()
    seen: list[int] = []

    async def writer(first: int) -> None:
        for step in range(WRITES_EACH):
            number = first + step * COROUTINES
            CLOCK.advance_to(start + number / RATE)
            await AsyncHotEvents("hot", number, body="x" * 200).asave()
            item = await AsyncHotEvents.aget("hot", number, consistent_read=True)
            seen.append(int(item.seq))

    async def run() -> list[int]:
        # the key exists before the crowd arrives (its metadata item made by one write)
        await AsyncHotEvents("hot", total, body="first").asave()
        await asyncio.gather(*(writer(n) for n in range(COROUTINES)))
        hot.flush()
        return [int(e.seq) async for e in AsyncHotEvents.aquery("hot", consistent_read=True)]

    total = COROUTINES * WRITES_EACH
    with asyncio.Runner() as runner:
        read = runner.run(run())
    assert sorted(seen) == list(range(total))  # every coroutine read back its own writes
    assert sorted(read) == list(range(total + 1))  # none lost, none twice
    assert sorted(e.seq for e in AsyncHotEvents.query("hot", consistent_read=True)) == sorted(read)
    grows = [c for c in CHANGES if c.kind == "grow"]
    print(hot.report(), f"\ngrowths {[(c.old_count, c.new_count) for c in grows]}")
    assert grows and grows[-1].new_count >= 4, [(c.old_count, c.new_count) for c in grows]
    assert hot.table_usage("async-dynamic-hot").write_throttles > 0
    metadata = AsyncHotEvents.shard_metadata("hot")
    assert metadata is not None and metadata.latest == grows[-1].new_count


@pytest.fixture
def wide(dynamodb_tables: Callable[..., None]) -> list[int]:
    """200 items of one key on Wide's 16 shards; their sort keys in order."""
    dynamodb_tables(Wide)
    with Wide.batch_write() as batch:
        for seq in range(200):
            batch.save(Wide(key="k", seq=seq))
    return list(range(200))


CANCEL_POINTS = [
    *(("in the read", after, extra) for after in (0, 1, 17, 90) for extra in (0, 1, 2)),
    *(("between items", after, extra) for after in (0, 1, 17, 90, 150) for extra in (0, 1)),
]


@pytest.mark.parametrize(("where", "after", "extra"), CANCEL_POINTS)
def test_a_cancelled_read_resumes_from_its_cursor_with_nothing_lost_or_repeated(
    wide: list[int], where: str, after: int, extra: int
) -> None:
    """Cancel a task iterating ``aquery`` (page size 5, 16 shards) once it has returned
    ``after`` items and the loop has turned ``extra`` more times.

    "in the read": the consumer awaits nothing else, so the cancellation lands where the
    read waits for a shard's page; the read closes itself (no shard request of it is left
    in flight or queued). "between items": the consumer awaits between items and is
    cancelled there, outside the read; its prefetched requests stay until the read is
    closed, and ``aclose()`` closes it. Either way the task stops with
    ``CancelledError`` and the cursor resumes (through ``query``) with exactly the items
    the task had not returned. With the layout drawn at random, the read has now and then
    every remaining page in hand before the late points (90 items, two turns): then it
    ends first, having returned every item once, and there is nothing to cancel.
    """
    seen: list[int] = []
    reads: list[Any] = []
    ended_first: list[bool] = []

    async def reader() -> None:
        results = Wide.aquery("k", page_size=5)
        reads.append(results)
        async for item in results:
            seen.append(int(item.seq))
            if where == "between items":
                await asyncio.sleep(0)

    async def run() -> None:
        task = asyncio.create_task(reader())
        while len(seen) < after:
            await asyncio.sleep(0)
        for _ in range(extra):
            await asyncio.sleep(0)
        if task.done():
            await task  # ended without an error
            ended_first.append(True)
            return
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        if where == "between items" and reads:
            await reads[0].aclose()

    with asyncio.Runner() as runner:
        runner.run(run())
    if ended_first:
        assert after > 0 and seen == wide and reads[0].last_evaluated_key is None
        return
    cursor = None
    try:
        (results,) = reads
        cursor = results.last_evaluated_key
        assert results.outstanding == 0
    except (ValueError, AttributeError):  # cancelled before the read had started
        assert seen == []
    rest = [int(e.seq) for e in Wide.query("k", last_evaluated_key=cursor)]
    assert seen + rest == wide


def test_the_simulators_faults_and_latency_see_every_async_request(
    dynamodb_tables: Callable[..., None],
) -> None:
    """Injected throttles and 500s are retried by botocore's rules on the async path (so
    every async write and read still succeeds), and every attempt is charged latency."""
    dynamodb_tables(Wide)
    clock = SimulatedClock(start=1_800_000_000)
    simulator = CapacitySimulator(
        clock=clock,
        faults=Faults(throttle=0.1, internal_error=0.1),
        latency=Latency(fixed=0.002),
        seed=3,
    )
    simulator.attach(Wide)

    async def run() -> list[int]:
        await asyncio.gather(*(Wide(key="f", seq=n).asave() for n in range(60)))
        got = [await Wide.aget("f", n) for n in range(0, 60, 7)]
        assert [int(item.seq) for item in got] == list(range(0, 60, 7))
        return [int(item.seq) async for item in Wide.aquery("f")]

    try:
        with asyncio.Runner() as runner:
            read = runner.run(run())
    finally:
        simulator.detach()
    assert read == list(range(60))
    injected = sum(simulator.injected.values())
    assert injected > 0, simulator.report()
    # 60 puts, 9 gets, 16 shard queries: each one attempt, plus one per injected fault
    assert simulator.attempts >= 60 + 9 + 16 + injected
    assert simulator.latency_seconds == pytest.approx(0.002 * simulator.attempts)
