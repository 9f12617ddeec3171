"""The engine's pure planners, with no server at all: placements and query plans.

Every test here runs with sockets refused: a placement and a query plan are worked out
from the model's declaration, the migration view and the dynamic counts alone.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from shardmodel import (
    CursorError,
    FanOutLimitError,
    HashShards,
    KeyLayout,
    PhysicalKey,
    RandomShards,
    ShardCount,
    TimeBuckets,
    sharding_of,
)
from shardmodel.engine import Placement
from shardmodel.engine.query_plan import plan_query
from shardmodel.keyspace.dynamic import DynamicShards
from shardmodel.keyspace.phases import (
    FENCED,
    MOVE_MARKER,
    MOVED,
    ActiveMigration,
    MigrationState,
    Phase,
)
from shardmodel.keyspace.strategies import KeyValues
from tests.models import DailyEvent, DynamicEvent, HashedEvent, RandomEvent


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Planning sends nothing: any connection attempt fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a planner opened a connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    yield


def _key(logical: str, **values: Any) -> KeyValues:
    canonical = {name: str(value) for name, value in values.items()}
    return KeyValues(logical_key=logical, values=values, canonical=canonical)


def _migration(phase: Phase, old: KeyLayout, new: KeyLayout) -> ActiveMigration:
    state = MigrationState("t", 2, 3, phase, changed_at=0.0, settle_seconds=1)
    return ActiveMigration(state, old, new)


HASH_2 = KeyLayout(HashShards(2, on="seq"))
HASH_3 = KeyLayout(HashShards(3, on="seq"))
MOVING = _key("k", seq=5)  # shard 1 of 2, shard 0 of 3: its key changes


def test_a_read_by_full_key_touches_every_random_shard_in_one_group() -> None:
    """RandomShards(4): four keys, in shard order, one group; over the bound: refused."""
    placement = Placement(KeyLayout(RandomShards(4)))
    assert placement.partitions(_key("u"), what="get", bound=4) == [["u#0", "u#1", "u#2", "u#3"]]
    with pytest.raises(FanOutLimitError, match="4 partitions"):
        placement.read_keys(_key("u"), what="get", bound=3)


def test_a_physical_key_is_read_alone_and_must_have_the_layout() -> None:
    """A PhysicalKey is its own one partition; one of another layout is refused."""
    placement = Placement(KeyLayout(RandomShards(4)))
    assert placement.read_keys(PhysicalKey("u#2"), what="get", bound=1) == ["u#2"]
    with pytest.raises(Exception, match="segment"):
        placement.read_keys(PhysicalKey("no-segment"), what="get", bound=1)


def test_a_query_groups_time_buckets_in_time_order_and_merges_within() -> None:
    """Buckets split the sort order: one group per day, ascending or descending."""
    placement = Placement(KeyLayout([TimeBuckets("created", "day"), RandomShards(2)]))
    bounds = {"created": ("2024-01-01T00:00:00+00:00", "2024-01-02T12:00:00+00:00")}
    forward = placement.partitions(
        _key("t"), what="query", bound=10, bounds=bounds, sort_name="created"
    )
    assert forward == [
        ["t#2024-01-01#0", "t#2024-01-01#1"],
        ["t#2024-01-02#0", "t#2024-01-02#1"],
    ]
    backward = placement.partitions(
        _key("t"), what="query", bound=10, bounds=bounds, sort_name="created", forward=False
    )
    assert backward == forward[::-1]


def test_a_migration_reads_the_union_of_both_layouts_once_each() -> None:
    """During a shard count change a get reads the item's key in both layouts."""
    placement = Placement(HASH_2, _migration(Phase.DUAL_WRITE, HASH_2, HASH_3))
    assert placement.read_keys(MOVING, what="get", bound=2) == ["k#1", "k#0"]
    staying = _key("k", seq=2)  # shard 0 in both layouts: one key
    assert placement.read_keys(staying, what="get", bound=2) == ["k#0"]
    every = placement.read_keys(_key("k"), what="query", bound=10)
    assert every == ["k#0", "k#1", "k#2"]
    with pytest.raises(FanOutLimitError):  # each layout alone reads 1 key, the union 2
        placement.read_keys(MOVING, what="get", bound=1)


def test_a_dynamic_key_reads_every_shard_it_ever_had() -> None:
    """Counts read for the operation: reads cover the readable count, not the live one."""
    layout = KeyLayout(DynamicShards())
    counts = {"hot": ShardCount(live=2, readable=4), "cold": ShardCount(1, 1)}
    placement = Placement(layout, counts=counts)
    assert placement.read_keys(_key("hot"), what="get", bound=10) == [f"hot#{n}" for n in range(4)]
    assert placement.read_keys(_key("cold"), what="get", bound=10) == ["cold#0"]
    with pytest.raises(Exception, match="no shard count"):  # counts are read before planning
        placement.read_keys(_key("unread"), what="get", bound=10)


@pytest.mark.parametrize(
    ("phase", "primary", "fences", "fenced"),
    [
        (Phase.PREPARE, "k#1", [], False),
        (Phase.DUAL_WRITE, "k#1", [], True),
        (Phase.BACKFILL, "k#1", [], True),
        (Phase.READ_NEW, "k#0", ["k#1"], True),
        (Phase.NEW_ONLY, "k#0", ["k#1"], True),
        (Phase.CLEANUP, "k#0", ["k#1"], True),
        (Phase.DRAIN, "k#0", ["k#1"], True),
        (Phase.DONE, "k#0", [], True),
    ],
)
def test_each_phase_writes_one_key_and_fences_the_old_one_as_its_rules_say(
    phase: Phase, primary: str, fences: list[str], fenced: bool
) -> None:
    """A write goes to the old key until read_new, then to the new one, fencing the old
    first until done (the sweep may delete tombstones then); old-key writes carry the
    "not fenced" condition from dual_write on."""
    placement = Placement(HASH_2, _migration(phase, HASH_2, HASH_3))
    assert placement.write_key(MOVING, None, random.Random(0)) == primary
    assert placement.writes_new is (primary == "k#0")
    assert placement.fence_keys(MOVING, primary) == fences
    assert placement.fenced is fenced


