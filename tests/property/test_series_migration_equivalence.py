"""Hypothesis: through a time series' 16 -> 32 count change, range reads match one
partition per sensor.

Readings (their times given as aware datetimes, ISO strings with offsets or epoch
seconds, over six hours around the cutover) are saved in prepare, in read_new by a
process that follows and by one a phase behind, and in cleanup. After each phase
query_series (both directions, a limit, a resume from its cursor) and count_series
return what PlainReading returns for the same saves, except what the resharding page
documents: a reading dated in the new count's buckets, last written with the old count,
is found once the cleanup has moved it. Half the examples abort the change in read_new:
its buckets return to 16 shards at once, the readings written there with 32 are found
once the return's cleanup moved them back, and where both counts hold a row the 16
shards' one is kept (the documented edges, mirrored).
"""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from shardmodel.migration import Phase, Reshard, follow, unfollow
from shardmodel.testing import SimulatedClock
from tests.migration_models import behind, series_redeployed, shard_moves
from tests.models import PlainReading
from tests.series_equivalence import BASE, times

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("tables")]

_runs = itertools.count()
#: Two sensors whose shard changes from 16 to 32 (s10, ünï) and two whose does not.
SENSORS = ["s1", "s10", "ünï", "sensor-alpha-001"]
#: The operator's clock: 15:00, so the new count begins at 16:00 (a settle of 0 and the
#: minute's margin ahead), inside the readings' six hours (12:00 to 18:00).
NOW = BASE + timedelta(hours=3)
CUTOVER = "2023-10-27T16"
WHO = ["prepare", "read_new", "lagging", "cleanup"]


scenarios = st.fixed_dictionaries(
    {
        "writes": st.lists(
            st.tuples(st.sampled_from(SENSORS), times(), st.integers(-5, 5), st.sampled_from(WHO)),
            max_size=30,
        ),
        "sensor": st.sampled_from(SENSORS),
        "window": st.tuples(times(), times()).map(lambda p: sorted(p, key=lambda t: t[1])),
        "forward": st.booleans(),
        "limit": st.none() | st.integers(1, 12),
        "resume_after": st.none() | st.integers(0, 12),
        "aborted": st.booleans(),
    }
)


def _expected(
    plain_key: str,
    scenario: dict[str, Any],
    hidden: set[datetime],
    kept: dict[datetime, int] | None = None,
) -> list[Any]:
    """What PlainReading returns for the window, less the readings a range read may not
    see yet (``hidden``), with the values of ``kept`` (an aborted change's return keeps
    a reading's copy with the old count where both counts hold one), the limit after."""
    (_, low), (_, high) = scenario["window"]
    found = PlainReading.query(
        plain_key,
        PlainReading.timestamp.between(low, high),
        scan_index_forward=scenario["forward"],
    )
    kept = kept or {}
    shown = [
        (r.timestamp, kept.get(r.timestamp, int(r.value)))
        for r in found
        if r.timestamp not in hidden
    ]
    limit = scenario["limit"]
    return shown if limit is None else shown[:limit]


def _read(model: Any, sensor: str, scenario: dict[str, Any]) -> list[tuple[datetime, int]]:
    """query_series, stopped after ``resume_after`` readings and resumed from its cursor."""
    (low, _), (high, _) = scenario["window"]
    options: dict[str, Any] = {"scan_index_forward": scenario["forward"]}
    limit = scenario["limit"]
    first = model.query_series(sensor, low, high, limit=limit, **options)
    stop = scenario["resume_after"]
    seen = [(r.timestamp, int(r.value)) for r in itertools.islice(first, stop)]
    cursor = first.last_evaluated_key
    if stop is None or cursor is None:
        return seen
    left = None if limit is None else limit - len(seen)
    if left is not None and left <= 0:
        return seen
    rest = model.query_series(sensor, low, high, limit=left, last_evaluated_key=cursor, **options)
    return seen + [(r.timestamp, int(r.value)) for r in rest]


def _strays() -> dict[str, Any]:
    """s10 (its shard changes) with readings past the cutover written with the old count
    in prepare and by the process a phase behind, read newest first with a resume."""
    east = timezone(timedelta(hours=5, minutes=30))
    at = [BASE + timedelta(hours=h) for h in (4.5, 5, 2, 4.75, 5.5)]
    writes = [
        ("s10", (at[0].astimezone(east).isoformat(), at[0]), 1, "prepare"),
        ("s10", (int(at[1].timestamp()), at[1]), 2, "lagging"),
        ("s10", (at[2], at[2]), 3, "read_new"),
        ("s10", (at[3], at[3]), 4, "read_new"),
        ("ünï", (at[4], at[4]), 5, "lagging"),
        ("s10", (at[4], at[4]), 6, "cleanup"),
    ]
    low, high = BASE, BASE + timedelta(hours=6)
    return {
        "writes": writes,
        "sensor": "s10",
        "window": [(low, low), (high.isoformat(), high)],
        "forward": False,
        "limit": 4,
        "resume_after": 1,
        "aborted": False,
    }


def _returned() -> dict[str, Any]:
    """The same, aborted in read_new: s10's readings past the cutover written with 32
    wait for the return's cleanup; one written with 16 first keeps that value."""
    scenario = _strays()
    moment = BASE + timedelta(hours=4.75)  # also written with 16 by the process behind
    writes = [("s10", (moment, moment), 7, "lagging"), *scenario["writes"]]
    return {**scenario, "writes": writes, "aborted": True, "limit": None}


