"""The greenlet bridge: calls reuse a thread's idle greenlets without sharing anything else."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import greenlet
import pytest

from shardmodel.core import bridge
from shardmodel.core.bridge import await_, call, in_async

_SEEN: contextvars.ContextVar[str] = contextvars.ContextVar("test_bridge_seen", default="unset")


def _who() -> int:
    return id(greenlet.getcurrent())


def test_a_call_reuses_an_idle_greenlet_with_a_fresh_context() -> None:
    def first() -> tuple[int, str]:
        before = _SEEN.get()
        _SEEN.set("first")  # in the call's own context copy
        return _who(), before

    def second() -> tuple[int, str, bool]:
        return _who(), _SEEN.get(), in_async()

    async def main() -> None:
        _SEEN.set("caller")
        one, seen_first = await call(first)
        two, seen_second, inside = await call(second)
        assert one == two  # the same greenlet, taken back from the idle ones
        assert seen_first == seen_second == "caller"  # the caller's context, not the last call's
        assert inside and not in_async()
        assert _SEEN.get() == "caller"

    asyncio.run(main())


def test_an_error_reaches_the_caller_and_the_greenlet_serves_again() -> None:
    def boom() -> None:
        raise KeyError("shard")

    async def main() -> None:
        with pytest.raises(KeyError, match="shard") as raised:
            await call(boom)
        assert any(frame.name == "boom" for frame in raised.traceback)
        assert await call(lambda: 7) == 7

    asyncio.run(main())


def test_a_cancelled_call_sees_the_cancellation_where_it_waited() -> None:
    events: list[str] = []

    def waits() -> None:
        try:
            await_(asyncio.sleep(30))
        finally:
            events.append("finally")

    async def main() -> None:
        task = asyncio.create_task(call(waits))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert events == ["finally"]
        assert await call(lambda: "next") == "next"  # the pool still serves

    asyncio.run(main())


def test_concurrent_calls_each_have_their_own_greenlet() -> None:
    def holds(seconds: float) -> int:
        await_(asyncio.sleep(seconds))
        return _who()

    async def main() -> None:
        found = await asyncio.gather(*(call(holds, 0.01) for _ in range(20)))
        assert len(set(found)) == 20

    asyncio.run(main())


def test_each_thread_keeps_its_own_idle_greenlets() -> None:
    found: dict[str, int] = {}
    # both threads' greenlets stay alive until both are recorded: an id is unique only
    # among live objects (a thread that ended first freed its greenlet for the next)
    both = threading.Barrier(2, timeout=30)

    def run(name: str) -> None:
        async def main() -> None:
            found[name] = await call(_who)
            assert await call(_who) == found[name]
            both.wait()

        asyncio.run(main())

    threads = [threading.Thread(target=run, args=(f"t{n}",)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(found.values())) == 2


def test_the_idle_greenlets_kept_are_bounded() -> None:
    def holds() -> None:
        await_(asyncio.sleep(0.01))

    async def main() -> None:
        await asyncio.gather(*(call(holds) for _ in range(bridge._IDLE_KEPT + 50)))

    asyncio.run(main())
    assert len(bridge._idle.greenlets) == bridge._IDLE_KEPT


class _Ready:
    """An iterator whose items are all in hand but those ``waits`` names, which it
    waits for on the loop (as a merged query waits for a page)."""

    def __init__(self, items: list[int], waits: set[int], fail: int | None = None) -> None:
        self.items = items
        self.waits = waits
        self.fail = fail
        self.at = 0
        self.contexts: list[bool] = []
        self.started = False

    def __iter__(self) -> _Ready:
        return self

    def next_now(self, missing: object) -> object:
        if self.at < len(self.items) and self.at not in self.waits:
            return self.__next__()
        return missing

    def __next__(self) -> int:
        self.contexts.append(in_async())
        if self.at >= len(self.items):
            raise StopIteration
        if self.at in self.waits:
            await_(asyncio.sleep(0))
        if self.at == self.fail:
            self.at += 1
            raise ValueError("built badly")
        self.at += 1
        return self.items[self.at - 1]


def test_a_stream_takes_items_in_hand_without_a_switch_and_waits_in_its_greenlet() -> None:
    """Items ``next_now`` gives are taken in the greenlet's context (an async call's), the
    rest by switching into it; the order and the end are the iterator's."""
    source = _Ready(list(range(10)), waits={0, 4, 9})
    switches = {"n": 0}

    def tracer(event: str, args: object) -> None:
        switches["n"] += event == "switch"

    async def read() -> list[int]:
        return [item async for item in bridge.AsyncStream(lambda: source)]

    previous = greenlet.settrace(tracer)
    try:
        got = asyncio.run(read())
    finally:
        greenlet.settrace(previous)
    assert got == list(range(10))
    assert all(source.contexts)  # every next(), fast or not, inside the async call
    assert switches["n"] < 2 * 10  # not two switches an item


def test_an_error_from_an_item_in_hand_ends_the_stream_as_inside_it() -> None:
    for waits in (set(), {2}):  # raised on the fast path, then in the greenlet
        source = _Ready(list(range(5)), waits=waits, fail=2)

        async def read(source: _Ready = source) -> tuple[list[int], list[int]]:
            stream = bridge.AsyncStream(lambda: source)
            got = [await stream.__anext__(), await stream.__anext__()]
            with pytest.raises(ValueError, match="built badly"):
                await stream.__anext__()
            return got, [item async for item in stream]

        assert asyncio.run(read()) == ([0, 1], [])


def test_a_stream_runs_in_an_idle_greenlet_and_gives_it_back_at_its_end() -> None:
    """Read to the end (or failing to start), a stream's greenlet serves the next one."""
    seen: list[int] = []

    def items() -> list[int]:
        seen.append(_who())
        return [1, 2]

    def bad_plan() -> list[int]:
        seen.append(_who())
        raise KeyError("plan")

    async def main() -> None:
        for _ in range(3):
            assert [item async for item in bridge.AsyncStream(lambda: iter(items()))] == [1, 2]
        stream = bridge.AsyncStream(lambda: iter(bad_plan()))
        with pytest.raises(KeyError, match="plan"):
            await stream.start()
        assert [item async for item in stream] == []  # ended by its error, as a call's
        assert await call(_who) == seen[0]  # and call() takes the same greenlet

    asyncio.run(main())
    assert len(set(seen)) == 1
