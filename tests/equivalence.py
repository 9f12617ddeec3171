"""The sharded-vs-unsharded equivalence check, shared by the moto and dynalite suites."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import strategies as st

from shardmodel import CursorError, ShardedModel
from shardmodel.engine import sharding_of
from tests.apis import SYNC, SyncApi
from tests.models import (
    CursorSecret,
    PlainEvent,
    PlainIsoEvent,
    event_model,
    iso_model,
    plain_event_model,
)
from tests.strategies import close_number, logical_keys

_keys = itertools.count()

#: How a scenario's indexes (0 .. 500) become sort key numbers, in the same order:
#: ``int``: index x scale (1, or 10**16: "2.5e+18" as a float); ``close``: 38-digit
#: numbers sharing their first 17 digits (a float cannot tell them apart), positive or
#: negative, at any exponent; ``signed``: multiples of a step (up to 37 digits) that
#: cross zero.
number_families = st.one_of(
    st.fixed_dictionaries({"family": st.just("int"), "scale": st.sampled_from([1, 10**16])}),
    st.fixed_dictionaries(
        {
            "family": st.just("close"),
            "prefix": st.integers(10**16, 10**17 - 1),
            "base": st.integers(0, 10**20),
            "step": st.integers(1, 10**18),
            "exponent": st.integers(-60, 40),
            "negative": st.booleans(),
        }
    ),
    st.fixed_dictionaries(
        {
            "family": st.just("signed"),
            "step": st.integers(1, 10**34),
            "exponent": st.integers(-60, 40),
        }
    ),
)

#: The forms a number is written in (all one DynamoDB number): PynamoDB's json int and
#: float (where the number is one), a plain Decimal, a Decimal in exponent form
#: (``1.5E+40``) and one with trailing zeros (``2.50``).
FORMS = ["int", "float", "decimal", "exponent", "trailing"]

#: Cursor secrets (``Meta.cursor_secret``): none, text and bytes.
SECRETS: list[CursorSecret] = [None, "s3cret", "clé ü 🔑", b"\x00\xffbinary"]

#: Scan filters on the sharded key, by name: (model, this example's key) -> condition.
KEY_FILTERS: dict[str, Any] = {
    "eq": lambda m, key: m.user_id == key,
    "ne": lambda m, key: (m.user_id != key) & (m.event_type == "odd"),
    "prefix": lambda m, key: m.user_id.startswith(key),
    "in": lambda m, key: m.user_id.is_in(key, f"{key}#0", "nobody"),
    "between": lambda m, key: m.user_id.between(key, f"{key}#"),
    "above": lambda m, key: (m.user_id > key) & (m.timestamp < 50),
    "or": lambda m, key: (m.user_id == key) | (m.event_type == "even"),
    "not": lambda m, key: ~(m.user_id == key) & m.user_id.contains("q-"),
}

#: One data set and one query: items (unique sort keys), conditions, direction, paging;
#: the logical key, the shard counts, the cursor secrets and a scan filter on the key.
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
        "numbers": number_families,
        "forms": st.lists(st.sampled_from(FORMS), min_size=60, max_size=60),
        "bound_form": st.sampled_from(FORMS),
        "key": logical_keys,
        "random_shards": st.integers(1, 64),
        "hashed_shards": st.integers(1, 64),
        # the model's secret and another one: a cursor signed with one is refused by the other
        "secrets": st.lists(st.integers(0, len(SECRETS) - 1), min_size=2, max_size=2, unique=True),
        # a scan filter on the sharded key itself (stored as eq-1#7, compared as eq-1)
        "key_filter": st.sampled_from(sorted(KEY_FILTERS)),
    }
)

_INT_NUMBERS = {"family": "int", "scale": 1}

#: Sixty negative 38-digit numbers a float cannot tell apart, over 3 random and 7 hashed
#: shards, read newest first with a limit, small pages and a stop-and-resume under a
#: secret: merged by float, the shards' items interleave out of order.
CLOSE = {
    "timestamps": list(range(0, 240, 4)),
    "range": "between",
    "bounds": [8, 200],
    "filter": None,
    "forward": False,
    "limit": 40,
    "page_size": 7,
    "resume_after": 15,
    "numbers": {
        "family": "close",
        "prefix": 12345678901234567,
        "base": 10**19,
        "step": 3,
        "exponent": -25,
        "negative": True,
    },
    "forms": FORMS * 12,
    "bound_form": "exponent",
    "key": "Ünï #3 ✓",
    "random_shards": 3,
    "hashed_shards": 7,
    "secrets": [1, 0],
}


def _value(scenario: dict[str, Any], ts: int) -> Decimal:
    """The exact number of index ``ts``: larger indexes are larger numbers."""
    numbers = scenario.get("numbers", _INT_NUMBERS)
    family = numbers["family"]
    if family == "int":
        return Decimal(ts * numbers["scale"])
    if family == "close":
        negative = numbers["negative"]
        tail = numbers["base"] + (500 - ts if negative else ts) * numbers["step"]
        return close_number(numbers["prefix"], tail, numbers["exponent"], negative)
    return Decimal(f"{(ts - 250) * numbers['step']}E{numbers['exponent']}")


def _number(scenario: dict[str, Any], ts: int, form: str) -> int | float | Decimal:
    """A number as written: one of ``FORMS`` (a Decimal where int or float cannot hold it)."""
    value = _value(scenario, ts)
    plain = format(value, "f")
    if form == "int" and value == value.to_integral_value():
        return int(value)
    # a float is written as its shortest repr (json.dumps), which must name the number
    # itself: 4.0532396646334464e28 is exact in binary but written 4.053239664633446e+28
    if form == "float" and Decimal(repr(float(value))) == value:
        return float(value)
    if form == "exponent":
        return Decimal(f"{value:E}")
    if form == "trailing":
        return Decimal(f"{plain}00" if "." in plain else f"{plain}.0")
    return Decimal(plain)


def _other(form: str) -> str:
    """Another form of the same number."""
    return FORMS[(FORMS.index(form) + 1) % len(FORMS)]


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


def _query_options(model: Any, scenario: dict[str, Any]) -> dict[str, Any]:
    range_condition, filter_condition = _conditions(model, scenario)
    return {
        "range_key_condition": range_condition,
        "filter_condition": filter_condition,
        "scan_index_forward": scenario["forward"],
        "limit": scenario["limit"],
        "page_size": scenario["page_size"],
    }


def _rows(items: Any) -> list[tuple[Any, str]]:
    return [(e.timestamp, e.event_type) for e in items]


def _read(
    model: Any,
    key: str,
    scenario: dict[str, Any],
    api: SyncApi = SYNC,
    foreign: Any = None,
) -> list[tuple[Any, str]]:
    """Read with an optional stop-and-resume: the list a caller would see.

    ``api`` reads the sharded models (the plain reference is always read directly); a
    resumed read may change API at the cursor (see ``tests/apis.py``). Conditions are
    built from ``model`` itself. ``foreign()``: a class of the same query with another
    cursor secret (or none), which must refuse the cursor
    (``tests/property/test_cursor_secrets.py`` checks every pair).
    """
    options = _query_options(model, scenario)
    stop = scenario["resume_after"]
    if not issubclass(model, ShardedModel):  # the reference reads directly, at once
        return _rows(model.query(key, **options))
    if stop is None:
        return _rows(api.model(model).query(key, **options))
    reader, resuming = api.resumed(model)
    first = reader.query(key, **options)
    seen = _rows(itertools.islice(first, stop))
    cursor = first.last_evaluated_key
    if cursor is None:
        return seen
    if foreign is not None:
        other = foreign()
        refusing = api.model(other)
        with pytest.raises(CursorError):
            list(refusing.query(key, last_evaluated_key=cursor, **_query_options(other, scenario)))
    if scenario["limit"] is not None:
        options["limit"] = scenario["limit"] - len(seen)
        if options["limit"] <= 0:
            return seen
    return seen + _rows(resuming.query(key, last_evaluated_key=cursor, **options))


def _secrets(scenario: dict[str, Any]) -> tuple[CursorSecret, CursorSecret]:
    """The model's cursor secret and another one (either may be None)."""
    mine, foreign = (SECRETS[i] for i in scenario.get("secrets", (0, 1)))
    return mine, foreign


