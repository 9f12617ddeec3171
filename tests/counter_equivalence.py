"""The counter-model equivalence check, shared by the moto and dynalite suites.

A counter model (Tally's schema, increments spread over 1 to 64 shards) must read
exactly like a plain PynamoDB model (``PlainTally``) holding the logical totals:
``get``, ``batch_get``, ``query``, ``count`` and ``scan`` (whole and in parallel
segments), with and without filters, on counters and on other attributes. The plain
model's filters run on the server; the counter model's run on the summed items on the
client. Totals are compared with their types, as a PynamoDB user sees them (an
integer total is an ``int``, to the last of 38 digits), and against totals summed
exactly here.
"""

from __future__ import annotations

import itertools
from decimal import Context, Decimal
from typing import Any

from hypothesis import strategies as st
from pynamodb.expressions.condition import size as sized_untyped

from tests.apis import SYNC, SyncApi
from tests.models import PlainTally, Tally, tally_model
from tests.strategies import logical_keys
from tests.support import raw_items

_keys = itertools.count()


def sized(attribute: Any) -> Any:
    """PynamoDB's size() (untyped there)."""
    return sized_untyped(attribute)  # type: ignore[no-untyped-call]


def _small(n: int) -> st.SearchStrategy[Any]:
    """``n`` and nearby amounts in the forms a caller may pass.

    1, 1.0, Decimal('1E+0'), Decimal('1.0'), halves, quarters, and tenths and hundredths
    no float holds exactly (0.1 as a float and as a Decimal).
    """
    forms = [n, float(n), Decimal(f"{n}E+0"), Decimal(f"{n * 10}E-1"), n + 0.5]
    forms += [Decimal(n) / 4, n / 10, Decimal(f"{n}E-1"), Decimal(f"{n}E-2")]
    return st.sampled_from(forms)


def _whole(n: int) -> st.SearchStrategy[Any]:
    """A whole amount as an int, a Decimal, or a Decimal in exponent form."""
    exact = Decimal(n)
    return st.sampled_from([n, exact, Decimal(f"{exact:E}")])


#: Amounts by regime. ``small``: up to 40 with tenths, quarters, halves; ``wide``: also
#: whole amounts past 2**53 and 2**64 (totals to ~24 digits, which every server adds
#: exactly); ``huge``: whole amounts to 10**36 (totals up to 38 digits).
AMOUNTS = {
    "small": st.integers(-40, 40).flatmap(_small),
    "wide": st.integers(-40, 40).flatmap(_small)
    | st.integers(-(10**20), 10**20).flatmap(_whole)
    | st.integers(2**53 - 3, 2**53 + 3).flatmap(_whole),
    "huge": st.integers(-(10**36), 10**36).flatmap(_whole) | st.integers(-40, 40).flatmap(_whole),
}

FILTERS = [
    None,
    "hits_gt",
    "amount_between",
    "kind_eq",
    "kind_ne",
    "hits_ne",
    "kind_exists",
    "hits_missing",
    "or",
    "not",
    "in",
    "begins",
    "size",
]


def _scenarios(regime: str) -> st.SearchStrategy[dict[str, Any]]:
    numbers = AMOUNTS[regime]
    increments = st.fixed_dictionaries({}, optional={"hits": numbers, "amount": numbers})
    return st.fixed_dictionaries(
        {
            "regime": st.just(regime),
            "items": st.dictionaries(
                st.integers(0, 40),
                st.tuples(
                    st.lists(increments.filter(bool), max_size=5),
                    st.sampled_from([None, "odd", "even", "other"]),
                ),
                max_size=12,
            ),
            "filter": st.sampled_from(FILTERS),
            "threshold": numbers,
            "range": st.sampled_from(["none", "gt", "between"]),
            "bounds": st.tuples(st.integers(0, 40), st.integers(0, 40)).map(sorted),
            "forward": st.booleans(),
            "limit": st.none() | st.integers(1, 14),
            "segments": st.integers(1, 4),
            "key": logical_keys,
            "shards": st.integers(1, 64),
        }
    )


scenarios = st.sampled_from(sorted(AMOUNTS)).flatmap(_scenarios)

