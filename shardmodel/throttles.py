"""Telling a hot partition from a table at its limit, from a throttling error.

DynamoDB names what ran out in ``ThrottlingReasons`` (``...KeyRangeThroughputExceeded``
for one partition, ``...ProvisionedThroughputExceeded`` for the table). Older endpoints
and emulators omit them; then the table's consumed capacity (CloudWatch) is compared with
its provisioned capacity for the side that throttled (reads for a read, writes for a
write, as the dynamic-sharding guide does): a table throttled well below its provisioned
rate on that side has a hot partition.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from shardmodel.core.times import Clock, SystemClock
from shardmodel.retry import is_throttle

__all__ = [
    "READ_OPERATIONS",
    "CloudWatchCapacity",
    "Side",
    "ThrottleScope",
    "throttle_scope",
    "throttled_side",
    "throttling_reasons",
]

log = logging.getLogger("shardmodel.throttles")

ThrottleScope = Literal["partition", "table"]
#: The capacity a request consumes: read units or write units.
Side = Literal["read", "write"]

#: The operations that consume read capacity.
READ_OPERATIONS = frozenset(
    {"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems", "ExecuteStatement"}
)

#: Consumed capacity at or above this share of the provisioned rate means the table is full.
TABLE_FULL_SHARE = 0.9


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and every error it wraps (PynamoDB's ``cause``, ``__cause__``,
    ``__context__``), each once."""
    seen: set[int] = set()
    stack: list[BaseException | None] = [error]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        cause = getattr(current, "cause", None)
        stack.extend(
            [
                cause if isinstance(cause, BaseException) else None,
                current.__cause__,
                current.__context__,
            ]
        )


def throttling_reasons(error: BaseException) -> tuple[str, ...]:
    """The ``ThrottlingReasons`` of a throttling error, found anywhere in its cause chain.

    Works on botocore's ``ClientError`` and on PynamoDB's errors that wrap it (``PutError``,
    ``GetError``...). Returns ``()`` when the error carries none.
    """
    for current in _chain(error):
        found = getattr(current, "response", None)
        if isinstance(found, Mapping):
            reasons = found.get("ThrottlingReasons") or found.get("throttlingReasons")
            if reasons:
                return tuple(str(r.get("reason", "")) for r in reasons)
    return ()


def throttled_side(error: BaseException) -> Side:
    """The capacity that ran out: named by ``ThrottlingReasons``, else the operation's own
    (a Query throttled on reads, a PutItem on writes)."""
    reasons = throttling_reasons(error)
    if reasons:
        return "read" if all("Read" in reason for reason in reasons) else "write"
    for current in _chain(error):
        operation = getattr(current, "operation_name", None)
        if operation is not None:
            return "read" if operation in READ_OPERATIONS else "write"
    return "write"


class CloudWatchCapacity:
    """Is one side of a table's capacity used up? Consumed (CloudWatch) against provisioned.

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
        self._verdicts: dict[tuple[str, Side], tuple[float, bool]] = {}
        self._lock = threading.Lock()

    def table_full(
        self, table: str, provisioned_units: Callable[[], float], side: Side = "write"
    ) -> bool:
        """True when the table consumed at least 90% of its provisioned units of ``side``
        lately.

        ``provisioned_units`` is asked (a DescribeTable) only when no verdict is cached. An
        on-demand table (0 provisioned) is never full by this test. When CloudWatch
        cannot answer, the table counts as not full (a partition throttle).
        """
        now = self._clock.now()
        with self._lock:
            cached = self._verdicts.get((table, side))
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        provisioned = provisioned_units()
        if provisioned <= 0:
            consumed = 0.0
        else:
            try:
                consumed = self._consumed_per_second(table, side)
            except Exception as error:  # no permission, no endpoint: do not block the write
                log.warning("CloudWatch gave no consumed capacity for %s: %s", table, error)
                consumed = 0.0
        full = provisioned > 0 and consumed >= TABLE_FULL_SHARE * provisioned
        with self._lock:
            self._verdicts[(table, side)] = (now, full)
        return full

    def _consumed_per_second(self, table: str, side: Side) -> float:
        end = datetime.now(timezone.utc)
        response = self._factory().get_metric_statistics(
            Namespace="AWS/DynamoDB",
            MetricName=f"Consumed{side.capitalize()}CapacityUnits",
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
    provisioned_units: Callable[[Side], float],
    capacity: CloudWatchCapacity,
) -> ThrottleScope | None:
    """``"partition"``, ``"table"``, or None when ``error`` is not a throttle.

    Args:
        error: the error a request raised.
        table: the table it was sent to.
        provisioned_units: the table's provisioned units of a side (0 for on-demand),
            asked only when the error carries no ``ThrottlingReasons``.
        capacity: the CloudWatch fallback, asked about the side that throttled.
    """
    if not is_throttle(error):
        return None
    reasons = throttling_reasons(error)
    if reasons:
        hot = any(r.endswith("KeyRangeThroughputExceeded") for r in reasons)
        return "partition" if hot else "table"
    side = throttled_side(error)
    full = capacity.table_full(table, lambda: provisioned_units(side), side)
    return "table" if full else "partition"
