"""Counter sums and idempotency tokens, through the pure functions of shardmodel.counters."""

from __future__ import annotations

import hashlib
from decimal import Decimal
from typing import Any

import pytest
from pynamodb.expressions.update import AddAction, SetAction

from shardmodel import IdempotentParameterMismatchError, ShardKeyError
from shardmodel.counters import (
    TOKEN_ATTRIBUTES,
    TokenWindow,
    aggregate,
    check_increments,
    check_recorded,
    increments_print,
    token_attempts,
    token_shard,
)


def shard_item(key: str, **values: Any) -> dict[str, dict[str, Any]]:
    item: dict[str, dict[str, Any]] = {"pk": {"S": key}}
    for name, value in values.items():
        item[name] = {"N": str(value)} if isinstance(value, int | Decimal) else {"S": value}
    return item


def test_counters_are_summed_over_every_shard_item() -> None:
    """Each counter is the exact decimal sum of the shards holding it; others are ignored."""
    items = [
        shard_item("k#1", views=3, likes=Decimal("0.1")),
        shard_item("k#0", views=-1),
        shard_item("k#2", views=10, likes=Decimal("0.2")),
    ]
    merged = aggregate(items, ["views", "likes", "shares"], home="k#0", hash_name="pk")
    assert merged["views"] == {"N": "12"}
    assert merged["likes"] == {"N": "0.3"}
    assert "shares" not in merged  # no shard holds it: not invented as 0


def test_a_sum_keeps_every_digit_and_writes_whole_sums_whole() -> None:
    """Past the default context's 28 digits nothing is rounded; ``0.5 + 0.5`` is ``1``.

    A whole total of fractional amounts is written as DynamoDB stores it (``1``, not
    ``1.0``), so PynamoDB reads it back as an int, as it reads a plain model's total.
    """
    items = [
        shard_item("k#0", views=10**35, likes=Decimal("0.5")),
        shard_item("k#1", views=-(10**34), likes=Decimal("0.5")),
        shard_item("k#2", views=1, likes=Decimal("1.50")),
    ]
    merged = aggregate(items, ["views", "likes"], home="k#0", hash_name="pk")
    assert merged["views"] == {"N": str(9 * 10**34 + 1)}
    assert merged["likes"] == {"N": "2.5"}
    halves = [shard_item(f"k#{n}", views=Decimal("0.5")) for n in range(4)]
    assert aggregate(halves, ["views"], home="k#0", hash_name="pk")["views"] == {"N": "2"}


def test_the_logical_item_is_the_home_shards_item_under_the_home_key() -> None:
    """Other attributes come from the home shard's item; the key is the home key."""
    items = [
        shard_item("k#2", views=1, title="stale copy"),
        shard_item("k#0", views=2, title="saved here"),
    ]
    merged = aggregate(items, ["views"], home="k#0", hash_name="pk")
    assert merged == {"pk": {"S": "k#0"}, "views": {"N": "3"}, "title": {"S": "saved here"}}


def test_without_a_home_item_the_first_shard_item_gives_the_attributes() -> None:
    """Only increments reached the key: the first item supplies the rest, under the home key."""
    items = [shard_item("k#3", views=1, title="first"), shard_item("k#1", views=1, title="b")]
    merged = aggregate(items, ["views"], home="k#0", hash_name="pk")
    assert merged == {"pk": {"S": "k#0"}, "views": {"N": "2"}, "title": {"S": "first"}}


def test_bookkeeping_attributes_never_reach_the_logical_item() -> None:
    """Token sets, windows, prints and cached totals stay on the shard items."""
    home = shard_item("k#0", views=1)
    for name in TOKEN_ATTRIBUTES:
        home[name] = {"SS": ["x"]}
    home["sm_total_views"] = {"N": "99"}
    home["sm_totally_kept"] = {"S": "no"}  # only the exact prefix is bookkeeping
    merged = aggregate([home], ["views"], home="k#0", hash_name="pk")
    assert sorted(merged) == ["pk", "sm_totally_kept", "views"]
    assert set(TOKEN_ATTRIBUTES) == {
        "sm_tokens_0",
        "sm_tokens_1",
        "sm_window_0",
        "sm_window_1",
        "sm_total_at",
        "sm_prints_0",
        "sm_prints_1",
    }


