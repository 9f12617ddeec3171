"""Sharding strategies: small immutable value objects that each decide one key segment.

A strategy answers two questions for one logical key:

* ``pick``: which segment a write goes to;
* ``candidates``: which segments a read by full key must touch.

Strategies compose left to right into the key suffix (see :mod:`shardmodel.keys`).
Adding a strategy touches only this module.
"""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, Protocol, runtime_checkable

from attrs import field, frozen

from shardmodel._time import (
    GRANULARITIES,
    Clock,
    SystemClock,
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

__all__ = [
    "MAX_QUERY_BUCKETS",
    "MAX_SHARDS",
    "ONE_SHARD",
    "DynamicShards",
    "HashShards",
    "KeyValues",
    "OrderedShards",
    "RandomShards",
    "Segment",
    "ShardChange",
    "ShardCount",
    "ShardStrategy",
    "TimeBounds",
    "TimeBuckets",
]

#: The largest shard count a numbered strategy accepts. A read by full key of a
#: random-sharded item reads every shard, and BatchGetItem takes 100 keys per call.
MAX_SHARDS = 1000

#: A segment is a shard number (formatted with the layout's first shard) or a label.
Segment = int | str

#: Lower and upper bound (either may be None) a query puts on one attribute.
TimeBounds = tuple[Any, Any]

#: The most time buckets a query's range is enumerated to; far above any request bound
#: (see :mod:`shardmodel.request_bound`), it keeps a wild range from running for minutes.
MAX_QUERY_BUCKETS = 100_000


@frozen
class ShardCount:
    """A dynamic key's shard counts: ``live`` for new writes, ``readable`` for reads.

    ``readable`` is at least ``live``: after a shrink, reads keep touching the retired
    shards until a compaction has moved their items.
    """

    live: int
    readable: int


#: The counts of a key with no metadata item yet: one shard, nothing written elsewhere.
ONE_SHARD = ShardCount(live=1, readable=1)


@frozen
class KeyValues:
    """What a strategy may look at: the logical key and the item's known attribute values.

    Attributes:
        logical_key: the logical partition key the application uses.
        values: python values by attribute name; absent names are unknown.
        canonical: the same values as stable strings (DynamoDB's serialized form),
            the input of hashing.
        shards: a dynamic key's counts, read from the metadata table (None otherwise).
    """

    logical_key: str
    values: Mapping[str, Any]
    canonical: Mapping[str, str]
    shards: ShardCount | None = None


@runtime_checkable
class ShardStrategy(Protocol):
    """The protocol every strategy implements."""

    @property
    def attributes(self) -> tuple[str, ...]:
        """Names of the model attributes the strategy reads (beyond the logical key)."""
        ...

    @property
    def deterministic(self) -> bool:
        """True when the item's values alone decide the segment (no randomness)."""
        ...

    def check(self, model_name: str, attributes: Mapping[str, Any], separator: str) -> None:
        """Raise :class:`ShardConfigurationError` if the strategy cannot work on this model.

        That includes a ``separator`` with a character a segment can contain: the key
        could not be split back into its logical key and segments.
        """
        ...

    def segment_bytes(self, first_shard: int) -> int:
        """The most UTF-8 bytes a segment of this strategy takes in a key."""
        ...

    def pick(self, key: KeyValues, rng: random.Random) -> Segment:
        """The segment a write of this item goes to."""
        ...

    def candidates(self, key: KeyValues) -> Sequence[Segment]:
        """Every segment a read of this item by full key must touch."""
        ...

    @property
    def ordered(self) -> bool:
        """True when segments split the sort order (read them one after another).

        An ordered strategy whose several segments share one range of the order may
        define ``group_of(segment) -> int``: segments of one group are merged, groups
        are read in ascending order (OrderedShards' overflow sub-shards).
        """
        ...

    def query_candidates(self, key: KeyValues, bounds: Mapping[str, TimeBounds]) -> list[Segment]:
        """Every segment a query must read, in ascending order of time for ordered ones.

        Args:
            key: the logical key and the values the query fixes by equality.
            bounds: the lower and upper time bounds a query puts on attributes.
        """
        ...


def _check_count(name: str, n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int):
        raise ShardConfigurationError(
            f"{name}(n={n!r}): the shard count must be an int; write {name}(10) for 10 shards"
        )
    if not 1 <= n <= MAX_SHARDS:
        raise ShardConfigurationError(
            f"{name}(n={n}): the shard count must be between 1 and {MAX_SHARDS}; "
            "pick the count from your peak load (peak WCU / 1,000 per partition)"
        )


def _check_numbered_separator(strategy: str, model_name: str, separator: str) -> None:
    """Shard numbers are digits: a separator holding one could not be split off again."""
    if any(ch.isdigit() for ch in separator):
        raise ShardConfigurationError(
            f"{model_name}: separator {separator!r} contains a digit, and {strategy} writes "
            "shard numbers, so stored keys could not be split back into logical key and "
            "shard; use a separator without digits, such as '#' or '_'"
        )


def _number_bytes(count: int, first_shard: int) -> int:
    """Bytes of the widest shard number of ``count`` shards numbered from ``first_shard``."""
    return len(str(count - 1 + first_shard))


def _check_attributes_exist(
    strategy: str, model_name: str, names: Sequence[str], attributes: Mapping[str, Any]
) -> None:
    for name in names:
        if name not in attributes:
            known = ", ".join(sorted(attributes))
            raise ShardConfigurationError(
                f"{model_name}: {strategy} reads attribute {name!r}, which the model does not "
                f"define; use one of: {known}"
            )


@frozen
class RandomShards:
    """Write to a uniformly random shard of ``n``; a read by full key reads all ``n``.

    Suits append-only items (events, logs): two saves of the same logical item may land
    on different shards. Use :class:`HashShards` when items are overwritten.
    """

    n: int

    def __attrs_post_init__(self) -> None:
        _check_count("RandomShards", self.n)

    @property
    def attributes(self) -> tuple[str, ...]:
        return ()

    @property
    def deterministic(self) -> bool:
        return False

    def check(self, model_name: str, attributes: Mapping[str, Any], separator: str) -> None:
        _check_numbered_separator("RandomShards", model_name, separator)

    def segment_bytes(self, first_shard: int) -> int:
        return _number_bytes(self.n, first_shard)

    def pick(self, key: KeyValues, rng: random.Random) -> Segment:
        return rng.randrange(self.n)

    def candidates(self, key: KeyValues) -> Sequence[Segment]:
        return range(self.n)

    @property
    def ordered(self) -> bool:
        return False

    def query_candidates(self, key: KeyValues, bounds: Mapping[str, TimeBounds]) -> list[Segment]:
        return list(range(self.n))


_ALGORITHMS = ("md5", "sha256")


def _to_on_tuple(value: Sequence[str] | str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(value)


@frozen
class HashShards:
    """Write to ``hash(values of on) % n``: the same values always pick the same shard.

    The hash is ``md5`` (or ``sha256``) of the ``on`` attributes' values, in their
    DynamoDB string form, joined by ``joiner`` (default: concatenated, as the public
    write-sharding guides compute it). It is stable across processes and versions.

    A read by full key touches one shard when every ``on`` attribute is part of the key;
    otherwise it reads all ``n``.

    Args:
        n: the shard count.
        on: attribute names whose values are hashed; the partition key's own name means
            the logical key.
        algorithm: ``"md5"`` or ``"sha256"``.
        joiner: the string put between the values before hashing.
    """

    n: int
    on: tuple[str, ...] = field(converter=_to_on_tuple)
    algorithm: str = "md5"
    joiner: str = ""

    def __attrs_post_init__(self) -> None:
        _check_count("HashShards", self.n)
        if not self.on:
            raise ShardConfigurationError(
                "HashShards(on=[]): name at least one attribute to hash, e.g. on=['timestamp']"
            )
        if self.algorithm not in _ALGORITHMS:
            raise ShardConfigurationError(
                f"HashShards(algorithm={self.algorithm!r}): use one of {_ALGORITHMS}"
            )

    @property
    def attributes(self) -> tuple[str, ...]:
        return self.on

    @property
    def deterministic(self) -> bool:
        return True

    def check(self, model_name: str, attributes: Mapping[str, Any], separator: str) -> None:
        _check_attributes_exist("HashShards(on=...)", model_name, self.on, attributes)
        _check_numbered_separator("HashShards", model_name, separator)

    def segment_bytes(self, first_shard: int) -> int:
        return _number_bytes(self.n, first_shard)

    def shard_of(self, values: Sequence[str]) -> int:
        """The shard of these canonical values: ``int(hexdigest) % n``."""
        data = self.joiner.join(values).encode("utf-8")
        digest = hashlib.new(self.algorithm, data).digest()
        return int.from_bytes(digest, "big") % self.n

    def _known(self, key: KeyValues) -> list[str] | None:
        if all(name in key.canonical for name in self.on):
            return [key.canonical[name] for name in self.on]
        return None

    def pick(self, key: KeyValues, rng: random.Random) -> Segment:
        known = self._known(key)
        if known is None:
            missing = [name for name in self.on if name not in key.canonical]
            raise ShardKeyError(
                f"HashShards(on={list(self.on)}): attribute {missing[0]!r} has no value; "
                f"set {missing[0]} before saving, the shard is computed from it"
            )
        return self.shard_of(known)

    def candidates(self, key: KeyValues) -> Sequence[Segment]:
        known = self._known(key)
        if known is None:
            return range(self.n)
        return (self.shard_of(known),)

    @property
    def ordered(self) -> bool:
        return False

    def query_candidates(self, key: KeyValues, bounds: Mapping[str, TimeBounds]) -> list[Segment]:
        return list(self.candidates(key))


@frozen
class ShardChange:
    """A change of a dynamic key's shard count, as passed to ``DynamicShards(on_change=...)``.

    Attributes:
        kind: ``"grow"`` (throttling, or ``grow_shards``), ``"shrink"`` or ``"prune"``
            (a compaction emptied the retired shards and dropped them from the history).
        table: the main table.
        logical_key: the key whose count changed.
        old_count: the count before.
        new_count: the count after.
        at: epoch seconds of the change.
    """

    kind: Literal["grow", "shrink", "prune"]
    table: str
    logical_key: str
    old_count: int
    new_count: int
    at: int


def _positive_number(name: str, value: Any, allow_zero: bool = True) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        least = "0 or more" if allow_zero else "more than 0"
        raise ShardConfigurationError(
            f"DynamicShards({name}={value!r}): give a number of seconds, {least}"
        )


@frozen
class DynamicShards:
    """Start every key at one shard; grow a key's count when its partition throttles.

    Each logical key's count lives in a metadata table (see :mod:`shardmodel.metadata`),
    so every writer and reader agrees. Writers spread over the live count; readers read
    every shard up to the largest count in the key's history.

    Args:
        table_name: the metadata table (default: the main table's name + ``-shards``).
        cooldown: seconds after a change during which a key does not grow again.
        growth_factor: a growth multiplies the count by this (rounded up) ...
        growth_step: ... and adds at least this many shards.
        max_shards: the largest count a key grows to.
        jitter: the most seconds a writer waits (at random) before growing, so racing
            writers see each other's growth instead of all trying.
        writer_cache_seconds: how long a writer reuses a key's metadata (0: read it on
            every new item). A stale count only spreads writes less.
        reader_cache_seconds: opt-in: how long a reader reuses a key's metadata. Items
            written to shards grown within this many seconds may be missed by a read;
            None (default) reads the metadata strongly consistent on every read.
        clock: epoch seconds and sleeping (inject a simulated clock in tests).
        on_change: called with a :class:`ShardChange` after every grow, shrink or prune.
    """

    table_name: str | None = None
    cooldown: float = 60.0
    growth_factor: float = 2.0
    growth_step: int = 1
    max_shards: int = 100
    jitter: float = 0.5
    writer_cache_seconds: float = 5.0
    reader_cache_seconds: float | None = None
    clock: Clock = field(factory=SystemClock, eq=False)
    on_change: Callable[[ShardChange], None] | None = field(default=None, eq=False)

    def __attrs_post_init__(self) -> None:
        if self.table_name is not None and (
            not isinstance(self.table_name, str) or not self.table_name
        ):
            raise ShardConfigurationError(
                f"DynamicShards(table_name={self.table_name!r}): give a table name, or leave "
                "it out for '<main table>-shards'"
            )
        _positive_number("cooldown", self.cooldown)
        _positive_number("jitter", self.jitter)
        _positive_number("writer_cache_seconds", self.writer_cache_seconds)
        if self.reader_cache_seconds is not None:
            _positive_number("reader_cache_seconds", self.reader_cache_seconds)
        if not isinstance(self.growth_factor, int | float) or self.growth_factor < 1:
            raise ShardConfigurationError(
                f"DynamicShards(growth_factor={self.growth_factor!r}): give a number of at "
                "least 1 (2 doubles the count on each growth)"
            )
        if isinstance(self.growth_step, bool) or not isinstance(self.growth_step, int):
            raise ShardConfigurationError(
                f"DynamicShards(growth_step={self.growth_step!r}): give an int, e.g. 1"
            )
        if self.growth_step < 0 or (self.growth_step == 0 and self.growth_factor == 1):
            raise ShardConfigurationError(
                f"DynamicShards(growth_factor={self.growth_factor}, growth_step="
                f"{self.growth_step}): a growth must add shards; use growth_step >= 1 or "
                "growth_factor > 1"
            )
        bad = isinstance(self.max_shards, bool) or not isinstance(self.max_shards, int)
        if bad or not 1 <= self.max_shards <= MAX_SHARDS:
            raise ShardConfigurationError(
                f"DynamicShards(max_shards={self.max_shards!r}): give an int between 1 and "
                f"{MAX_SHARDS}: the most shards a hot key may grow to"
            )

    def grown(self, count: int) -> int:
        """The count after one growth from ``count`` (at most ``max_shards``)."""
        factor = -(-count * self.growth_factor // 1)  # ceil without float surprises
        return min(self.max_shards, max(int(factor), count + self.growth_step))

    @property
    def attributes(self) -> tuple[str, ...]:
        return ()

    @property
    def deterministic(self) -> bool:
        return False

    @property
    def ordered(self) -> bool:
        return False

    def check(self, model_name: str, attributes: Mapping[str, Any], separator: str) -> None:
        _check_numbered_separator("DynamicShards", model_name, separator)

    def segment_bytes(self, first_shard: int) -> int:
        return _number_bytes(self.max_shards, first_shard)

    def _counts(self, key: KeyValues) -> ShardCount:
        if key.shards is None:
            raise ShardConfigurationError(
                f"DynamicShards: no shard count for key {key.logical_key!r}; a dynamic key "
                "is read through its model (ShardedModel), which looks the count up"
            )
        return key.shards

    def pick(self, key: KeyValues, rng: random.Random) -> Segment:
        return rng.randrange(self._counts(key).live)

    def candidates(self, key: KeyValues) -> Sequence[Segment]:
        return range(self._counts(key).readable)

    def query_candidates(self, key: KeyValues, bounds: Mapping[str, TimeBounds]) -> list[Segment]:
        return list(range(self._counts(key).readable))


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
        check_time_format(f"TimeBuckets(granularity={self.granularity!r})", self.format)

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
        _check_attributes_exist("TimeBuckets(on=...)", model_name, (self.on,), attributes)
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
        :func:`~shardmodel._time.text_span`).
        """
        start, end = text_span(self.on, lower)[0], text_span(self.on, upper)[1]
        if end < start:
            return []
        step = _label_step(self.format)
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
            moment = min(moment + step, end)


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


def _label_step(fmt: str) -> timedelta:
    """The smallest time unit a format shows: stepping by it visits every label."""
    if any(code in fmt for code in ("%S", "%f", "%s", "%T", "%c", "%X")):
        return timedelta(seconds=1)
    if "%M" in fmt or "%R" in fmt:
        return timedelta(minutes=1)
    if any(code in fmt for code in ("%H", "%I", "%p")):
        return timedelta(hours=1)
    return timedelta(days=1)


# OrderedShards lives in its own module (it brings its attribute and sample tooling);
# imported last, as it builds on the helpers above
from shardmodel.ordered import OrderedShards  # noqa: E402
