"""The table knows its layout: processes that never call ``follow()`` read and write right.

On a moto server and on dynalite. A second class on the table, declared by other code
that never calls ``follow()`` (another service, a cron job, a notebook), is made to behave
as another process: its watch runs on the test's clock and ignores that this process
changed the state, so it learns each phase only by reading the state table once its
five-second cache runs out, as a process elsewhere would. Every phase of a change is
crossed with both classes writing; each read path of the unfollowed class returns
exactly the ledger, one phase behind and caught up. Once ``--finish`` has recorded the
new layout, the old declaration is refused by name and a time series declared without
``counts_before`` reads every earlier reading.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from shardmodel import HashShards
from shardmodel.engine import sharding_of
from shardmodel.errors import ShardConfigurationError
from shardmodel.migration import Phase, Reshard, TableWatch, follow
from shardmodel.migration import rules as watch_rules
from shardmodel.migration.reshard import JOBS
from shardmodel.testing import SimulatedClock
from tests.integration.test_migration import _bound
from tests.migration_models import (
    Click,
    OrderedReading,
    Reading,
    SensorSeries,
    declared_as,
    redeployed,
    series_redeployed,
)

#: longer than a process's five-second cache of the state: a process lags one phase at most
SETTLE = 10.0
SEQS = range(24)


@pytest.fixture(params=["moto", "dynalite"])
def server(request: pytest.FixtureRequest) -> Iterator[str]:
    url = request.getfixturevalue(f"{request.param}_url")
    yield from _bound(url, str(request.param))


def elsewhere(model: Any, clock: SimulatedClock, monkeypatch: pytest.MonkeyPatch) -> TableWatch:
    """``model``'s own watch (it never called follow()), made to see only what the table
    says, on ``clock``: the process it stands for changed nothing itself."""
    watch = sharding_of(model).source()
    assert isinstance(watch, TableWatch)  # nobody told it to follow anything
    watch.clock = clock
    monkeypatch.setattr(watch_rules, "changes_made_here", lambda table_name: 0)
    return watch


def reads_exactly(model: Any, ledger: dict[int, str]) -> None:
    """get, batch_get, query, count and scan of ``model`` return the ledger, no more."""
    for seq, value in ledger.items():
        assert model.get("s", seq, consistent_read=True).value == value, seq
    got = {i.seq: i.value for i in model.batch_get([("s", seq) for seq in ledger])}
    assert got == ledger
    assert {i.seq: i.value for i in model.query("s", consistent_read=True)} == ledger
    assert [i.seq for i in model.query("s", consistent_read=True)] == sorted(ledger)
    assert model.count("s", consistent_read=True) == len(ledger)
    scanned = [(i.seq, i.value) for i in model.scan(consistent_read=True)]
    assert sorted(scanned) == sorted(ledger.items())


#: each kind of change: the model, the target, the code declaring it, and how the table's
#: record names the old and the new declaration
KINDS = {
    "hash count": (Reading, 32, 32, "HashShards(16, on=seq)", "HashShards(32, on=seq)"),
    "random grow": (Click, 32, 32, "RandomShards(16)", "RandomShards(32)"),
    "ordered ranges": (
        OrderedReading,
        ["", "000000000050", "000000500000"],
        ["", "000000000050", "000000500000"],
        "OrderedShards with 2 ranges",
        "OrderedShards with 3 ranges ('', '000000000050', '000000500000')",
    ),
    "strategy swap": (
        Click,
        HashShards(16, on=["seq"]),
        HashShards(16, on=["seq"]),
        "RandomShards(16)",
        "HashShards(16, on=seq)",
    ),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_class_that_never_follows_reads_and_writes_exactly_in_every_phase(
    server: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, target, declared, old_text, new_text = KINDS[kind]
    clock = SimulatedClock(start=1_700_000_000.0)
    unfollowed = redeployed(model, declared_as(model))  # the old declaration, elsewhere
    watch = elsewhere(unfollowed, clock, monkeypatch)
    ledger: dict[int, str] = {}
    for seq in SEQS:
        model(sensor="s", seq=seq, value=f"v{seq}").save()
        ledger[seq] = f"v{seq}"
    follow(model, cache_seconds=0, clock=clock)
    operator = Reshard(model, clock=clock)
    reads_exactly(unfollowed, ledger)  # read before the change: cached "no change"
    state = operator.start(target, settle_seconds=SETTLE)
    seen: list[Phase | None] = []
    written = 100
    while True:
        # both classes write: the one that never followed, a phase behind at most
        for writer in (model, unfollowed):
            writer(sensor="s", seq=written, value=f"w{written}").save()
            ledger[written] = f"w{written}"
            item = writer.get("s", written % 24, consistent_read=True)
            item.update(actions=[writer.value.set(f"u{written}")])
            ledger[written % 24] = f"u{written}"
            written += 1
        reads_exactly(unfollowed, ledger)  # perhaps one phase behind
        clock.advance(SETTLE / 2 + 0.1)  # past its cache: it reads the phase now
        reads_exactly(unfollowed, ledger)
        view = watch.peek()
        seen.append(None if view is None else view.state.phase)
        clock.advance(SETTLE / 2)  # the phase's settle time is over
        if state.phase in JOBS:
            operator.run_job()
        if state.phase == Phase.DONE:
            break
        state = operator.advance()
    # it saw the phases by reading the table, the last one included
    assert seen[-1] == Phase.DONE and len({p for p in seen if p is not None}) >= 4
    renewed = redeployed(model, declared)
    Reshard(renewed, clock=clock).finish()
    clock.advance(SETTLE)
    # the table records the new layout: the old declaration is refused before any request
    refusal = rf"declares {re.escape(old_text)}.*holds {re.escape(new_text)}.*; declare "
    with pytest.raises(ShardConfigurationError, match=refusal):
        unfollowed.get("s", 0)
    with pytest.raises(ShardConfigurationError, match=refusal):
        unfollowed(sensor="s", seq=999, value="x").save()
    # code declaring the table's layout, never told to follow, reads every write
    reads_exactly(redeployed(model, declared), ledger)


def test_a_series_declared_without_its_history_reads_every_earlier_reading(
    server: str,
) -> None:
    """Before: after a 16 -> 32 change, ``HashShards(32)`` without ``counts_before`` read
    0 of 10 earlier readings of a sensor, with no error."""
    clock = SimulatedClock(start=1_700_000_000.0)  # 2023-11-14T22:13:20Z
    start = datetime(2023, 11, 14, 20, tzinfo=timezone.utc)
    readings = {
        (f"sensor-{n}", start + timedelta(minutes=13 * i)): float(n * 100 + i)
        for n in range(4)
        for i in range(10)
    }
    for (sensor, moment), value in readings.items():
        SensorSeries(sensor_id=sensor, timestamp=moment, value=value).save()
    follow(SensorSeries, cache_seconds=0, clock=clock)
    operator = Reshard(SensorSeries, clock=clock)
    state = operator.start(32, settle_seconds=SETTLE)
    while state.phase != Phase.DONE:
        clock.advance(SETTLE)
        if state.phase in JOBS:
            operator.run_job()
        state = operator.advance()
    bare = series_redeployed(32)  # the new count, and no counts_before at all
    Reshard(bare, clock=clock).finish()
    for sensor in {s for s, _ in readings}:
        want = sorted((t, v) for (s, t), v in readings.items() if s == sensor)
        got = [
            (r.timestamp, r.value)
            for r in bare.query_series(sensor, start, start + timedelta(hours=3))
        ]
        assert got == want, sensor
        assert bare.count_series(sensor, start, start + timedelta(hours=3)) == len(want)
    # the old declaration is refused, naming what to declare
    with pytest.raises(ShardConfigurationError, match=r"declare HashShards\(32.*left out"):
        series_redeployed(16).get_reading("sensor-0", start)
