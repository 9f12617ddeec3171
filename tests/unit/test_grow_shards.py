"""Model.grow_shards: an operator's growth, with the automatic growth's update and history."""

from __future__ import annotations

import pytest

from shardmodel import ShardKeyError, UnsupportedOperationError
from tests.models import DYNAMIC_CHANGES, DynamicEvent, RandomEvent

pytestmark = pytest.mark.usefixtures("tables")


def test_grow_shards_raises_the_live_count_and_keeps_every_item_readable() -> None:
    DYNAMIC_CHANGES.clear()
    for n in range(5):
        DynamicEvent("k", n).save()
    grown = DynamicEvent.grow_shards("k", to=8)
    assert (grown.number_of_shards, grown.readable) == (8, 8)
    assert [e.count for e in grown.history] == [1, 8]
    assert [(c.kind, c.old_count, c.new_count) for c in DYNAMIC_CHANGES] == [("grow", 1, 8)]
    for n in range(5, 80):
        DynamicEvent("k", n).save()
    assert sorted(e.timestamp for e in DynamicEvent.query("k")) == list(range(80))
    physical = {e.get_physical_key() for e in DynamicEvent.query("k")}
    assert len(physical) > 1 and physical <= {f"k#{s}" for s in range(8)}
    assert DynamicEvent.shard_metadata("k") == grown


def test_grow_shards_creates_a_new_keys_item_and_is_a_no_op_at_the_count() -> None:
    grown = DynamicEvent.grow_shards("new", to=3)
    assert [e.count for e in grown.history] == [1, 3]
    again = DynamicEvent.grow_shards("new", to=3)
    assert again == grown


def test_grow_shards_checks_its_count_and_model() -> None:
    DynamicEvent.grow_shards("c", to=4)
    with pytest.raises(ShardKeyError, match="has 4 shards; give a larger count"):
        DynamicEvent.grow_shards("c", to=2)
    for bad in (0, 101, 2.0, True):
        with pytest.raises(ShardKeyError, match="to="):
            DynamicEvent.grow_shards("c", to=bad)  # type: ignore[arg-type]
    with pytest.raises(ShardKeyError, match="a sharded key must be a str"):
        DynamicEvent.grow_shards(5, to=2)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedOperationError, match="count is fixed"):
        RandomEvent.grow_shards("r", to=2)


def test_grow_shards_after_a_shrink_keeps_the_retired_shards_readable() -> None:
    DynamicEvent.grow_shards("s", to=6)
    for n in range(30):
        DynamicEvent("s", n).save()
    DynamicEvent.shrink_shards("s", 2)
    grown = DynamicEvent.grow_shards("s", to=4)
    assert (grown.number_of_shards, grown.readable) == (4, 6)
    assert DynamicEvent.count("s") == 30
