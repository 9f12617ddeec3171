"""OrderedShards boundaries changed online, on untidy titles, against a plain reference.

Each example draws titles from the ordered suites' alphabet (mixed case, composed and
combining accents, ligatures, CJK, emoji, compatibility characters), new boundaries from
a drawn sample (``OrderedShards.from_sample``), and per phase saves, updates and deletes;
in every phase every read (query both ways, a range between two drawn titles, count,
scan, get, batch_get, paging by a drawn limit) returns what a dict keyed by the stored
(normalized) title holds.
"""

from __future__ import annotations

import warnings
from typing import Any

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from shardmodel import BoundaryWarning, OrderedShards
from shardmodel.migration import Reshard, follow, unfollow
from shardmodel.testing import SimulatedClock, bind_models, create_tables, mock_dynamodb
from tests.migration_models import Title
from tests.ordered_equivalence import key_of, titles
from tests.support import paged
from tests.unit.test_migration import run_phases

SHELF = "shelf"
EXAMPLES = max(6, settings.default.max_examples // 10)

changes = st.fixed_dictionaries(
    {
        "before": st.lists(titles, min_size=1, max_size=12),
        "sample": st.lists(titles, min_size=2, max_size=30),
        "shards": st.integers(2, 5),
        # per phase: (save or update or delete, a title)
        "writes": st.lists(
            st.lists(st.tuples(st.sampled_from(["save", "update", "delete"]), titles), max_size=4),
            min_size=8,
            max_size=8,
        ),
        "bounds": st.tuples(titles, titles),
        "limit": st.integers(1, 5),
    }
)


def _expect(reference: dict[str, str], change: dict[str, Any]) -> None:
    ordered = sorted(reference.items())
    assert [(i.title, i.value) for i in Title.query(SHELF)] == ordered
    backwards = Title.query(SHELF, scan_index_forward=False)
    assert [(i.title, i.value) for i in backwards] == ordered[::-1]
    low, high = sorted(key_of(t) for t in change["bounds"])
    ranged = [i.title for i in Title.query(SHELF, Title.title.between(low, high))]
    assert ranged == [t for t, _ in ordered if low <= t <= high]
    assert Title.count(SHELF) == len(reference)
    assert sorted((i.title, i.value) for i in Title.scan()) == ordered
    limit = change["limit"]
    listed = paged(lambda token: Title.query(SHELF, limit=limit, last_evaluated_key=token))
    assert [(i.title, i.value) for i in listed] == ordered
    for title, value in ordered[:3]:
        assert Title.get(SHELF, title).value == value
    batch = Title.batch_get([(SHELF, t) for t in reference])
    assert {i.title: i.value for i in batch} == reference


@settings(max_examples=EXAMPLES, deadline=None)
@given(change=changes)
# a sample where one value fills more than a shard ("NaN" twice of four, four shards):
# from_sample warns and gives fewer shards, a layout the change must read like any other
@example(
    change={
        "before": ["A", "É-㎁"],
        "sample": ["A", "NaN", "NaN", "A"],
        "shards": 4,
        "writes": [[]] * 8,
        "bounds": ("A", "A"),
        "limit": 1,
    }
)
def test_a_boundaries_change_on_untidy_titles_reads_like_a_plain_table(
    change: dict[str, Any],
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundaryWarning)  # documented; not this test's subject
        new = OrderedShards.from_sample(change["sample"], shards=change["shards"], on="title")
    assume(new.boundaries != ("", "g", "p"))
    clock = SimulatedClock(start=1_700_000_000.0)
    with mock_dynamodb():
        bind_models([Title], host=None)
        create_tables([Title])
        try:
            reference: dict[str, str] = {}
            for title in change["before"]:
                Title(SHELF, title, value="v0").save()
                reference[key_of(title)] = "v0"
            follow(Title, cache_seconds=0, clock=clock)
            operator = Reshard(Title, clock=clock)
            operator.start(new, settle_seconds=1)
            writes = iter(change["writes"])

            def each(phase: Any) -> None:
                for kind, title in next(writes):
                    key = key_of(title)
                    if kind == "save":
                        Title(SHELF, title, value=f"saved in {phase.value}").save()
                        reference[key] = f"saved in {phase.value}"
                    elif key in reference and kind == "update":
                        item = Title.get(SHELF, title)
                        item.update(actions=[Title.value.set(f"updated in {phase.value}")])
                        reference[key] = f"updated in {phase.value}"
                    elif key in reference:
                        Title.get(SHELF, title).delete()
                        del reference[key]
                _expect(reference, change)

            run_phases(operator, clock, each)
        finally:
            unfollow(Title)
