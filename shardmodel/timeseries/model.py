"""TimeSeriesModel: readings in the hybrid bucket layout, and their range reads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar, TypeVar

from attrs import evolve
from pynamodb.constants import STRING
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from shardmodel.core.times import bucket_label, to_utc
from shardmodel.engine import sharding_of
from shardmodel.engine.cursor import Cursor, ShardPosition, conditions_digest, encode_cursor
from shardmodel.engine.items import with_keys
from shardmodel.engine.merge import MergedQuery, QueryIdentity, count_shards, dynamodb_sort_key
from shardmodel.engine.query_plan import cursor_secret, parallelism_of, resume
from shardmodel.errors import (
    CursorError,
    QueryValidationError,
    ShardConfigurationError,
    ShardKeyError,
)
from shardmodel.expressions.conditions import check_flag, check_paging, named_paths
from shardmodel.keyspace.bucket_counts import CountSchedule, during
from shardmodel.keyspace.layout_record import recorded_schedule
from shardmodel.model.sharded import ShardedModel
from shardmodel.request_bound import check_fan_out, request_bound
from shardmodel.timeseries.aio import AsyncSeriesMethods
from shardmodel.timeseries.declaration import TimeSeriesMeta, hot_count
from shardmodel.timeseries.keys import SeriesLayout, series_time_text

_S = TypeVar("_S", bound="TimeSeriesModel")
_RawItem = dict[str, dict[str, Any]]


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


def _realigned(
    cursor: Cursor,
    buckets: list[list[str]],
    key_names: list[str],
    forward: bool,
    bucket_of: Callable[[str], str],
    time_bucket_of: Callable[[str], str],
) -> Cursor:
    """Every partition of a resumed read continues after the cursor's last sort key.

    One entity's readings sort by time in every partition, and the last sort key the
    cursor returned is where the merge stood: as an unsharded query resumes after its
    ExclusiveStartKey, each partition resumes after it, so a reading written since into
    a bucket that was empty then (or moved there by a count change's cleanup) is
    returned once if it sorts after that point. Buckets wholly on the read side of it
    stay finished.
    """
    marks = [p.start[key_names[1]]["S"] for p in cursor.shards if p.start is not None]
    if not marks:
        return evolve(
            cursor,
            shards=tuple(ShardPosition(k, None, False) for bucket in buckets for k in bucket),
        )
    mark = max(marks) if forward else min(marks)
    reached = time_bucket_of(mark)
    shards = []
    for bucket in buckets:
        label = bucket_of(bucket[0])
        passed = label < reached if forward else label > reached
        for key in bucket:
            start = {key_names[0]: {"S": key}, key_names[1]: {"S": mark}}
            shards.append(
                ShardPosition(key, None, True) if passed else ShardPosition(key, start, False)
            )
    return evolve(cursor, shards=tuple(shards))


def _moves(layout: SeriesLayout, loaded: str, bucket: str, cutover: str) -> bool:
    """True when ``loaded``, a reading's stored partition, is its partition before a count
    change that gives its bucket (from ``cutover`` on) the partition ``bucket``."""
    separator = layout.pk().layout.separator
    if loaded == bucket or loaded.startswith(bucket + separator):
        return False
    return layout.bucket_of(bucket) >= cutover


class TimeSeriesModel(AsyncSeriesMethods, ShardedModel, metaclass=TimeSeriesMeta):
    """A model of readings in the hybrid bucket layout (no entity in the partition key).

    Declare the partition key as a :class:`BucketKeyAttribute`, the sort key as a
    :class:`SeriesKeyAttribute` naming the entity and time attributes, and those two as
    a ``UnicodeAttribute`` and a :class:`SeriesTimeAttribute`. Readings are saved with
    plain attributes; both keys are computed on save. The entity and time are stored in
    the sort key only, and filled back from it on load, so items written by hand in the
    same layout load unchanged.

    A hot entity (one sensor past a partition's 1,000 WCU in its hour) escalates with
    ``Meta.hot_entities = {"sensor-hot": 4}``: its readings spread over that many
    sub-partitions of each bucket (``7#2023-10-27T15``, ``7#2023-10-27T15#1``, ...), picked
    by the sort key's hash, and range reads merge them back in time order. Raise a count,
    never lower it: readers look only as far as it says.

    The range reads have coroutine twins too: ``aquery_series``, ``alatest``,
    ``acount_series``, ``aget_reading`` (:mod:`shardmodel.timeseries.aio`).
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

    def _fill_series_keys(self, whole: bool = False) -> None:
        """Set both keys from the entity and time; the time becomes a UTC ``datetime``.

        ``whole``: the keys of a put (the whole item); else of an update or delete.
        """
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
        schedule, cutover = type(self)._counts(io=False)  # a serialize() asks nothing
        bucket = layout.partition_key(entity, moment, schedule)
        partition_key = layout.escalated(bucket, sort_key, hot_count(type(self), entity))
        loaded = self._loaded_keys
        if loaded is not None and loaded[1] == sort_key and loaded[0] != partition_key:
            if cutover is None or not _moves(layout, loaded[0], bucket, cutover):
                partition_key = loaded[0]  # keep the stored item's partition, as it was written
            elif not whole:
                raise ShardKeyError(
                    f"{model}({layout.entity}={entity!r}, {layout.time}="
                    f"{series_time_text(moment)}) was loaded from {loaded[0]!r}, its "
                    f"partition before the shard count change from bucket {cutover!r}; the "
                    "change's cleanup moves it to its new partition: save() it whole (a put "
                    "to the new partition) or update or delete it after reshard --step has "
                    "run the cleanup"
                )
        setattr(self, layout.partition_name, partition_key)
        setattr(self, layout.sort_name, sort_key)

    @classmethod
    def _bucket_of(cls, partition_key: str) -> str:
        """The bucket label of a bucket's partition key ("" without TimeBuckets)."""
        layout = cls._series()
        return "" if layout.counted() is None else layout.bucket_of(partition_key)

    @classmethod
    def _time_bucket_of(cls, sort_key: str) -> str:
        """The bucket label of a stored sort key's time ("" without TimeBuckets)."""
        layout = cls._series()
        if layout.counted() is None:
            return ""
        text = sort_key.rpartition(layout.sk().separator)[2]
        try:
            moment = to_utc("last_evaluated_key", text)
        except ShardKeyError:
            raise CursorError(
                f"last_evaluated_key's sort key {sort_key[:80]!r} names no reading's time "
                "(edited?); resume with the cursor the read returned, or start over"
            ) from None
        return bucket_label(moment, layout.bucket_format())

    @classmethod
    def _counts(cls, io: bool = True) -> tuple[CountSchedule | None, str | None]:
        """The shard count of each bucket as this operation sees it, and the bucket a
        count change in progress starts from (None: none)."""
        layout = cls._series()
        if layout.schedule is None:
            return None, None
        migration, record = sharding_of(cls).view(io)
        state = None if migration is None else migration.state
        # the table's history is the truth: a declaration without counts_before (or with
        # part of it) reads the earlier buckets with the counts the table recorded; one
        # that contradicts the record was refused by the model's watch
        schedule = during(recorded_schedule(record) or layout.schedule, state)
        # one count for every bucket, the declared one: the declared layout itself
        plain = not schedule.changes and schedule.last == layout.schedule.last
        return (None if plain else schedule), None if state is None else state.cutover

    def serialize(self, null_check: bool = True) -> dict[str, dict[str, Any]]:
        """The stored item: both keys computed, entity and time only in the sort key."""
        self._fill_series_keys(whole=True)
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
        *,
        consistent_read: Any = False,
        scan_index_forward: Any = True,
        limit: Any = None,
        page_size: Any = None,
    ) -> tuple[str, list[list[str]], Condition]:
        """Check a range read and plan it: the entity, its partitions by bucket, the SK range.

        Raises before any request: bad entity or times, a limit, page size or flag
        DynamoDB would refuse (as :meth:`query` does), a filter on the keys, the entity or
        the time, or more partitions than the request bound.
        """
        layout = cls._series()
        name = cls.__name__
        check_paging(limit, page_size)
        check_flag("scan_index_forward", scan_index_forward)
        check_flag("consistent_read", consistent_read)
        keys = {layout.pk().attr_name, layout.sk().attr_name}
        for attribute in sorted(named_paths(filter_condition) & keys):
            raise QueryValidationError(
                "Filter Expression can only contain non-primary key attributes: Primary key "
                f"attribute: {attribute}; {name}.{what} computes both keys from the entity, "
                "start and end: drop the test on them from filter_condition"
            )
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
        bound = request_bound(cls, max_requests)
        where = f"{name}.{what}({entity!r})"
        schedule = cls._counts()[0]
        partitions = layout.partitions(
            entity, low, high, what=where, bound=bound, schedule=schedule
        )
        count = hot_count(cls, entity)
        if count > 1:  # a hot entity: every sub-partition of each bucket, merged in order
            partitions = [
                [sub for key in bucket for sub in layout.sub_partitions(key, count)]
                for bucket in partitions
            ]
            check_fan_out(where, sum(len(bucket) for bucket in partitions), bound)
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
            "count_series",
            entity,
            start,
            end,
            filter_condition,
            max_requests,
            consistent_read=consistent_read,
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
            "query_series",
            entity,
            start,
            end,
            filter_condition,
            max_requests,
            consistent_read=consistent_read,
            scan_index_forward=scan_index_forward,
            limit=limit,
            page_size=page_size,
        )
        forward = scan_index_forward is not False
        width = parallelism_of(cls, parallelism)
        groups = _chunks(buckets, width)
        if not forward:
            groups.reverse()
        identity = QueryIdentity(
            model=f"{cls.Meta.table_name}:{name}",
            index=None,
            logical_key=entity,
            forward=forward,
            conditions=conditions_digest(condition, filter_condition),
        )
        secret = cursor_secret(cls)
        key_names = [layout.pk().attr_name, layout.sk().attr_name]
        resumed = resume(
            cls,
            last_evaluated_key,
            identity,
            groups,
            secret,
            moving=cls._series().schedule is not None,
            keys={key: STRING for key in key_names},
            partition=key_names[0],
            range_condition=condition,
        )
        if resumed is not None:
            resumed = _realigned(
                resumed, buckets, key_names, forward, cls._bucket_of, cls._time_bucket_of
            )
        fetch = sharding_of(cls).executor.query_fetcher(
            range_key_condition=condition,
            filter_condition=filter_condition,
            attributes_to_get=cls._series_projection(attributes_to_get),
            consistent_read=consistent_read,
            return_consumed_capacity="TOTAL",
            scan_index_forward=forward,
        )
        return MergedQuery(
            fetch=fetch,
            groups=groups,
            sort_key=dynamodb_sort_key(layout.sk()),
            forward=forward,
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
        sort_key = layout.sk().compose(entity, moment)
        bucket = layout.partition_key(entity, moment, cls._counts()[0])
        return cls.get(
            layout.escalated(bucket, sort_key, hot_count(cls, entity)),
            sort_key,
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
        try:
            start = moment.replace(minute=0, second=0, microsecond=0) - timedelta(hours=hours - 1)
        except OverflowError:
            raise ShardKeyError(
                f"{cls.__name__}.latest(hours={hours!r}): the window would start before the "
                "year 1; give fewer hours"
            ) from None
        return cls.query_series(entity, start, moment, **options)
