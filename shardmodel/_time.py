"""Time values to UTC datetimes and bucket labels, shared by the time strategies."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any, Protocol

from shardmodel.errors import ShardConfigurationError, ShardKeyError

#: Named granularities and the strftime format of their labels (week is the ISO week).
GRANULARITIES: dict[str, str] = {
    "minute": "%Y-%m-%dT%H:%M",
    "hour": "%Y-%m-%dT%H",
    "day": "%Y-%m-%d",
    "week": "%G-W%V",
    "month": "%Y-%m",
    "year": "%Y",
}


def check_time_format(where: str, fmt: str) -> None:
    """Reject a format that is neither a named granularity nor a strftime format."""
    if not isinstance(fmt, str) or "%" not in fmt:
        names = ", ".join(GRANULARITIES)
        raise ShardConfigurationError(
            f"{where}: not a granularity; use one of {names} or a strftime format "
            "such as '%Y-%m-%d-%H'"
        )
    early = datetime(2001, 2, 3, 4, 5, tzinfo=timezone.utc)
    late = datetime(2030, 11, 12, 13, 14, tzinfo=timezone.utc)
    if early.strftime(fmt) == late.strftime(fmt):
        raise ShardConfigurationError(
            f"{where}: the format gives every time the same label; include at least %Y"
        )


def to_utc(name: str, value: Any) -> datetime:
    """Convert an epoch number, aware datetime or ISO 8601 string to an aware UTC datetime.

    Raises:
        ShardKeyError: for naive datetimes, ISO strings without an offset, or other types.
    """
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ShardKeyError(
                f"{name}: naive datetime {value.isoformat()!r} has no time zone, so its UTC "
                f"bucket is unknown; pass an aware datetime, e.g. "
                f"value.replace(tzinfo=timezone.utc)"
            )
        return value.astimezone(timezone.utc)
    if isinstance(value, bool):
        raise ShardKeyError(f"{name}: {value!r} is not a time; pass epoch seconds or a datetime")
    if isinstance(value, int | float | Decimal):
        return datetime.fromtimestamp(float(value), tz=timezone.utc)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise ShardKeyError(
                f"{name}: {value!r} is not an ISO 8601 time; write e.g. '2024-01-15T10:00:00Z'"
            ) from None
        if parsed.tzinfo is None:
            raise ShardKeyError(
                f"{name}: ISO time {value!r} has no offset, so its UTC bucket is unknown; "
                "append 'Z' or '+00:00'"
            )
        return parsed.astimezone(timezone.utc)
    raise ShardKeyError(
        f"{name}: {type(value).__name__} is not a time; use epoch seconds, an aware datetime "
        "or an ISO 8601 string"
    )


def bucket_label(moment: datetime, fmt: str) -> str:
    """The label of the bucket holding ``moment`` (already UTC)."""
    return moment.strftime(fmt)


class Clock(Protocol):
    """Epoch seconds and a way to wait: the system clock, or a test's simulated one."""

    def now(self) -> float:
        """Seconds since the epoch (or a simulated origin)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        ...


class SystemClock:
    """The wall clock: ``time.time`` and ``time.sleep``."""

    def __repr__(self) -> str:
        return "SystemClock()"

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))
