"""Counter models read as one logical item everywhere: count, scan, filters, tokens."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest
from pynamodb.attributes import UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from shardmodel import (
    CounterAttribute,
    IdempotentParameterMismatchError,
    RandomShards,
    ShardedKeyAttribute,
    ShardedModel,
    ShardKeyError,
    ShardModelError,
    UnsupportedOperationError,
)
from shardmodel.engine import sharding_of
from shardmodel.engine.reads import candidate_keys
from tests.models import COUNTER_CLOCK, DynamicViews, PageViews, Score
from tests.support import raw_items

pytestmark = pytest.mark.usefixtures("tables")


def spread(game: str, totals: dict[str, int], shards: int = 4) -> None:
    """Add each player's total in ``shards`` parts, so it sits on several shard items."""
    for player, total in totals.items():
        for part in range(shards):
            Score.add(game, player, points=total // shards + (total % shards if part == 0 else 0))


def shard_rows(model: Any) -> int:
    return len(raw_items(model))


def test_count_counts_logical_items_not_shard_items() -> None:
    """3 players spread over 4 shards count 3, with and without a filter on the totals."""
    spread("chess", {"ana": 40, "bo": 50, "cy": 10}, shards=12)
    assert shard_rows(Score) > 3
    assert Score.count("chess") == 3
    assert Score.count("chess", filter_condition=Score.points > 35) == 2
    assert Score.count("chess", Score.player > "ana", filter_condition=Score.points > 35) == 1
    assert Score.count("chess", limit=2) == 2


def test_keyless_count_of_a_counter_model_is_refused() -> None:
    """DescribeTable's count counts shard items: refused, naming what to do instead."""
    with pytest.raises(UnsupportedOperationError, match=r"count\(key\)"):
        PageViews.count()


def test_filter_on_a_counter_sees_summed_totals() -> None:
    """views > 35 on totals 40 and 50 returns both (a per-shard filter returned none)."""
    spread("go", {"ana": 40, "bo": 50, "cy": 10}, shards=12)
    found = {s.player: s.points for s in Score.query("go", filter_condition=Score.points > 35)}
    assert found == {"ana": 40, "bo": 50}
    between = Score.query("go", filter_condition=Score.points.between(10, 40), limit=1)
    assert [(s.player, s.points) for s in between] == [("ana", 40)]
    rest = Score.query(
        "go",
        filter_condition=Score.points.between(10, 40),
        last_evaluated_key=between.last_evaluated_key,  # type: ignore[attr-defined]
    )
    assert [(s.player, s.points) for s in rest] == [("cy", 10)]


def test_filter_on_another_attribute_keeps_full_totals() -> None:
    """A filter on the home shard's attributes returns the item with every shard summed."""
    for _ in range(30):
        PageViews.add("home", views=1)
    PageViews(page="home", title="Home").save()
    found = list(PageViews.query("home", filter_condition=PageViews.title == "Home"))
    assert [(p.title, p.views) for p in found] == [("Home", 30)]
    assert list(PageViews.query("home", filter_condition=PageViews.title == "Other")) == []
    projected = list(
        PageViews.query("home", filter_condition=PageViews.views > 5, attributes_to_get=["title"])
    )
    assert [(p.page, p.title, p.views) for p in projected] == [("home", "Home", 0)]


def test_scan_yields_each_logical_item_once_summed() -> None:
    """scan() returns one item per logical item, totals summed, other attributes set."""
    totals = {f"p{n}": 10 * n + 5 for n in range(8)}
    for page, total in totals.items():
        for _ in range(5):
            PageViews.add(page, views=total // 5)
        PageViews(page=page, title=page.upper()).save()
    assert shard_rows(PageViews) > len(totals)
    scanned = {p.page: (p.views, p.title) for p in PageViews.scan()}
    assert scanned == {page: (total, page.upper()) for page, total in totals.items()}
    filtered = {p.page for p in PageViews.scan(PageViews.views > 40)}
    assert filtered == {page for page, total in totals.items() if total > 40}


def test_scan_without_a_home_shard_item_still_returns_the_item() -> None:
    """An item whose home shard holds nothing is emitted by its lowest shard item."""
    candidates = candidate_keys(PageViews, "nohome")
    connection = PageViews._get_connection()
    for shard in (3, 7):  # shares on two shards, none on the home shard (shard 0)
        connection.update_item(candidates[shard], actions=[PageViews.views.add(5)])
    assert PageViews.get("nohome").views == 10
    assert [(p.page, p.views) for p in PageViews.scan()] == [("nohome", 10)]
    assert PageViews.count("nohome") == 1


def test_parallel_scan_segments_return_each_item_once() -> None:
    """Segments together return every logical item exactly once, summed."""
    totals = {f"s{n}": n + 1 for n in range(12)}
    for page, total in totals.items():
        for _ in range(total):
            PageViews.add(page, views=1)
    seen: list[tuple[str, Any]] = []
    for segment in range(4):
        seen.extend((p.page, p.views) for p in PageViews.scan(segment=segment, total_segments=4))
    assert sorted(seen) == sorted(totals.items())


def test_scan_resumes_from_its_cursor_without_loss_or_repeat() -> None:
    """limit + last_evaluated_key walk every logical item once, with any page size."""
    totals = {f"r{n}": n + 1 for n in range(9)}
    for page, total in totals.items():
        for _ in range(total):
            PageViews.add(page, views=1)
    for page_size in (1, 3, None):
        seen: list[str] = []
        cursor = None
        for _ in range(50):
            results = PageViews.scan(limit=2, page_size=page_size, last_evaluated_key=cursor)
            seen.extend(p.page for p in results)
            cursor = results.last_evaluated_key  # type: ignore[attr-defined]
            if cursor is None:
                break
        assert sorted(seen) == sorted(totals)


def test_dynamic_counters_count_scan_and_filter_logical_items() -> None:
    """A DynamicShards counter key grown to 2 shards reads as one item everywhere."""
    directory = sharding_of(DynamicViews).directory
    assert directory is not None
    for key in ("a", "b"):
        directory.grow(key, directory.lookup(key) or directory.create(key))
        for _ in range(20):
            DynamicViews.add(key, views=1)
    assert shard_rows(DynamicViews) > 2
    assert DynamicViews.count("a") == 1
    assert sorted((v.page, v.views) for v in DynamicViews.scan()) == [("a", 20), ("b", 20)]
    found = DynamicViews.query("a", filter_condition=DynamicViews.views > 10)
    assert [v.views for v in found] == [20]


class ByTitle(GlobalSecondaryIndex["TitledViews"]):  # type: ignore[no-untyped-call]
    class Meta:
        index_name = "by-title"
        projection = AllProjection()

    title = UnicodeAttribute(hash_key=True)


class TitledViews(ShardedModel):
    """Counters with an index on a home-shard attribute."""

    class Meta:
        table_name = "titled-views"
        region = "us-east-1"

    page = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(4))
    views = CounterAttribute(default=0)
    title = UnicodeAttribute(null=True)
    by_title = ByTitle()


def test_index_reads_of_a_counter_model_never_show_partial_counters() -> None:
    """An index holds shard items: reads returning counters (or filtering) are refused."""
    TitledViews.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    try:
        for _ in range(12):
            TitledViews.add("p", views=1)
        TitledViews(page="p", title="T").save()
        for refused in (
            lambda: TitledViews.by_title.query("T"),
            lambda: TitledViews.by_title.query("T", attributes_to_get=["views"]),
            lambda: TitledViews.by_title.scan(),
            lambda: TitledViews.by_title.count("T", filter_condition=TitledViews.views > 1),
            lambda: TitledViews.by_title.query(
                "T", filter_condition=TitledViews.views > 1, attributes_to_get=["page"]
            ),
        ):
            with pytest.raises(UnsupportedOperationError, match="batch_get"):
                refused()
        keys = [p.page for p in TitledViews.by_title.query("T", attributes_to_get=["page"])]
        assert keys == ["p"]
        assert [p.page for p in TitledViews.by_title.scan(attributes_to_get=["page"])] == ["p"]
        assert TitledViews.by_title.count("T") == 1
        assert [p.views for p in TitledViews.batch_get(keys)] == [12]
    finally:
        TitledViews.delete_table()


def test_scan_of_a_counter_model_refuses_what_it_cannot_bound() -> None:
    with pytest.raises(UnsupportedOperationError, match="rate_limit"):
        PageViews.scan(rate_limit=5)


@pytest.mark.parametrize("same", [1, 1.0, Decimal("1E+0"), Decimal("1.000")])
def test_token_with_the_same_amount_in_any_form_counts_once(same: Any) -> None:
    PageViews.add("t", views=1, likes=-2, token="req")
    PageViews.add("t", likes=Decimal("-2.0"), views=same, token="req")
    page = PageViews.get("t")
    assert (page.views, page.likes) == (1, -2)


def test_token_reused_with_other_amounts_is_refused_and_applies_nothing() -> None:
    """Like DynamoDB's IdempotentParameterMismatch: a clear error, nothing applied."""
    PageViews.add("m", views=1, token="req")
    for other in ({"views": 2}, {"views": 1, "likes": 1}, {"likes": 1}):
        with pytest.raises(IdempotentParameterMismatchError, match="other increments") as info:
            PageViews.add("m", token="req", **other)
        assert info.value.token == "req"
        assert isinstance(info.value, ShardModelError)
    page = PageViews.get("m")
    assert (page.views, page.likes) == (1, 0)


def test_token_mismatch_is_caught_in_the_next_window_too() -> None:
    """A token in the previous window's set is still checked against its amounts."""
    start = COUNTER_CLOCK.now
    try:
        PageViews.add("w", views=2, token="old")
        COUNTER_CLOCK.now = start + 650  # the next window: "old" sits in the other slot
        with pytest.raises(IdempotentParameterMismatchError):
            PageViews.add("w", views=3, token="old")
        PageViews.add("w", views=2.0, token="old")  # the same amounts: counted once
        assert PageViews.get("w").views == 2
    finally:
        COUNTER_CLOCK.now = start


@pytest.mark.parametrize(
    "amount",
    [
        math.nan,
        math.inf,
        -math.inf,
        Decimal("NaN"),
        Decimal("Infinity"),
        10**40 + 1,
        Decimal("1E+126"),
    ],
)
def test_amounts_dynamodb_cannot_store_are_refused_before_sending(amount: Any) -> None:
    with pytest.raises(ShardKeyError, match=r"PageViews\.add\(views=") as info:
        PageViews.add("x", views=amount)
    assert "finite" in str(info.value) or "38 significant digits" in str(info.value)
    assert raw_items(PageViews) == []


def test_update_with_a_counter_action_is_unsupported() -> None:
    PageViews.add("u", views=3)
    page = PageViews.get("u")
    with pytest.raises(UnsupportedOperationError, match=r"PageViews\.add\(key, views="):
        page.update(actions=[PageViews.views.add(1)])
    assert PageViews.get("u").views == 3


def test_changing_a_counter_on_the_instance_then_saving_is_refused() -> None:
    """p.views += 5; p.save() raises instead of silently dropping the change."""
    PageViews.add("s", views=3)
    page = PageViews.get("s")
    page.views += 5
    page.title = "changed"
    with pytest.raises(UnsupportedOperationError, match=r"PageViews\.add\(key, views=5\)"):
        page.save()
    fresh = PageViews.get("s")
    assert fresh.views == 3
    assert fresh.title is None
    page.views = 3.0  # the same number, another form: unchanged
    page.save()
    assert PageViews.get("s").title == "changed"
    with pytest.raises(UnsupportedOperationError, match="views"):
        PageViews(page="new", views=7).save()
    PageViews(page="new", title="ok").save()  # counters at their defaults: fine
    assert PageViews.get("new").title == "ok"
