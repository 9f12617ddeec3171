"""The merge of shard streams, driven through MergedQuery and GroupedQuery over plain pages.

Each shard is a list of raw items served in pages by an in-memory ``fetch``, the way a
Query serves them: ``Limit`` items after the ``ExclusiveStartKey``, and a
``LastEvaluatedKey`` while more remain. No table is involved: these are the merge rules.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import pytest
from pynamodb.attributes import BinaryAttribute, NumberAttribute, UnicodeAttribute

from shardmodel.engine.cursor import CURSOR_VERSION, Cursor, ShardPosition
from shardmodel.engine.grouping import GroupedQuery
from shardmodel.engine.merge import (
    DEFAULT_ITEM_BUDGET,
    REQUEST_ITEMS,
    MergedQuery,
    QueryIdentity,
    count_shards,
    dynamodb_sort_key,
    first_page_size,
)

#: These tests take milliseconds; where pytest-timeout is installed (make mutants), a merge
#: that waits forever (a mutant) fails in seconds instead of the global minute.
pytestmark = pytest.mark.timeout(10)

Raw = dict[str, dict[str, Any]]
IDENTITY = QueryIdentity(
    model="Events", index=None, logical_key="u", forward=True, conditions="ts>3"
)
BACKWARD = QueryIdentity(
    model="Events", index=None, logical_key="u", forward=False, conditions="ts>3"
)


class Pages:
    """Shards of raw items (``pk``, ``ts``) served as Query pages; records every request."""

    def __init__(self, shards: dict[str, list[int]], capacity: float = 0.0) -> None:
        self.items = {
            key: [{"pk": {"S": key}, "ts": {"N": str(ts)}} for ts in values]
            for key, values in shards.items()
        }
        self.capacity = capacity
        self.requests: list[tuple[str, int | None, int | None]] = []
        self.forward = True
        self.fail_on: str | None = None
        self._lock = threading.Lock()

    def fetch(self, key: str, start: Raw | None, limit: int | None) -> dict[str, Any]:
        after = None if start is None else int(start["ts"]["N"])
        with self._lock:
            self.requests.append((key, after, limit))
        if key == self.fail_on:
            raise RuntimeError(f"shard {key} failed")
        ordered = self.items[key] if self.forward else self.items[key][::-1]
        if after is not None:
            at = [int(i["ts"]["N"]) for i in ordered].index(after)
            ordered = ordered[at + 1 :]
        page = ordered if limit is None else ordered[:limit]
        response: dict[str, Any] = {"Items": page, "Count": len(page)}
        if len(page) < len(ordered):
            last = page[-1]
            response["LastEvaluatedKey"] = {"pk": last["pk"], "ts": last["ts"]}
        if self.capacity:
            response["ConsumedCapacity"] = {"CapacityUnits": self.capacity}
        return response


def merged(
    pages: Pages,
    groups: Sequence[Sequence[str]] | None = None,
    forward: bool = True,
    encoded: list[Cursor] | None = None,
    build: Callable[[Raw], Any] = lambda item: int(item["ts"]["N"]),
    **options: Any,
) -> MergedQuery[Any]:
    pages.forward = forward
    seen = encoded if encoded is not None else []

    def encode(cursor: Cursor) -> str:
        seen.append(cursor)
        return f"cursor-{len(seen)}"

    return MergedQuery(
        fetch=pages.fetch,
        groups=groups if groups is not None else [list(pages.items)],
        sort_key=dynamodb_sort_key(NumberAttribute(attr_name="ts")),
        forward=forward,
        build=build,
        key_names=["pk", "ts"],
        identity=IDENTITY if forward else BACKWARD,
        encode=encode,
        **options,
    )


# -- the sort key ----------------------------------------------------------------------


def ordered(attribute: Any, values: list[Any], kind: str, forward: bool = True) -> list[Any]:
    key = dynamodb_sort_key(attribute)
    if not forward:
        from shardmodel.engine.merge import _DESCENDING

        key = _DESCENDING.get(key, key)
    items = [{"v": {kind: value}} for value in values]
    return [item["v"][kind] for item in sorted(items, key=key)]


def test_numbers_sort_by_value_not_by_text() -> None:
    """``"10"`` after ``"9"``; negatives, fractions and exponents by their value."""
    attribute = NumberAttribute(attr_name="v")
    texts = ["10", "9", "-5", "1.5", "1e1", "0", "-0.25", "100"]
    assert ordered(attribute, texts, "N") == ["-5", "-0.25", "0", "1.5", "9", "10", "1e1", "100"]


def test_numbers_sort_descending_by_negation() -> None:
    """The descending key is the exact negation, for whole and fractional numbers alike."""
    attribute = NumberAttribute(attr_name="v")
    texts = ["10", "9", "-5", "1.5", "0", "12345678901234567890123456789012345678"]
    assert ordered(attribute, texts, "N", forward=False) == [
        "12345678901234567890123456789012345678",
        "10",
        "9",
        "1.5",
        "0",
        "-5",
    ]
    key = dynamodb_sort_key(attribute)
    assert key({"v": {"N": "7"}}) == 7
    assert key({"v": {"N": "-7.5"}}) == Decimal("-7.5")


def test_strings_and_binary_sort_by_bytes() -> None:
    """Strings by their UTF-8 bytes, binary by its bytes (upper case before lower)."""
    text = UnicodeAttribute(attr_name="v")
    assert ordered(text, ["b", "B", "é", "a", "Z"], "S") == ["B", "Z", "a", "b", "é"]
    assert dynamodb_sort_key(text)({"v": {"S": "é"}}) == "é".encode()
    blob = BinaryAttribute(attr_name="v", legacy_encoding=False)
    assert ordered(blob, [b"\x02", bytearray(b"\x01\xff"), b"\x01"], "B") == [
        b"\x01",
        bytearray(b"\x01\xff"),
        b"\x02",
    ]
    assert dynamodb_sort_key(blob)({"v": {"B": bytearray(b"x")}}) == b"x"


def test_without_a_sort_key_every_item_sorts_alike() -> None:
    """A table without a range key: one constant key, so arrival order decides."""
    assert dynamodb_sort_key(None)({"anything": {"S": "x"}}) == 0


# -- the first page --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("remaining", "shards", "expected"),
    [
        (100, 16, 12),  # the cap: twice the fair share
        (100, 10, 18),  # mean 10 + 2.5 sd (3) = 17.5, rounded up
        (100, 1, 100),
        (0, 1, 1),
        (7, 0, 7),
        (1, 16, 1),  # the one item is the last one: no follow-up to save
        (1000, 10, 124),
        (3, 2, 3),
        (100, 64, 5),  # the cap (3) grown twice: a shard holds exactly 4 of 100 with p 0.05
        (100, 256, 3),  # the cap (1) grown twice
        (10, 16, 3),
    ],
)
def test_the_first_page_asks_the_mean_plus_two_and_a_half_deviations(
    remaining: int, shards: int, expected: int
) -> None:
    """ceil(mean + 2.5 sd), capped at 2 x remaining // shards, at least 1, grown where
    the follow-ups saved cost more; one shard: all."""
    assert first_page_size(remaining, shards) == expected


def test_the_first_page_formula() -> None:
    """The binomial estimate and its cap, grown by one while P(a shard holds exactly
    that many, not the last) x REQUEST_ITEMS is over 1, over a range of reads."""
    for shards in (2, 3, 10, 16, 64, 256):
        for remaining in (5, 50, 100, 500):
            p = 1 / shards
            estimate = remaining * p + 2.5 * math.sqrt(remaining * p * (1 - p))
            capped = max(1, min(math.ceil(estimate), 2 * remaining // shards))
            page = first_page_size(remaining, shards)
            assert capped <= page <= remaining

            def worth(k: int, remaining: int = remaining, p: float = p) -> float:
                exactly = math.comb(remaining, k) * p**k * (1 - p) ** (remaining - k)
                return REQUEST_ITEMS * exactly * (1 - k / remaining)

            assert all(worth(k) > 1 for k in range(capped, page)), (remaining, shards)
            assert page == remaining or worth(page) <= 1, (remaining, shards)


# -- the merge -------------------------------------------------------------------------


def test_shards_merge_into_one_ordered_stream_both_ways() -> None:
    """Ascending and descending, with pages of one item, every item once and in order."""
    shards = {"u#0": [1, 4, 9, 10], "u#1": [2, 3, 11], "u#2": [], "u#3": [5, 6, 7, 8]}
    assert list(merged(Pages(shards), page_size=1)) == list(range(1, 12))
    assert list(merged(Pages(shards), forward=False, page_size=2)) == list(range(11, 0, -1))


def test_the_limit_is_global_and_exact() -> None:
    """limit=n yields the first n items of the merged order, and then stops reading."""
    shards = {"u#0": [1, 4, 9, 10], "u#1": [2, 3, 11], "u#2": [5, 6, 7, 8]}
    for limit in (1, 2, 5, 11, 20):
        query = merged(Pages(shards), limit=limit)
        assert list(query) == list(range(1, 12))[:limit]
        assert query.total_count == min(limit, 11)


def test_costs_are_counted_over_every_shard() -> None:
    """Requests, items read and consumed capacity add up over the shards."""
    pages = Pages({"u#0": [1, 2, 3], "u#1": [4, 5]}, capacity=0.5)
    query = merged(pages, page_size=2)
    assert list(query) == [1, 2, 3, 4, 5]
    assert query.shard_count == 2
    assert query.requests == len(pages.requests) == 3  # u#0: 2 pages, u#1: 1 page
    assert query.items_read == 5
    assert query.consumed_capacity == 1.5
    assert merged(Pages({"u#0": [1]}), groups=[["u#0"], []]).shard_count == 1


def test_pages_are_sized_from_the_limit_and_the_shards_left() -> None:
    """First pages: first_page_size; later pages: the remaining share of live shards, plus one."""
    pages = Pages({"u#0": list(range(0, 40)), "u#1": list(range(100, 140))})
    query = merged(pages, limit=30)
    assert list(query) == list(range(0, 30))
    first = first_page_size(30, 2)
    assert sorted(pages.requests[:2]) == [("u#0", None, first), ("u#1", None, first)]
    # u#0's next page is asked when its last buffered item is taken: of the 30, first - 1
    # were returned before it, the rest spread over the 2 live shards, plus one
    remaining = 30 - (first - 1)
    assert pages.requests[2] == ("u#0", first - 1, min(remaining, math.ceil(remaining / 2) + 1))


def test_a_follow_up_the_limit_will_reach_is_asked_with_the_first_pages() -> None:
    """A shard whose first page ranks wholly within the limit is asked for its next page
    as soon as the first pages are in, sized as when the merge would reach it."""
    shards = {"u#0": list(range(0, 30))}
    shards.update({f"u#{n}": list(range(100 * n, 100 * n + 40)) for n in (1, 2, 3)})
    pages = Pages(shards)
    query = merged(pages, limit=20)
    assert next(query) == 0
    assert query.outstanding == 1  # u#0's next page, sent before the merge needs it
    assert list(query) == list(range(1, 20))
    first = first_page_size(20, 4)
    left = 20 - first + 1  # what the limit leaves once u#0's last buffered item is taken
    assert pages.requests[4] == ("u#0", first - 1, min(left, math.ceil(left / 4) + 1))


def test_a_later_page_counts_only_the_shards_still_alive() -> None:
    """Once a shard is exhausted, the next page asks the whole remaining share."""
    pages = Pages({"u#0": list(range(0, 50)), "u#1": [100]})
    query = merged(pages, limit=20)
    assert list(query) == list(range(0, 20))
    first = first_page_size(20, 2)  # u#1 is exhausted by its first page
    remaining = 20 - (first - 1)
    assert pages.requests[2] == ("u#0", first - 1, min(remaining, remaining + 1))


def test_without_a_limit_pages_follow_the_item_budget() -> None:
    """One shard: DynamoDB's own pages; several: the budget over two pages a shard, at least 25."""
    one = Pages({"u#0": [1, 2]})
    assert list(merged(one)) == [1, 2]
    assert one.requests == [("u#0", None, None)]
    two = Pages({"u#0": [1], "u#1": [2]})
    assert list(merged(two)) == [1, 2]
    assert sorted(two.requests) == [("u#0", None, 6000), ("u#1", None, 6000)]
    assert DEFAULT_ITEM_BUDGET // 4 == 6000
    small = Pages({"u#0": [1], "u#1": [2]})
    assert list(merged(small, item_budget=10)) == [1, 2]
    assert sorted(small.requests) == [("u#0", None, 25), ("u#1", None, 25)]
    big = Pages({"u#0": [1], "u#1": [2]})
    assert list(merged(big, item_budget=1000)) == [1, 2]
    assert sorted(big.requests) == [("u#0", None, 250), ("u#1", None, 250)]


