"""Sharded counters: one UpdateItem ADD per increment, sums on read, idempotent tokens."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute, VersionAttribute

from shardmodel import (
    CounterAttribute,
    ShardConfigurationError,
    ShardedModel,
    ShardKeyError,
    UnsupportedOperationError,
)
from tests.models import COUNTER_CLOCK, PageViews, Score
from tests.support import raw_items

pytestmark = pytest.mark.usefixtures("tables")


def calls(model: Any, operation: str) -> list[dict[str, Any]]:
    """Record the parameters of every `operation` call the model's client makes."""
    seen: list[dict[str, Any]] = []
    events = model._get_connection().connection.client.meta.events

    def record(params: dict[str, Any], **_: Any) -> None:
        seen.append(params)

    events.register(f"provide-client-params.dynamodb.{operation}", record)
    return seen


def test_add_is_one_update_on_one_shard_and_get_sums() -> None:
    """Each add is one UpdateItem ADD; get() sums every shard in one BatchGetItem."""
    updates = calls(PageViews, "UpdateItem")
    for _ in range(40):
        PageViews.add("home", views=1)
    PageViews.add("home", views=5, likes=2)
    PageViews.add("home", views=-3)
    assert len(updates) == 42
    assert all("ADD" in u["UpdateExpression"] for u in updates)
    assert len({item["page"]["S"] for item in raw_items(PageViews)}) > 3
    batches = calls(PageViews, "BatchGetItem")
    page = PageViews.get("home")
    assert (page.page, page.views, page.likes) == ("home", 42, 2)
    assert len(batches) == 1


def test_other_attributes_live_on_the_home_shard() -> None:
    """save() sets non-counter attributes on shard 0 without touching counters."""
    PageViews.add("home", views=10)
    PageViews(page="home", title="Home").save()
    PageViews.add("home", views=1)
    page = PageViews.get("home")
    assert (page.title, page.views) == ("Home", 11)
    page.title = "Start"
    page.save()
    page.update(actions=[PageViews.title.set("Welcome")])
    assert (page.title, page.views) == ("Welcome", 11)
    assert PageViews.get("home").views == 11
    for action in (PageViews.views.set(0), PageViews.views.add(1)):
        with pytest.raises(UnsupportedOperationError, match=r"PageViews\.add"):
            page.update(actions=[action])


def test_delete_removes_every_shard() -> None:
    """delete() of a counter item removes all of its shard items."""
    for _ in range(30):
        PageViews.add("gone", views=1)
    PageViews.get("gone").delete()
    assert raw_items(PageViews) == []
    with pytest.raises(PageViews.DoesNotExist):
        PageViews.get("gone")


def test_batch_get_and_query_aggregate_per_logical_item() -> None:
    """batch_get sums per key; query yields each (game, player) once, summed, in order."""
    for n in range(60):
        Score.add("chess", f"player-{n % 5}", points=n)
    totals = {f"player-{p}": sum(n for n in range(60) if n % 5 == p) for p in range(5)}
    fetched = {s.player: s.points for s in Score.batch_get([("chess", p) for p in totals])}
    assert fetched == totals
    ranked = list(Score.query("chess"))
    assert [(s.player, s.points) for s in ranked] == sorted(totals.items())
    first = Score.query("chess", limit=2)
    seen = [s.player for s in first]
    rest = Score.query("chess", last_evaluated_key=first.last_evaluated_key)  # type: ignore[attr-defined]
    assert seen + [s.player for s in rest] == sorted(totals)


def test_totals_are_exact_and_whole_totals_read_as_ints() -> None:
    """A total over shards is summed exactly, and a whole total reads as an int.

    Halves on several shards total 6, read as ``6`` like any stored whole number (not
    ``6.0``); a 36-digit total keeps every digit (not the default context's 28).
    """
    for _ in range(12):
        PageViews.add("halves", views=Decimal("0.5"))
        Score.add("wide", "p", points=0.5)
    PageViews.add("huge", views=10**35)
    PageViews.add("huge", views=-(10**34))
    PageViews.add("huge", views=1, likes=Decimal("0.1"))
    PageViews.add("huge", likes=0.2)
    reads = [PageViews.get("halves").views, next(iter(Score.query("wide"))).points]
    reads += [s.points for s in Score.batch_get([("wide", "p")])]
    assert reads == [6, 6, 6]
    assert all(type(total) is int for total in reads)
    huge = PageViews.get("huge")
    assert huge.views == 9 * 10**34 + 1 and type(huge.views) is int
    assert huge.likes == 0.3  # summed as Decimals: 0.1 + 0.2 is 0.3, read as PynamoDB reads it