def unique_key(prefix: str, scenario: dict[str, Any]) -> str:
    """The scenario's logical key (any text), made unique among the examples of a run."""
    return f"{prefix}{next(_keys)}:{scenario.get('key', '')}"


def check_equivalence(scenario: dict[str, Any], api: SyncApi = SYNC) -> None:
    """Sharded models return exactly what the unsharded reference returns, in order.

    The plain model gets every number in plain form; the random and hashed models (of
    the scenario's shard counts) get each in the scenario's form, and the hashed one
    gets every item a second time in another form (the same DynamoDB key: it must
    overwrite, not duplicate). Point reads ask in the other form too. Sort keys are
    read back exactly (Decimal), so an order a float comparison gets wrong shows. The
    random model has the scenario's cursor secret (or none): it resumes its cursors,
    and a class of the same query with another secret (or none) refuses them.
    ``api`` writes and reads the sharded models (``tests/apis.py``); conditions are
    built from the model classes, and the plain reference is read directly.
    """
    key = unique_key("eq", scenario)
    mine, foreign = _secrets(scenario)
    plain_model = plain_event_model()
    random_shards = scenario.get("random_shards", 10)
    randomly_model = event_model("random", random_shards, mine)
    hashed_model = event_model("hashed", scenario.get("hashed_shards", 8))

    def foreign_model() -> Any:  # built only when a cursor needs it
        return event_model("random", random_shards, foreign)

    # the random model carries the cursor secrets: one class per (count, secret) to build
    sharded: list[tuple[Any, Any]] = [(randomly_model, foreign_model), (hashed_model, None)]
    timestamps = scenario["timestamps"]
    forms = scenario["forms"]
    written = list(zip(timestamps, forms, strict=False))
    with (
        plain_model.batch_write() as plain,
        api.model(randomly_model).batch_write() as randomly,
        api.model(hashed_model).batch_write() as hashed,
    ):
        for ts, form in written:
            kind = _kind(ts)
            number = _number(scenario, ts, "int")
            plain.save(plain_model(user_id=key, timestamp=number, event_type=kind))
            number = _number(scenario, ts, form)
            randomly.save(randomly_model(user_id=key, timestamp=number, event_type=kind))
            hashed.save(hashed_model(user_id=key, timestamp=number, event_type="x"))
    # the same keys again in another form: one batch may not name a key twice
    with api.model(hashed_model).batch_write() as hashed:
        for ts, form in written:
            other = _number(scenario, ts, _other(form))
            hashed.save(hashed_model(user_id=key, timestamp=other, event_type=_kind(ts)))
    expected = _read(plain_model, key, scenario)
    range_condition, filter_condition = _conditions(plain_model, scenario)
    plain_count = plain_model.count(key, range_condition, filter_condition)
    for model, foreign_of in sharded:
        assert _read(model, key, scenario, api, foreign_of) == expected, model.__name__
        range_condition, filter_condition = _conditions(model, scenario)
        counted = api.model(model).count(key, range_condition, filter_condition)
        assert counted == plain_count, model.__name__
    # a dozen keys, each asked in another form: a random key's batch asks every shard
    asked = [
        (key, _number(scenario, ts, _other(form)))
        for ts, form in zip(timestamps[:12], forms, strict=False)
    ]
    want = sorted((_value(scenario, ts), _kind(ts)) for ts in timestamps[:12])
    for model, _ in sharded:
        got = sorted((e.timestamp, e.event_type) for e in api.model(model).batch_get(asked))
        assert got == want, model.__name__
    for ts, number in [(ts, n) for (_, n), ts in zip(asked[:3], timestamps, strict=False)]:
        for model, _ in sharded:
            assert api.model(model).get(key, number).event_type == _kind(ts), model.__name__
    _check_scans(key, scenario, plain_model, [model for model, _ in sharded], api)


