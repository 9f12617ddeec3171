"""Key layouts: how segments join, split, size and re-save, and what a layout refuses."""

from __future__ import annotations

import random
from datetime import datetime, timezone
from typing import Any

import pytest

from shardmodel import (
    HashShards,
    KeyLayout,
    OrderedShards,
    PhysicalKey,
    RandomShards,
    ShardConfigurationError,
    ShardKeyError,
    TimeBuckets,
)
from shardmodel.keyspace.keys import MAX_PARTITION_KEY_BYTES
from shardmodel.keyspace.strategies import KeyValues

UTC = timezone.utc


def values(logical: str, **canonical: Any) -> KeyValues:
    return KeyValues(logical_key=logical, values=dict(canonical), canonical=dict(canonical))


def refusal(**kwargs: Any) -> str:
    with pytest.raises(ShardConfigurationError) as caught:
        KeyLayout(**kwargs)
    return str(caught.value)


def test_one_strategy_or_a_list_of_them() -> None:
    """A single strategy and a one-item list make the same layout; lists keep their order."""
    assert KeyLayout(RandomShards(3)) == KeyLayout([RandomShards(3)])
    both = KeyLayout((TimeBuckets("t"), RandomShards(2)))
    assert both.strategies == (TimeBuckets("t"), RandomShards(2))


@pytest.mark.parametrize("value", ["RandomShards", b"x", 10, None])
def test_what_is_no_strategy_nor_a_list_is_refused(value: Any) -> None:
    """A string, bytes or a number is neither a strategy nor a list of them."""
    assert refusal(strategies=value) == (
        f"strategy={value!r}: pass a strategy such as RandomShards(10), or a list of them"
    )


def test_a_strategy_class_is_refused_with_how_to_make_an_instance() -> None:
    """``strategy=RandomShards`` (the class) names the fix ``RandomShards(10)``."""
    message = (
        "strategy=RandomShards: pass an instance, not the class; write RandomShards(10) for "
        "10 shards (see the strategies page for the arguments of each)"
    )
    assert refusal(strategies=RandomShards) == message
    assert refusal(strategies=[TimeBuckets("t"), RandomShards]) == message


def test_an_empty_list_or_a_stranger_in_it_is_refused() -> None:
    """At least one strategy, and every item a strategy."""
    assert refusal(strategies=[]) == (
        "strategy=[]: give at least one strategy, e.g. RandomShards(10)"
    )
    assert refusal(strategies=[RandomShards(2), "day"]) == (
        "strategy='day': not a sharding strategy; use RandomShards, HashShards or TimeBuckets"
    )


@pytest.mark.parametrize("separator", ["", 5, None])
def test_the_separator_is_a_nonempty_string(separator: Any) -> None:
    """The separator is refused when empty or not a string."""
    assert refusal(strategies=RandomShards(2), separator=separator) == (
        f"separator={separator!r}: give a non-empty string such as '#' or '_'"
    )


@pytest.mark.parametrize("first", [True, "1", 1.0])
def test_the_first_shard_is_an_int(first: Any) -> None:
    """first_shard is an int (not a bool, text or float)."""
    assert refusal(strategies=RandomShards(2), first_shard=first) == (
        f"first_shard={first!r}: give an int, 0 (default) or 1"
    )


def test_the_first_shard_is_not_negative() -> None:
    """Shard numbers start at 0 or above."""
    assert refusal(strategies=RandomShards(2), first_shard=-1) == (
        "first_shard=-1: shard numbers cannot be negative; use 0 or 1"
    )
    assert KeyLayout(RandomShards(2), first_shard=0).first_shard == 0


def test_placement_is_suffix_or_prefix() -> None:
    """Any other placement is refused with both examples."""
    assert refusal(strategies=RandomShards(2), placement="infix") == (
        "placement='infix': use 'suffix' (user#3) or 'prefix' (3#user)"
    )


def test_the_defaults_are_hash_zero_and_suffix() -> None:
    """Without settings: ``#``, shards from 0, segments after the logical key."""
    layout = KeyLayout(RandomShards(2))
    assert (layout.separator, layout.first_shard, layout.placement) == ("#", 0, "suffix")


def test_attributes_are_every_strategys_once_in_order() -> None:
    """The attributes a layout reads: each strategy's, left to right, without repeats."""
    layout = KeyLayout([HashShards(4, on=["b", "a"]), TimeBuckets("a"), RandomShards(2)])
    assert layout.attributes == ("b", "a")
    assert KeyLayout(RandomShards(2)).attributes == ()


