"""The counter-model equivalence check, shared by the moto and dynalite suites.

A counter model (``Tally``: increments spread over 5 shards) must read exactly like a
plain PynamoDB model (``PlainTally``) holding the logical totals: ``get``,
``batch_get``, ``query``, ``count`` and ``scan`` (whole and in parallel segments), with
and without filters, on counters and on other attributes. The plain model's filters
run on the server; the counter model's run on the summed items on the client.
"""

from __future__ import annotations

import itertools
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st
from pynamodb.expressions.condition import size as sized_untyped

from tests.apis import SYNC, SyncApi
from tests.models import PlainTally, Tally
from tests.support import raw_items

_keys = itertools.count()


def sized(attribute: Any) -> Any:
    """PynamoDB's size() (untyped there)."""
    return sized_untyped(attribute)  # type: ignore[no-untyped-call]


#: One amount in the forms a caller may pass: 1, 1.0, Decimal('1E+0'), halves, negatives.
amounts = st.integers(-40, 40).flatmap(
    lambda n: st.sampled_from(
        [n, float(n), Decimal(f"{n}E+0"), Decimal(f"{n * 10}E-1"), n + 0.5, Decimal(n) / 4]
    )
)
increments = st.fixed_dictionaries({}, optional={"hits": amounts, "amount": amounts}).filter(bool)
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

scenarios = st.fixed_dictionaries(
    {
        "items": st.dictionaries(
            st.integers(0, 40),
            st.tuples(
                st.lists(increments, max_size=5),
                st.sampled_from([None, "odd", "even", "other"]),
            ),
            max_size=12,
        ),
        "filter": st.sampled_from(FILTERS),
        "threshold": amounts,
        "range": st.sampled_from(["none", "gt", "between"]),
        "bounds": st.tuples(st.integers(0, 40), st.integers(0, 40)).map(sorted),
        "forward": st.booleans(),
        "limit": st.none() | st.integers(1, 14),
        "segments": st.integers(1, 4),
    }
)


def _filter(model: Any, scenario: dict[str, Any]) -> Any:
    kind = scenario["filter"]
    if kind is None:
        return None
    x = float(scenario["threshold"])  # PynamoDB serializes condition numbers with json
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


def _row(item: Any) -> tuple[Any, ...]:
    """What a caller sees of an item; numbers compared by value."""

    def number(value: Any) -> Decimal | None:
        return None if value is None else Decimal(str(value))

    return (item.board, number(item.slot), number(item.hits), number(item.amount), item.kind)


def _clear() -> None:
    """Empty both tables (a previous example's items would show in scans)."""
    for model in (Tally, PlainTally):
        connection = model._get_connection()
        for raw in raw_items(model):
            connection.delete_item(raw["board"]["S"], range_key=raw["slot"]["N"])


def _store(key: str, scenario: dict[str, Any], api: SyncApi) -> None:
    tally = api.model(Tally)
    for slot, (adds, kind) in scenario["items"].items():
        totals: dict[str, Decimal] = {}
        for amounts_of in adds:
            tally.add(key, slot, **amounts_of)
            for name, value in amounts_of.items():
                totals[name] = totals.get(name, Decimal(0)) + Decimal(str(value))
        if kind is not None:
            api.save(Tally(board=key, slot=slot, kind=kind))
        if adds or kind is not None:
            PlainTally(
                board=key,
                slot=slot,
                hits=_plain_number(totals.get("hits")),
                amount=_plain_number(totals.get("amount")),
                kind=kind,
            ).save()


def _plain_number(total: Decimal | None) -> float | int | None:
    """A total as PynamoDB serializes it (json: no Decimal); quarters are exact floats."""
    if total is None:
        return None
    return int(total) if total == total.to_integral_value() else float(total)


def _scan(model: Any, scenario: dict[str, Any], flt: Any) -> list[tuple[Any, ...]]:
    segments = scenario["segments"]
    found: list[tuple[Any, ...]] = []
    for segment in range(segments):
        parts = {"segment": segment, "total_segments": segments} if segments > 1 else {}
        found.extend(_row(i) for i in model.scan(flt, **parts))
    return sorted(found, key=repr)


def check_counter_equivalence(scenario: dict[str, Any], api: SyncApi = SYNC) -> None:
    """Tally returns exactly what PlainTally holding the totals returns.

    ``api`` adds to, writes and reads Tally (``tests/apis.py``).
    """
    _clear()
    key = f"tally-{next(_keys)}"
    _store(key, scenario, api)
    tally = api.model(Tally)
    pairs = [(tally, _filter(Tally, scenario)), (PlainTally, _filter(PlainTally, scenario))]
    (sharded, sharded_filter), (plain, plain_filter) = pairs
    query = {"scan_index_forward": scenario["forward"], "limit": scenario["limit"]}
    expected = [_row(i) for i in plain.query(key, _range(plain, scenario), plain_filter, **query)]
    got = [_row(i) for i in sharded.query(key, _range(sharded, scenario), sharded_filter, **query)]
    assert got == expected
    plain_count = plain.count(key, _range(plain, scenario), plain_filter)
    assert sharded.count(key, _range(sharded, scenario), sharded_filter) == plain_count
    assert _scan(sharded, scenario, sharded_filter) == _scan(plain, scenario, plain_filter)
    wanted = [(key, slot) for slot in scenario["items"]] + [(key, 99)]  # 99: never written
    got_batch = sorted((_row(i) for i in sharded.batch_get(wanted)), key=repr)
    assert got_batch == sorted((_row(i) for i in plain.batch_get(wanted)), key=repr)
    for slot in list(scenario["items"])[:2]:
        try:
            want: Any = _row(plain.get(key, slot))
        except plain.DoesNotExist:
            want = None
        try:
            have: Any = _row(sharded.get(key, slot))
        except sharded.DoesNotExist:
            have = None
        assert have == want