#: Tenths no float holds, halves summing to a whole total, 2**53 + 1 and a 36-digit
#: total, over 7 shards: summed as floats, every one of them reads wrong.
EXACT_TOTALS = {
    "regime": "example",
    "items": {
        1: (
            [
                {"hits": 0.1},
                {"hits": Decimal("0.1")},
                {"hits": 0.1, "amount": Decimal("0.5")},
                {"amount": 0.5},
                {"amount": Decimal("5E-1")},
            ],
            "odd",
        ),
        2: ([{"hits": 2**53}, {"hits": 1}, {"amount": 10**35}, {"amount": -1}], None),
        3: ([{"hits": -3}, {"hits": Decimal("1.5")}, {"hits": 1.5}], "even"),
    },
    "filter": "hits_gt",
    "threshold": Decimal("0.1"),
    "range": "none",
    "bounds": [0, 40],
    "forward": False,
    "limit": None,
    "segments": 2,
    "key": "ключ #1",
    "shards": 7,
}

#: One shard: moto stores 0.5 + 0.5 as "1.0" (DynamoDB as "1"); get must read the total 1,
#: as batch_get and query do, not PynamoDB's float of the one share.
ONE_SHARE_TOTAL = {
    "regime": "example",
    "items": {0: ([{"hits": 0.5}, {"hits": 0.5}], None)},
    "filter": None,
    "threshold": 0,
    "range": "none",
    "bounds": [0, 0],
    "forward": False,
    "limit": None,
    "segments": 1,
    "key": "0",
    "shards": 1,
}

#: Wide enough that no sum of 38-digit numbers is rounded.
_EXACT = Context(prec=200)


def exact(value: Any) -> Decimal:
    """An amount as the mapper sends it: floats by their shortest text (0.1 is 0.1)."""
    return value if isinstance(value, Decimal) else Decimal(str(value))


def as_read(total: Decimal | None) -> int | float | None:
    """What a plain PynamoDB model returns for a stored total (DynamoDB: canonical text).

    An integer total reads as an ``int`` (exactly), any other as the nearest float.
    """
    if total is None:
        return None
    if total == total.to_integral_value():
        return int(total)
    return float(total)


def _filter(model: Any, scenario: dict[str, Any]) -> Any:
    kind = scenario["filter"]
    if kind is None:
        return None
    # PynamoDB serializes condition numbers with json: an int exactly, else a float
    x = as_read(exact(scenario["threshold"]))
    assert x is not None
    low, high = x, x + 10
    return {
        "hits_gt": lambda: model.hits > x,
        "amount_between": lambda: model.amount.between(low, high),
        "kind_eq": lambda: model.kind == "odd",
        "kind_ne": lambda: model.kind != "odd",
        "hits_ne": lambda: model.hits != x,
        "kind_exists": lambda: model.kind.exists(),
        "hits_missing": lambda: model.hits.does_not_exist(),
        "or": lambda: (model.hits >= x) | (model.kind == "even"),
        "not": lambda: ~(model.amount < x),
        "in": lambda: model.kind.is_in("even", "other"),
        "begins": lambda: model.kind.startswith("o"),
        # moto fails size() of a missing attribute (DynamoDB: false), so guard it
        "size": lambda: model.kind.exists() & (sized(model.kind) > 3),
    }[kind]()


def _range(model: Any, scenario: dict[str, Any]) -> Any:
    low, high = scenario["bounds"]
    return {
        "none": None,
        "gt": model.slot > low,
        "between": model.slot.between(low, high),
    }[scenario["range"]]


def _typed(value: Any) -> tuple[str, Any] | None:
    """A number with its type: 6 and 6.0 differ here, as they do to a caller."""
    return None if value is None else (type(value).__name__, value)


def _row(item: Any) -> tuple[Any, ...]:
    """What a caller sees of an item, numbers with their types."""
    return (item.board, _typed(item.slot), _typed(item.hits), _typed(item.amount), item.kind)


def _clear() -> None:
    """Empty both tables (a previous example's items would show in scans)."""
    for model in (Tally, PlainTally):
        connection = model._get_connection()
        for raw in raw_items(model):
            connection.delete_item(raw["board"]["S"], range_key=raw["slot"]["N"])