def test_a_page_size_is_used_for_every_page() -> None:
    """An explicit page_size wins over every estimate, with or without a limit."""
    pages = Pages({"u#0": [1, 2, 3], "u#1": [4]})
    assert list(merged(pages, page_size=2, limit=3)) == [1, 2, 3]
    assert {limit for _, _, limit in pages.requests} == {2}


def test_groups_are_read_one_after_another() -> None:
    """A later group is not asked for anything until every earlier one is exhausted."""
    pages = Pages({"b1": [1, 3], "b2": [2, 4], "c1": [5, 7], "c2": [6]})
    query = merged(pages, groups=[["b1", "b2"], ["c1", "c2"]])
    assert [next(query) for _ in range(4)] == [1, 2, 3, 4]
    assert {key for key, _, _ in pages.requests} == {"b1", "b2"}
    assert list(query) == [5, 6, 7]


def test_empty_groups_and_empty_pages_are_skipped() -> None:
    """A group with no items, and a page a filter emptied, do not end the stream."""
    pages = Pages({"a": [], "b": [1, 2], "c": [3]})
    assert list(merged(pages, groups=[["a"], [], ["b"], ["c"]], page_size=1)) == [1, 2, 3]

    class Filtered(Pages):
        """The first page of u#0 comes back empty (all filtered), with a key to go on."""

        def fetch(self, key: str, start: Raw | None, limit: int | None) -> dict[str, Any]:
            if key == "u#0" and start is None:
                self.requests.append((key, None, limit))
                return {"Items": [], "LastEvaluatedKey": {"pk": {"S": key}, "ts": {"N": "1"}}}
            return super().fetch(key, start, limit)

    filtered = Filtered({"u#0": [1, 2, 3], "u#1": [4]})
    assert list(merged(filtered, limit=3)) == [2, 3, 4]


