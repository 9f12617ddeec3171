"""User events on a hot key: random shards for writes, one merged stream for reads.

Runs on in-process moto: `python examples/user_events.py`.
"""

from __future__ import annotations

from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import RandomShards, ShardedKeyAttribute, ShardedModel
from shardmodel.testing import create_tables, mock_dynamodb


class Event(ShardedModel):
    class Meta:
        table_name = "user-events"
        region = "us-east-1"

    user_id = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(10))
    timestamp = NumberAttribute(range_key=True)
    event_type = UnicodeAttribute()


def main() -> None:
    with mock_dynamodb():
        create_tables([Event])
        with Event.batch_write() as batch:
            for n in range(500):
                kind = "click" if n % 3 else "view"
                batch.save(Event(user_id="user-12345", timestamp=1700000000 + n, event_type=kind))

        latest = list(Event.query("user-12345", scan_index_forward=False, limit=3))
        print("latest 3:", [(e.user_id, e.timestamp, e.event_type) for e in latest])
        assert [e.timestamp for e in latest] == [1700000499, 1700000498, 1700000497]

        views = Event.count("user-12345", filter_condition=Event.event_type == "view")
        print("views:", views)
        assert views == 167

        one = Event.get("user-12345", 1700000042)
        print("get:", one.user_id, one.timestamp, "stored under", one.get_physical_key())


if __name__ == "__main__":
    main()
