"""A throttle without ThrottlingReasons is judged by the side that throttled.

The dynamic-sharding guide compares consumed with provisioned capacity for the side that
throttled: a read throttle while reads run at their provisioned rate is the table's; a
read throttle while only writes run at theirs is a hot partition.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

import boto3
import pytest
from botocore.exceptions import ClientError
from pynamodb.exceptions import QueryError

from shardmodel.testing import SimulatedClock, mock_dynamodb
from shardmodel.throttles import (
    CloudWatchCapacity,
    Side,
    ThrottleScope,
    throttle_scope,
    throttled_side,
)

TABLE = "throttled-table"
PROVISIONED: dict[Side, float] = {"read": 100.0, "write": 50.0}


@pytest.fixture
def cloudwatch() -> Iterator[CloudWatchCapacity]:
    with mock_dynamodb():
        yield CloudWatchCapacity(region="us-east-1", clock=SimulatedClock(start=0))


def _consumed(side: Side, units_per_second: float) -> None:
    boto3.client("cloudwatch", region_name="us-east-1").put_metric_data(
        Namespace="AWS/DynamoDB",
        MetricData=[
            {
                "MetricName": f"Consumed{side.capitalize()}CapacityUnits",
                "Dimensions": [{"Name": "TableName", "Value": TABLE}],
                "Timestamp": datetime.now(timezone.utc),
                "Value": units_per_second * 60,
            }
        ],
    )


def _throttle(operation: str) -> ClientError:
    """A throttle as older endpoints and emulators send it: no ThrottlingReasons."""
    return ClientError(
        {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}},
        operation,
    )


def _scope(error: BaseException, capacity: CloudWatchCapacity) -> ThrottleScope | None:
    return throttle_scope(error, TABLE, PROVISIONED.__getitem__, capacity)


@pytest.mark.parametrize(
    ("full", "operation", "scope"),
    [
        ("read", "Query", "table"),
        ("read", "GetItem", "table"),
        ("write", "Query", "partition"),
        ("write", "PutItem", "table"),
        ("read", "PutItem", "partition"),
    ],
)
def test_a_throttle_without_reasons_is_judged_by_its_own_side(
    cloudwatch: CloudWatchCapacity, full: Side, operation: str, scope: ThrottleScope
) -> None:
    """One side at its provisioned rate, the other idle: only a throttle of that side is
    the table's."""
    _consumed(full, PROVISIONED[full])
    _consumed("write" if full == "read" else "read", 0.0)
    assert _scope(_throttle(operation), cloudwatch) == scope


def test_the_side_is_found_through_pynamodbs_wrapping(cloudwatch: CloudWatchCapacity) -> None:
    """PynamoDB wraps botocore's error (QueryError): the operation is still found."""
    _consumed("read", PROVISIONED["read"])
    wrapped = QueryError("Failed to query items", cause=_throttle("Query"))
    assert throttled_side(wrapped) == "read"
    assert _scope(wrapped, cloudwatch) == "table"


def test_each_side_keeps_its_own_verdict(cloudwatch: CloudWatchCapacity) -> None:
    """The cached verdict of one side does not answer for the other."""
    _consumed("write", PROVISIONED["write"])
    assert _scope(_throttle("PutItem"), cloudwatch) == "table"
    assert _scope(_throttle("Scan"), cloudwatch) == "partition"
