"""Operations against moto and dynalite servers: grow_shards, the CLI, the throttle policy,
prewarming."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from pynamodb.attributes import NumberAttribute

from shardmodel import DynamicShards, ShardedKeyAttribute, ShardedModel
from shardmodel.cli import main
from shardmodel.ops import TableThrottlePolicy
from shardmodel.testing import SimulatedClock, bind_models, create_tables, drop_tables
from tests.integration.conftest import CREDENTIALS, unbind
from tests.models import DynamicEvent
from tests.support import error_line

CLOCK = SimulatedClock(start=19675 * 86400 + 3600)


class Budget(ShardedModel):
    """A provisioned table (5 RCU, 5 WCU) for the throttle policy."""

    class Meta:
        table_name = "ops-budget"
        read_capacity_units = 5
        write_capacity_units = 5

    key = ShardedKeyAttribute(hash_key=True, strategy=DynamicShards(cooldown=0, jitter=0))
    seq = NumberAttribute(range_key=True)


def _url(backend: str, request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{backend}_url"))


@pytest.fixture
def budget(backend: str, request: pytest.FixtureRequest) -> Iterator[type[Budget]]:
    bind_models([Budget], host=_url(backend, request), **CREDENTIALS)
    drop_tables([Budget])
    create_tables([Budget])
    yield Budget
    drop_tables([Budget])
    unbind([Budget])


def _throttle(reason: str) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": "ProvisionedThroughputExceededException", "Message": "x"},
            "ThrottlingReasons": [{"reason": reason, "resource": ""}],
        },
        "PutItem",
    )


def _provisioned(model: Any) -> tuple[int, int]:
    """The table's provisioned units once an update has settled (servers apply it later)."""
    deadline = time.monotonic() + 60
    while True:
        table = model._get_connection().describe_table()
        if table["TableStatus"] == "ACTIVE" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    throughput = table["ProvisionedThroughput"]
    return int(throughput["ReadCapacityUnits"]), int(throughput["WriteCapacityUnits"])


def test_grow_shards_and_the_cli_on_a_server(
    backend: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    for n in range(10):
        DynamicEvent("launch", n).save()
    url = _url(backend, request)
    args = ["shards", "tests.models:DynamicEvent", "--host", url, "--key", "launch"]
    assert main([*args, "--grow-to", "6"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].split()[:3] == ["launch", "6", "6"]
    for n in range(10, 60):
        DynamicEvent("launch", n).save()
    assert sorted(e.timestamp for e in DynamicEvent.query("launch")) == list(range(60))
    assert len({e.get_physical_key() for e in DynamicEvent.query("launch")}) > 1
    assert main([*args, "--grow-to", "2"]) == 1
    err = capsys.readouterr().err
    error_line(err, "give a larger count")


def test_the_policy_raises_and_lowers_a_servers_table(budget: type[Budget]) -> None:
    policy = TableThrottlePolicy(max_wcu=50, cooldown=60, lower_after=60, clock=CLOCK)
    partition = _throttle("TableWriteKeyRangeThroughputExceeded")
    assert policy.observe(budget, partition, "partition").kind == "partition"  # type: ignore[union-attr]
    assert _provisioned(budget) == (5, 5)
    table = _throttle("TableWriteProvisionedThroughputExceeded")
    action = policy.observe(budget, table, "table")
    assert action is not None and (action.kind, action.new) == ("raise", 8)
    assert _provisioned(budget) == (5, 8)
    CLOCK.advance(61)
    (lowered,) = policy.relax(budget)
    assert (lowered.kind, lowered.new) == ("lower", 5)
    assert _provisioned(budget) == (5, 5)


def test_hot_on_a_server(
    backend: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    """CloudWatch and streams where the server has them; a clear line where it has not."""
    url = _url(backend, request)
    if backend == "moto":
        keys = {k: v for k, v in CREDENTIALS.items() if k != "region"}
        client = boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1", **keys)
        client.update_table(
            TableName="dynamic-events",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
        )
    for n in range(12):
        DynamicEvent("busy", n).save()
    code = main(["hot", "tests.models:DynamicEvent", "--host", url, "--minutes", "5"])
    out, err = capsys.readouterr()
    if backend == "moto":
        assert code == 0
        assert "no throttling" in out and "hot keys: 12 writes read from the stream" in out
        assert any(line.split()[:2] == ["busy", "12"] for line in out.splitlines())
    else:  # dynalite serves neither CloudWatch nor streams: one line, exit code 1
        assert code == 1 and "throttles: CloudWatch unavailable" in out
        error_line(err, "CloudWatch unavailable", "has no stream")


def test_prewarm_on_a_server(
    backend: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    """moto keeps warm throughput (DescribeTable shows it); dynalite refuses it."""
    url = _url(backend, request)
    args = ["prewarm", "tests.models:DynamicEvent", "--host", url, "--item-bytes", "1024"]
    code = main([*args, "--writes-per-second", "3000"])
    out, err = capsys.readouterr()
    keys = {k: v for k, v in CREDENTIALS.items() if k != "region"}
    client = boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1", **keys)
    table = client.describe_table(TableName="dynamic-events")["Table"]
    if backend == "moto":
        assert code == 0 and "UpdateTable sent" in out
        assert table["WarmThroughput"]["WriteUnitsPerSecond"] == 6000
    else:  # no WarmThroughput in its answers; it refuses the update: one line, exit 1
        assert "WarmThroughput" not in table
        assert code == 1
        error_line(err, "ValidationException", "UpdateTable")
