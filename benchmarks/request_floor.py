"""The floor under a 16-shard latest-100 read on dynalite: 16 requests, no mapper at all.

Measures, with the same 5 ms injected round trip as the query bench, one query of 100
items against 16 queries of 13 items made at once on a warm 16-thread pool, three ways
(after a warm-up, in rounds that time every path's one query and its 16 in turn):

* **botocore**: ``client.query`` (what plain PynamoDB sends through);
* **signed, no pipeline**: a hand-built request signed with the client's signer and sent
  on its HTTP session (urllib3), the body read with ``json.loads``;
* **lean**: :class:`shardmodel.lean.LeanClient` alone (no PynamoDB, no mapper): the
  path the merged query's shard requests take, and the leanest this project has. Its
  ratio is the harness floor the query bench's merged read is held to.

Also prints the client CPU of one 13-item Query, sent one after another with no
injected latency, on botocore, on the lean client alone, and on the merged query's
shard path (PynamoDB's request, built once and copied per shard, dispatched and its
errors wrapped by PynamoDB, over the lean client), and on PynamoDB's own ``query`` over
the lean client (the request built per call).
dynalite serves one request at a time, so 16 requests cost at least 16 service times
however lean the client.
"""

from __future__ import annotations

import gc
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

from shardmodel.lean import LeanClient
from shardmodel.testing import dynalite_server

DYNALITE = Path(__file__).resolve().parents[1] / "node_modules" / ".bin" / "dynalite"
LATENCY = 0.005
SHARDS = 16
RUNS = 30
CPU_ROUNDS = 10
CPU_PER_ROUND = 40
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
    deadline = time.monotonic() + 60
    while client.describe_table(TableName=TABLE)["Table"]["TableStatus"] != "ACTIVE":
        if time.monotonic() > deadline:
            raise RuntimeError(f"{TABLE} is not ACTIVE after 60 s")
        time.sleep(0.05)
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


def _lean_client(client: Any) -> Callable[[str, int], Any]:
    lean = LeanClient(client)

    def query(key: str, limit: int) -> Any:
        time.sleep(LATENCY)
        return lean.call("Query", _request(key, limit))

    return query


def _seconds(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def _client(url: str) -> Any:
    return boto3.client(
        "dynamodb",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(max_pool_connections=SHARDS),  # one socket per thread, kept
    )


def fan_out_ratios(url: str, load: bool = True) -> dict[str, tuple[float, float]]:
    """Per path: (one 100-item query, 16 x 13-item queries at once), median seconds."""
    client = _client(url)
    if load:
        _load(client)
    pool = ThreadPoolExecutor(SHARDS)
    keys = [f"k#{n}" for n in range(SHARDS)]
    paths = (
        ("botocore", _botocore(client)),
        ("signed, no pipeline", _lean(client, url)),
        ("lean", _lean_client(client)),
    )
    runs: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {}
    for name, query in paths:

        def one(q: Callable[[str, int], Any] = query) -> Any:
            return q("single", 100)

        def fan_out(q: Callable[[str, int], Any] = query) -> list[Any]:
            futures = [pool.submit(q, key, 13) for key in keys]
            return [future.result() for future in futures]

        runs[name] = (one, fan_out)
    for single, fan in runs.values():
        for _ in range(3):
            single()
            fan()  # warm the threads and the sockets
    samples: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in runs}
    for _ in range(RUNS):  # every path in turn, so drift falls on all of them alike
        for name, (single, fan) in runs.items():
            samples[name][0].append(_seconds(single))
            samples[name][1].append(_seconds(fan))
    pool.shutdown()
    return {
        name: (statistics.median(ones), statistics.median(many))
        for name, (ones, many) in samples.items()
    }


def interleaved_cpu(
    calls: dict[str, Callable[[], object]], rounds: int, repeat: int
) -> dict[str, list[float]]:
    """Process CPU seconds per call of each of ``calls``: one sample a round.

    Each sample times ``repeat`` calls; rounds visit the calls in turn, so drift (a
    neighbour, the CPU clock) spreads over all of them alike.
    """
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            started = time.process_time()
            for _ in range(repeat):
                call()
            samples[name].append((time.process_time() - started) / repeat)
    return samples


def _cpu_rounds(calls: dict[str, Callable[[], object]]) -> dict[str, float]:
    """CPU seconds per call of each path: the median of CPU_ROUNDS interleaved rounds.

    The median keeps one collection of the caller's heap (the query bench's 100,000
    streamed items) out of a path's number.
    """
    gc.collect()
    for call in calls.values():
        for _ in range(20):
            call()
    samples = interleaved_cpu(calls, CPU_ROUNDS, CPU_PER_ROUND)
    return {name: statistics.median(values) for name, values in samples.items()}


def cpu_per_request(url: str) -> dict[str, float]:
    """Client CPU seconds of one 13-item Query, per path (no injected latency)."""
    from pynamodb.attributes import NumberAttribute, UnicodeAttribute
    from pynamodb.models import Model

    from shardmodel.lean import table_connection
    from shardmodel.lean.prepared import PreparedQuery
    from shardmodel.testing import bind_models

    class Floor(Model):
        class Meta:
            table_name = TABLE
            region = "us-east-1"

        pk = UnicodeAttribute(hash_key=True)
        sk = NumberAttribute(range_key=True)

    bind_models([Floor], host=url, aws_access_key_id="testing", aws_secret_access_key="testing")
    client = _client(url)
    lean = LeanClient(client)
    table = table_connection(Floor)
    shard = PreparedQuery(table, scan_index_forward=False)  # as the merged query sends
    return _cpu_rounds(
        {
            "botocore client.query": lambda: client.query(**_request("k#1", 13)),
            "lean client alone": lambda: lean.call("Query", _request("k#1", 13)),
            "PynamoDB query, lean client": lambda: table.query(
                "k#1", limit=13, scan_index_forward=False
            ),
            "merged query's shard path": lambda: shard("k#1", None, 13),
        }
    )


def print_floor(ratios: dict[str, tuple[float, float]]) -> None:
    print(
        f"16 requests vs one, dynalite, {LATENCY * 1000:.0f} ms round trip, median of {RUNS} "
        "interleaved rounds"
    )
    print(f"{'path':<22}{'1 x 100 ms':>12}{'16 x 13 ms':>12}{'ratio':>8}")
    for name, (one, many) in ratios.items():
        print(f"{name:<22}{one * 1000:>12.1f}{many * 1000:>12.1f}{many / one:>8.2f}")


def print_cpu(cpu: dict[str, float]) -> None:
    print(
        f"\nclient CPU of one 13-item Query (process CPU, median of {CPU_ROUNDS} interleaved "
        f"rounds of {CPU_PER_ROUND}, no latency)"
    )
    for name, seconds in cpu.items():
        print(f"  {name:<28}{seconds * 1e3:>7.3f} ms")


def main() -> None:
    with dynalite_server(DYNALITE) as url:
        print_floor(fan_out_ratios(url))
        print_cpu(cpu_per_request(url))


if __name__ == "__main__":
    main()