def test_token_counts_once_even_after_a_lost_response() -> None:
    """An increment retried with its token, after the first try's response was lost, counts once."""
    events = PageViews._get_connection().connection.client.meta.events
    lost = {"armed": True}

    def lose_response(**_: Any) -> None:
        if lost["armed"]:
            lost["armed"] = False
            raise ConnectionError("response lost after the write was applied")

    events.register("after-call.dynamodb.UpdateItem", lose_response)
    try:
        with pytest.raises(ConnectionError):
            PageViews.add("p", views=1, token="req-1")
        PageViews.add("p", views=1, token="req-1")  # the caller's retry
    finally:
        events.unregister("after-call.dynamodb.UpdateItem", lose_response)
    PageViews.add("p", views=1, token="req-1")
    PageViews.add("p", views=1, token="req-2")
    assert PageViews.get("p").views == 2


def test_tokens_are_remembered_one_to_two_windows() -> None:
    """A token repeats harmlessly within its window and the next; two windows on it counts."""
    start = COUNTER_CLOCK.now
    try:
        PageViews.add("w", views=1, token="t")
        COUNTER_CLOCK.now = start + 650  # next window: the token sits in the other slot
        PageViews.add("w", views=1, token="t")
        assert PageViews.get("w").views == 1
        PageViews.add("w", views=1, token="u")
        COUNTER_CLOCK.now = start + 1300  # two windows on: t's slot is reused and emptied
        PageViews.add("w", views=1, token="t")
        assert PageViews.get("w").views == 3
    finally:
        COUNTER_CLOCK.now = start


def test_cached_totals_are_bounded_by_max_age() -> None:
    """get_cached reads one item while the rollup is fresh, then refreshes it."""
    start = COUNTER_CLOCK.now
    try:
        for _ in range(20):
            PageViews.add("c", views=1)
        assert PageViews.get_cached("c", max_age=60).views == 20  # no rollup yet: exact
        PageViews.add("c", views=5)
        gets = calls(PageViews, "GetItem")
        assert PageViews.get_cached("c", max_age=60).views == 20  # cached, up to 60 s old
        assert len(gets) == 1
        COUNTER_CLOCK.now = start + 61
        assert PageViews.get_cached("c", max_age=60).views == 25  # stale: re-read and rolled up
        assert PageViews.get("c").views == 25
    finally:
        COUNTER_CLOCK.now = start


def test_bad_increments_are_refused_before_writing() -> None:
    """Unknown counters, non-numbers, empty adds and bad tokens write nothing."""
    for kwargs in ({"clicks": 1}, {"views": "1"}, {"views": True}, {}):
        with pytest.raises(ShardKeyError):
            PageViews.add("x", **kwargs)
    with pytest.raises(ShardKeyError, match="token"):
        PageViews.add("x", views=1, token="")
    with pytest.raises(UnsupportedOperationError, match="overwrite"):
        with PageViews.batch_write() as batch:
            batch.save(PageViews(page="x"))
    assert raw_items(PageViews) == []


def test_counter_declarations_are_checked() -> None:
    """Counters need a sharded key and exclude VersionAttribute."""
    with pytest.raises(ShardConfigurationError, match="needs a sharded partition key"):

        class Unsharded(ShardedModel):
            class Meta:
                table_name = "x"

            pk = UnicodeAttribute(hash_key=True)
            hits = CounterAttribute()

    from shardmodel import RandomShards, ShardedKeyAttribute

    with pytest.raises(ShardConfigurationError, match="VersionAttribute"):

        class Versioned(ShardedModel):
            class Meta:
                table_name = "x"

            pk = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(2))
            hits = CounterAttribute()
            version = VersionAttribute()

    assert issubclass(CounterAttribute, NumberAttribute)
