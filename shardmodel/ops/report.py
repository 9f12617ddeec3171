"""A CloudWatch report of a table's throttles and capacity, and what ran out.

For the table and each global secondary index, reads and writes: the throttle events,
the consumed capacity (average and peak minute) against the provisioned capacity, and
the throttle's scope. DynamoDB's per-cause metrics name it (``...KeyRangeThroughput...``
is one partition; ``...ProvisionedThroughput...``, ``...MaxOnDemandThroughput...`` and
``...AccountLimit...`` are the table's or the account's limit); when an endpoint
publishes only the totals, a table whose peak minute used 90% of its provisioned rate is
full (table-level), otherwise one partition ran out.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from attrs import frozen

from shardmodel.throttles import TABLE_FULL_SHARE, Side

__all__ = ["CapacityRow", "ThrottleReport", "throttle_report"]

Scope = Literal["partition", "table", "partition and table"]

_PARTITION_CAUSES = ("KeyRangeThroughputThrottleEvents",)
_TABLE_CAUSES = (
    "ProvisionedThroughputThrottleEvents",
    "MaxOnDemandThroughputThrottleEvents",
    "AccountLimitThrottleEvents",
)


@frozen
class CapacityRow:
    """One side (reads or writes) of the table or of one index, over the window.

    Attributes:
        index: the global secondary index, or None for the table.
        side: ``"read"`` or ``"write"``.
        throttled: throttle events (``ReadThrottleEvents`` / ``WriteThrottleEvents``).
        partition_throttles: events DynamoDB put down to one partition.
        table_throttles: events DynamoDB put down to the table's or account's limit.
        consumed: average units a second consumed over the window.
        peak: units a second consumed in the busiest minute.
        provisioned: provisioned units a second (None: on-demand).
    """

    index: str | None
    side: Side
    throttled: float
    partition_throttles: float
    table_throttles: float
    consumed: float
    peak: float
    provisioned: float | None

    @property
    def scope(self) -> Scope | None:
        """What ran out: None when nothing throttled."""
        if self.partition_throttles and self.table_throttles:
            return "partition and table"
        if self.table_throttles:
            return "table"
        if self.partition_throttles:
            return "partition"
        if not self.throttled:
            return None
        full = self.provisioned is not None and self.peak >= TABLE_FULL_SHARE * self.provisioned
        return "table" if full else "partition"


@frozen
class ThrottleReport:
    """Throttles and capacity of one table and its indexes over the last ``minutes``.

    Attributes:
        table: the table.
        minutes: the window.
        rows: the table's and each index's reads and writes.
        user_errors: CloudWatch's ``UserErrors`` over the window: requests DynamoDB
            refused as the client's fault (HTTP 400: validation, conditions,
            throttles...) in the whole region, every table together; the hot-partition
            guides' first check.
    """

    table: str
    minutes: int
    rows: tuple[CapacityRow, ...]
    user_errors: float = 0.0

    @property
    def scope(self) -> Scope | None:
        """What ran out anywhere in the table: None when nothing throttled."""
        scopes = {row.scope for row in self.rows} - {None}
        if not scopes:
            return None
        if len(scopes) == 1:
            (only,) = scopes
            return only
        return "partition and table"

    def render(self) -> str:
        """An operator's table of the rows, and a verdict line."""
        from shardmodel.core.terminal import table

        rows = [
            [
                row.index or "(table)",
                row.side,
                int(row.throttled),
                round(row.consumed, 1),
                round(row.peak, 1),
                "on-demand" if row.provisioned is None else round(row.provisioned, 1),
                row.scope or "-",
            ]
            for row in self.rows
        ]
        headers = ("index", "side", "throttled", "avg/s", "peak/s", "provisioned", "scope")
        verdict = {
            None: "no throttling",
            "partition": "partition-level: a hot key; shard it or grow it (DynamicShards)",
            "table": "table-level: the table is at its capacity; raise it (UpdateTable)",
            "partition and table": "both a hot key and a table at its capacity",
        }[self.scope]
        errors = f"UserErrors: {int(self.user_errors):,} (HTTP 400s of the region, every table)"
        return (
            f"{self.table}, last {self.minutes} min (CloudWatch)\n{table(headers, rows)}\n"
            f"{errors}\n{verdict}"
        )


