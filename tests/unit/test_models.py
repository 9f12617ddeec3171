"""ShardedModel rewrites keys on every operation and shows logical keys on every load."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from pynamodb.connection import Connection
from pynamodb.exceptions import PutError, UpdateError
from pynamodb.transactions import TransactGet, TransactWrite

from shardmodel import (
    DuplicateItemError,
    HashShards,
    PhysicalKey,
    ShardKeyError,
    UnknownShardError,
    UnsupportedOperationError,
)
from tests.models import DailyEvent, HashedEvent, RandomEvent, SensorReading, VersionedDoc
from tests.support import raw_items, stored_keys

pytestmark = pytest.mark.usefixtures("tables")
UTC = timezone.utc


def test_save_writes_physical_key_and_get_returns_logical() -> None:
    """A saved random-sharded item sits under user#k; get() finds it and shows user."""
    event = RandomEvent(user_id="user-12345", timestamp=1700000000, event_type="click")
    event.save()
    (key,) = stored_keys(RandomEvent)
    assert key == event.get_physical_key()
    assert key.startswith("user-12345#") and 0 <= int(key.rsplit("#", 1)[1]) < 10
    loaded = RandomEvent.get("user-12345", 1700000000)
    assert loaded.user_id == "user-12345"
    assert loaded.get_physical_key() == key
    assert loaded.event_type == "click"


def test_resave_and_update_stay_on_the_loaded_shard() -> None:
    """Re-saving or updating a loaded item never moves it to another shard."""
    RandomEvent(user_id="u", timestamp=1, event_type="a").save()
    before = stored_keys(RandomEvent)
    loaded = RandomEvent.get("u", 1)
    for kind in ("b", "c", "d"):
        loaded.event_type = kind
        loaded.save()
    loaded.update(actions=[RandomEvent.event_type.set("e")])
    assert stored_keys(RandomEvent) == before
    assert RandomEvent.get("u", 1).event_type == "e"


def test_repeated_save_of_one_instance_is_one_item() -> None:
    """A retried save of the same instance goes to the same shard: never a second copy."""
    event = RandomEvent(user_id="u", timestamp=1)
    for _ in range(5):
        event.save()
    assert len(stored_keys(RandomEvent)) == 1


def test_refresh_and_delete_use_the_physical_key() -> None:
    """refresh() and delete() address the stored shard; an unknown shard is looked up."""
    RandomEvent(user_id="u", timestamp=1, event_type="a").save()
    by_hand = RandomEvent(user_id="u", timestamp=1)
    by_hand.refresh()
    assert by_hand.event_type == "a"
    assert by_hand.get_physical_key() == stored_keys(RandomEvent)[0]
    by_hand.delete()
    assert stored_keys(RandomEvent) == []
    with pytest.raises(RandomEvent.DoesNotExist):
        RandomEvent(user_id="u", timestamp=1).refresh()


def test_update_or_delete_of_unknown_shard_fails_before_any_call() -> None:
    """A random-sharded instance never loaded nor saved cannot be updated or deleted."""
    RandomEvent(user_id="u", timestamp=1, event_type="a").save()
    ghost = RandomEvent(user_id="u", timestamp=1)
    with pytest.raises(UnknownShardError, match="neither loaded nor saved"):
        ghost.update(actions=[RandomEvent.event_type.set("b")])
    with pytest.raises(UnknownShardError):
        ghost.delete()
    with pytest.raises(UnknownShardError), RandomEvent.batch_write() as batch:
        batch.delete(ghost)
    assert RandomEvent.get("u", 1).event_type == "a"


def test_duplicate_logical_item_names_both_physical_keys() -> None:
    """Two shards holding one logical item is reported with both physical keys."""
    first = RandomEvent(user_id="dup", timestamp=1)
    first.save()
    shard = int(first.get_physical_key().rsplit("#", 1)[1])  # type: ignore[union-attr]
    other = f"dup#{(shard + 1) % 10}"
    RandomEvent._get_connection().put_item(other, range_key="1", attributes={})
    with pytest.raises(DuplicateItemError) as caught:
        RandomEvent.get("dup", 1)
    assert set(caught.value.physical_keys) == {first.get_physical_key(), other}
    assert other in str(caught.value)


