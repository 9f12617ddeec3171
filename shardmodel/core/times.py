"""Time values to UTC datetimes and bucket labels, shared by the time strategies."""

from __future__ import annotations

import math
import time
from datetime import datetime, timedelta, timezone
from decimal import ROUND_FLOOR, Decimal
from typing import Any, Protocol

from shardmodel.core.bridge import sleep
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


#: The epoch of ``time.time()``, in UTC.
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def epoch_microseconds(value: int | float | Decimal) -> int:
    """Epoch seconds as whole microseconds, truncated as the time-series guide's code does.

    ``int(ts * 1_000_000)`` for a float (floored, so a time before 1970 goes down too);
    exact for ints and Decimals. ``datetime.fromtimestamp`` rounds to the nearest
    microsecond instead, which for ``time.time()`` values gives a key one microsecond
    later than the guide's about four times in ten. ISO strings with more than six
    fraction digits are truncated by ``datetime.fromisoformat`` alike.

    Raises:
        ValueError, OverflowError, ArithmeticError: for NaN, infinities and signaling NaNs.
    """
    if isinstance(value, Decimal):
        return int(value.scaleb(6).to_integral_value(ROUND_FLOOR))
    if isinstance(value, float):
        return math.floor(value * 1_000_000)
    return int(value) * 1_000_000


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
        return _in_utc(name, value, value.isoformat())
    if isinstance(value, bool):
        raise ShardKeyError(f"{name}: {value!r} is not a time; pass epoch seconds or a datetime")
    if isinstance(value, int | float | Decimal):
        try:
            return EPOCH + timedelta(microseconds=epoch_microseconds(value))
        except (ValueError, OverflowError, ArithmeticError):
            pass
        # NaN, infinities and signaling NaNs (float() of one raises) name no time at all
        finite = not isinstance(value, Decimal) or value.is_finite()
        if not finite or (isinstance(value, float) and not math.isfinite(value)):
            raise ShardKeyError(
                f"{name}: {value!r} is not a time; pass finite epoch seconds or a datetime"
            )
        big = abs(Decimal(value)) > 10**11
        unit = "; if it is in milliseconds, divide it by 1000" if big else ""
        raise ShardKeyError(
            f"{name}: {value!r} is not a time in epoch seconds between the years 1 and 9999{unit}"
        )
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
        return _in_utc(name, parsed, value)
    raise ShardKeyError(
        f"{name}: {type(value).__name__} is not a time; use epoch seconds, an aware datetime "
        "or an ISO 8601 string"
    )


def _in_utc(name: str, moment: datetime, shown: str) -> datetime:
    """``moment`` (aware) in UTC; a time whose UTC instant datetime cannot hold is refused.

    ``9999-12-31T23:00:00-05:00`` is in the year 10000 in UTC, where no UTC bucket (and
    no UTC string a time-bucketed attribute stores) is.
    """
    try:
        return moment.astimezone(timezone.utc)
    except OverflowError:
        raise ShardKeyError(
            f"{name}: {shown!r} is outside the years 1 to 9999 in UTC, the times a bucket "
            "can hold; give a time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z"
        ) from None


def utc_offset_refused(name: str, value: Any) -> None:
    """Refuse an ISO string whose offset is not UTC (its bucket and its text disagree).

    DynamoDB compares ISO strings as text, while buckets follow the UTC instant: a
    ``...T22:00:00-05:00`` string sorts inside one day and lives in the next day's
    bucket. Stored times must therefore be UTC (``Z`` or ``+00:00``).
    """
    if not isinstance(value, str):
        return
    moment = to_utc(name, value)
    parsed = datetime.fromisoformat(value)
    if parsed.utcoffset() != timedelta(0):
        raise ShardKeyError(
            f"{name}: {value!r} has the UTC offset {parsed.strftime('%z')}; DynamoDB compares "
            "ISO strings as text, so a time-bucketed attribute stores UTC times only: save "
            f"{moment.strftime('%Y-%m-%dT%H:%M:%S.%fZ')!r} (the same instant in UTC)"
        )


def text_span(name: str, value: Any) -> tuple[datetime, datetime]:
    """The earliest and latest UTC instants a query bound may stand for.

    A string bound is compared by DynamoDB as text against stored UTC strings, so its
    wall time (offset ignored) is what it matches; as a time it is its UTC instant.
    Reading the buckets of both keeps every item either reading can match. Naive ISO
    strings bound text only and stand for their wall time.
    """
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            to_utc(name, value)  # raises the error that names the value
            raise
        wall = parsed.replace(tzinfo=timezone.utc)
        if parsed.tzinfo is None:
            return wall, wall
        try:
            instant = parsed.astimezone(timezone.utc)
        except OverflowError:  # past datetime's ends in UTC: no stored UTC time is beyond
            late = (parsed.utcoffset() or timedelta(0)) < timedelta(0)
            instant = (datetime.max if late else datetime.min).replace(tzinfo=timezone.utc)
        return min(wall, instant), max(wall, instant)
    moment = to_utc(name, value)
    return moment, moment


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
    """The wall clock: ``time.time`` and ``time.sleep`` (inside an async call, a sleep of
    that call alone, :func:`shardmodel.core.bridge.sleep`)."""

    def __repr__(self) -> str:
        return "SystemClock()"

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        sleep(max(0.0, seconds))