def test_peek_shows_the_next_item_without_taking_it() -> None:
    """peek is the raw item next() returns; None at the end."""
    query = merged(Pages({"u#0": [2], "u#1": [1]}))
    assert query.peek() == {"pk": {"S": "u#1"}, "ts": {"N": "1"}}
    assert next(query) == 1
    assert query.peek() == {"pk": {"S": "u#0"}, "ts": {"N": "2"}}
    assert next(query) == 2
    assert query.peek() is None
    assert iter(query) is query


def test_a_closed_query_stops() -> None:
    """After close, iteration ends and no request is outstanding."""
    query = merged(Pages({"u#0": [1, 2], "u#1": [3]}), page_size=1)
    assert next(query) == 1
    query.close()
    query.close()  # twice is harmless
    assert query.outstanding == 0
    assert list(query) == []


def test_a_shard_error_reaches_the_caller_and_closes_the_query() -> None:
    """The first failing shard's error is raised; the query is closed afterwards."""
    pages = Pages({"u#0": [1], "u#1": [2]})
    pages.fail_on = "u#1"
    query = merged(pages)
    with pytest.raises(RuntimeError, match="shard u#1 failed"):
        next(query)
    assert query.outstanding == 0
    assert list(query) == []


# -- the cursor the merge writes -------------------------------------------------------