# each example makes its own table and runs a whole change (about a second on moto): 40
# examples in every profile, as many as the fast one draws
@settings(
    max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
@given(scenario=scenarios)
@example(scenario=_strays())
@example(scenario=_returned())
def test_a_series_count_change_reads_what_one_partition_per_sensor_reads(
    scenario: dict[str, Any],
) -> None:
    run = next(_runs)
    table = f"prop-series-{run}"
    clock = SimulatedClock(start=NOW.timestamp())
    follower, lagging = series_redeployed(16, table=table), series_redeployed(16, table=table)
    follower.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    follow(follower, cache_seconds=0, clock=clock)
    behind(lagging, clock)  # a process that has not seen the change yet
    operator = Reshard(follower, clock=clock)
    ledger: dict[tuple[str, datetime], tuple[int, bool]] = {}
    #: an aborted change's return: the rows of readings whose two counts' partitions
    #: differ, by count (16: where the return reads; 32: what its cleanup moves back)
    rows: dict[tuple[str, datetime], dict[int, int]] = {}

    def save(model: Any, sensor: str, written: Any, moment: datetime, value: int) -> None:
        # the series table is this example's own; the plain one names the run
        model(sensor_id=sensor, timestamp=written, value=value).save()
        PlainReading(sensor_id=f"{run}-{sensor}", timestamp=moment, value=value).save()
        state = operator.status()
        assert state is not None
        old_count = model is lagging or state.phase == Phase.PREPARE or state.returning
        moving = moment.strftime("%Y-%m-%dT%H") >= CUTOVER and shard_moves(sensor)
        ledger[(sensor, moment)] = (value, old_count and moving)
        if moving:
            rows.setdefault((sensor, moment), {})[16 if old_count else 32] = value

    def check(model: Any, cutover_set: bool = True, returning: str | None = None) -> None:
        """Reads match; before the cutover is set every reading is where reads look.

        ``returning``: in an aborted change's return, ``"reading"`` (its reads find the
        16 shards' rows only) or ``"moved"`` (its cleanup moved the 32 shards' rows
        back, but where a 16 row was)."""
        sensor = scenario["sensor"]
        hidden = {t for (s, t), (_, h) in ledger.items() if s == sensor and h and cutover_set}
        kept: dict[datetime, int] = {}
        if returning is not None:
            mine = {t: r for (s, t), r in rows.items() if s == sensor}
            hidden = (
                {t for t, r in mine.items() if 16 not in r} if returning == "reading" else set()
            )
            kept = {t: r.get(16, r.get(32, 0)) for t, r in mine.items()}
        expected = _expected(f"{run}-{sensor}", scenario, hidden, kept)
        assert _read(model, sensor, scenario) == expected
        (low, low_utc), (high, high_utc) = scenario["window"]
        plain = PlainReading.count(
            f"{run}-{sensor}", PlainReading.timestamp.between(low_utc, high_utc)
        )
        assert model.count_series(sensor, low, high) == plain - len(
            [t for t in hidden if low_utc <= t <= high_utc]
        )

    def phase(who: str) -> list[Any]:
        return [w for w in scenario["writes"] if w[3] == who]

    operator.start(32, settle_seconds=0)
    for sensor, (written, moment), value, _ in phase("prepare"):
        save(follower, sensor, written, moment, value)
    check(follower, cutover_set=False)
    assert operator.advance().cutover == CUTOVER
    # the process a phase behind writes first; a later write by a follower wins in both
    for sensor, (written, moment), value, _ in phase("lagging"):
        save(lagging, sensor, written, moment, value)
    for sensor, (written, moment), value, _ in phase("read_new"):
        save(follower, sensor, written, moment, value)
    check(follower)
    if scenario["aborted"]:
        operator.abort()  # its first bucket, 16:00, is an hour ahead of the clock
        check(follower, returning="reading")
        check(lagging, returning="reading")  # code declaring 16 reads as the return does
        operator.advance()
        for sensor, (written, moment), value, _ in phase("cleanup"):
            save(follower, sensor, written, moment, value)
        check(follower, returning="reading")
        operator.run_job(page_size=7)
        check(follower, returning="moved")
        operator.advance()
        Reshard(lagging, clock=clock).finish()
        unfollow(follower)
        check(lagging, returning="moved")
        for key, found in rows.items():  # the 16 shards' row where there is one
            ledger[key] = (found.get(16, found.get(32, 0)), False)
        stored = sorted((r.sensor_id, r.timestamp, int(r.value)) for r in lagging.scan())
        assert stored == sorted((s, t, v) for (s, t), (v, _) in ledger.items())
        return
    operator.advance()
    operator.run_job(page_size=7)
    ledger = {k: (v, False) for k, (v, _) in ledger.items()}  # every reading moved
    check(follower)
    for sensor, (written, moment), value, _ in phase("cleanup"):
        save(follower, sensor, written, moment, value)
    check(follower)
    operator.advance()
    unfollow(follower)
    renewed = series_redeployed(32, {CUTOVER: 16}, table=table)
    Reshard(renewed, clock=clock).finish()
    check(renewed)
    rows = sorted((r.sensor_id, r.timestamp, int(r.value)) for r in renewed.scan())
    assert rows == sorted((s, t, v) for (s, t), (v, _) in ledger.items())