def test_reads_keep_the_copy_that_holds_the_item() -> None:
    """Of an item's two copies found together, the old one until a move fences it, then
    the new one; a frozen old copy (a move in progress) still holds it."""
    old, new = (
        {"sensor": {"S": "k#1"}, "v": {"S": "old"}},
        {"sensor": {"S": "k#0"}, "v": {"S": "new"}},
    )
    moved = {**old, MOVE_MARKER: {"S": MOVED}}
    moving = {**old, MOVE_MARKER: {"S": "moving:t1"}}
    for phase in (Phase.BACKFILL, Phase.READ_NEW, Phase.CLEANUP):
        placement = Placement(HASH_2, _migration(phase, HASH_2, HASH_3), key_name="sensor")
        assert placement.current([old, new], lambda raw: MOVING)["v"]["S"] == "old"
        assert placement.current([moving, new], lambda raw: MOVING)["v"]["S"] == "old"
        assert placement.current([moved, new], lambda raw: MOVING)["v"]["S"] == "new"
        assert MOVE_MARKER not in placement.current([moving, new], lambda raw: MOVING)


@pytest.mark.parametrize(
    ("phase", "writes"),
    [(Phase.DUAL_WRITE, "k#1"), (Phase.READ_NEW, "k#0"), (Phase.CLEANUP, "k#0")],
)
def test_a_tokened_increment_keeps_the_old_layout_and_an_untokened_one_the_written(
    phase: Phase, writes: str
) -> None:
    """A tokened increment stays on the old layout through the change (its retry in a
    later phase meets its own record); an untokened one goes where the phase writes."""
    placement = Placement(HASH_2, _migration(phase, HASH_2, HASH_3))
    assert placement.increment_keys(MOVING, True, what="add", bound=8) == ["k#1"]
    assert placement.increment_keys(MOVING, False, what="add", bound=8) == [writes]


def test_a_copy_moved_after_the_read_passed_its_new_key_is_read_where_it_went() -> None:
    """Only the old copy came back, marked moved or fenced (the move ran between the
    read's requests): a consistent lookup of its new key reads the copy the move made;
    without a lookup, no copy holds the item."""
    old = {"sensor": {"S": "k#1"}, "v": {"S": "old"}}
    went = {"sensor": {"S": "k#0"}, "v": {"S": "new"}}
    asked: list[tuple[str, str]] = []

    def lookup(key: str, raw: dict[str, Any]) -> dict[str, Any]:
        asked.append((key, raw["sensor"]["S"]))
        return went

    for marker in (MOVED, FENCED):
        placement = Placement(HASH_2, _migration(Phase.READ_NEW, HASH_2, HASH_3), key_name="sensor")
        marked = {**old, MOVE_MARKER: {"S": marker}}
        assert placement.current([marked], lambda raw: MOVING, lookup) == went
        assert placement.current([marked], lambda raw: MOVING) is None
        assert placement.current([old], lambda raw: MOVING, lookup) == old  # not moved
    assert asked == [("k#0", "k#1")] * 2


def test_a_compaction_keeps_the_copy_on_the_retired_shard() -> None:
    """A dynamic key's item found on two shards: the highest-numbered (retired) one."""
    placement = Placement(KeyLayout(DynamicShards()), key_name="pk")
    copies = [{"pk": {"S": "d#0"}}, {"pk": {"S": "d#3"}}, {"pk": {"S": "d#1"}}]
    assert placement.current(copies, lambda raw: _key("d"))["pk"]["S"] == "d#3"


def test_a_query_plan_is_worked_out_before_any_request() -> None:
    """Groups, cursor identity and the shard Query's fixed arguments, from a placement."""
    placement = Placement(sharding_of(DailyEvent).key().layout)
    day = datetime(2024, 1, 15, tzinfo=timezone.utc)
    condition = DailyEvent.created.between(day, day + timedelta(hours=23))
    plan = plan_query(
        DailyEvent, placement, "t", condition, None, False, None, False, 10, None, None, None,
        time_range=None, max_requests=None,
    )  # fmt: skip
    assert plan.groups == (tuple(f"t#2024-01-15#{n}" for n in range(5)),)
    assert (plan.identity.logical_key, plan.identity.forward, plan.resumed) == ("t", False, None)
    assert plan.fetch["range_key_condition"] is condition and not plan.moving
    with pytest.raises(FanOutLimitError):
        plan_query(
            RandomEvent, Placement(sharding_of(RandomEvent).key().layout), "u", None, None,
            False, None, None, None, None, None, None, time_range=None, max_requests=9,
        )  # fmt: skip


def test_a_plan_marks_moving_keys_and_checks_the_cursor_it_resumes() -> None:
    """A dynamic or migrating key's items collapse; a cursor of another key is refused."""
    dynamic = Placement(sharding_of(DynamicEvent).key().layout, counts={"d": ShardCount(2, 2)})
    plan = plan_query(
        DynamicEvent, dynamic, "d", None, None, False, None, None, None, None, None, None,
        time_range=None, max_requests=None,
    )  # fmt: skip
    assert plan.moving
    placement = Placement(sharding_of(HashedEvent).key().layout)
    with pytest.raises(CursorError):
        plan_query(
            HashedEvent, placement, "a", None, None, False, None, None, None, "not a cursor",
            None, None, time_range=None, max_requests=None,
        )  # fmt: skip
