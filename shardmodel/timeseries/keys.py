"""A time series' keys: the attributes that hold them and the layout that computes them.

``PK = "{md5(E) % N}#{bucket of t}"`` (a :class:`BucketKeyAttribute`: strategy segments
alone) and ``SK = "{E}#{t in UTC, microseconds, Z}"`` (a :class:`SeriesKeyAttribute`:
entity and time). :class:`SeriesLayout` is a model's checked declaration of both.
"""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from attrs import frozen
from pynamodb.attributes import Attribute, UnicodeAttribute
from pynamodb.constants import STRING

from shardmodel.core.times import to_utc
from shardmodel.engine import Placement
from shardmodel.errors import ShardKeyError
from shardmodel.keyspace.bucket_counts import CountSchedule
from shardmodel.keyspace.keys import KeyLayout
from shardmodel.keyspace.ordered import OrderedShards
from shardmodel.keyspace.phases import resized_layout
from shardmodel.keyspace.strategies import HashShards, KeyValues, Segment, ShardStrategy
from shardmodel.keyspace.time_buckets import TimeBuckets

#: DynamoDB's limit on a sort key value, in UTF-8 bytes.
MAX_SORT_KEY_BYTES = 1024

#: Characters a series time text holds: a separator must use none of them.
TIME_CHARACTERS = frozenset("0123456789-:.TZ")

#: Deterministic strategies ignore the random source a pick is given.
_UNUSED_RNG = random.Random(0)

#: A time whose text is as long as any: the sort key length check uses it.
_WIDEST_TIME = datetime(2000, 1, 1, tzinfo=timezone.utc)


def series_time_text(moment: datetime) -> str:
    """A time as a sort key stores it: UTC, always six fraction digits, and ``Z``.

    Fixed width (``2023-10-27T15:04:05.123456Z``), so the text sorts as the time does.
    """
    utc = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return utc.isoformat(timespec="microseconds") + "Z"


class SeriesTimeAttribute(Attribute[datetime]):
    """The time of a reading: an aware UTC ``datetime`` on every loaded item.

    A save accepts an aware ``datetime``, an ISO 8601 string with an offset
    (``"2023-10-27T17:04:05+02:00"``) or epoch seconds, and normalizes it to UTC: the
    instance then holds the UTC ``datetime`` and the sort key the ``...Z`` text. The time
    lives in the sort key only (see :class:`SeriesKeyAttribute`), not as an attribute.
    """

    attr_type = STRING

    def serialize(self, value: Any) -> str:
        return series_time_text(to_utc(self.attr_name, value))

    def deserialize(self, value: Any) -> datetime:
        return to_utc(self.attr_name, value)