def _sum_series(
    cloudwatch: Any, metric: str, dimensions: list[dict[str, str]], start: datetime, end: datetime
) -> list[float]:
    response = cloudwatch.get_metric_statistics(
        Namespace="AWS/DynamoDB",
        MetricName=metric,
        Dimensions=dimensions,
        StartTime=start,
        EndTime=end,
        Period=60,
        Statistics=["Sum"],
    )
    return [float(p["Sum"]) for p in response.get("Datapoints", [])]


def provisioned_units(description: dict[str, Any], index: str | None) -> dict[Side, float] | None:
    """A DescribeTable answer's provisioned units of the table or one index (None: on-demand)."""
    if description.get("BillingModeSummary", {}).get("BillingMode") == "PAY_PER_REQUEST":
        return None
    source = description
    if index is not None:
        source = next(
            (g for g in description.get("GlobalSecondaryIndexes", []) if g["IndexName"] == index),
            {},
        )
    throughput = source.get("ProvisionedThroughput", {})
    return {
        "read": float(throughput.get("ReadCapacityUnits") or 0),
        "write": float(throughput.get("WriteCapacityUnits") or 0),
    }


def throttle_report(
    model: Any,
    minutes: int = 15,
    cloudwatch: Any = None,
    now: Callable[[], datetime] | None = None,
) -> ThrottleReport:
    """Read CloudWatch for the throttles and capacity of ``model``'s table and its indexes.

    Sends one DescribeTable, per table or index and side six GetMetricStatistics calls,
    and one for the region's ``UserErrors`` (the bound: ``2 + 12 x (1 + indexes)``
    requests).

    Args:
        model: the model (its table and region), or anything with ``Meta.table_name``.
        minutes: the window.
        cloudwatch: a boto3 CloudWatch client (default: one in the model's region).
        now: the end of the window (default: the current time).
    """
    if isinstance(minutes, bool) or not isinstance(minutes, int) or not 1 <= minutes <= 1440:
        raise ValueError(f"throttle_report(minutes={minutes!r}): give an int from 1 to 1440")
    table = model.Meta.table_name
    if cloudwatch is None:
        import boto3

        cloudwatch = boto3.client("cloudwatch", region_name=getattr(model.Meta, "region", None))
    description = model._get_connection().describe_table()
    indexes = [g["IndexName"] for g in description.get("GlobalSecondaryIndexes", [])]
    until = (now or (lambda: datetime.now(timezone.utc)))()
    start = until - timedelta(minutes=minutes)
    end = until + timedelta(minutes=1)  # the current, still open minute too
    rows = []
    for index in [None, *indexes]:
        units = provisioned_units(description, index)
        dimensions = [{"Name": "TableName", "Value": table}]
        if index is not None:
            dimensions.append({"Name": "GlobalSecondaryIndexName", "Value": index})
        sides: tuple[Side, ...] = ("read", "write")
        for side in sides:
            prefix = "Read" if side == "read" else "Write"

            def total(metric: str, dimensions: list[dict[str, str]] = dimensions) -> float:
                return sum(_sum_series(cloudwatch, metric, dimensions, start, end), 0.0)

            consumed = _sum_series(
                cloudwatch, f"Consumed{prefix}CapacityUnits", dimensions, start, end
            )
            rows.append(
                CapacityRow(
                    index=index,
                    side=side,
                    throttled=total(f"{prefix}ThrottleEvents"),
                    partition_throttles=sum((total(prefix + c) for c in _PARTITION_CAUSES), 0.0),
                    table_throttles=sum((total(prefix + c) for c in _TABLE_CAUSES), 0.0),
                    consumed=sum(consumed, 0.0) / (minutes * 60),
                    peak=max(consumed, default=0.0) / 60,
                    provisioned=None if units is None else units[side] or None,
                )
            )
    user_errors = sum(_sum_series(cloudwatch, "UserErrors", [], start, end), 0.0)
    return ThrottleReport(table=table, minutes=minutes, rows=tuple(rows), user_errors=user_errors)