def _canonical(total: Decimal) -> Decimal:
    """The total as DynamoDB stores it (``6``, not ``6.0``), exactly."""
    return Decimal(format(total.normalize(_EXACT), "f"))


def _store(
    model: Any, key: str, scenario: dict[str, Any], api: SyncApi = SYNC
) -> list[tuple[Any, ...]]:
    """Add the increments through ``model`` (by ``api``), store the totals in PlainTally.

    Returns the rows a caller must see, from totals summed exactly here.
    """
    tally = api.model(model)
    rows = []
    for slot, (adds, kind) in scenario["items"].items():
        totals: dict[str, Decimal] = {}
        for amounts_of in adds:
            tally.add(key, slot, **amounts_of)
            for name, value in amounts_of.items():
                totals[name] = _EXACT.add(totals.get(name, Decimal(0)), exact(value))
        if kind is not None:
            api.save(model(board=key, slot=slot, kind=kind))
        if adds or kind is not None:
            hits, amount = (totals.get(name) for name in ("hits", "amount"))
            PlainTally(
                board=key,
                slot=slot,
                hits=None if hits is None else _canonical(hits),
                amount=None if amount is None else _canonical(amount),
                kind=kind,
            ).save()
            rows.append((key, _typed(slot), _typed(as_read(hits)), _typed(as_read(amount)), kind))
    return rows


def _scan(model: Any, scenario: dict[str, Any], flt: Any) -> list[tuple[Any, ...]]:
    segments = scenario["segments"]
    found: list[tuple[Any, ...]] = []
    for segment in range(segments):
        parts = {"segment": segment, "total_segments": segments} if segments > 1 else {}
        found.extend(_row(i) for i in model.scan(flt, **parts))
    return sorted(found, key=repr)


def check_counter_equivalence(scenario: dict[str, Any], api: SyncApi = SYNC) -> None:
    """A counter model returns exactly what PlainTally holding the totals returns.

    And every logical item reads with the totals summed exactly here: whole totals as
    ints (past 2**53 and to 38 digits), others as the float PynamoDB reads. ``api``
    adds to, writes and reads the counter model (``tests/apis.py``); its conditions
    and filters are built from the model class itself.
    """
    _clear()
    key = f"tally-{next(_keys)}:{scenario.get('key', '')}"
    model = tally_model(scenario.get("shards", 5))
    want = sorted(_store(model, key, scenario, api), key=repr)
    sharded = api.model(model)
    plain = PlainTally
    sharded_filter, plain_filter = _filter(model, scenario), _filter(plain, scenario)
    query = {"scan_index_forward": scenario["forward"], "limit": scenario["limit"]}
    expected = [_row(i) for i in plain.query(key, _range(plain, scenario), plain_filter, **query)]
    got = [_row(i) for i in sharded.query(key, _range(model, scenario), sharded_filter, **query)]
    assert got == expected
    plain_count = plain.count(key, _range(plain, scenario), plain_filter)
    assert sharded.count(key, _range(model, scenario), sharded_filter) == plain_count
    assert _scan(sharded, scenario, sharded_filter) == _scan(plain, scenario, plain_filter)
    # a filter on the sharded key itself sees logical keys, alone or beside another test
    for on_key in (lambda m: m.board == key, lambda m: (m.board != "x") & (m.slot >= 20)):
        assert _scan(sharded, scenario, on_key(model)) == _scan(plain, scenario, on_key(plain))
    wanted = [(key, slot) for slot in scenario["items"]] + [(key, 99)]  # 99: never written
    got_batch = sorted((_row(i) for i in sharded.batch_get(wanted)), key=repr)
    assert got_batch == want
    assert sorted((_row(i) for i in plain.batch_get(wanted)), key=repr) == want
    for slot in list(scenario["items"])[:2]:
        try:
            expected_row: Any = _row(plain.get(key, slot))
        except plain.DoesNotExist:
            expected_row = None
        try:
            have: Any = _row(sharded.get(key, slot))
        except model.DoesNotExist:
            have = None
        assert have == expected_row