class BucketKeyAttribute(UnicodeAttribute):
    """A partition key made only of strategy segments: ``7#2023-10-27T15``.

    Args:
        hash_key: True (the table's partition key).
        strategy: deterministic strategies, left to right, reading the entity and time
            attributes named on the :class:`SeriesKeyAttribute`; the guides' layout is
            ``[HashShards(N, on="sensor_id"), TimeBuckets("timestamp", "hour")]``.
        separator: the string between segments (default ``#``).
        first_shard: the number written for shard 0 (default 0).
        counts_before: after a shard count change, the counts of earlier buckets: bucket
            label to the count of the buckets before it, e.g. ``{"2026-11-25T04": 16}``
            with ``HashShards(32, ...)`` (see :mod:`shardmodel.keyspace.bucket_counts`).
        attr_name: the attribute's name in the table, e.g. ``"PK"``.
    """

    def __init__(
        self,
        hash_key: bool = True,
        *,
        strategy: ShardStrategy | Sequence[ShardStrategy],
        separator: str = "#",
        first_shard: int = 0,
        counts_before: Mapping[str, int] | None = None,
        attr_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(hash_key=hash_key, attr_name=attr_name, **kwargs)
        self.counts_before = counts_before
        self.layout = KeyLayout(
            strategies=strategy, separator=separator, first_shard=first_shard, placement="segments"
        )

    def compose(self, segments: Sequence[Segment]) -> str:
        """The partition key of these segments."""
        return self.layout.join("", segments)


class SeriesKeyAttribute(UnicodeAttribute):
    """A sort key made of the entity and the time: ``sensor-alpha-001#2023-10-27T15:04:05.123456Z``.

    Args:
        range_key: True (the table's sort key).
        entity: the name of the entity attribute (a ``UnicodeAttribute``); its value may
            not contain ``separator``.
        time: the name of the time attribute (a :class:`SeriesTimeAttribute`).
        separator: the string between entity and time (default ``#``).
        attr_name: the attribute's name in the table, e.g. ``"SK"``.
    """

    def __init__(
        self,
        range_key: bool = True,
        *,
        entity: str,
        time: str,
        separator: str = "#",
        attr_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(range_key=range_key, attr_name=attr_name, **kwargs)
        self.entity = entity
        self.time = time
        self.separator = separator

    def compose(self, entity: str, moment: datetime) -> str:
        """The sort key of one reading."""
        return f"{entity}{self.separator}{series_time_text(moment)}"


@frozen
class SeriesLayout:
    """A time-series model's checked declaration: which attribute holds what.

    Attributes:
        keys: the partition key and sort key attributes.
        partition_name: the partition key's python name.
        sort_name: the sort key's python name.
        schedule: the declared shard count of each bucket (one count, unless the
            partition key declares ``counts_before``; None without a HashShards and a
            TimeBuckets).
    """

    # kept in a tuple: an Attribute held bare acts as a descriptor to type checkers
    keys: tuple[BucketKeyAttribute, SeriesKeyAttribute]
    partition_name: str
    sort_name: str
    schedule: CountSchedule | None = None

    def pk(self) -> BucketKeyAttribute:
        """The partition key attribute."""
        return self.keys[0]

    def sk(self) -> SeriesKeyAttribute:
        """The sort key attribute."""
        return self.keys[1]

    @property
    def entity(self) -> str:
        return self.sk().entity

    @property
    def time(self) -> str:
        return self.sk().time

    def check_entity(self, value: Any, where: str) -> str:
        """The entity, or a :class:`ShardKeyError` naming the fix."""
        if not isinstance(value, str):
            raise ShardKeyError(
                f"{where}: the entity must be a str, got {type(value).__name__} {value!r}; "
                f"pass str({value!r})"
            )
        if not value:
            raise ShardKeyError(f"{where}: the entity is empty; give it a value")
        separator = self.sk().separator
        if separator in value:
            raise ShardKeyError(
                f"{where}: entity {value[:40]!r} contains the sort key separator "
                f"{separator!r}, so its readings could not be told from another entity's; "
                f"use an id without {separator!r} or another separator on SeriesKeyAttribute"
            )
        size = len(self.sk().compose(value, _WIDEST_TIME).encode("utf-8"))
        if size > MAX_SORT_KEY_BYTES:
            raise ShardKeyError(
                f"{where}: entity {value[:40]!r}... makes sort keys of {size} bytes, over "
                f"DynamoDB's {MAX_SORT_KEY_BYTES}-byte limit; shorten it by "
                f"{size - MAX_SORT_KEY_BYTES} bytes"
            )
        return value

    def key_values(self, entity: str, moment: datetime | None) -> KeyValues:
        """What the partition key's strategies see of one entity (and time, when known)."""
        values: dict[str, Any] = {self.entity: entity}
        canonical = {self.entity: entity}
        if moment is not None:
            values[self.time] = moment
            canonical[self.time] = series_time_text(moment)
        return KeyValues(logical_key=entity, values=values, canonical=canonical)

    def counted(self) -> tuple[int, int] | None:
        """The positions of the HashShards and the TimeBuckets a count change needs
        (None: the layout has not exactly one of each)."""
        strategies = self.pk().layout.strategies
        hashes = [i for i, s in enumerate(strategies) if isinstance(s, HashShards)]
        buckets = [i for i, s in enumerate(strategies) if isinstance(s, TimeBuckets)]
        counts = [s for s in strategies if isinstance(s, HashShards | OrderedShards)]
        if len(hashes) != 1 or len(buckets) != 1 or len(counts) != 1:
            return None
        return hashes[0], buckets[0]

    def bucket_format(self) -> str:
        """The strftime format of the bucket labels (a counted layout only)."""
        positions = self.counted()
        assert positions is not None
        bucket = self.pk().layout.strategies[positions[1]]
        assert isinstance(bucket, TimeBuckets)
        return bucket.format

    def bucket_of(self, partition_key: str) -> str:
        """The bucket label a partition key names (a counted layout only; a hot entity's
        sub-partition keeps its suffix, which sorts within its bucket)."""
        positions = self.counted()
        assert positions is not None
        return self.pk().layout.split(partition_key)[1][positions[1]]

    def layout_with(self, count: int) -> KeyLayout:
        """The partition key's layout with its HashShards at ``count`` shards."""
        return _resized("series", self.pk().layout, count)

    def partition_key(
        self, entity: str, moment: datetime, schedule: CountSchedule | None = None
    ) -> str:
        """The bucket partition key of one reading (its bucket's count from ``schedule``)."""
        key = self.key_values(entity, moment)
        layout = self.pk().layout
        if schedule is not None:
            positions = self.counted()
            assert positions is not None
            label = layout.strategies[positions[1]].pick(key, _UNUSED_RNG)
            layout = self.layout_with(schedule.count(str(label)))
        return layout.join("", [s.pick(key, _UNUSED_RNG) for s in layout.strategies])

    def escalated(self, partition_key: str, sort_key: str, count: int) -> str:
        """A hot entity's partition key: one of ``count`` sub-partitions of its bucket.

        The sub-partition follows from the sort key (md5, stable across processes), so a
        reading's key is known from the reading; sub-partition 0 is the bucket's own key,
        so readings written before the escalation stay where readers look.
        """
        if count <= 1:
            return partition_key
        digest = hashlib.md5(sort_key.encode("utf-8"), usedforsecurity=False).digest()
        sub = int.from_bytes(digest[:8], "big") % count
        return partition_key if sub == 0 else f"{partition_key}{self.pk().layout.separator}{sub}"

    def sub_partitions(self, partition_key: str, count: int) -> list[str]:
        """Every sub-partition of one bucket's partition key (itself first)."""
        return [partition_key] + [
            f"{partition_key}{self.pk().layout.separator}{sub}" for sub in range(1, count)
        ]

    def partitions(
        self,
        entity: str,
        low: datetime,
        high: datetime,
        *,
        what: str,
        bound: int,
        schedule: CountSchedule | None = None,
    ) -> list[list[str]]:
        """The partitions holding ``entity``'s readings from ``low`` to ``high``, by bucket.

        One list per bucket (per combination of ordered segments), in time order; the
        placement of the partition key's layout works them out.

        Raises:
            FanOutLimitError: more partitions than ``bound``, before any request.
        """
        key = self.key_values(entity, None)
        bounds = {self.time: (low, high)}
        if schedule is None:
            return Placement(self.pk().layout).partitions(
                key, what=what, bound=bound, bounds=bounds, sort_name=self.time
            )
        by_count = {
            count: Placement(self.layout_with(count)).partitions(
                key, what=what, bound=bound, bounds=bounds, sort_name=self.time
            )
            for count in sorted({schedule.last, *(c for _, c in schedule.changes)})
        }
        if len(by_count) == 1:
            return next(iter(by_count.values()))
        # each count's enumeration has one group per bucket, in time order: a bucket
        # takes the group of its own count
        chosen = []
        for index, groups in enumerate(zip(*by_count.values(), strict=True)):
            chosen.append(by_count[schedule.count(self.bucket_of(groups[0][0]))][index])
        return chosen


#: A layout with its HashShards at another count, cached: every save and range read of a
#: model with a count change asks it
_resized = functools.lru_cache(maxsize=256)(resized_layout)
