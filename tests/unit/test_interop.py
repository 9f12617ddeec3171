"""Tables laid out by hand, as the public write-sharding guides do, read through models."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone

import boto3
import pytest

from tests.models import DailyEvent, FileLog, RandomEvent, SensorReading
from tests.support import stored_keys

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
