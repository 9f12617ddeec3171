"""Time series in the hybrid bucket layout: no entity in the partition key.

The public time-series guides' production layout writes one reading of entity ``E`` at
time ``t`` under::

    PK = "{md5(E) % N}#{bucket of t}"          7#2023-10-27T15
    SK = "{E}#{t in UTC, microseconds, Z}"     sensor-alpha-001#2023-10-27T15:04:05.123456Z

Writes of many entities spread over ``N`` partitions per bucket; one entity's bucket is
one partition, read with a sort key range that starts with ``E#``. Here the partition
key is declared as strategy segments (:class:`BucketKeyAttribute`), the sort key as
entity plus time (:class:`SeriesKeyAttribute`); a :class:`TimeSeriesModel` fills both
from plain attributes on save, fills the entity and time back from the sort key on load,
and reads "entity E between t0 and t1" as one query per covered bucket, merged in time
order (:meth:`TimeSeriesModel.query_series`, :meth:`TimeSeriesModel.latest`).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar, TypeVar

from attrs import frozen
from pynamodb.attributes import Attribute, UnicodeAttribute
from pynamodb.constants import STRING
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from shardmodel._conditions import named_paths
from shardmodel._time import to_utc
from shardmodel.cursor import encode_cursor
from shardmodel.engine import Placement, sharding_of
from shardmodel.engine.items import with_keys
from shardmodel.engine.query_plan import cursor_secret, parallelism_of, resume
from shardmodel.errors import ShardConfigurationError, ShardKeyError
from shardmodel.keys import KeyLayout
from shardmodel.model.declaration import ShardedModelMeta
from shardmodel.model.sharded import ShardedModel
from shardmodel.query import MergedQuery, QueryIdentity, count_shards, dynamodb_sort_key
from shardmodel.request_bound import check_fan_out, request_bound
from shardmodel.strategies import KeyValues, Segment, ShardStrategy

__all__ = [
    "BucketKeyAttribute",
    "SeriesKeyAttribute",
    "SeriesTimeAttribute",
    "TimeSeriesModel",
    "herd_offset",
    "series_time_text",
]

#: DynamoDB's limit on a sort key value, in UTF-8 bytes.
MAX_SORT_KEY_BYTES = 1024

#: Characters a series time text holds: a separator must use none of them.
_TIME_CHARACTERS = frozenset("0123456789-:.TZ")

#: Deterministic strategies ignore the random source a pick is given.
_UNUSED_RNG = random.Random(0)

#: A time whose text is as long as any: the sort key length check uses it.
_WIDEST_TIME = datetime(2000, 1, 1, tzinfo=timezone.utc)

_S = TypeVar("_S", bound="TimeSeriesModel")
_RawItem = dict[str, dict[str, Any]]


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
        attr_name: the attribute's name in the table, e.g. ``"PK"``.
    """

    def __init__(
        self,
        hash_key: bool = True,
        *,
        strategy: ShardStrategy | Sequence[ShardStrategy],
        separator: str = "#",
        first_shard: int = 0,
        attr_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(hash_key=hash_key, attr_name=attr_name, **kwargs)
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
    """

    # kept in a tuple: an Attribute held bare acts as a descriptor to type checkers
    keys: tuple[BucketKeyAttribute, SeriesKeyAttribute]
    partition_name: str
    sort_name: str

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

    def partition_key(self, entity: str, moment: datetime) -> str:
        key = self.key_values(entity, moment)
        return self.pk().compose([s.pick(key, _UNUSED_RNG) for s in self.pk().layout.strategies])

    def partitions(
        self, entity: str, low: datetime, high: datetime, *, what: str, bound: int
    ) -> list[list[str]]:
        """The partitions holding ``entity``'s readings from ``low`` to ``high``, by bucket.

        One list per bucket (per combination of ordered segments), in time order; the
        placement of the partition key's layout works them out.

        Raises:
            FanOutLimitError: more partitions than ``bound``, before any request.
        """
        return Placement(self.pk().layout).partitions(
            self.key_values(entity, None),
            what=what,
            bound=bound,
            bounds={self.time: (low, high)},
            sort_name=self.time,
        )


def _chunks(buckets: list[list[str]], width: int) -> list[list[str]]:
    """Consecutive buckets joined into groups of at most ``width`` partitions (one at least).

    A group's partitions are read at once and merged; groups are read one after another,
    so a query with a small limit stops after the first group that fills it.
    """
    groups: list[list[str]] = []
    for bucket in buckets:
        if groups and len(groups[-1]) + len(bucket) <= width:
            groups[-1].extend(bucket)
        else:
            groups.append(list(bucket))
    return groups


class TimeSeriesMeta(ShardedModelMeta):
    """Checks a time-series model's key declaration when the class is defined."""

    def __init__(
        cls,
        name: str,
        bases: tuple[type, ...],
        namespace: dict[str, Any],
        discriminator: Any = None,
    ) -> None:
        super().__init__(name, bases, namespace, discriminator)
        cls._series_layout = _configure(cls)


def _configure(cls: Any) -> SeriesLayout | None:
    attributes: dict[str, Attribute[Any]] = cls.get_attributes()
    partitions = [(n, a) for n, a in attributes.items() if isinstance(a, BucketKeyAttribute)]
    sorts = [(n, a) for n, a in attributes.items() if isinstance(a, SeriesKeyAttribute)]
    model = cls.__name__
    if not partitions and not sorts:
        return None  # an abstract base
    if len(partitions) != 1 or len(sorts) != 1:
        raise ShardConfigurationError(
            f"{model}: a time-series model declares one BucketKeyAttribute(hash_key=True, "
            "strategy=[...]) and one SeriesKeyAttribute(range_key=True, entity=..., time=...)"
            f"; found {len(partitions)} and {len(sorts)}"
        )
    (partition_name, partition), (sort_name, sort) = partitions[0], sorts[0]
    if not partition.is_hash_key or not sort.is_range_key:
        raise ShardConfigurationError(
            f"{model}: the BucketKeyAttribute must be the partition key (hash_key=True) and "
            "the SeriesKeyAttribute the sort key (range_key=True)"
        )
    entity = attributes.get(sort.entity)
    if entity is None or entity.attr_type != STRING or entity.is_hash_key or entity.is_range_key:
        raise ShardConfigurationError(
            f"{model}: SeriesKeyAttribute(entity={sort.entity!r}) must name a UnicodeAttribute "
            f"of the model that is not a key; add {sort.entity} = UnicodeAttribute()"
        )
    if not isinstance(attributes.get(sort.time), SeriesTimeAttribute):
        raise ShardConfigurationError(
            f"{model}: SeriesKeyAttribute(time={sort.time!r}) must name a SeriesTimeAttribute "
            f"of the model; add {sort.time} = SeriesTimeAttribute()"
        )
    if not isinstance(sort.separator, str) or not sort.separator:
        raise ShardConfigurationError(
            f"{model}: SeriesKeyAttribute(separator={sort.separator!r}): give a non-empty "
            "string such as '#'"
        )
    clash = sorted(set(sort.separator) & _TIME_CHARACTERS)
    if clash:
        raise ShardConfigurationError(
            f"{model}: SeriesKeyAttribute(separator={sort.separator!r}) contains "
            f"{''.join(clash)!r}, which a time text holds, so the time could not be split off "
            "the sort key; use a separator such as '#' or '|'"
        )
    layout = partition.layout
    for strategy in layout.strategies:
        strategy.check(model, attributes, layout.separator)
        unknown = [a for a in strategy.attributes if a not in (sort.entity, sort.time)]
        if unknown or not strategy.deterministic:
            raise ShardConfigurationError(
                f"{model}: BucketKeyAttribute(strategy={strategy!r}) must follow from the "
                f"entity {sort.entity!r} and the time {sort.time!r} alone, so a reading's key "
                f"is known from the reading; use HashShards(n, on={sort.entity!r}) and "
                f"TimeBuckets({sort.time!r}, 'hour')"
            )
    return SeriesLayout((partition, sort), partition_name, sort_name)


class TimeSeriesModel(ShardedModel, metaclass=TimeSeriesMeta):
    """A model of readings in the hybrid bucket layout (no entity in the partition key).

    Declare the partition key as a :class:`BucketKeyAttribute`, the sort key as a
    :class:`SeriesKeyAttribute` naming the entity and time attributes, and those two as
    a ``UnicodeAttribute`` and a :class:`SeriesTimeAttribute`. Readings are saved with
    plain attributes; both keys are computed on save. The entity and time are stored in
    the sort key only, and filled back from it on load, so items written by hand in the
    same layout load unchanged.
    """

    _series_layout: ClassVar[SeriesLayout | None] = None
    # per instance: the keys of the stored item this instance was loaded from
    _loaded_keys: tuple[str, str] | None = None

    @classmethod
    def _series(cls) -> SeriesLayout:
        layout = cls._series_layout
        if layout is None:
            raise ShardConfigurationError(
                f"{cls.__name__} declares no BucketKeyAttribute and SeriesKeyAttribute; "
                "declare both to use it as a time series"
            )
        return layout

    # -- keys on write ----------------------------------------------------------------

    def _fill_series_keys(self) -> None:
        """Set both keys from the entity and time; the time becomes a UTC ``datetime``."""
        layout = self._series()
        model = type(self).__name__
        entity = layout.check_entity(getattr(self, layout.entity), f"{model}.{layout.entity}")
        value = getattr(self, layout.time)
        if value is None:
            raise ShardKeyError(
                f"{model}.{layout.time} has no value; set it before saving, both keys are "
                "computed from it"
            )
        moment = to_utc(f"{model}.{layout.time}", value)
        setattr(self, layout.time, moment)
        sort_key = layout.sk().compose(entity, moment)
        loaded = self._loaded_keys
        if loaded is not None and loaded[1] == sort_key:
            partition_key = loaded[0]  # keep the stored item's partition, as it was written
        else:
            partition_key = layout.partition_key(entity, moment)
        setattr(self, layout.partition_name, partition_key)
        setattr(self, layout.sort_name, sort_key)

    def serialize(self, null_check: bool = True) -> dict[str, dict[str, Any]]:
        """The stored item: both keys computed, entity and time only in the sort key."""
        self._fill_series_keys()
        data = super().serialize(null_check=null_check)
        for name in self._derived_names():
            data.pop(name, None)
        return data

    def _get_hash_range_key_serialized_values(self) -> tuple[Any, Any | None]:
        self._fill_series_keys()
        return super()._get_hash_range_key_serialized_values()

    def _get_serialized_keys(self) -> tuple[Any, Any]:
        self._fill_series_keys()
        return super()._get_serialized_keys()

    def _check_series_actions(self, actions: Any) -> None:
        """Refuse actions on the entity or time: they live in the keys, not as attributes."""
        if not isinstance(actions, list):
            return
        for action in actions:
            named = named_paths(action.values[0]) & self._derived_names()
            if named:
                raise ShardKeyError(
                    f"{type(self).__name__}.{named.pop()} is part of the keys, not a stored "
                    "attribute; delete() the reading and save() it with the new value"
                )

    def update(
        self,
        actions: list[Action],
        condition: Condition | None = None,
        *,
        add_version_condition: bool = True,
    ) -> Any:
        """Update the reading (its entity and time are its keys: not updatable)."""
        self._check_series_actions(actions)
        return super().update(actions, condition, add_version_condition=add_version_condition)

    def get_update_kwargs_from_instance(
        self,
        actions: list[Action],
        condition: Condition | None = None,
        return_values_on_condition_failure: str | None = None,
        *,
        add_version_condition: bool = True,
    ) -> dict[str, Any]:
        self._check_series_actions(actions)
        return super().get_update_kwargs_from_instance(
            actions,
            condition,
            return_values_on_condition_failure,
            add_version_condition=add_version_condition,
        )

    # -- entity and time on load ------------------------------------------------------

    @classmethod
    def from_raw_data(cls: type[_S], data: _RawItem) -> _S:
        """Build a reading from a stored item: entity and time read from the sort key."""
        instance = super().from_raw_data(data)
        instance._restore_series(data)
        return instance

    def deserialize(self, attribute_values: _RawItem) -> None:
        super().deserialize(attribute_values)
        self._restore_series(attribute_values)

    def _restore_series(self, data: _RawItem) -> None:
        layout = self._series()
        partition = data.get(layout.pk().attr_name, {}).get(STRING)
        stored = data.get(layout.sk().attr_name, {}).get(STRING)
        if partition is None or stored is None:
            return  # a projection without keys: nothing to restore
        entity, separator, text = stored.rpartition(layout.sk().separator)
        if not separator or not entity:
            raise ShardKeyError(
                f"{type(self).__name__}: stored sort key {stored[:80]!r} is not "
                f"'<entity>{layout.sk().separator}<time>'; was it written in this layout?"
            )
        setattr(self, layout.entity, entity)
        setattr(self, layout.time, to_utc(f"stored sort key {stored[:80]!r}", text))
        self._loaded_keys = (partition, stored)

    # -- reads ------------------------------------------------------------------------

    @classmethod
    def _derived_names(cls) -> set[str]:
        """The table names of the entity and time: kept in the sort key, never stored."""
        layout = cls._series()
        attributes = cls.get_attributes()
        return {attributes[n].attr_name for n in (layout.entity, layout.time)}

    @classmethod
    def _series_projection(cls, attributes_to_get: Sequence[str] | None) -> list[str] | None:
        """A read's projection: both keys (entity and time come from the sort key)."""
        if attributes_to_get is None:
            return None
        layout = cls._series()
        wanted = [a for a in attributes_to_get if a not in cls._derived_names()]
        return with_keys(cls, wanted, [layout.pk().attr_name, layout.sk().attr_name])

    @classmethod
    def _plan_series(
        cls,
        what: str,
        entity: Any,
        start: Any,
        end: Any,
        filter_condition: Condition | None,
        max_requests: int | None,
    ) -> tuple[str, list[list[str]], Condition]:
        """Check a range read and plan it: the entity, its partitions by bucket, the SK range.

        Raises before any request: bad entity or times, a filter on the entity or time,
        or more partitions than the request bound.
        """
        layout = cls._series()
        name = cls.__name__
        entity = layout.check_entity(entity, f"{name}.{what}(entity)")
        low = to_utc(f"{name}.{what}(start)", start)
        high = to_utc(f"{name}.{what}(end)", end)
        if high < low:
            raise ShardKeyError(
                f"{name}.{what}: start {low.isoformat()} is after end {high.isoformat()}; "
                "pass the earlier time first"
            )
        for attribute in named_paths(filter_condition):
            if attribute in cls._derived_names():
                raise ShardKeyError(
                    f"{name}.{what}(filter_condition=...): {attribute!r} is stored in the "
                    "sort key, not as an attribute; bound the time with start and end instead"
                )
        partitions = layout.partitions(
            entity,
            low,
            high,
            what=f"{name}.{what}({entity!r})",
            bound=request_bound(cls, max_requests),
        )
        sort = layout.sk()
        condition = sort.between(sort.compose(entity, low), sort.compose(entity, high))
        return entity, partitions, condition

    @classmethod
    def count_series(
        cls,
        entity: str,
        start: Any,
        end: Any,
        *,
        filter_condition: Condition | None = None,
        consistent_read: bool = False,
        parallelism: int | None = None,
        max_requests: int | None = None,
    ) -> int:
        """How many readings :meth:`query_series` would return: ``Select=COUNT`` per bucket."""
        entity, buckets, condition = cls._plan_series(
            "count_series", entity, start, end, filter_condition, max_requests
        )
        fetch = sharding_of(cls).executor.query_fetcher(
            range_key_condition=condition,
            filter_condition=filter_condition,
            consistent_read=consistent_read,
            select="COUNT",
        )
        keys = [key for bucket in buckets for key in bucket]
        return count_shards(fetch, keys, parallelism_of(cls, parallelism))

    @classmethod
    def query_series(
        cls: type[_S],
        entity: str,
        start: Any,
        end: Any,
        *,
        filter_condition: Condition | None = None,
        consistent_read: bool = False,
        scan_index_forward: bool = True,
        limit: int | None = None,
        last_evaluated_key: str | None = None,
        attributes_to_get: Sequence[str] | None = None,
        page_size: int | None = None,
        parallelism: int | None = None,
        max_requests: int | None = None,
    ) -> MergedQuery[_S]:
        """The readings of ``entity`` from ``start`` to ``end`` (both included), in time order.

        Reads exactly one partition per covered bucket (for the guides' layout), with a
        sort key range ``entity#start .. entity#end``; buckets are read in parallel,
        ``parallelism`` at a time, merged in time order (newest first when
        ``scan_index_forward=False``). ``limit`` is exact; ``last_evaluated_key`` of the
        returned iterator is the usual resumable cursor. Times may be aware datetimes, ISO
        8601 strings with an offset, or epoch seconds. ``max_requests`` bounds the
        partitions read (default ``Meta.max_requests``, else 1,000), checked before any
        request.
        """
        layout = cls._series()
        name = cls.__name__
        entity, buckets, condition = cls._plan_series(
            "query_series", entity, start, end, filter_condition, max_requests
        )
        width = parallelism_of(cls, parallelism)
        groups = _chunks(buckets, width)
        if not scan_index_forward:
            groups.reverse()
        identity = QueryIdentity(
            model=f"{cls.Meta.table_name}:{name}",
            index=None,
            logical_key=entity,
            forward=scan_index_forward,
        )
        secret = cursor_secret(cls)
        resumed = resume(cls, last_evaluated_key, identity, groups, secret, moving=False)
        key_names = [layout.pk().attr_name, layout.sk().attr_name]
        fetch = sharding_of(cls).executor.query_fetcher(
            range_key_condition=condition,
            filter_condition=filter_condition,
            attributes_to_get=cls._series_projection(attributes_to_get),
            consistent_read=consistent_read,
            return_consumed_capacity="TOTAL",
            scan_index_forward=scan_index_forward,
        )
        return MergedQuery(
            fetch=fetch,
            groups=groups,
            sort_key=dynamodb_sort_key(layout.sk()),
            forward=scan_index_forward,
            build=cls.from_raw_data,
            key_names=key_names,
            identity=identity,
            encode=lambda cursor: encode_cursor(cursor, secret),
            limit=limit,
            page_size=page_size,
            parallelism=width,
            resume=resumed,
        )

    @classmethod
    def get_reading(
        cls: type[_S],
        entity: str,
        at: Any,
        consistent_read: bool = False,
        attributes_to_get: Sequence[str] | None = None,
    ) -> _S:
        """The reading of ``entity`` at time ``at``: one GetItem of its one partition.

        Raises:
            DoesNotExist: when there is no such reading (as ``Model.get``).
        """
        layout = cls._series()
        name = cls.__name__
        entity = layout.check_entity(entity, f"{name}.get_reading(entity)")
        moment = to_utc(f"{name}.get_reading(at)", at)
        check_fan_out(f"{name}.get_reading({entity!r})", 1, request_bound(cls))
        return cls.get(
            layout.partition_key(entity, moment),
            layout.sk().compose(entity, moment),
            consistent_read=consistent_read,
            attributes_to_get=cls._series_projection(attributes_to_get),
        )

    @classmethod
    def latest(
        cls: type[_S],
        entity: str,
        hours: int = 1,
        *,
        now: Any = None,
        **options: Any,
    ) -> MergedQuery[_S]:
        """The readings of ``entity`` in the last ``hours`` clock hours, up to ``now``.

        That is the current hour so far and the ``hours - 1`` whole hours before it: at
        15:20, ``hours=3`` reads 13:00 to 15:20, exactly three partitions on an hourly
        layout. ``now`` defaults to the wall clock; pass it explicitly to page with
        ``last_evaluated_key`` (every page of one listing uses the first page's ``now``).
        Other keywords are those of :meth:`query_series`.
        """
        if isinstance(hours, bool) or not isinstance(hours, int) or hours < 1:
            raise ShardKeyError(
                f"{cls.__name__}.latest(hours={hours!r}): give a whole number of hours, 1 or more"
            )
        if now is None and options.get("last_evaluated_key") is not None:
            raise ShardKeyError(
                f"{cls.__name__}.latest(last_evaluated_key=...): the window moves with the "
                "clock, so a resumed page must name the first page's time; pass its now= too"
            )
        moment = datetime.now(timezone.utc) if now is None else to_utc("latest(now)", now)
        start = moment.replace(minute=0, second=0, microsecond=0) - timedelta(hours=hours - 1)
        return cls.query_series(entity, start, moment, **options)


def herd_offset(entity: str, window: float) -> float:
    """Seconds, in ``[0, window)``, by which ``entity``'s writer delays each bucket's report.

    When every writer reports at the top of the hour, the new bucket's partitions (and
    the table) take the whole fleet's writes in one second. Delaying each writer by an
    offset derived from its entity (md5 of the id, scaled to the window) spreads the
    burst evenly over ``window`` seconds; the offset is stable, so a writer keeps its
    cadence, and readings keep their true time. See the time-series docs for numbers.
    """
    if isinstance(window, bool) or not isinstance(window, int | float) or window < 0:
        raise ValueError(f"herd_offset(window={window!r}): give seconds, 0 or more")
    digest = hashlib.md5(entity.encode("utf-8"), usedforsecurity=False).digest()
    return window * int.from_bytes(digest, "big") / 2**128