def test_a_layout_is_deterministic_only_when_every_strategy_is() -> None:
    """One random strategy makes the whole key random."""
    assert KeyLayout([TimeBuckets("t"), HashShards(2, on=["t"])]).deterministic is True
    assert KeyLayout([TimeBuckets("t"), RandomShards(2)]).deterministic is False
    assert KeyLayout([RandomShards(2), TimeBuckets("t")]).deterministic is False


def test_segments_join_in_order_with_shard_numbers_shifted() -> None:
    """Numbers are shifted by first_shard, labels kept; prefix puts segments first."""
    suffix = KeyLayout([TimeBuckets("t"), RandomShards(3)], separator="_", first_shard=1)
    assert suffix.segment_text(0) == "1"
    assert suffix.segment_text("2024-01-15") == "2024-01-15"
    assert suffix.join("tenant", ["2024-01-15", 2]) == "tenant_2024-01-15_3"
    prefix = KeyLayout([TimeBuckets("t"), RandomShards(3)], placement="prefix")
    assert prefix.join("tenant", ["2024-01-15", 2]) == "2024-01-15#2#tenant"
    assert prefix.split("2024-01-15#2#tenant") == ("tenant", ("2024-01-15", "2"))
    assert prefix.logical_key("2024-01-15#2#tenant") == "tenant"


def test_the_longest_key_counts_utf8_bytes_of_every_part() -> None:
    """Logical key, each separator and each strategy's widest segment, in UTF-8 bytes."""
    layout = KeyLayout([RandomShards(10), TimeBuckets("t", "day")], separator="§")
    # "é" 2 bytes; "§" 2 bytes twice; shard "9" 1 byte; "2024-01-15" 10 bytes
    assert layout.longest_key_bytes("é") == 2 + 2 + 1 + 2 + 10
    one_based = KeyLayout(RandomShards(10), first_shard=1)  # "10": 2 bytes
    assert one_based.longest_key_bytes("ab") == 2 + 1 + 2


def test_a_key_exactly_at_the_limit_is_written_and_one_byte_more_is_refused() -> None:
    """2,048 bytes on the widest shard fits; 2,049 is refused naming the excess."""
    layout = KeyLayout(RandomShards(10))
    fits = "k" * (MAX_PARTITION_KEY_BYTES - 2)
    assert layout.compose(fits, [9]) == fits + "#9"
    over = "k" * (MAX_PARTITION_KEY_BYTES - 1)
    with pytest.raises(ShardKeyError) as caught:
        layout.compose(over, [0])
    assert str(caught.value) == (
        f"logical key {over[:40]!r}... makes physical keys of up to 2049 bytes on this "
        "layout, over DynamoDB's 2048-byte partition key limit; shorten the logical key by "
        "at least 1 bytes"
    )


def test_a_key_that_splits_back_differently_is_refused() -> None:
    """A separator inside a segment would read back wrong: compose refuses it."""
    layout = KeyLayout(TimeBuckets("t", "day"), separator="-")
    with pytest.raises(ShardKeyError) as caught:
        layout.compose("user", ["2024-01-15"])
    assert str(caught.value) == (
        "logical key 'user' with separator '-' makes the key 'user-2024-01-15', which does "
        "not split back into the same logical key and segments; avoid the separator at the "
        "end or start of the key"
    )


def test_keys_too_long_to_exist_are_left_out_of_reads() -> None:
    """A read never asks for a key DynamoDB could not hold; shorter ones are still read."""
    layout = KeyLayout(RandomShards(11))
    logical = "k" * (MAX_PARTITION_KEY_BYTES - 2)  # "#0".."#9" fit, "#10" does not
    assert layout.readable(logical, [9]) == logical + "#9"
    assert layout.readable(logical, [10]) is None
    assert layout.candidates(values(logical)) == [f"{logical}#{n}" for n in range(10)]


def test_candidates_are_the_product_of_every_strategys_segments_in_order() -> None:
    """The first strategy varies slowest: ``k#0#0, k#0#1, ..., k#1#0, ...``."""
    layout = KeyLayout([RandomShards(2), RandomShards(3)])
    key = values("k")
    assert layout.candidate_segments(key) == [range(2), range(3)]
    assert layout.candidates(key) == ["k#0#0", "k#0#1", "k#0#2", "k#1#0", "k#1#1", "k#1#2"]
    given = [[1], ["x", "y"]]
    assert layout.candidates(key, given) == ["k#1#x", "k#1#y"]


