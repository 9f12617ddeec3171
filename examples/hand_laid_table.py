"""Read and write a table laid out by hand in a public guide's calculated-suffix layout.

Items were written by another program as ``<path>_<k>`` with
``k = md5(path + str(timestamp)) % 10 + 1``. A model with matching settings reads them
and writes new items under the same keys. Runs on in-process moto.
"""

from __future__ import annotations

import hashlib

import boto3
from pynamodb.attributes import NumberAttribute

from shardmodel import HashShards, ShardedKeyAttribute, ShardedModel
from shardmodel.testing import create_tables, mock_dynamodb

PATH = "/shared/firetvGen2.txt"


class FileLog(ShardedModel):
    class Meta:
        table_name = "file-log"
        region = "us-east-1"

    path = ShardedKeyAttribute(
        hash_key=True,
        strategy=HashShards(10, on=["path", "timestamp"]),
        separator="_",
        first_shard=1,
    )
    timestamp = NumberAttribute(range_key=True)
    size = NumberAttribute()


def legacy_key(path: str, timestamp: int) -> str:
    return f"{path}_{int(hashlib.md5(f'{path}{timestamp}'.encode()).hexdigest(), 16) % 10 + 1}"


def main() -> None:
    with mock_dynamodb():
        create_tables([FileLog])
        client = boto3.client("dynamodb", region_name="us-east-1")
        for ts in range(1700000000, 1700000005):
            client.put_item(
                TableName="file-log",
                Item={
                    "path": {"S": legacy_key(PATH, ts)},
                    "timestamp": {"N": str(ts)},
                    "size": {"N": "100"},
                },
            )
        entry = FileLog.get(PATH, 1700000003)
        print("read legacy item:", entry.path, entry.timestamp, "from", entry.get_physical_key())
        new = FileLog(path=PATH, timestamp=1700000100, size=7)
        new.save()
        assert new.get_physical_key() == legacy_key(PATH, 1700000100)
        print("new item written under the legacy key:", new.get_physical_key())
        print("all items, merged in order:", [e.timestamp for e in FileLog.query(PATH)])


if __name__ == "__main__":
    main()
