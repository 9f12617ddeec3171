"""A process following a migration, through the async API: a write keeps the phase it
began in, and each coroutine holds its own view of the phase.

The async twins of the interleavings ``tests/unit/test_migration.py`` runs with threads:
here the phase moves on while a write's first request is on the event loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from shardmodel.engine import sharding_of
from shardmodel.migration import Phase
from shardmodel.testing import SimulatedClock
from tests.migration_models import Reading
from tests.unit.test_migration import (  # the fixture and helpers of the sync interleavings
    _finish,
    _moving,
    _to_backfilled,
    expect,
    migration_tables,
    raw_keys,
)

__all__ = ["migration_tables"]  # a fixture used by name

_OPERATIONS = {"delete": "DeleteItem", "update": "UpdateItem", "save": "PutItem"}


def _after_first(operation: str, then: Any) -> Any:
    """Call ``then()`` once, after the first ``operation`` request of Reading's client."""
    client = Reading._get_connection().connection.client
    calls = {"n": 0}

    def hook(**kwargs: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            then()

    client.meta.events.register(f"after-call.dynamodb.{operation}", hook, unique_id="test-x")
    return lambda: client.meta.events.unregister(
        f"after-call.dynamodb.{operation}", unique_id="test-x"
    )


@pytest.mark.parametrize("write", ["delete", "update", "save"])
def test_an_async_write_spanning_a_phase_change_follows_the_phase_it_began_in(
    write: str, migration_tables: SimulatedClock
) -> None:
    """``adelete``/``aupdate``/``asave`` begun in backfill: read_new begins after its first
    request, and the write still ends as a write begun in backfill (both copies)."""
    clock = migration_tables
    victim, other = _moving(2)
    for seq in (victim, other):
        Reading(sensor="k", seq=seq, value="v").save()
    operator = _to_backfilled(clock)
    assert len(raw_keys(Reading)) == 4
    item = Reading.get("k", victim)
    moved: list[Phase] = []

    def move_on() -> None:
        clock.advance(1)
        moved.append(operator.advance().phase)

    reference = {other: "v"}
    gone: set[Any] = set()
    remove = _after_first(_OPERATIONS[write], move_on)
    try:
        if write == "delete":
            asyncio.run(item.adelete())
            gone.add(victim)
        elif write == "update":
            asyncio.run(item.aupdate(actions=[Reading.value.set("updated")]))
            reference[victim] = "updated"
        else:
            asyncio.run(Reading(sensor="k", seq=victim, value="saved").asave())
            reference[victim] = "saved"
    finally:
        remove()
    assert moved == [Phase.READ_NEW]
    expect(Reading, "k", reference, gone)
    _finish(operator, clock, lambda: expect(Reading, "k", reference, gone))
    assert len(raw_keys(Reading)) == len(reference)


def test_two_coroutines_hold_their_own_phase(migration_tables: SimulatedClock) -> None:
    """A save begun in backfill (old key, then new) and a delete in read_new, interleaved
    on one loop: the delete runs whole between the save's two puts, in the phase it sees
    (read_new), while the save keeps backfill's. The end state is the delete followed by
    the save, as in the threaded test."""
    clock = migration_tables
    victim, other = _moving(2)
    for seq in (victim, other):
        Reading(sensor="k", seq=seq, value="v").save()
    operator = _to_backfilled(clock)
    seen: list[Phase] = []

    async def run() -> None:
        go = asyncio.Event()
        done = asyncio.get_running_loop().create_future()

        async def delete_elsewhere() -> None:
            await go.wait()
            try:
                item = await Reading.aget("k", victim)
                seen.append(sharding_of(Reading).migration().state.phase)  # type: ignore[attr-defined]
                await item.adelete()
                done.set_result(None)
            except BaseException as error:
                done.set_exception(error)

        def between_puts() -> None:  # in the save's greenlet: let the other coroutine run
            from shardmodel.core.bridge import await_

            clock.advance(1)
            assert operator.advance().phase == Phase.READ_NEW
            go.set()
            await_(done)

        remove = _after_first("PutItem", between_puts)
        deleter = asyncio.create_task(delete_elsewhere())
        try:
            await Reading(sensor="k", seq=victim, value="saved").asave()
        finally:
            remove()
        await deleter

    asyncio.run(run())
    assert seen == [Phase.READ_NEW]
    reference = {victim: "saved", other: "v"}
    expect(Reading, "k", reference)
    _finish(operator, clock, lambda: expect(Reading, "k", reference))
    assert len(raw_keys(Reading)) == len(reference)