def test_a_finished_query_has_no_cursor() -> None:
    """Every shard read to its end and every item returned: last_evaluated_key is None."""
    query = merged(Pages({"u#0": [1], "u#1": [2]}))
    assert list(query) == [1, 2]
    assert query.last_evaluated_key is None


def test_the_cursor_holds_each_shards_last_returned_key() -> None:
    """Per shard: the key of the last item the caller received, and whether it is done."""
    encoded: list[Cursor] = []
    pages = Pages({"u#0": [1, 3], "u#1": [2, 4], "u#2": [9]})
    query = merged(pages, forward=False, encoded=encoded, page_size=1)
    assert [next(query) for _ in range(3)] == [9, 4, 3]
    assert query.last_evaluated_key == "cursor-1"
    (cursor,) = encoded
    assert cursor == Cursor(
        version=CURSOR_VERSION,
        model="Events",
        index=None,
        logical_key="u",
        forward=False,
        conditions="ts>3",  # the query's conditions, as its identity names them
        shards=(
            ShardPosition("u#0", {"pk": {"S": "u#0"}, "ts": {"N": "3"}}, False),
            ShardPosition("u#1", {"pk": {"S": "u#1"}, "ts": {"N": "4"}}, False),
            ShardPosition("u#2", {"pk": {"S": "u#2"}, "ts": {"N": "9"}}, True),
        ),
    )