def test_a_counter_stored_with_another_type_is_not_summed() -> None:
    """Only number values count; a counter name holding a string is left out of the sum."""
    items = [shard_item("k#0", views=4), {"pk": {"S": "k#1"}, "views": {"S": "7"}}]
    assert aggregate(items, ["views"], home="k#0", hash_name="pk")["views"] == {"N": "4"}


def test_the_token_window_is_the_clock_divided_by_its_length() -> None:
    """Window numbers change every ``seconds``; the default is DynamoDB's 10 minutes."""
    assert TokenWindow().seconds == 600
    assert TokenWindow(seconds=600, clock=lambda: 1199.9).current() == 1
    assert TokenWindow(seconds=600, clock=lambda: 1200.0).current() == 2
    assert TokenWindow(seconds=60, clock=lambda: 59.0).current() == 0
    # a simulated clock may start before the epoch: windows are floors there too
    assert TokenWindow(seconds=600, clock=lambda: -1.0).current() == -1


def test_an_add_names_at_least_one_counter() -> None:
    """An empty add is refused with an example using the model's first counter."""
    with pytest.raises(ShardKeyError) as caught:
        check_increments("Page", ["views", "likes"], {})
    assert str(caught.value) == "Page.add(): name at least one counter, e.g. Page.add(key, views=1)"
    with pytest.raises(ShardKeyError) as caught:
        check_increments("Page", [], {})
    assert str(caught.value) == "Page.add(): name at least one counter, e.g. Page.add(key, views=1)"
    with pytest.raises(ShardKeyError, match=r"Page\.add\(key, likes=1\)"):
        check_increments("Page", ["likes"], {})


def test_an_unknown_counter_is_refused_with_the_known_ones() -> None:
    """Only CounterAttributes are added to; the error lists them."""
    with pytest.raises(ShardKeyError) as caught:
        check_increments("Page", ["views", "likes"], {"views": 1, "clicks": 1})
    assert str(caught.value) == (
        "Page.add(clicks=...): 'clicks' is not a CounterAttribute of Page; counters: views, likes"
    )
    with pytest.raises(ShardKeyError, match=r"counters: none$"):
        check_increments("Page", [], {"clicks": 1})


@pytest.mark.parametrize("value", [True, "1", None, [1]])
def test_an_increment_is_a_number(value: Any) -> None:
    """Booleans, text and other values are refused before anything is sent."""
    with pytest.raises(ShardKeyError) as caught:
        check_increments("Page", ["views"], {"views": value})
    assert str(caught.value) == (
        f"Page.add(views={value!r}): increments are numbers (negative to decrement)"
    )


def test_numbers_dynamodb_cannot_store_are_refused() -> None:
    """Out-of-range and non-finite amounts are refused with the reason."""
    with pytest.raises(ShardKeyError) as caught:
        check_increments("Page", ["views"], {"views": Decimal("1E+200")})
    assert str(caught.value).startswith(
        "Page.add(views=Decimal('1E+200')): DynamoDB numbers hold up to 38 significant digits"
    )
    assert caught.value.__cause__ is None
    with pytest.raises(ShardKeyError, match="not a finite number"):
        check_increments("Page", ["views"], {"views": float("inf")})


def test_valid_increments_pass() -> None:
    """Ints, floats and Decimals, negative too, are accepted."""
    check_increments("Page", ["views", "likes"], {"views": -2, "likes": Decimal("0.5")})
    check_increments("Page", ["views"], {"views": 1.5})


def test_the_increments_print_is_fixed_and_form_independent() -> None:
    """Equal amounts in any form and any order print alike; the print is a fixed hash."""
    text = "likes=0.5;views=1"
    expected = hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
    assert increments_print({"views": 1, "likes": Decimal("0.50")}) == expected
    assert increments_print({"likes": 0.5, "views": Decimal("1.0")}) == expected
    assert increments_print({"views": 2, "likes": Decimal("0.5")}) != expected


