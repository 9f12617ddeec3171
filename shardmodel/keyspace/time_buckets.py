"""TimeBuckets: a strategy whose segment is the UTC time bucket of an attribute."""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from attrs import frozen

from shardmodel.core.times import (
    GRANULARITIES,
    bucket_label,
    check_time_format,
    text_span,
    to_utc,
    utc_offset_refused,
)
from shardmodel.errors import (
    FanOutLimitError,
    ShardConfigurationError,
    ShardKeyError,
    UnsupportedOperationError,
)
from shardmodel.keyspace.strategies import (
    MAX_QUERY_BUCKETS,
    KeyValues,
    Segment,
    TimeBounds,
    check_attributes_exist,
)

__all__ = ["TimeBuckets"]


def _granularity_format(granularity: str) -> str:
    return GRANULARITIES.get(granularity, granularity)


@frozen
class TimeBuckets:
    """Write to the time bucket of the item's ``on`` attribute, always in UTC.

    Args:
        on: the time attribute: a number (epoch seconds), a ``UTCDateTimeAttribute`` or an
            ISO 8601 string with an offset.
        granularity: ``minute``, ``hour``, ``day``, ``week`` (ISO week), ``month``, ``year``,
            or any strftime format such as ``"%Y-%m-%d-%H"``.
    """

    on: str
    granularity: str = "day"

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.on, str) or not self.on:
            raise ShardConfigurationError(
                f"TimeBuckets(on={self.on!r}): name the time attribute, e.g. on='timestamp'"
            )
        where = f"TimeBuckets(granularity={self.granularity!r})"
        check_time_format(where, self.format)
        check_labels_increase(where, self.format)

    @property
    def format(self) -> str:
        """The strftime format of a bucket label."""
        return _granularity_format(self.granularity)

    @property
    def attributes(self) -> tuple[str, ...]:
        return (self.on,)

    @property
    def deterministic(self) -> bool:
        return True

    def check(self, model_name: str, attributes: Mapping[str, Any], separator: str) -> None:
        check_attributes_exist("TimeBuckets(on=...)", model_name, (self.on,), attributes)
        labels = _sample_labels(self.format)
        shared = sorted({ch for ch in separator if any(ch in label for label in labels)})
        if shared:
            raise ShardConfigurationError(
                f"{model_name}: TimeBuckets(granularity={self.granularity!r}) makes labels like "
                f"{labels[-1]!r} that contain the key separator {separator!r} (characters "
                f"{''.join(shared)!r}); choose a separator without them on ShardedKeyAttribute "
                "(such as '#') or a format without them"
            )

    def segment_bytes(self, first_shard: int) -> int:
        return max(len(label.encode("utf-8")) for label in _sample_labels(self.format))

    def bucket(self, value: Any) -> str:
        """The bucket label of a time value."""
        return bucket_label(to_utc(self.on, value), self.format)

    def pick(self, key: KeyValues, rng: random.Random) -> Segment:
        value = key.values.get(self.on)
        if value is None:
            raise ShardKeyError(
                f"TimeBuckets(on={self.on!r}): attribute {self.on!r} has no value; "
                f"set {self.on} before saving, the bucket is computed from it"
            )
        utc_offset_refused(f"TimeBuckets(on={self.on!r})", value)
        return self.bucket(value)

    def candidates(self, key: KeyValues) -> Sequence[Segment]:
        value = key.values.get(self.on)
        if value is None:
            raise ShardKeyError(
                f"TimeBuckets(on={self.on!r}): a read by key needs the value of {self.on!r} to "
                f"find its bucket; make {self.on} the range key, or use query() with a "
                f"condition on {self.on}"
            )
        return (self.bucket(value),)

    @property
    def ordered(self) -> bool:
        return True

    def query_candidates(self, key: KeyValues, bounds: Mapping[str, TimeBounds]) -> list[Segment]:
        value = key.values.get(self.on)
        if value is not None:
            return [self.bucket(value)]
        lower, upper = bounds.get(self.on, (None, None))
        if lower is None or upper is None:
            raise UnsupportedOperationError(
                f"TimeBuckets(on={self.on!r}): the query does not bound {self.on!r} on both "
                f"ends, so the buckets to read are unknown; add the range condition "
                f"Model.{self.on}.between(start, end) (DynamoDB takes one condition per key, "
                f"so not '&' of two comparisons), or keep a one-sided condition such as "
                f"Model.{self.on} >= start and pass time_range=(start, end) to query() or "
                f"count(); for 'since start', use end = now"
            )
        return list(self.buckets_between(lower, upper))

    def buckets_between(self, lower: Any, upper: Any) -> list[str]:
        """Bucket labels from the bucket of ``lower`` to that of ``upper``, in time order.

        A string bound covers both its wall time and its UTC instant (see
        :func:`~shardmodel.core.times.text_span`).
        """
        start, end = text_span(self.on, lower)[0], text_span(self.on, upper)[1]
        if end < start:
            return []
        step = label_step(self.format)
        moment = start
        labels: list[str] = []
        while True:
            label = bucket_label(moment, self.format)
            if not labels or labels[-1] != label:
                labels.append(label)
                if len(labels) > MAX_QUERY_BUCKETS:
                    raise FanOutLimitError(
                        f"TimeBuckets(on={self.on!r}): the range {start.isoformat()} .. "
                        f"{end.isoformat()} spans over {MAX_QUERY_BUCKETS:,} buckets, more "
                        "than any read may touch; narrow the time range or use a coarser "
                        "granularity",
                        len(labels),
                        MAX_QUERY_BUCKETS,
                    )
            if moment >= end:
                return labels
            # the last step may pass datetime's year 9999: the end is the next moment then
            moment = end if end - moment <= step else moment + step


