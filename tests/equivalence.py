"""The sharded-vs-unsharded equivalence check, shared by the moto and dynalite suites."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

from shardmodel.engine import sharding_of
from tests.apis import SYNC, SyncApi
from tests.models import HashedEvent, IsoEvent, PlainEvent, PlainIsoEvent, RandomEvent

_keys = itertools.count()

#: One data set and one query: items (unique sort keys), conditions, direction, paging.
scenarios = st.fixed_dictionaries(
    {
        "timestamps": st.lists(st.integers(0, 500), unique=True, max_size=60),
        "range": st.sampled_from(["none", "gt", "lt", "between", "eq"]),
        "bounds": st.tuples(st.integers(0, 500), st.integers(0, 500)).map(sorted),
        "filter": st.sampled_from([None, "odd", "even"]),
        "forward": st.booleans(),
        "limit": st.none() | st.integers(1, 70),
        "page_size": st.none() | st.integers(1, 25),
        "resume_after": st.none() | st.integers(0, 60),
        # numbers DynamoDB treats as equal, written in the forms PynamoDB sends: an int
        # ("250"), a float ("250.0") or, scaled up, a float in exponent form ("2.5e+18")
        "scale": st.sampled_from([1, 10**16]),
        "forms": st.lists(st.sampled_from(["int", "float"]), min_size=60, max_size=60),
        "bound_form": st.sampled_from(["int", "float"]),
    }
)


def _number(scenario: dict[str, Any], ts: int, form: str) -> int | float:
    """A timestamp as written: scaled, then as an int or a float (the same DynamoDB number)."""
    value = ts * scenario.get("scale", 1)
    return float(value) if form == "float" else value


def _conditions(model: Any, scenario: dict[str, Any]) -> tuple[Any, Any]:
    form = scenario.get("bound_form", "int")
    low, high = (_number(scenario, ts, form) for ts in scenario["bounds"])
    attr = model.timestamp
    range_condition = {
        "none": None,
        "gt": attr > low,
        "lt": attr < high,
        "between": attr.between(low, high),
        "eq": attr == low,
    }[scenario["range"]]
    kind = scenario["filter"]
    return range_condition, None if kind is None else model.event_type == kind


def _read(
    model: Any, key: str, scenario: dict[str, Any], api: SyncApi = SYNC
) -> list[tuple[int, str]]:
    """Read with an optional stop-and-resume: the list a caller would see.

    ``api`` reads the sharded models (the plain reference is always read directly); a
    resumed read may change API at the cursor (see ``tests/apis.py``).
    """
    range_condition, filter_condition = _conditions(model, scenario)
    kwargs = {
        "range_key_condition": range_condition,
        "filter_condition": filter_condition,
        "scan_index_forward": scenario["forward"],
        "limit": scenario["limit"],
        "page_size": scenario["page_size"],
    }
    stop = scenario["resume_after"]
    if model is PlainEvent:
        return [(e.timestamp, e.event_type) for e in model.query(key, **kwargs)]
    if stop is None:
        return [(e.timestamp, e.event_type) for e in api.model(model).query(key, **kwargs)]
    model, resuming = api.resumed(model)
    first = model.query(key, **kwargs)
    seen = [(e.timestamp, e.event_type) for e in itertools.islice(first, stop)]
    cursor = first.last_evaluated_key
    if cursor is None:
        return seen
    if scenario["limit"] is not None:
        kwargs["limit"] = scenario["limit"] - len(seen)
        if kwargs["limit"] <= 0:
            return seen
    rest = resuming.query(key, last_evaluated_key=cursor, **kwargs)
    return seen + [(e.timestamp, e.event_type) for e in rest]


def check_equivalence(scenario: dict[str, Any], api: SyncApi = SYNC) -> None:
    """Sharded models return exactly what the unsharded reference returns, in order.

    The plain model gets every number as an int; RandomEvent and HashedEvent get each in
    the scenario's form, and HashedEvent gets every item a second time in the other form
    (the same DynamoDB key: it must overwrite, not duplicate). Point reads ask in the
    other form too. ``api`` writes and reads the sharded models (``tests/apis.py``).
    """
    key = f"eq-{next(_keys)}"
    timestamps = scenario["timestamps"]
    forms = scenario["forms"]
    written = list(zip(timestamps, forms, strict=False))
    with (
        PlainEvent.batch_write() as plain,
        api.model(RandomEvent).batch_write() as randomly,
        api.model(HashedEvent).batch_write() as hashed,
    ):
        for ts, form in written:
            kind = _kind(ts)
            plain.save(
                PlainEvent(user_id=key, timestamp=_number(scenario, ts, "int"), event_type=kind)
            )
            randomly.save(
                RandomEvent(user_id=key, timestamp=_number(scenario, ts, form), event_type=kind)
            )
            hashed.save(
                HashedEvent(user_id=key, timestamp=_number(scenario, ts, form), event_type="x")
            )
    # the same keys again in the other form: one batch may not name a key twice
    with api.model(HashedEvent).batch_write() as hashed:
        for ts, form in written:
            other = _number(scenario, ts, "int" if form == "float" else "float")
            hashed.save(HashedEvent(user_id=key, timestamp=other, event_type=_kind(ts)))
    expected = _read(PlainEvent, key, scenario)
    range_condition, filter_condition = _conditions(PlainEvent, scenario)
    plain_count = PlainEvent.count(key, range_condition, filter_condition)
    for model in (RandomEvent, HashedEvent):
        assert _read(model, key, scenario, api) == expected, model.__name__
        range_condition, filter_condition = _conditions(model, scenario)
        counted = api.model(model).count(key, range_condition, filter_condition)
        assert counted == plain_count, model.__name__
    asked = [
        (key, _number(scenario, ts, "int" if form == "float" else "float"))
        for ts, form in zip(timestamps, forms, strict=False)
    ]
    want = sorted((_number(scenario, ts, "int"), _kind(ts)) for ts in timestamps)
    for model in (RandomEvent, HashedEvent):
        got = sorted((e.timestamp, e.event_type) for e in api.model(model).batch_get(asked))
        assert got == want, model.__name__
    for ts, number in [(ts, n) for (_, n), ts in zip(asked[:3], timestamps, strict=False)]:
        assert api.model(RandomEvent).get(key, number).event_type == _kind(ts)
        assert api.model(HashedEvent).get(key, number).event_type == _kind(ts)
    _check_scans(key, scenario, api)


def _check_scans(key: str, scenario: dict[str, Any], api: SyncApi = SYNC) -> None:
    """Scans (with the scenario's filter, and with one on a number) see the same items."""

    def scanned(model: Any) -> list[tuple[int, str]]:
        kind = scenario["filter"]
        low = _number(scenario, scenario["bounds"][0], scenario.get("bound_form", "int"))
        condition = model.timestamp >= low
        if kind is not None:
            condition &= model.event_type == kind
        found = model.scan(condition, page_size=scenario["page_size"])
        return sorted((e.timestamp, e.event_type) for e in found if e.user_id == key)

    expected = scanned(PlainEvent)
    for model in (RandomEvent, HashedEvent):
        assert scanned(api.model(model)) == expected, f"{model.__name__}.scan"


def _kind(ts: int) -> str:
    return "odd" if ts % 2 else "even"


def _dynamic_placement(key: str) -> dict[int, int]:
    """Timestamp to the shard its one stored copy sits on, read raw shard by shard.

    Reads two shards past the readable count too: nothing may be stored there.
    """
    from tests.models import DynamicEvent

    metadata = DynamicEvent.shard_metadata(key)
    readable = 1 if metadata is None else metadata.readable
    connection = DynamicEvent._get_connection()
    placed: dict[int, int] = {}
    for shard in range(readable + 2):
        start = None
        while True:
            page = connection.query(f"{key}#{shard}", exclusive_start_key=start)
            for raw in page.get("Items", []):
                timestamp = int(raw["timestamp"]["N"])
                assert timestamp not in placed, f"{timestamp} is stored on two shards"
                placed[timestamp] = shard
            start = page.get("LastEvaluatedKey")
            if not start:
                break
    return placed


def check_dynamic_equivalence(
    scenario: dict[str, Any],
    growths: list[int],
    shrink: int | None,
    compact: bool,
    api: SyncApi = SYNC,
) -> None:
    """A dynamic key returns exactly what the unsharded reference returns, in order.

    Args:
        scenario: one of ``scenarios``: the data set and the query.
        growths: positions in the data set before which the key grows once each (a
            position at or past the end grows after the last write).
        shrink: after every write, lower the live count to this, clamped below the live
            count (no shrink when None or when the key never grew).
        compact: after the shrink, move the retired shards' items into the live ones.
        api: writes and reads the dynamic key (``tests/apis.py``).
    """
    from hypothesis import event

    from tests.models import DynamicEvent

    key = f"dyn-{next(_keys)}"
    directory = sharding_of(DynamicEvent).directory
    assert directory is not None
    timestamps = scenario["timestamps"]
    with PlainEvent.batch_write() as plain:
        for ts in timestamps:
            plain.save(PlainEvent(user_id=key, timestamp=ts, event_type=_kind(ts)))
    plan = [min(position, len(timestamps)) for position in growths]
    live = 1
    live_at: dict[int, int] = {}  # timestamp -> the live count when it was saved
    for position in range(len(timestamps) + 1):
        for _ in range(plan.count(position)):
            seen = directory.lookup(key) or directory.create(key)
            grown = directory.grow(key, seen)
            assert grown.number_of_shards > seen.number_of_shards  # cooldown 0: it grows
            live = grown.number_of_shards
        if position < len(timestamps):
            ts = timestamps[position]
            api.save(DynamicEvent(user_id=key, timestamp=ts, event_type=_kind(ts)))
            live_at[ts] = live
    placed = _dynamic_placement(key)
    assert sorted(placed) == sorted(timestamps)
    assert all(placed[ts] < live_at[ts] for ts in timestamps), "a write missed the live count"
    if sum(1 for ts in timestamps if live_at[ts] > 1) >= 30:
        # sanity: a grown key really spreads (30 items on one shard of 2+: p < 2**-29)
        assert len(set(placed.values())) > 1
    event(f"dynamic: {live} live shards")
    if shrink is not None and live > 1:
        event("dynamic: shrunk and compacted" if compact else "dynamic: shrunk")
        target = min(shrink, live - 1)
        DynamicEvent.shrink_shards(key, target)
        metadata = DynamicEvent.shard_metadata(key)
        assert metadata is not None
        assert (metadata.number_of_shards, metadata.readable) == (target, live)
        if compact:
            retired = sum(1 for shard in placed.values() if shard >= target)
            assert DynamicEvent.compact_shards(key, grace=0) == retired
            metadata = DynamicEvent.shard_metadata(key)
            assert metadata is not None and metadata.readable == target
            after = _dynamic_placement(key)
            assert sorted(after) == sorted(timestamps)
            assert max(after.values(), default=0) < target
    expected = _read(PlainEvent, key, scenario)
    assert _read(DynamicEvent, key, scenario, api) == expected
    range_condition, filter_condition = _conditions(DynamicEvent, scenario)
    plain_count = PlainEvent.count(key, range_condition, filter_condition)
    dynamic = api.model(DynamicEvent)
    assert dynamic.count(key, range_condition, filter_condition) == plain_count
    wanted = [(key, ts) for ts in timestamps] + [(key, 501)]  # 501 is never written
    found = sorted((e.timestamp, e.event_type) for e in dynamic.batch_get(wanted))
    assert found == sorted((ts, _kind(ts)) for ts in timestamps)


_ISO_START = datetime(2024, 3, 10, tzinfo=timezone.utc)
_UTC_FORMS = ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S+00:00", "%Y-%m-%dT%H:%M:%S.%fZ")

#: ISO 8601 string sort keys: stored in UTC (three textual forms), queried with bounds at
#: any offset DynamoDB users write (-12:00 .. +14:00), compared by DynamoDB as text.
iso_scenarios = st.fixed_dictionaries(
    {
        "times": st.lists(
            st.tuples(st.integers(0, 10 * 24 * 60), st.sampled_from(_UTC_FORMS)),
            unique_by=lambda t: t[0],
            max_size=40,
        ),
        "bounds": st.tuples(
            st.integers(-24 * 60, 11 * 24 * 60), st.integers(-24 * 60, 11 * 24 * 60)
        ),
        "offsets": st.tuples(st.integers(-12 * 60, 14 * 60), st.integers(-12 * 60, 14 * 60)),
        "range": st.sampled_from(["between", "ge-with-time-range", "le-with-time-range"]),
        "forward": st.booleans(),
        "limit": st.none() | st.integers(1, 45),
        "resume_after": st.none() | st.integers(0, 40),
    }
)


def _iso_bound(minutes: int, offset: int) -> str:
    moment = _ISO_START + timedelta(minutes=minutes)
    return moment.astimezone(timezone(timedelta(minutes=offset))).isoformat()


def check_iso_equivalence(scenario: dict[str, Any], api: SyncApi = SYNC) -> None:
    """A time-bucketed ISO string key returns exactly what the unsharded reference does."""
    key = f"iso-{next(_keys)}"
    stored = sorted(
        {(_ISO_START + timedelta(minutes=m)).strftime(form) for m, form in scenario["times"]}
    )
    with PlainIsoEvent.batch_write() as plain, api.model(IsoEvent).batch_write() as sharded:
        for at in stored:
            plain.save(PlainIsoEvent(user_id=key, at=at, event_type="e"))
            sharded.save(IsoEvent(user_id=key, at=at, event_type="e"))
    low, high = sorted(
        _iso_bound(m, o) for m, o in zip(scenario["bounds"], scenario["offsets"], strict=True)
    )
    far = (_ISO_START - timedelta(days=3), _ISO_START + timedelta(days=14))
    kind = scenario["range"]

    def read(model: Any) -> list[str]:
        kwargs: dict[str, Any] = {
            "scan_index_forward": scenario["forward"],
            "limit": scenario["limit"],
        }
        if kind == "between":
            kwargs["range_key_condition"] = model.at.between(low, high)
        elif kind == "ge-with-time-range":
            kwargs["range_key_condition"] = model.at >= low
        else:
            kwargs["range_key_condition"] = model.at <= high
        if model is IsoEvent and kind != "between":
            kwargs["time_range"] = far
        stop = scenario["resume_after"]
        reader, resuming = (model, model) if model is PlainIsoEvent else api.resumed(model)
        first = reader.query(key, **kwargs)
        if model is PlainIsoEvent or stop is None:
            return [e.at for e in first]
        seen = [e.at for e in itertools.islice(first, stop)]
        cursor = first.last_evaluated_key
        if cursor is None:
            return seen
        if kwargs["limit"] is not None:
            kwargs["limit"] -= len(seen)
            if kwargs["limit"] <= 0:
                return seen
        return seen + [e.at for e in resuming.query(key, last_evaluated_key=cursor, **kwargs)]

    assert read(IsoEvent) == read(PlainIsoEvent)