def test_a_shard_with_an_item_in_the_heap_is_not_done() -> None:
    """A shard whose last page was read but whose item the caller has not received yet."""
    encoded: list[Cursor] = []
    query = merged(Pages({"u#0": [1], "u#1": [2]}), encoded=encoded)
    assert next(query) == 1
    assert query.last_evaluated_key is not None
    assert [(s.key, s.start, s.done) for s in encoded[-1].shards] == [
        ("u#0", {"pk": {"S": "u#0"}, "ts": {"N": "1"}}, True),
        ("u#1", None, False),
    ]


def test_a_cursor_resumes_each_shard_where_it_stopped() -> None:
    """Resumed: finished shards are not read again; the others start after their key."""
    pages = Pages({"u#0": [1, 3, 5], "u#1": [2, 4], "u#2": [0]})
    resume = Cursor(
        version=CURSOR_VERSION,
        model="Events",
        index=None,
        logical_key="u",
        forward=True,
        conditions="ts>3",
        shards=(
            ShardPosition("u#0", {"pk": {"S": "u#0"}, "ts": {"N": "1"}}, False),
            ShardPosition("u#1", None, False),
            ShardPosition("u#2", {"pk": {"S": "u#2"}, "ts": {"N": "0"}}, True),
        ),
    )
    query = merged(pages, resume=resume, limit=4)
    assert list(query) == [2, 3, 4, 5]
    assert {key for key, _, _ in pages.requests} == {"u#0", "u#1"}
    assert ("u#0", 1, first_page_size(4, 3)) in pages.requests


def test_the_cursor_keeps_only_the_key_attributes() -> None:
    """Other attributes of the last item stay out of the cursor; absent key names too."""
    encoded: list[Cursor] = []
    pages = Pages({"u#0": [1, 2]})
    pages.items["u#0"][0]["payload"] = {"S": "big"}
    query = MergedQuery(
        fetch=pages.fetch,
        groups=[["u#0"]],
        sort_key=dynamodb_sort_key(NumberAttribute(attr_name="ts")),
        forward=True,
        build=lambda item: item,
        key_names=["pk", "ts", "gsi_pk"],
        identity=IDENTITY,
        encode=lambda cursor: encoded.append(cursor) or "c",
    )
    next(query)
    assert query.last_evaluated_key == "c"
    assert encoded[0].shards[0].start == {"pk": {"S": "u#0"}, "ts": {"N": "1"}}


# -- counting --------------------------------------------------------------------------


def count_fetch(counts: dict[str, list[int]]) -> Callable[[str, Raw | None], dict[str, Any]]:
    """A Select=COUNT fetch: each shard's counts page by page."""

    def fetch(key: str, start: Raw | None) -> dict[str, Any]:
        page = 0 if start is None else int(start["page"]["N"])
        response: dict[str, Any] = {"Count": counts[key][page]}
        if page + 1 < len(counts[key]):
            response["LastEvaluatedKey"] = {"page": {"N": str(page + 1)}}
        return response

    return fetch


