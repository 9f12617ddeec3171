"""The sharded-vs-unsharded equivalence check, shared by the moto and dynalite suites."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st

from tests.models import PlainEvent, RandomEvent

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
    }
)


def _conditions(model: Any, scenario: dict[str, Any]) -> tuple[Any, Any]:
    low, high = scenario["bounds"]
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


def _read(model: Any, key: str, scenario: dict[str, Any]) -> list[tuple[int, str]]:
    """Read with an optional stop-and-resume: the list a caller would see."""
    range_condition, filter_condition = _conditions(model, scenario)
    kwargs = {
        "range_key_condition": range_condition,
        "filter_condition": filter_condition,
        "scan_index_forward": scenario["forward"],
        "limit": scenario["limit"],
        "page_size": scenario["page_size"],
    }
    stop = scenario["resume_after"]
    if stop is None or not isinstance(model, type) or model is PlainEvent:
        return [(e.timestamp, e.event_type) for e in model.query(key, **kwargs)]
    first = model.query(key, **kwargs)
    seen = [(e.timestamp, e.event_type) for e in itertools.islice(first, stop)]
    cursor = first.last_evaluated_key
    if cursor is None:
        return seen
    if scenario["limit"] is not None:
        kwargs["limit"] = scenario["limit"] - len(seen)
        if kwargs["limit"] <= 0:
            return seen
    rest = model.query(key, last_evaluated_key=cursor, **kwargs)
    return seen + [(e.timestamp, e.event_type) for e in rest]


def check_equivalence(scenario: dict[str, Any]) -> None:
    """A sharded model returns exactly what the unsharded reference returns, in order."""
    key = f"eq-{next(_keys)}"
    with PlainEvent.batch_write() as plain, RandomEvent.batch_write() as sharded:
        for ts in scenario["timestamps"]:
            kind = "odd" if ts % 2 else "even"
            plain.save(PlainEvent(user_id=key, timestamp=ts, event_type=kind))
            sharded.save(RandomEvent(user_id=key, timestamp=ts, event_type=kind))
    expected = _read(PlainEvent, key, scenario)
    assert _read(RandomEvent, key, scenario) == expected
    range_condition, filter_condition = _conditions(RandomEvent, scenario)
    plain_count = PlainEvent.count(key, range_condition, filter_condition)
    assert RandomEvent.count(key, range_condition, filter_condition) == plain_count


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
    scenario: dict[str, Any], growths: list[int], shrink: int | None, compact: bool
) -> None:
    """A dynamic key returns exactly what the unsharded reference returns, in order.

    Args:
        scenario: one of ``scenarios``: the data set and the query.
        growths: positions in the data set before which the key grows once each (a
            position at or past the end grows after the last write).
        shrink: after every write, lower the live count to this, clamped below the live
            count (no shrink when None or when the key never grew).
        compact: after the shrink, move the retired shards' items into the live ones.
    """
    from hypothesis import event

    from tests.models import DynamicEvent

    key = f"dyn-{next(_keys)}"
    directory = DynamicEvent._shard_directory
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
            DynamicEvent(user_id=key, timestamp=ts, event_type=_kind(ts)).save()
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
    assert _read(DynamicEvent, key, scenario) == expected
    range_condition, filter_condition = _conditions(DynamicEvent, scenario)
    plain_count = PlainEvent.count(key, range_condition, filter_condition)
    assert DynamicEvent.count(key, range_condition, filter_condition) == plain_count
    wanted = [(key, ts) for ts in timestamps] + [(key, 501)]  # 501 is never written
    found = sorted((e.timestamp, e.event_type) for e in DynamicEvent.batch_get(wanted))
    assert found == sorted((ts, _kind(ts)) for ts in timestamps)
