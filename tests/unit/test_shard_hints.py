"""Shard hints: get, batch_get and delete take what the shard is computed from (moto).

The time-series guide's pattern 2 shards a sensor's readings by a hash of the event id,
which is not part of the key: a read by key alone must read every shard. Given the
event id (``shard_by``), the read names exactly one.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import HashShards, ShardedKeyAttribute, ShardedModel, ShardKeyError
from shardmodel.testing import create_tables
from tests.models import HashedEvent, RandomEvent
from tests.support import raw_items, sent_requests

pytestmark = pytest.mark.usefixtures("tables")


class Reading(ShardedModel):
    """Pattern 2: ``<sensor>#<md5(event_id) % 10>``, the time as the sort key."""

    class Meta:
        table_name = "pattern-two"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(hash_key=True, strategy=HashShards(10, on=["event_id"]))
    ts = NumberAttribute(range_key=True)
    event_id = UnicodeAttribute()
    value = NumberAttribute(null=True)


@pytest.fixture
def readings(tables: None) -> None:
    """Twenty readings of one sensor, event ids e0 .. e19, spread over the shards."""
    create_tables([Reading])
    with Reading.batch_write() as batch:
        for n in range(20):
            batch.save(Reading(sensor="s-1", ts=n, event_id=f"e{n}", value=n))


def _shard(n: int) -> str:
    return str(HashShards(10, on=["event_id"]).shard_of([f"e{n}"]))


@pytest.mark.usefixtures("readings")
def test_a_get_with_the_event_id_reads_exactly_its_shard() -> None:
    """Without the hint a get reads all 10 shards (one BatchGetItem); with it, one GetItem
    of the one shard the item is on."""
    with sent_requests(Reading) as sent:
        assert Reading.get("s-1", 7).value == 7
    assert sent == ["BatchGetItem"]
    with sent_requests(Reading) as sent:
        hinted = Reading.get("s-1", 7, shard_by={"event_id": "e7"})
    assert sent == ["GetItem"]
    assert (hinted.value, hinted.get_physical_key()) == (7, f"s-1#{_shard(7)}")


@pytest.mark.usefixtures("readings")
def test_a_wrong_hint_reads_another_shard_and_finds_nothing() -> None:
    """The hint is the caller's word: a wrong event id reads a shard the item is not on."""
    wrong = next(f"e{n}" for n in range(20) if _shard(n) != _shard(7))
    with pytest.raises(Reading.DoesNotExist):
        Reading.get("s-1", 7, shard_by={"event_id": wrong})


@pytest.mark.usefixtures("readings")
def test_batch_get_keys_may_carry_their_hint() -> None:
    """``(hash, range, {"event_id": ...})`` reads one shard for that key; plain keys read
    every shard; one item asked twice is read once."""
    keys: list[Any] = [("s-1", n, {"event_id": f"e{n}"}) for n in range(0, 20, 2)]
    keys += [("s-1", 1), ("s-1", 1), ("s-1", 2, {"event_id": "e2"}), ("s-1", 99)]
    found = sorted(r.value for r in Reading.batch_get(keys))
    assert found == [0, 1, 2, 4, 6, 8, 10, 12, 14, 16, 18]


@pytest.mark.usefixtures("readings")
def test_a_delete_by_key_takes_the_hint_the_instance_lacks() -> None:
    """An instance built from its key has no event id, so its shard was unknown; given
    ``shard_by`` (or the attribute set), the delete reaches that one item."""
    with pytest.raises(ShardKeyError, match=r"pass delete\(shard_by=\{'event_id': \.\.\.\}\)"):
        Reading("s-1", 3).delete()
    built = Reading("s-1", 3)
    built.delete(shard_by={"event_id": "e3"})
    assert built.event_id is None  # the instance is left as it was
    assert sorted(int(r["ts"]["N"]) for r in raw_items(Reading)) == [n for n in range(20) if n != 3]
    Reading("s-1", 4, event_id="e4").delete()  # the attribute set: the same
    assert len(raw_items(Reading)) == 18


@pytest.mark.usefixtures("readings")
def test_a_hint_against_the_instances_own_value_is_refused() -> None:
    """An instance holding event_id 'e5' and a hint 'e6' disagree: refused, nothing sent."""
    with sent_requests(Reading) as sent, pytest.raises(ShardKeyError) as raised:
        Reading("s-1", 5, event_id="e5").delete(shard_by={"event_id": "e6"})
    assert str(raised.value) == (
        "Reading.delete(shard_by={'event_id': 'e6'}): the instance holds event_id='e5'; leave "
        "shard_by out, or give the same value"
    )
    assert sent == []


@pytest.mark.parametrize(
    ("model", "shard_by", "message"),
    [
        (Reading, {"ts": 1}, "Reading's shard is not computed from 'ts' beyond its key; "),
        (Reading, {"value": 1}, "shard_by takes: event_id"),
        (Reading, {"event_id": None}, "give the item's event_id, or leave it out"),
        (Reading, ["e1"], "give a dict of attribute name to value"),
        (RandomEvent, {"timestamp": 1}, "shard_by takes: none: no attribute beyond the key"),
        (HashedEvent, {"timestamp": 1}, "shard_by takes: none"),
    ],
)
def test_a_hint_naming_what_the_shard_is_not_computed_from_is_refused(
    model: Any, shard_by: Any, message: str
) -> None:
    """Only attributes the shard is computed from beyond the key are hints; anything
    else is refused by name before a request, for get, batch_get and delete."""
    create_tables([Reading])
    pattern = re.escape(message)
    with sent_requests(model) as sent:
        with pytest.raises(ShardKeyError, match=pattern):
            model.get("s-1", 1, shard_by=shard_by)
        if isinstance(shard_by, dict):
            with pytest.raises(ShardKeyError, match=pattern):
                list(model.batch_get([("s-1", 1, shard_by)]))
            with pytest.raises(ShardKeyError, match=pattern):
                model("s-1", 1).delete(shard_by=shard_by)
    assert sent == []


@pytest.mark.parametrize(
    ("model", "attribute"),
    [(HashedEvent, "event_type"), (RandomEvent, "event_type"), (Reading, "value")],
)
def test_an_instance_without_its_sort_key_is_refused_by_name_not_sent_to_a_hint(
    model: Any, attribute: str
) -> None:
    """``HashedEvent("u", None).delete()`` suggested ``delete(shard_by={'timestamp': ...})``,
    a hint that is refused (the sort key is part of the key); an instance whose sort key
    is None is refused naming it, before anything is sent, for delete, update and refresh."""
    create_tables([Reading])
    item = model("s-1", None)
    name = model._range_keyname
    action = getattr(model, attribute).set("x" if attribute == "event_type" else 1)
    with sent_requests(model) as sent:
        for write in (item.delete, item.refresh, lambda: item.update([action])):
            with pytest.raises(ShardKeyError) as raised:
                write()
            message = str(raised.value)
            assert f"sort key {name!r}" in message and "is None" in message
            assert "shard_by" not in message
    assert sent == []