def test_a_token_always_goes_to_the_same_shard() -> None:
    """The token's shard is md5(token) mod shards, so a retry meets its own record."""
    digest = hashlib.md5(b"order-17").digest()
    assert token_shard("order-17", 7) == int.from_bytes(digest, "big") % 7
    assert token_shard("order-17", 1) == 0
    assert {token_shard(f"t{i}", 4) for i in range(40)} == {0, 1, 2, 3}


def test_recording_a_token_adds_to_this_windows_set_or_starts_it() -> None:
    """First attempt: add to the slot holding this window; second: start the slot afresh.

    The slot is the window's parity; both attempts require the token in neither slot.
    """
    entry = hashlib.sha256(b"print:tok").hexdigest()[:32]
    (add, in_window), (start, fresh) = token_attempts("tok", 7, "print")
    assert [type(a) for a in add] == [AddAction, AddAction]
    assert [str(a) for a in add] == [
        "sm_tokens_1 {'SS': ['tok']}",
        f"sm_prints_1 {{'SS': ['{entry}']}}",
    ]
    assert str(in_window) == (
        "(sm_window_1 = {'N': '7'} AND ((NOT contains (sm_tokens_1, {'S': 'tok'})) AND "
        "(NOT contains (sm_tokens_0, {'S': 'tok'}))))"
    )
    assert [type(a) for a in start] == [SetAction, SetAction, SetAction]
    assert [str(a) for a in start] == [
        "sm_tokens_1 = {'SS': ['tok']}",
        f"sm_prints_1 = {{'SS': ['{entry}']}}",
        "sm_window_1 = {'N': '7'}",
    ]
    assert str(fresh) == (
        "((attribute_not_exists (sm_window_1) OR sm_window_1 < {'N': '7'}) AND "
        "(attribute_not_exists (sm_tokens_0) OR (NOT contains (sm_tokens_0, {'S': 'tok'}))))"
    )
    (add, _), _ = token_attempts("tok", 8, "print")
    assert str(add[0]) == "sm_tokens_0 {'SS': ['tok']}"


def recorded_item(slot: int, token: str, prints: list[str] | None) -> dict[str, Any]:
    item: dict[str, Any] = {f"sm_tokens_{slot}": {"SS": [token, "other"]}}
    if prints is not None:
        item[f"sm_prints_{slot}"] = {"SS": prints}
    return item


def entry_of(token: str, fingerprint: str) -> str:
    return hashlib.sha256(f"{fingerprint}:{token}".encode()).hexdigest()[:32]


@pytest.mark.parametrize("slot", [0, 1])
def test_a_token_recorded_with_the_same_increments_is_found(slot: int) -> None:
    """A retry finds its token in either slot, with its print: it is not applied again."""
    item = recorded_item(slot, "tok", [entry_of("tok", "fp")])
    assert check_recorded(item, "tok", "fp", "Page") is True


def test_a_token_recorded_before_prints_were_kept_is_trusted() -> None:
    """An item with the token but no print set counts as recorded."""
    assert check_recorded(recorded_item(1, "tok", None), "tok", "fp", "Page") is True


def test_a_token_not_in_the_item_is_not_recorded() -> None:
    """No item, an empty item, or other tokens only: not yet recorded."""
    assert check_recorded(None, "tok", "fp", "Page") is False
    assert check_recorded({}, "tok", "fp", "Page") is False
    other = recorded_item(0, "else", [entry_of("else", "fp")])
    assert check_recorded(other, "tok", "fp", "Page") is False


@pytest.mark.parametrize("slot", [0, 1])
def test_a_token_reused_with_other_increments_is_refused(slot: int) -> None:
    """The same token with other amounts raises, naming the token; nothing is applied."""
    item = recorded_item(slot, "tok", [entry_of("tok", "fp")])
    with pytest.raises(IdempotentParameterMismatchError) as caught:
        check_recorded(item, "tok", "other-fp", "Page")
    assert caught.value.token == "tok"
    assert str(caught.value) == (
        "Page.add(token='tok'): this token was already used with other increments (within "
        "the token window), so this call is refused and nothing is applied; use a new token "
        "for a new increment, or resend the same amounts"
    )
