"""The CloudWatch throttle report on moto: partition or table, reads and writes, indexes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import boto3
import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from shardmodel.ops import throttle_report
from shardmodel.testing import mock_dynamodb

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=timezone.utc)


class ByOwner(GlobalSecondaryIndex["Account"]):
    class Meta:
        index_name = "by-owner"
        projection = AllProjection()
        read_capacity_units = 40
        write_capacity_units = 20

    owner = UnicodeAttribute(hash_key=True)


class Account(Model):
    """A provisioned table (300 RCU, 100 WCU) with a provisioned index."""

    class Meta:
        table_name = "report-accounts"
        region = "us-east-1"
        read_capacity_units = 300
        write_capacity_units = 100

    key = UnicodeAttribute(hash_key=True)
    owner = UnicodeAttribute()
    n = NumberAttribute(default=0)
    by_owner = ByOwner()


class Click(Model):
    class Meta:
        table_name = "report-clicks"
        region = "us-east-1"

    key = UnicodeAttribute(hash_key=True)


@pytest.fixture
def cloudwatch() -> Iterator[object]:
    with mock_dynamodb():
        Account._connection = None
        Click._connection = None
        Account.create_table(wait=True)
        Click.create_table(wait=True, billing_mode="PAY_PER_REQUEST")
        yield boto3.client("cloudwatch", region_name="us-east-1")
        Account._connection = None
        Click._connection = None


def _put(
    client: object, table: str, metric: str, per_minute: float, index: str | None = None
) -> None:
    """Five minutes of ``per_minute`` (a Sum per minute), as DynamoDB publishes them."""
    dimensions = [{"Name": "TableName", "Value": table}]
    if index:
        dimensions.append({"Name": "GlobalSecondaryIndexName", "Value": index})
    client.put_metric_data(  # type: ignore[attr-defined]
        Namespace="AWS/DynamoDB",
        MetricData=[
            {
                "MetricName": metric,
                "Dimensions": dimensions,
                "Timestamp": NOW - timedelta(minutes=m, seconds=30),
                "Value": per_minute,
            }
            for m in range(5)
        ],
    )


def _row(report: object, index: str | None, side: str) -> object:
    return next(r for r in report.rows if r.index == index and r.side == side)  # type: ignore[attr-defined]


def test_a_hot_partition_throttles_well_below_the_provisioned_rate(cloudwatch: object) -> None:
    _put(cloudwatch, "report-accounts", "ConsumedWriteCapacityUnits", 600)  # 10 WCU/s of 100
    _put(cloudwatch, "report-accounts", "WriteThrottleEvents", 30)
    report = throttle_report(Account, minutes=15, cloudwatch=cloudwatch, now=lambda: NOW)
    writes = _row(report, None, "write")
    assert (writes.throttled, writes.provisioned, writes.peak) == (150, 100, 10)  # type: ignore[attr-defined]
    assert writes.consumed == pytest.approx(3000 / 900)  # type: ignore[attr-defined]
    assert writes.scope == "partition" and report.scope == "partition"  # type: ignore[attr-defined]
    assert _row(report, None, "read").scope is None  # type: ignore[attr-defined]
    assert [(r.index, r.side) for r in report.rows] == [
        (None, "read"),
        (None, "write"),
        ("by-owner", "read"),
        ("by-owner", "write"),
    ]


def test_a_full_table_throttles_at_its_provisioned_rate(cloudwatch: object) -> None:
    _put(cloudwatch, "report-accounts", "ConsumedReadCapacityUnits", 17400)  # 290 RCU/s of 300
    _put(cloudwatch, "report-accounts", "ReadThrottleEvents", 80)
    report = throttle_report(Account, minutes=10, cloudwatch=cloudwatch, now=lambda: NOW)
    reads = _row(report, None, "read")
    assert reads.scope == "table" and reads.peak == 290  # type: ignore[attr-defined]
    assert _row(report, None, "write").scope is None  # type: ignore[attr-defined]
    text = report.render()
    assert "table-level" in text and "report-accounts, last 10 min" in text


def test_per_cause_metrics_name_the_scope_per_index_and_side(cloudwatch: object) -> None:
    _put(cloudwatch, "report-accounts", "ConsumedWriteCapacityUnits", 1140, "by-owner")
    _put(cloudwatch, "report-accounts", "WriteThrottleEvents", 9, "by-owner")
    _put(cloudwatch, "report-accounts", "WriteKeyRangeThroughputThrottleEvents", 9, "by-owner")
    _put(cloudwatch, "report-accounts", "ReadThrottleEvents", 4)
    _put(cloudwatch, "report-accounts", "ReadProvisionedThroughputThrottleEvents", 4)
    report = throttle_report(Account, cloudwatch=cloudwatch, now=lambda: NOW)
    index_writes = _row(report, "by-owner", "write")
    # 19 WCU/s of the index's 20 looks full, but DynamoDB says one partition ran out
    assert (index_writes.peak, index_writes.provisioned) == (19, 20)  # type: ignore[attr-defined]
    assert index_writes.scope == "partition"  # type: ignore[attr-defined]
    assert _row(report, None, "read").scope == "table"  # type: ignore[attr-defined]
    # (moto also counts an index's datapoints in a query by TableName alone, so the
    # table's write row is not checked here; CloudWatch matches dimensions exactly)
    assert report.scope == "partition and table"


def test_an_on_demand_table(cloudwatch: object) -> None:
    _put(cloudwatch, "report-clicks", "ConsumedWriteCapacityUnits", 60000)
    _put(cloudwatch, "report-clicks", "WriteThrottleEvents", 5)
    report = throttle_report(Click, cloudwatch=cloudwatch, now=lambda: NOW)
    writes = _row(report, None, "write")
    assert (writes.provisioned, writes.scope) == (None, "partition")  # type: ignore[attr-defined]
    _put(cloudwatch, "report-clicks", "WriteMaxOnDemandThroughputThrottleEvents", 5)
    report = throttle_report(Click, cloudwatch=cloudwatch, now=lambda: NOW)
    assert _row(report, None, "write").scope == "table"  # type: ignore[attr-defined]
    assert "on-demand" in report.render()


def test_the_window_is_checked() -> None:
    with pytest.raises(ValueError, match="minutes"):
        throttle_report(Click, minutes=0)


def test_user_errors_are_in_the_report(cloudwatch: object) -> None:
    """The hot-partition guide's first check: the region's HTTP 400s, every table."""
    cloudwatch.put_metric_data(  # type: ignore[attr-defined]
        Namespace="AWS/DynamoDB",
        MetricData=[
            {"MetricName": "UserErrors", "Timestamp": NOW - timedelta(minutes=2), "Value": 12}
        ],
    )
    report = throttle_report(Click, cloudwatch=cloudwatch, now=lambda: NOW)
    assert report.user_errors == 12
    assert "UserErrors: 12 (HTTP 400s of the region, every table)" in report.render()
    quiet = throttle_report(Click, cloudwatch=cloudwatch, now=lambda: NOW + timedelta(hours=1))
    assert quiet.user_errors == 0