def test_an_item_split_across_shards_is_refused_with_how_to_store_it() -> None:
    """The write-sharding guide's split profile: parts with disjoint attributes, no copy.

    ``get`` reads one item; the error names the parts' attributes and the layout that
    reads them (each part under its own sort key, on a shard hashed from it).
    """
    first = RandomEvent(user_id="split", timestamp=1, event_type="contact")
    first.save()
    shard = int(first.get_physical_key().rsplit("#", 1)[1])  # type: ignore[union-attr]
    other = f"split#{(shard + 1) % 10}"
    RandomEvent._get_connection().put_item(
        other, range_key="1", attributes={"prefs": {"S": "dark"}}
    )
    with pytest.raises(DuplicateItemError) as caught:
        RandomEvent.get("split", 1)
    message = str(caught.value)
    assert "is split across 2 shards" in message
    assert "(event_type / prefs)" in message or "(prefs / event_type)" in message
    assert "its own sort key" in message and "HashShards(on=[sort key])" in message
    assert set(caught.value.physical_keys) == {first.get_physical_key(), other}


def test_hash_shards_get_reads_one_shard_and_overwrites() -> None:
    """HashShards(on=[sort key]) gives overwrite semantics: same key, same shard."""
    HashedEvent(user_id="u", timestamp=42, event_type="a").save()
    HashedEvent(user_id="u", timestamp=42, event_type="b").save()
    assert stored_keys(HashedEvent) == ["u#6"]
    assert HashedEvent.get("u", 42).event_type == "b"
    by_hand = HashedEvent(user_id="u", timestamp=42)
    assert by_hand.get_physical_key() == "u#6"
    by_hand.update(actions=[HashedEvent.event_type.set("c")])
    assert HashedEvent.get("u", 42).event_type == "c"


def test_time_buckets_get_by_sort_key() -> None:
    """A time-bucketed item is found from its sort key's bucket, over its random shards."""
    created = datetime(2024, 1, 15, 10, tzinfo=UTC)
    DailyEvent(tenant_id="tenant-456", created=created, event_type="x").save()
    (key,) = stored_keys(DailyEvent)
    assert key.startswith("tenant-456#2024-01-15#")
    loaded = DailyEvent.get("tenant-456", created)
    assert (loaded.tenant_id, loaded.event_type) == ("tenant-456", "x")


def test_batch_write_and_batch_get_round_trip() -> None:
    """batch_write rewrites keys; batch_get finds every item across shards, logical keys."""
    with RandomEvent.batch_write() as batch:
        for ts in range(60):
            batch.save(RandomEvent(user_id=f"user-{ts % 3}", timestamp=ts, event_type="e"))
    assert len(stored_keys(RandomEvent)) == 60
    wanted = [(f"user-{ts % 3}", ts) for ts in range(60)] + [("user-9", 1)]
    found = {(e.user_id, e.timestamp) for e in RandomEvent.batch_get(wanted)}
    assert found == set(wanted[:60])
    loaded = list(RandomEvent.batch_get(wanted[:30]))
    with RandomEvent.batch_write() as batch:
        for event in loaded:
            batch.delete(event)
    assert len(stored_keys(RandomEvent)) == 30


