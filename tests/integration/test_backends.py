"""End to end on real DynamoDB servers: moto and dynalite, both on loopback."""

from __future__ import annotations

from datetime import datetime, timezone

import boto3
import pytest
from pynamodb.connection import Connection
from pynamodb.exceptions import PutError, UpdateError
from pynamodb.transactions import TransactGet, TransactWrite

from shardmodel import DuplicateItemError, ShardKeyError, UnknownShardError
from tests.models import DailyEvent, FileLog, HashedEvent, RandomEvent, VersionedDoc
from tests.support import raw_items, stored_keys

UTC = timezone.utc


def test_random_shards_save_get_update_delete(backend: str) -> None:
    """A random-sharded item is written under user#k and read, updated, deleted by logic key."""
    event = RandomEvent(user_id="user-12345", timestamp=1700000000, event_type="click")
    event.save()
    (key,) = stored_keys(RandomEvent)
    assert key == event.get_physical_key() and key.startswith("user-12345#")
    loaded = RandomEvent.get("user-12345", 1700000000)
    assert (loaded.user_id, loaded.event_type) == ("user-12345", "click")
    loaded.update(actions=[RandomEvent.event_type.set("view")])
    assert stored_keys(RandomEvent) == [key]
    by_hand = RandomEvent(user_id="user-12345", timestamp=1700000000)
    by_hand.refresh()
    assert by_hand.event_type == "view"
    with pytest.raises(UnknownShardError):
        RandomEvent(user_id="user-12345", timestamp=1700000000).delete()
    by_hand.delete()
    assert stored_keys(RandomEvent) == []


def test_batches_query_and_count_across_shards(backend: str) -> None:
    """60 items over 3 keys: batch_get finds all, query merges in order, count sums."""
    with RandomEvent.batch_write() as batch:
        for ts in range(60):
            batch.save(RandomEvent(user_id=f"u{ts % 3}", timestamp=ts))
    wanted = [(f"u{ts % 3}", ts) for ts in range(60)]
    assert {(e.user_id, e.timestamp) for e in RandomEvent.batch_get(wanted)} == set(wanted)
    assert [e.timestamp for e in RandomEvent.query("u1")] == list(range(1, 60, 3))
    newest = RandomEvent.query("u1", scan_index_forward=False, limit=4)
    assert [e.timestamp for e in newest] == [58, 55, 52, 49]
    assert RandomEvent.count("u2") == 20
    assert len(set(stored_keys(RandomEvent))) > 3


def test_duplicates_are_reported(backend: str) -> None:
    """A logical item on two shards raises with both physical keys."""
    RandomEvent._get_connection().put_item("d#1", range_key="5", attributes={})
    RandomEvent._get_connection().put_item("d#2", range_key="5", attributes={})
    with pytest.raises(DuplicateItemError) as caught:
        RandomEvent.get("d", 5)
    assert set(caught.value.physical_keys) == {"d#1", "d#2"}


def test_version_and_conditions(backend: str) -> None:
    """Optimistic locking and key conditions work on the physical key."""
    doc = VersionedDoc(doc_id="doc", body="v1")
    doc.save()
    stale = VersionedDoc.get("doc")
    doc.body = "v2"
    doc.save()
    with pytest.raises(PutError):
        stale.save()
    doc.update(actions=[VersionedDoc.body.set("v3")], condition=VersionedDoc.doc_id == "doc")
    with pytest.raises(UpdateError):
        doc.update(actions=[VersionedDoc.body.set("x")], condition=VersionedDoc.doc_id == "no")
    assert (VersionedDoc.get("doc").body, VersionedDoc.get("doc").version) == ("v3", 3)


def test_guide_layouts_written_by_boto3(backend: str) -> None:
    """Hand-laid keys from the guides read back; the model writes the guides' keys."""
    meta = FileLog.Meta
    client = boto3.client(
        "dynamodb",
        endpoint_url=meta.host,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.put_item(
        TableName="file-log",
        Item={"path": {"S": "/shared/firetvGen2.txt_1"}, "timestamp": {"N": "1700000000"}},
    )
    client.put_item(
        TableName="daily-events",
        Item={
            "tenant_id": {"S": "tenant-456#2024-01-15#3"},
            "created": {"S": "2024-01-15T09:30:00.000000+0000"},
        },
    )
    assert FileLog.get("/shared/firetvGen2.txt", 1700000000).path == "/shared/firetvGen2.txt"
    FileLog(path="/shared/firetvGen2.txt", timestamp=1700000001).save()
    assert "/shared/firetvGen2.txt_7" in stored_keys(FileLog)
    created = datetime(2024, 1, 15, 9, 30, tzinfo=UTC)
    assert DailyEvent.get("tenant-456", created).get_physical_key() == "tenant-456#2024-01-15#3"


def test_bad_input_writes_nothing(backend: str) -> None:
    """Validation errors are raised before any request reaches the server."""
    with pytest.raises(ShardKeyError):
        DailyEvent(tenant_id="t", created=datetime(2024, 1, 15)).save()
    with pytest.raises(ShardKeyError):
        HashedEvent(user_id="x" * 2048, timestamp=1).save()
    assert raw_items(DailyEvent) == [] and raw_items(HashedEvent) == []


def test_transactions(backend: str) -> None:
    """TransactWrite and TransactGet address physical keys (moto only)."""
    if backend == "dynalite":
        pytest.skip("dynalite has no TransactWriteItems/TransactGetItems; covered on moto")
    connection = Connection(
        region="us-east-1",
        host=HashedEvent.Meta.host,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    with TransactWrite(connection=connection) as tx:
        tx.save(HashedEvent(user_id="t", timestamp=1, event_type="a"))
        tx.save(HashedEvent(user_id="t", timestamp=2, event_type="b"))
    with TransactGet(connection=connection) as get:
        first, second = get.get(HashedEvent, "t", 1), get.get(HashedEvent, "t", 2)
    assert (first.get().event_type, second.get().event_type) == ("a", "b")
    assert stored_keys(HashedEvent) == sorted(
        str(HashedEvent(user_id="t", timestamp=ts).get_physical_key()) for ts in (1, 2)
    )
