"""The async bench's relay: every request held on the wire, answers unchanged, in order."""

from __future__ import annotations

import time
import uuid

from benchmarks.request_floor import _client
from benchmarks.wire_delay import delayed_endpoint

DELAY = 0.05


def test_requests_are_held_for_the_delay_and_answered_as_directly(dynalite_url: str) -> None:
    direct = _client(dynalite_url)
    table = f"relay-{uuid.uuid4().hex[:8]}"
    direct.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        with delayed_endpoint(dynalite_url, DELAY) as url:
            relayed = _client(url)
            relayed.list_tables()  # the connection opened
            for n in range(5):  # one kept connection: each request after the one before
                started = time.perf_counter()
                relayed.put_item(TableName=table, Item={"pk": {"S": f"k{n}"}, "n": {"N": str(n)}})
                assert time.perf_counter() - started >= DELAY
            got = relayed.scan(TableName=table, ConsistentRead=True)["Items"]
        assert sorted(got, key=lambda i: i["pk"]["S"]) == [
            {"pk": {"S": f"k{n}"}, "n": {"N": str(n)}} for n in range(5)
        ]
        assert direct.scan(TableName=table)["Count"] == 5
    finally:
        direct.delete_table(TableName=table)