@functools.lru_cache(maxsize=64)
def _sample_labels(fmt: str) -> list[str]:
    """Labels of a format over times that vary every field (month and day names included)."""
    moments = [
        datetime(year, month, day, hour, 59, 59, 999999, tzinfo=timezone.utc)
        for year in (2001, 9999)
        for month in range(1, 13)
        for day in range(22, 29)
        for hour in (1, 23)
    ]
    moments.append(datetime(2024, 12, 31, 23, 59, tzinfo=timezone.utc))
    return [bucket_label(moment, fmt) for moment in moments]


def label_step(fmt: str) -> timedelta:
    """The smallest time unit a format shows: stepping by it visits every label."""
    if "%f" in fmt:
        return timedelta(microseconds=1)
    if any(code in fmt for code in ("%S", "%s", "%T", "%c", "%X")):
        return timedelta(seconds=1)
    if "%M" in fmt or "%R" in fmt:
        return timedelta(minutes=1)
    if any(code in fmt for code in ("%H", "%I", "%p")):
        return timedelta(hours=1)
    return timedelta(days=1)


def _transitions() -> list[datetime]:
    """Instants where some field of a label changes, one of every kind a format can show.

    A second, a minute and every hour of a day (the 12-hour clock wraps at 1:00 and
    13:00, AM/PM at 0:00 and 12:00); every day of a leap year and the next (month ends,
    weekdays, day of year); every day around 31 year ends (ISO weeks and week numbers of
    every kind of year); the turn of two centuries (``%y``, ``%C``).
    """
    base = datetime(2001, 2, 3, tzinfo=timezone.utc)
    found = [base.replace(hour=4, minute=5, second=6), base.replace(hour=4, minute=5)]
    found += [base.replace(hour=hour) for hour in range(24)]
    day = datetime(2000, 1, 1, tzinfo=timezone.utc)
    found += [day + timedelta(days=n) for n in range(731)]
    for year in range(2000, 2031):
        turn = datetime(year, 1, 1, tzinfo=timezone.utc)
        found += [turn + timedelta(days=n) for n in range(-12, 12)]
    found += [datetime(year, 1, 1, tzinfo=timezone.utc) for year in (2000, 2100)]
    return sorted(set(found))


_TRANSITIONS = _transitions()


@functools.lru_cache(maxsize=64)
def _label_order_problem(fmt: str) -> str | None:
    """Where a format's labels fail to increase with time (None: they always do)."""
    if "%s" in fmt.replace("%%", ""):
        return (
            "%s writes epoch seconds of the process's local time zone, so two processes "
            "could put one time in different buckets; write '%Y-%m-%dT%H:%M:%S' instead"
        )
    tick = timedelta(microseconds=1)
    for moment in _TRANSITIONS:
        before, after = bucket_label(moment - tick, fmt), bucket_label(moment, fmt)
        if after < before:
            hint = "%I is the 12-hour clock: use %H; " if "%I" in fmt else ""
            return (
                "bucket labels must be unique and increase with time, but the label "
                f"{before!r} of {(moment - tick).isoformat()} is followed by {after!r} at "
                f"{moment.isoformat()}, which sorts before it: a label that comes back names "
                f"one partition for two time ranges; {hint}write the fields from the year "
                "down, zero-padded, e.g. '%Y-%m-%dT%H'"
            )
    return None


def check_labels_increase(where: str, fmt: str) -> None:
    """Refuse a format whose labels are not unique and increasing over time.

    A label that comes back later (``%I``, a 12-hour clock; ``%H`` without the day) names
    one partition for two time ranges: a range covering both reads it twice. Labels must
    also sort as their times do (DynamoDB compares strings), so a layout's keys keep time
    order. Checked at the instants where each field of a label changes, one of each kind.
    """
    problem = _label_order_problem(fmt)
    if problem is not None:
        raise ShardConfigurationError(f"{where}: {problem}")
