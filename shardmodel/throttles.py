"""Telling a hot partition from a table at its limit, from a throttling error.

DynamoDB names what ran out in ``ThrottlingReasons`` (``...KeyRangeThroughputExceeded``
for one partition, ``...ProvisionedThroughputExceeded`` for the table). Older endpoints
and emulators omit them; then the table's consumed capacity (CloudWatch) is compared with
its provisioned capacity: a table throttled well below its provisioned rate has a hot
partition.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from shardmodel.core.times import Clock, SystemClock
from shardmodel.retry import is_throttle

__all__ = ["CloudWatchCapacity", "ThrottleScope", "throttle_scope", "throttling_reasons"]

log = logging.getLogger("shardmodel.throttles")

ThrottleScope = Literal["partition", "table"]

#: Consumed capacity at or above this share of the provisioned rate means the table is full.
TABLE_FULL_SHARE = 0.9


def throttling_reasons(error: BaseException) -> tuple[str, ...]:
    """The ``ThrottlingReasons`` of a throttling error, found anywhere in its cause chain.

    Works on botocore's ``ClientError`` and on PynamoDB's errors that wrap it (``PutError``,
    ``GetError``...). Returns ``()`` when the error carries none.
    """
    seen: set[int] = set()
    stack: list[BaseException | None] = [error]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        found = getattr(current, "response", None)
        if isinstance(found, Mapping):
            reasons = found.get("ThrottlingReasons") or found.get("throttlingReasons")
            if reasons:
                return tuple(str(r.get("reason", "")) for r in reasons)
        cause = getattr(current, "cause", None)
        stack.extend(
            [
                cause if isinstance(cause, BaseException) else None,
                current.__cause__,
                current.__context__,
            ]
        )
    return ()


class CloudWatchCapacity:
    """Is a table's write capacity used up? Consumed (CloudWatch) against provisioned.

    Verdicts are cached per table for ``ttl`` seconds: a throttling storm asks CloudWatch
    once, not once per throttled write.

    Args:
        client_factory: builds the CloudWatch client (default: boto3's, in ``region``).
        region: the region of the table.
        ttl: seconds a verdict is reused.
        clock: the time source.
    """

    def __init__(
        self,
        region: str | None = None,
        client_factory: Callable[[], Any] | None = None,
        ttl: float = 60.0,
        clock: Clock | None = None,
    ) -> None:
        self._factory = client_factory or (lambda: _boto3_client("cloudwatch", region))
        self._ttl = ttl
        self._clock = clock or SystemClock()
        self._verdicts: dict[str, tuple[float, bool]] = {}
        self._lock = threading.Lock()

    def table_full(self, table: str, provisioned_wcu: Callable[[], float]) -> bool:
        """True when the table consumed at least 90% of its provisioned WCU lately.

        ``provisioned_wcu`` is asked (a DescribeTable) only when no verdict is cached. An
        on-demand table (0 provisioned) is never full by this test. When CloudWatch
        cannot answer, the table counts as not full (a partition throttle).
        """
        now = self._clock.now()
        with self._lock:
            cached = self._verdicts.get(table)
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        provisioned = provisioned_wcu()
        if provisioned <= 0:
            consumed = 0.0
        else:
            try:
                consumed = self._consumed_per_second(table)
            except Exception as error:  # no permission, no endpoint: do not block the write
                log.warning("CloudWatch gave no consumed capacity for %s: %s", table, error)
                consumed = 0.0
        full = provisioned > 0 and consumed >= TABLE_FULL_SHARE * provisioned
        with self._lock:
            self._verdicts[table] = (now, full)
        return full

    def _consumed_per_second(self, table: str) -> float:
        end = datetime.now(timezone.utc)
        response = self._factory().get_metric_statistics(
            Namespace="AWS/DynamoDB",
            MetricName="ConsumedWriteCapacityUnits",
            Dimensions=[{"Name": "TableName", "Value": table}],
            StartTime=end - timedelta(minutes=10),
            EndTime=end + timedelta(minutes=1),  # the current, still open minute too
            Period=60,
            Statistics=["Sum"],
        )
        points = response.get("Datapoints", [])
        if not points:
            return 0.0
        latest = max(points, key=lambda p: p["Timestamp"])
        return float(latest["Sum"]) / 60.0


def _boto3_client(service: str, region: str | None) -> Any:
    import boto3

    return boto3.client(service, region_name=region)


def throttle_scope(
    error: BaseException,
    table: str,
    provisioned_wcu: Callable[[], float],
    capacity: CloudWatchCapacity,
) -> ThrottleScope | None:
    """``"partition"``, ``"table"``, or None when ``error`` is not a throttle.

    Args:
        error: the error a write raised.
        table: the table written.
        provisioned_wcu: the table's provisioned write capacity (0 for on-demand), asked
            only when the error carries no ``ThrottlingReasons``.
        capacity: the CloudWatch fallback.
    """
    if not is_throttle(error):
        return None
    reasons = throttling_reasons(error)
    if reasons:
        hot = any(r.endswith("KeyRangeThroughputExceeded") for r in reasons)
        return "partition" if hot else "table"
    return "table" if capacity.table_full(table, provisioned_wcu) else "partition"