def test_split_refuses_keys_without_the_layouts_segments() -> None:
    """A key with too few separated parts was not written by this layout."""
    two = KeyLayout([TimeBuckets("t"), RandomShards(2)])
    with pytest.raises(ShardKeyError) as caught:
        two.split("user#3")
    assert str(caught.value) == (
        "stored key 'user#3' has no 2 segment(s) separated by '#'; was it written by this "
        "model's layout?"
    )
    with pytest.raises(ShardKeyError, match="has no 2 segment"):
        two.logical_key("user#3")
    prefix = KeyLayout(RandomShards(2), placement="prefix")
    with pytest.raises(ShardKeyError, match="has no 1 segment"):
        prefix.logical_key("user")


def test_suffix_splitting_takes_segments_from_the_right() -> None:
    """A logical key holding the separator keeps it: segments are taken from the end."""
    layout = KeyLayout([TimeBuckets("t"), RandomShards(2)])
    assert layout.split("a#b#2024-01-15#1") == ("a#b", ("2024-01-15", "1"))
    assert layout.logical_key("a#b#2024-01-15#1") == "a#b"
    prefix = KeyLayout(RandomShards(2), placement="prefix")
    assert prefix.split("1#a#b") == ("a#b", ("1",))


def test_a_resave_keeps_a_random_shard() -> None:
    """Re-saving a random-sharded item writes it where it is stored, whatever the rng says."""
    layout = KeyLayout([TimeBuckets("t"), RandomShards(10)], first_shard=1)
    moment = datetime(2024, 1, 15, tzinfo=UTC)
    key = KeyValues("u", {"t": moment}, {"t": "1705276800"})
    for seed in range(5):
        again = layout.repick(key, "u#2024-01-15#7", random.Random(seed))
        assert again == "u#2024-01-15#7"
        assert isinstance(again, PhysicalKey)


def test_a_resave_keeps_a_leading_random_shard_and_recomputes_the_rest() -> None:
    """Random first, a time bucket after it: the shard is kept, the bucket checked."""
    layout = KeyLayout([RandomShards(4), TimeBuckets("t")])
    key = KeyValues("u", {"t": datetime(2024, 1, 15, tzinfo=UTC)}, {})
    assert layout.repick(key, "u#3#2024-01-15", random.Random(0)) == "u#3#2024-01-15"
    with pytest.raises(ShardKeyError, match="to segment '2024-01-15'"):
        layout.repick(key, "u#3#2024-01-16", random.Random(0))


def test_a_resave_that_would_move_shard_is_refused() -> None:
    """Changing an ``on`` value would leave the old copy behind: refused, naming the move."""
    layout = KeyLayout(HashShards(8, on=["t"]))
    key = values("u", t="42")  # HashShards(8) puts "42" on shard 6
    assert layout.repick(key, "u#6", random.Random(0)) == "u#6"
    with pytest.raises(ShardKeyError) as caught:
        layout.repick(key, "u#2", random.Random(0))
    assert str(caught.value) == (
        "changing t moves this item from 'u#2' to segment '6', which would leave the old "
        "copy behind; delete() it and save a new item"
    )


def test_a_move_names_every_attribute_the_shard_is_computed_from() -> None:
    """A shard hashed from two attributes names both when a re-save would move it."""
    layout = KeyLayout(HashShards(1000, on=["a", "b"]))
    key = values("u", a="x", b="y")
    right = layout.pick(key, random.Random(0))
    wrong = "u#0" if right != "u#0" else "u#1"
    with pytest.raises(ShardKeyError, match=r"^changing a, b moves this item"):
        layout.repick(key, wrong, random.Random(0))


def test_a_resave_of_an_overflow_value_stays_on_its_sub_shard() -> None:
    """An overflow value's item stays on whichever of its shards holds it."""
    layout = KeyLayout(OrderedShards(["", "m"], on="title", overflow={"hits": 3}))
    key = values("u", title="hits")  # home shard 0, sub-shards 2, 3, 4
    for stored in ("u#0", "u#2", "u#4"):
        assert layout.repick(key, stored, random.Random(0)) == stored
    with pytest.raises(ShardKeyError, match="from 'u#1' to segment '0'"):
        layout.repick(key, "u#1", random.Random(0))
    other = values("u", title="zebra")  # shard 1, no sub-shards
    with pytest.raises(ShardKeyError, match="changing title moves this item"):
        layout.repick(other, "u#3", random.Random(0))