def test_unprocessed_keys_are_resent() -> None:
    """Keys that BatchGetItem leaves unprocessed are resent until every item is read."""
    for ts in range(5):
        HashedEvent(user_id="u", timestamp=ts).save()
    events = HashedEvent._get_connection().connection.client.meta.events
    dropped = {"count": 0}

    def drop_half(parsed: dict, **_: object) -> None:  # type: ignore[type-arg]
        items = parsed.get("Responses", {}).get("hashed-events", [])
        if len(items) > 1:
            keep, moved = items[: len(items) // 2], items[len(items) // 2 :]
            parsed["Responses"]["hashed-events"] = keep
            keys = [{"user_id": i["user_id"], "timestamp": i["timestamp"]} for i in moved]
            parsed["UnprocessedKeys"] = {"hashed-events": {"Keys": keys}}
            dropped["count"] += len(moved)

    events.register("after-call.dynamodb.BatchGetItem", drop_half)
    try:
        found = sorted(e.timestamp for e in HashedEvent.batch_get([("u", t) for t in range(5)]))
    finally:
        events.unregister("after-call.dynamodb.BatchGetItem", drop_half)
    assert dropped["count"] >= 2
    assert found == [0, 1, 2, 3, 4]


def test_version_attribute_optimistic_locking() -> None:
    """VersionAttribute works through sharding: a stale copy cannot overwrite."""
    doc = VersionedDoc(doc_id="d1", body="v1")
    doc.save()
    stale = VersionedDoc.get("d1")
    doc.body = "v2"
    doc.save()
    stale.body = "stale"
    with pytest.raises(PutError):
        stale.save()
    assert VersionedDoc.get("d1").body == "v2"
    assert VersionedDoc.get("d1").version == 2
    with pytest.raises(UpdateError):
        stale.update(actions=[VersionedDoc.body.set("stale")])


def test_conditions_on_the_key_compare_physical_keys() -> None:
    """A condition comparing the partition key to the logical key is rewritten."""
    doc = VersionedDoc(doc_id="d2", body="a")
    doc.save()
    doc.update(
        actions=[VersionedDoc.body.set("b")],
        condition=(VersionedDoc.doc_id == "d2") & VersionedDoc.body.exists(),
    )
    assert VersionedDoc.get("d2").body == "b"
    with pytest.raises(UpdateError):
        doc.update(actions=[VersionedDoc.body.set("c")], condition=VersionedDoc.doc_id == "zz")
    doc.delete(condition=VersionedDoc.doc_id == "d2")
    assert stored_keys(VersionedDoc) == []


def test_create_only_condition_on_a_sharded_key() -> None:
    """does_not_exist() on the key makes save() create-only on its shard."""
    event = HashedEvent(user_id="u", timestamp=7)
    event.save(condition=HashedEvent.user_id.does_not_exist())
    with pytest.raises(PutError):
        HashedEvent(user_id="u", timestamp=7).save(condition=HashedEvent.user_id.does_not_exist())


def test_updating_an_on_attribute_is_refused_before_the_call() -> None:
    """Changing a value the shard is computed from would strand the item: refused.

    An update that sets it raises before the call; so does a save of the loaded item
    after the value was changed to one of another shard: the stored item stays as it
    was, and no copy appears on the other shard.
    """
    reading = SensorReading(hour="2023-10-27-15", sk="sensor-alpha-001#t1", value=1)
    reading.save()
    stored = stored_keys(SensorReading)
    with pytest.raises(ShardKeyError, match=r"SensorReading\.sk"):
        reading.update(actions=[SensorReading.sk.set("other")])
    shards = HashShards(10, on=["sk"])
    assert shards.shard_of(["sensor-alpha-001#t3"]) != shards.shard_of(["sensor-alpha-001#t1"])
    reading.sk = "sensor-alpha-001#t3"
    reading.value = 2
    with pytest.raises(ShardKeyError, match="delete"):
        reading.save()
    assert SensorReading.get("2023-10-27-15", "sensor-alpha-001#t1").value == 1
    assert stored_keys(SensorReading) == stored


def test_transactions_rewrite_keys() -> None:
    """TransactWrite save/update/delete/condition_check and TransactGet use physical keys."""
    connection = Connection(region="us-east-1")
    kept = HashedEvent(user_id="t", timestamp=1, event_type="a")
    kept.save()
    HashedEvent(user_id="t", timestamp=3, event_type="checked").save()
    with TransactWrite(connection=connection) as tx:
        tx.save(HashedEvent(user_id="t", timestamp=2, event_type="new"))
        tx.update(kept, actions=[HashedEvent.event_type.set("b")])
        tx.condition_check(HashedEvent, "t", 3, condition=HashedEvent.event_type.exists())
    with TransactGet(connection=connection) as get:
        one = get.get(HashedEvent, "t", 1)
        two = get.get(HashedEvent, "t", 2)
    assert (one.get().event_type, two.get().event_type) == ("b", "new")
    assert one.get().user_id == "t"
    with TransactWrite(connection=connection) as tx:
        tx.delete(one.get())
    remaining = [HashedEvent(user_id="t", timestamp=ts).get_physical_key() for ts in (2, 3)]
    assert stored_keys(HashedEvent) == sorted(remaining)


def test_transactions_on_random_shards_need_a_physical_key() -> None:
    """A random-sharded key names no single item: use the loaded instance's physical key."""
    event = RandomEvent(user_id="r", timestamp=1, event_type="a")
    event.save()
    connection = Connection(region="us-east-1")
    with pytest.raises(UnsupportedOperationError, match="get_physical_key"):
        TransactGet(connection=connection).get(RandomEvent, "r", 1)
    with TransactGet(connection=connection) as get:
        future = get.get(RandomEvent, event.get_physical_key(), 1)
    assert future.get().user_id == "r"


def test_physical_key_reads_exactly_that_shard() -> None:
    """get(PhysicalKey(...)) reads one named shard; a wrong shard is DoesNotExist."""
    event = RandomEvent(user_id="p", timestamp=1)
    event.save()
    physical = event.get_physical_key()
    assert isinstance(physical, PhysicalKey)
    assert RandomEvent.get(physical, 1).user_id == "p"
    shard = int(physical.rsplit("#", 1)[1])
    with pytest.raises(RandomEvent.DoesNotExist):
        RandomEvent.get(PhysicalKey(f"p#{(shard + 1) % 10}"), 1)


def test_scan_returns_logical_keys_and_count_sums_shards() -> None:
    """scan() shows logical keys; count() of a logical key sums every shard."""
    for ts in range(30):
        RandomEvent(user_id="c", timestamp=ts).save()
    assert {e.user_id for e in RandomEvent.scan()} == {"c"}
    assert len(stored_keys(RandomEvent)) == 30
    assert len(set(stored_keys(RandomEvent))) > 1
    assert RandomEvent.count("c") == 30
    assert RandomEvent.count("c", RandomEvent.timestamp < 10) == 10


def test_query_merges_shards_in_sort_order() -> None:
    """query() reads every shard and yields one stream ordered by the sort key."""
    for ts in (5, 3, 9, 1, 7, 2, 8):
        RandomEvent(user_id="q", timestamp=ts).save()
    assert [e.timestamp for e in RandomEvent.query("q")] == [1, 2, 3, 5, 7, 8, 9]
    descending = RandomEvent.query("q", scan_index_forward=False, limit=3)
    assert [e.timestamp for e in descending] == [9, 8, 7]
    assert [e.timestamp for e in RandomEvent.query("q", RandomEvent.timestamp > 6)] == [7, 8, 9]


def test_raw_items_keep_the_logical_key_only_in_the_physical_key() -> None:
    """Nothing but the partition key changes in storage: other attributes are stored as-is."""
    RandomEvent(user_id="s", timestamp=1, event_type="t").save()
    (item,) = raw_items(RandomEvent)
    assert set(item) == {"user_id", "timestamp", "event_type"}
    assert item["event_type"] == {"S": "t"}


def test_time_buckets_on_iso_string_and_epoch_attributes() -> None:
    """ISO 8601 UTC strings and epoch numbers bucket by their UTC day; other offsets are
    refused (DynamoDB compares the text, which would disagree with the UTC bucket)."""
    from pynamodb.attributes import NumberAttribute, UnicodeAttribute

    from shardmodel import ShardedKeyAttribute, ShardedModel, TimeBuckets

    class IsoLog(ShardedModel):
        class Meta:
            table_name = "random-events"
            region = "us-east-1"

        user_id = ShardedKeyAttribute(hash_key=True, strategy=TimeBuckets("event_type", "day"))
        timestamp = NumberAttribute(range_key=True)
        event_type = UnicodeAttribute()

    with pytest.raises(ShardKeyError, match=r"UTC offset \+0200.*'2024-01-15T23:30:00.000000Z'"):
        IsoLog(user_id="u", timestamp=1, event_type="2024-01-16T01:30:00+02:00").save()
    IsoLog(user_id="u", timestamp=1, event_type="2024-01-15T23:30:00Z").save()
    IsoLog(user_id="u", timestamp=2, event_type="2024-01-15T23:45:00+00:00").save()
    assert stored_keys(RandomEvent) == ["u#2024-01-15", "u#2024-01-15"]

    class EpochLog(ShardedModel):
        class Meta:
            table_name = "hashed-events"
            region = "us-east-1"

        user_id = ShardedKeyAttribute(hash_key=True, strategy=TimeBuckets("timestamp", "month"))
        timestamp = NumberAttribute(range_key=True)

    EpochLog(user_id="u", timestamp=1705363200).save()  # 2024-01-16T00:00:00Z
    assert stored_keys(HashedEvent) == ["u#2024-01"]
    assert EpochLog.get("u", 1705363200).user_id == "u"