def _check_scans(
    key: str, scenario: dict[str, Any], plain: Any, sharded: list[Any], api: SyncApi = SYNC
) -> None:
    """Scans (with the scenario's filter, and with one on a number) see the same items.

    Conditions are built from each model class; ``api`` scans the sharded ones.
    """
    # the tables hold every example's items: pages of at least 25 keep a run's scans
    # near linear in its items (pages of 1 sent one request per stored item)
    page_size = scenario["page_size"] and max(25, scenario["page_size"])

    def reader(model: Any) -> Any:
        return api.model(model) if issubclass(model, ShardedModel) else model

    def scanned(model: Any) -> list[tuple[Any, str]]:
        kind = scenario["filter"]
        low = _number(scenario, scenario["bounds"][0], scenario.get("bound_form", "int"))
        condition = model.timestamp >= low
        if kind is not None:
            condition &= model.event_type == kind
        found = reader(model).scan(condition, page_size=page_size)
        return sorted((e.timestamp, e.event_type) for e in found if e.user_id == key)

    expected = scanned(plain)
    for model in sharded:
        assert scanned(model) == expected, f"{model.__name__}.scan"

    def keyed(model: Any) -> list[tuple[str, int, str]]:
        """A scan filtered on the sharded key: every matching item, of every key."""
        condition = KEY_FILTERS[scenario.get("key_filter", "eq")](model, key)
        found = reader(model).scan(condition, page_size=page_size)
        return sorted((e.user_id, int(e.timestamp), e.event_type) for e in found)

    expected_keyed = keyed(plain)
    for model in sharded:
        assert keyed(model) == expected_keyed, f"{model.__name__}.scan on the key"


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

    # DynamicEvent keeps PynamoDB's json numbers: small ints, written as int or float
    bound_form = scenario.get("bound_form", "int")
    scenario = {
        **scenario,
        "numbers": _INT_NUMBERS,
        "bound_form": bound_form if bound_form in ("int", "float") else "int",
    }
    key = unique_key("dyn", scenario)
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
        "key": logical_keys,
        # a query reads (days covered) x shards partitions: up to 16 keeps it near 200
        "shards": st.integers(1, 16),
    }
)


