"""The time-series equivalence check: SeriesReading reads exactly what PlainReading reads.

PlainReading keeps one partition per sensor with the time as the sort key; SeriesReading
spreads the same readings over hour buckets and shards. For the same readings and the
same "sensor X from t0 to t1" (directions, limits, page sizes, stop and resume), both
return the same readings in the same order.
"""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

from shardmodel.core.times import to_utc
from tests.models import PlainReading, series_model
from tests.strategies import entity_keys

_runs = itertools.count()
BASE = datetime(2023, 10, 27, 12, tzinfo=timezone.utc)
SPAN = 6 * 3600  # readings fall in six hours: six to seven buckets

#: Stands for the scenario's drawn sensor id among ``SENSORS``.
DRAWN = "<drawn>"

#: Sensor ids, some prefixes of others (s1, s10), one with non-ASCII letters, and the
#: scenario's own (any text without ``#``, sometimes extending s1 or ünï).
SENSORS = ["s1", "s10", "sensor-alpha-001", "ünï", DRAWN]

_offsets = st.sampled_from([0, 60, -300, 330, 345, -720, 840])  # minutes east of UTC


@st.composite
def times(draw: st.DrawFn) -> tuple[Any, datetime]:
    """A time as given to the model (datetime, ISO with offset, or epoch) and in UTC."""
    seconds = draw(st.integers(0, SPAN))
    micros = draw(st.sampled_from([0, 1, 500000, 999999]))
    moment = BASE + timedelta(seconds=seconds, microseconds=micros)
    zone = timezone(timedelta(minutes=draw(_offsets)))
    form = draw(st.sampled_from(["datetime", "iso", "epoch"]))
    if form == "datetime":
        return moment.astimezone(zone), moment
    if form == "iso":
        return moment.astimezone(zone).isoformat(), moment
    whole = moment.replace(microsecond=0)
    return int(whole.timestamp()), whole


#: One data set and one query.
scenarios = st.fixed_dictionaries(
    {
        "readings": st.lists(
            st.tuples(st.sampled_from(SENSORS), times(), st.integers(-5, 5)), max_size=40
        ),
        "sensor": st.sampled_from(SENSORS),
        "window": st.tuples(times(), times()).map(lambda p: sorted(p, key=lambda t: t[1])),
        "forward": st.booleans(),
        "limit": st.none() | st.integers(1, 30),
        "page_size": st.none() | st.integers(1, 7),
        "resume_after": st.none() | st.integers(0, 30),
        "entity": st.tuples(st.sampled_from(["", "s1", "ünï"]), entity_keys).map("".join),
        "shards": st.integers(1, 64),
        "secret": st.sampled_from([None, "s3cret"]),
        # earlier buckets' counts (a past count change), boundaries inside the six hours
        "counts_before": st.none()
        | st.dictionaries(
            st.integers(12, 19).map(lambda hour: f"2023-10-27T{hour:02d}"),
            st.integers(1, 64),
            max_size=3,
        ),
    }
)


def _sensor(scenario: dict[str, Any], name: str) -> str:
    return scenario.get("entity", "drawn") if name == DRAWN else name


def _spread() -> dict[str, Any]:
    """Thirty readings of s1 and s10 over six hours, given with offsets, read newest first."""
    east = timezone(timedelta(hours=5, minutes=30))
    readings = []
    for n in range(30):
        moment = BASE + timedelta(minutes=12 * n, microseconds=n)
        readings.append(("s1", (moment.astimezone(east).isoformat(), moment), n))
        readings.append(("s10", (moment, moment), -n))
    low, high = BASE + timedelta(minutes=30), BASE + timedelta(hours=5, seconds=1)
    return {
        "readings": readings,
        "sensor": "s1",
        "window": [(low.astimezone(east), low), (high.isoformat(), high)],
        "forward": False,
        "limit": 17,
        "page_size": None,
        "resume_after": 5,
    }


#: A scenario with many readings over every bucket, a limit and a resume.
SPREAD = _spread()
#: The same over two past count changes: 3 shards before 14:00, 7 until 16:00, then 10.
SPREAD_CHANGED = {
    **SPREAD,
    "shards": 10,
    "counts_before": {"2023-10-27T14": 3, "2023-10-27T16": 7},
}


def _plain(sensor: str, scenario: dict[str, Any]) -> list[tuple[datetime, int]]:
    (_, low), (_, high) = scenario["window"]
    found = PlainReading.query(
        sensor,
        PlainReading.timestamp.between(low, high),
        scan_index_forward=scenario["forward"],
        limit=scenario["limit"],
        page_size=scenario["page_size"],
    )
    return [(r.timestamp, int(r.value)) for r in found]


def _series(model: Any, sensor: str, scenario: dict[str, Any]) -> list[tuple[datetime, int]]:
    """Read, stopping after ``resume_after`` items and resuming from the cursor."""
    (low, _), (high, _) = scenario["window"]
    options: dict[str, Any] = {
        "scan_index_forward": scenario["forward"],
        "limit": scenario["limit"],
        "page_size": scenario["page_size"],
    }
    first = model.query_series(sensor, low, high, **options)
    stop = scenario["resume_after"]
    seen = [(r.timestamp, int(r.value)) for r in itertools.islice(first, stop)]
    cursor = first.last_evaluated_key
    if stop is None or cursor is None:
        return seen
    if options["limit"] is not None:
        options["limit"] -= len(seen)
        if options["limit"] <= 0:
            return seen
    rest = model.query_series(sensor, low, high, last_evaluated_key=cursor, **options)
    return seen + [(r.timestamp, int(r.value)) for r in rest]


def check_series_equivalence(scenario: dict[str, Any]) -> None:
    """Both models store the same readings and return the same ones, in the same order.

    The series model has the scenario's 1 to 64 shards per hour (and earlier buckets'
    counts) and cursor secret (or none); sensor ids include one drawn from any text
    without ``#``.
    """
    run = next(_runs)
    model = series_model(
        scenario.get("shards", 10), scenario.get("secret"), scenario.get("counts_before")
    )
    # one reading per (sensor, time), the last drawn: a batch may not name a key twice
    readings = {
        (_sensor(scenario, s), moment): (_sensor(scenario, s), given, v)
        for s, (given, moment), v in scenario["readings"]
    }
    with PlainReading.batch_write() as plain, model.batch_write() as series:
        for (_, moment), (sensor, given, value) in readings.items():
            plain.save(PlainReading(sensor_id=f"{run}-{sensor}", timestamp=moment, value=value))
            series.save(model(sensor_id=f"{run}-{sensor}", timestamp=given, value=value))
    sensor = f"{run}-{_sensor(scenario, scenario['sensor'])}"
    expected = _plain(sensor, scenario)
    assert _series(model, sensor, scenario) == expected
    if scenario is SPREAD or scenario is SPREAD_CHANGED:
        assert len(expected) == 17
    (low, low_utc), (high, high_utc) = scenario["window"]
    plain_count = PlainReading.count(sensor, PlainReading.timestamp.between(low_utc, high_utc))
    assert model.count_series(sensor, low, high) == plain_count
    for given, moment in scenario["window"]:
        assert to_utc("t", given) == moment
