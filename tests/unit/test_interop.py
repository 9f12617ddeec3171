"""Tables laid out by hand, as the public write-sharding guides do, read through models."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone

import boto3
import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import HashShards, ShardedKeyAttribute, ShardedModel
from shardmodel.engine.reads import candidate_keys
from shardmodel.testing import create_tables
from tests.models import DailyEvent, FileLog, RandomEvent, SensorReading
from tests.support import stored_keys, xxh64

pytestmark = pytest.mark.usefixtures("tables")


def client():  # type: ignore[no-untyped-def]
    return boto3.client("dynamodb", region_name="us-east-1")


def test_random_suffix_items_written_by_boto3_read_back() -> None:
    """Items put as user-12345#3 by plain boto3 come back with logical key user-12345."""
    for shard, ts in ((3, 1700000000), (7, 1700000001)):
        client().put_item(
            TableName="random-events",
            Item={"user_id": {"S": f"user-12345#{shard}"}, "timestamp": {"N": str(ts)}},
        )
    loaded = RandomEvent.get("user-12345", 1700000001)
    assert (loaded.user_id, loaded.get_physical_key()) == ("user-12345", "user-12345#7")
    assert [e.timestamp for e in RandomEvent.query("user-12345")] == [1700000000, 1700000001]


def guide_suffix(path: str, timestamp: int) -> int:
    """The guides' calculated suffix, computed independently of shardmodel."""
    return int(hashlib.md5((path + str(timestamp)).encode()).hexdigest(), 16) % 10 + 1


def test_calculated_suffix_layout_matches_the_guide() -> None:
    """path_<md5(path + timestamp) % 10 + 1>: boto3 items read back, model writes the same."""
    path = "/shared/firetvGen2.txt"
    client().put_item(
        TableName="file-log",
        Item={
            "path": {"S": f"{path}_{guide_suffix(path, 1700000000)}"},
            "timestamp": {"N": "1700000000"},
            "size": {"N": "512"},
        },
    )
    assert FileLog.get(path, 1700000000).size == 512
    for ts in range(1700000001, 1700000021):
        FileLog(path=path, timestamp=ts).save()
    expected = {f"{path}_{guide_suffix(path, ts)}" for ts in range(1700000000, 1700000021)}
    assert set(stored_keys(FileLog)) == expected
    assert {int(k.rsplit("_", 1)[1]) for k in expected} <= set(range(1, 11))
    assert stored_keys(FileLog)[0].startswith("/shared/firetvGen2.txt_")
    assert f"{path}_1" in expected and f"{path}_7" in expected  # fixed: ts ...000 and ...001


def test_time_bucket_then_shard_layout() -> None:
    """tenant-456#2024-01-15#3 written by hand is found by get() with its sort key."""
    created = datetime(2024, 1, 15, 9, 30, tzinfo=timezone.utc)
    client().put_item(
        TableName="daily-events",
        Item={
            "tenant_id": {"S": "tenant-456#2024-01-15#3"},
            "created": {"S": "2024-01-15T09:30:00.000000+0000"},
            "event_type": {"S": "login"},
        },
    )
    loaded = DailyEvent.get("tenant-456", created)
    assert (loaded.tenant_id, loaded.event_type) == ("tenant-456", "login")
    assert loaded.get_physical_key() == "tenant-456#2024-01-15#3"


def test_shard_leading_layout() -> None:
    """pk "<shard>#2023-10-27-15", sk "sensor-alpha-001#<iso time>": the shard leads."""
    sk = "sensor-alpha-001#2023-10-27T15:04:05Z"
    SensorReading(hour="2023-10-27-15", sk=sk, value=21).save()
    assert stored_keys(SensorReading) == ["3#2023-10-27-15"]
    client().put_item(
        TableName="sensor-readings",
        Item={
            "hour": {"S": "3#2023-10-27-15"},
            "sk": {"S": "sensor-alpha-001#2023-10-27T15:09:00Z"},
            "value": {"N": "22"},
        },
    )
    readings = list(SensorReading.query("2023-10-27-15"))
    assert [(r.hour, r.value) for r in readings] == [("2023-10-27-15", 21), ("2023-10-27-15", 22)]