def test_count_sums_every_page_of_every_shard() -> None:
    """One shard or many, in batches of ``parallelism``: every page's Count is added."""
    counts = {"a": [3, 4], "b": [0], "c": [5, 0, 1], "d": [2]}
    assert count_shards(count_fetch(counts), ["a"], 4) == 7
    for parallelism in (0, 1, 3, 10):
        assert count_shards(count_fetch(counts), list(counts), parallelism) == 15


def test_count_requests_in_flight_stay_within_parallelism() -> None:
    """parallelism=1 counts shard after shard; 0 is taken as 1."""
    lock = threading.Lock()
    running, most = [0], [0]

    def fetch(key: str, start: Raw | None) -> dict[str, Any]:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1
        return {"Count": 1}

    for parallelism in (1, 0):
        most[0] = 0
        assert count_shards(fetch, ["a", "b", "c", "d"], parallelism) == 4
        assert most[0] == 1


def test_a_count_page_without_a_count_adds_nothing() -> None:
    """A response without ``Count`` counts as zero items."""
    assert count_shards(lambda key, start: {}, ["a", "b"], 2) == 0
    assert count_shards(lambda key, start: {}, ["a"], 2) == 0


def test_a_counting_error_is_raised() -> None:
    """A failing shard's error reaches the caller."""

    def fetch(key: str, start: Raw | None) -> dict[str, Any]:
        if key == "b":
            raise RuntimeError("b failed")
        return {"Count": 1}

    with pytest.raises(RuntimeError, match="b failed"):
        count_shards(fetch, ["a", "b", "c"], 2)


# -- grouped (counter) queries ---------------------------------------------------------


def grouped(
    shards: dict[str, list[int]],
    limit: int | None = None,
    seen: Callable[[Raw], bool] | None = None,
    keep: Callable[[Raw], bool] | None = None,
) -> GroupedQuery[tuple[int, int]]:
    """Shard items with equal ``ts`` are one logical item: (ts, how many shard items)."""
    pages = Pages(shards, capacity=1.0)

    def combine(run: list[Raw]) -> Raw:
        return {"ts": run[0]["ts"], "n": {"N": str(len(run))}}

    return GroupedQuery(
        merged(pages, page_size=1, build=lambda item: item),
        same=lambda a, b: a["ts"] == b["ts"],
        combine=combine,
        build=lambda item: (int(item["ts"]["N"]), int(item["n"]["N"])),
        limit=limit,
        seen=seen,
        keep=keep,
    )


def test_adjacent_items_with_one_sort_key_combine_into_one() -> None:
    """Shard items of one logical item are merged next to each other and combined."""
    shards = {"u#0": [1, 2, 4], "u#1": [1, 3, 4], "u#2": [1]}
    query = grouped(shards)
    assert iter(query) is query
    assert list(query) == [(1, 3), (2, 1), (3, 1), (4, 2)]
    assert query.total_count == 4
    assert query.shard_count == 3
    assert query.items_read == 7
    assert query.requests == query.consumed_capacity == 7  # pages of one item
    assert query.last_evaluated_key is None


def test_the_limit_counts_combined_items() -> None:
    """limit=2 is two logical items, however many shard items they take."""
    query = grouped({"u#0": [1, 2, 3], "u#1": [1, 2, 3]}, limit=2)
    assert list(query) == [(1, 2), (2, 2)]
    assert query.total_count == 2
    assert query.last_evaluated_key is not None
    assert list(query) == []


def test_items_seen_before_a_cursor_and_rejected_items_are_skipped() -> None:
    """``seen`` items are dropped before combining; ``keep`` filters the combined ones."""
    shards = {"u#0": [1, 2, 3, 4], "u#1": [1, 3]}
    query = grouped(shards, seen=lambda item: int(item["ts"]["N"]) < 2)
    assert list(query) == [(2, 1), (3, 2), (4, 1)]
    kept = grouped(shards, keep=lambda item: item["n"]["N"] == "2", limit=1)
    assert list(kept) == [(1, 2)]
    assert kept.total_count == 1


def test_closing_a_grouped_query_closes_its_merge() -> None:
    """close() stops the underlying merged query."""
    query = grouped({"u#0": [1, 2], "u#1": [3]})
    assert next(query) == (1, 1)
    query.close()
    assert list(query) == []
