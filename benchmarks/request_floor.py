"""The floor under a 16-shard latest-100 read on dynalite: 16 requests, no mapper at all.

Measures, with the same 5 ms injected round trip as the query bench, one query of 100
items against 16 queries of 13 items made at once on a warm 16-thread pool, two ways:

* **botocore**: ``client.query`` (what PynamoDB, and so the mapper, sends through);
* **lean**: a hand-built request signed with the client's signer and sent on its HTTP
  session, the body read with ``json.loads``: botocore's request pipeline skipped.

If 16 requests cost more than the target ratio here, no client in one Python process
can meet it on this machine: dynalite serves one request at a time and the GIL
serializes each request's client CPU.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
from botocore.awsrequest import AWSRequest
from botocore.config import Config

from shardmodel.testing import dynalite_server

DYNALITE = Path(__file__).resolve().parents[1] / "node_modules" / ".bin" / "dynalite"
LATENCY = 0.005
SHARDS = 16
RUNS = 30
TABLE = "floor-bench"


def _load(client: Any) -> None:
    client.create_table(
        TableName=TABLE,
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    for n in range(400):
        for pk in ("single", f"k#{n % SHARDS}"):
            item = {"pk": {"S": pk}, "sk": {"N": str(n)}, "body": {"S": "x" * 80}}
            client.put_item(TableName=TABLE, Item=item)


def _request(key: str, limit: int) -> dict[str, Any]:
    return {
        "TableName": TABLE,
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": {"S": key}},
        "Limit": limit,
        "ScanIndexForward": False,
    }


def _botocore(client: Any) -> Callable[[str, int], Any]:
    def query(key: str, limit: int) -> Any:
        time.sleep(LATENCY)
        return client.query(**_request(key, limit))

    return query


def _lean(client: Any, url: str) -> Callable[[str, int], Any]:
    signer, session = client._request_signer, client._endpoint.http_session
    headers = {
        "Content-Type": "application/x-amz-json-1.0",
        "X-Amz-Target": "DynamoDB_20120810.Query",
    }

    def query(key: str, limit: int) -> Any:
        time.sleep(LATENCY)
        body = json.dumps(_request(key, limit))
        request = AWSRequest(method="POST", url=f"{url}/", data=body, headers=dict(headers))
        signer.sign("Query", request)
        return json.loads(session.send(request.prepare()).content)

    return query


def _median(run: Callable[[], object]) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    with dynalite_server(DYNALITE) as url:
        client = boto3.client(
            "dynamodb",
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(max_pool_connections=SHARDS),  # one socket per thread, kept
        )
        _load(client)
        pool = ThreadPoolExecutor(SHARDS)
        keys = [f"k#{n}" for n in range(SHARDS)]
        print(f"16 requests vs one, dynalite, {LATENCY * 1000:.0f} ms round trip, median of {RUNS}")
        print(f"{'path':<10}{'1 x 100 ms':>12}{'16 x 13 ms':>12}{'ratio':>8}")
        for name, query in (("botocore", _botocore(client)), ("lean", _lean(client, url))):

            def fan_out(q: Callable[[str, int], Any] = query) -> list[Any]:
                futures = [pool.submit(q, key, 13) for key in keys]
                return [future.result() for future in futures]

            for _ in range(3):
                fan_out()  # warm the threads and the sockets
            one = _median(lambda q=query: q("single", 100))
            many = _median(fan_out)
            print(f"{name:<10}{one * 1000:>12.1f}{many * 1000:>12.1f}{many / one:>8.2f}")
        pool.shutdown()


if __name__ == "__main__":
    main()