def _iso_bound(minutes: int, offset: int) -> str:
    moment = _ISO_START + timedelta(minutes=minutes)
    return moment.astimezone(timezone(timedelta(minutes=offset))).isoformat()


def check_iso_equivalence(scenario: dict[str, Any], api: SyncApi = SYNC) -> None:
    """A time-bucketed ISO string key returns exactly what the unsharded reference does.

    The key is any text; each day bucket is spread over the scenario's 1 to 16 shards.
    ``api`` writes and reads the sharded model (``tests/apis.py``); conditions are built
    from the model class, and the plain reference is read directly.
    """
    key = unique_key("iso", scenario)
    sharded = iso_model(scenario.get("shards", 3))
    stored = sorted(
        {(_ISO_START + timedelta(minutes=m)).strftime(form) for m, form in scenario["times"]}
    )
    with PlainIsoEvent.batch_write() as plain, api.model(sharded).batch_write() as batch:
        for at in stored:
            plain.save(PlainIsoEvent(user_id=key, at=at, event_type="e"))
            batch.save(sharded(user_id=key, at=at, event_type="e"))
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
        if model is sharded and kind != "between":
            kwargs["time_range"] = far
        stop = scenario["resume_after"]
        if model is PlainIsoEvent:
            return [e.at for e in model.query(key, **kwargs)]
        if stop is None:
            return [e.at for e in api.model(model).query(key, **kwargs)]
        reader, resuming = api.resumed(model)
        first = reader.query(key, **kwargs)
        seen = [e.at for e in itertools.islice(first, stop)]
        cursor = first.last_evaluated_key
        if cursor is None:
            return seen
        if kwargs["limit"] is not None:
            kwargs["limit"] -= len(seen)
            if kwargs["limit"] <= 0:
                return seen
        return seen + [e.at for e in resuming.query(key, last_evaluated_key=cursor, **kwargs)]

    assert read(sharded) == read(PlainIsoEvent)
