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