# -- layouts sharded by other code, with a shard function ------------------------------


def test_xxh64_is_the_reference_hash() -> None:
    """The helper gives the xxHash specification's XXH64 of the reference inputs."""
    assert xxh64(b"") == 0xEF46DB3751D8E999
    assert xxh64(b"a") == 0xD24EC4F1A98C6E5B
    assert xxh64(b"abc") == 0x44BC2CF5AD770999
    assert xxh64(b"Nobody inspects the spammish repetition") == 0xFBCEA83C8A378BF1


class SampleOrder(ShardedModel):
    """The write-sharding sample's layout: ``<customer>.<int(order id) % 5>``."""

    class Meta:
        table_name = "sample-orders"
        region = "us-east-1"

    customer = ShardedKeyAttribute(
        hash_key=True,
        strategy=HashShards(5, on=["order_id"], algorithm=lambda values: int(values[0])),
        separator=".",
    )
    order_id = NumberAttribute(range_key=True)
    total = NumberAttribute(null=True)


def _by_xxh64(values: tuple[str, ...]) -> int:
    return xxh64(values[0].encode("utf-8"))


class XxDevice(ShardedModel):
    """A layout other tools write: ``<device>#<xxh64(reading id) % 16>``."""

    class Meta:
        table_name = "xx-devices"
        region = "us-east-1"

    device = ShardedKeyAttribute(
        hash_key=True, strategy=HashShards(16, on=["reading"], algorithm=_by_xxh64)
    )
    reading = UnicodeAttribute(range_key=True)
    value = NumberAttribute(null=True)


def test_the_write_sharding_samples_int_modulo_layout_reads_and_writes_unchanged() -> None:
    """Items the sample writes (``suffix = int(id) % N``, '.' separator) are found by a
    one-shard get; the model's writes land where the sample's one-shard reads look."""
    create_tables([SampleOrder])
    for order in (7, 12, 1001):
        client().put_item(
            TableName="sample-orders",
            Item={"customer": {"S": f"acme.{order % 5}"}, "order_id": {"N": str(order)}},
        )
    assert [SampleOrder.get("acme", order).order_id for order in (7, 12, 1001)] == [7, 12, 1001]
    assert candidate_keys(SampleOrder, "acme", 12) == ["acme.2"]
    for order in range(20, 40):
        SampleOrder(customer="acme", order_id=order, total=order).save()
    for order in range(20, 40):
        found = client().get_item(
            TableName="sample-orders",
            Key={"customer": {"S": f"acme.{order % 5}"}, "order_id": {"N": str(order)}},
        )
        assert found["Item"]["total"] == {"N": str(order)}
    assert [o.order_id for o in SampleOrder.query("acme")] == [7, 12, *range(20, 40), 1001]


def test_an_xxhash64_layout_reads_and_writes_unchanged() -> None:
    """Items put under ``device#<xxh64(id) % 16>`` by another tool read back through a
    one-shard get, and the model writes each item where that tool reads it."""
    create_tables([XxDevice])
    ids = [f"r-{n}" for n in range(40)]
    for reading in ids[:20]:
        client().put_item(
            TableName="xx-devices",
            Item={
                "device": {"S": f"dev-9#{xxh64(reading.encode()) % 16}"},
                "reading": {"S": reading},
                "value": {"N": "1"},
            },
        )
    for reading in ids[20:]:
        XxDevice(device="dev-9", reading=reading, value=2).save()
    for reading in ids:
        assert candidate_keys(XxDevice, "dev-9", reading) == [
            f"dev-9#{xxh64(reading.encode()) % 16}"
        ]
        assert XxDevice.get("dev-9", reading).reading == reading
    assert len(set(stored_keys(XxDevice))) > 8  # spread over the shards
    assert sorted(d.reading for d in XxDevice.query("dev-9")) == sorted(ids)
