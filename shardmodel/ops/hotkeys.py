"""Hot keys from DynamoDB Streams: writes per logical key over a sliding window.

A :class:`HotKeyTracker` reads stream records (from a Lambda event or a ``get_records``
loop), maps each physical key back to its logical key through the model, and sums the
write units every logical key took in the last ``window`` seconds, second by second and
physical key by physical key. Keys whose writes a second come near the per-partition
limit, per shard, are hot; with ``grow=True`` a ``DynamicShards`` key is grown
(``Model.grow_shards``) before its partition throttles.

A key's shards are the live count of a dynamic key, else the physical keys its writes
reached in the window (at least the count a random strategy spreads over): a
``HashShards`` key hashed on its sort key spreads as far as ``RandomShards`` does.
Besides the window's average, each key reports its busiest second and the busiest second
of its busiest physical partition (:attr:`HotKey.peak_load`): a burst shows there.

:meth:`HotKeyTracker.hot` also judges every physical key on its own (:class:`HotShard`),
against a share of the partition limit or a rate of writes on one physical key: a
``HashShards`` key hashed on a skewed attribute, one shard busy and the rest idle, is hot
although its average over the shards is low.

A ``TimeSeriesModel`` (partition key ``<shard>#<bucket>``, sort key ``<entity>#<time>``)
is tracked by entity: a hot sensor is a hot key, and :meth:`HotKeyTracker.partitions`
names the hot bucket partitions.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from attrs import evolve, frozen

from shardmodel.capacity import PARTITION_WCU
from shardmodel.core.times import Clock, SystemClock
from shardmodel.engine import sharding_of
from shardmodel.errors import ShardKeyError
from shardmodel.sizing import item_size, write_units

__all__ = ["HotKey", "HotKeyTracker", "HotPartition", "HotShard", "read_stream"]

log = logging.getLogger("shardmodel.ops.hotkeys")


@frozen
class HotShard:
    """One physical partition key of a logical key, over the tracker's window.

    Attributes:
        key: the physical partition key (``"tenant#3"``; a time series' bucket).
        logical_key: the logical key it folds to (``"tenant"``; a time series' entity).
        writes: stream records of that logical key written to it in the window.
        write_units: write units those writes took.
        window: seconds the window covers.
        limit: write units a second one partition accepts.
    """

    key: str
    logical_key: str
    writes: int
    write_units: float
    window: float
    limit: float

    @property
    def per_second(self) -> float:
        """Write units a second, the window's average."""
        return self.write_units / self.window

    @property
    def writes_per_second(self) -> float:
        """Writes a second, the window's average (whatever their size)."""
        return self.writes / self.window

    @property
    def load(self) -> float:
        """The share of one partition's limit it takes (1.0: full)."""
        return self.per_second / self.limit


@frozen
class HotKey:
    """One logical key's writes over the tracker's window.

    Attributes:
        logical_key: the key.
        writes: stream records (inserts, updates, deletes) in the window.
        write_units: write units those writes took (by item size).
        per_second: ``write_units`` divided by the window.
        shards: the shards its writes spread over: a dynamic key's live count, else the
            physical keys written in the window (1 for an unsharded key).
        limit: write units a second one partition accepts.
        peak_per_second: write units of the key's busiest second in the window.
        partition_peak: write units of the busiest second of its busiest physical key.
        hot_shards: its physical keys that reached the threshold :meth:`HotKeyTracker.hot`
            judged by, busiest first (empty from :meth:`HotKeyTracker.top`).
    """

    logical_key: str
    writes: int
    write_units: float
    per_second: float
    shards: int
    limit: float
    peak_per_second: float = 0.0
    partition_peak: float = 0.0
    hot_shards: tuple[HotShard, ...] = ()

    @property
    def peak_load(self) -> float:
        """The busiest partition's busiest second over the partition limit (1.0: full)."""
        return self.partition_peak / self.limit

    @property
    def load(self) -> float:
        """The share of one partition's limit each shard of the key uses (1.0: full)."""
        return self.per_second / (self.shards * self.limit)

    @property
    def needed_shards(self) -> int:
        """Shards the key needs to stay under ``limit`` at its rate (at least 1)."""
        return max(1, math.ceil(round(self.per_second / self.limit, 9)))


@frozen
class HotPartition:
    """One physical partition key's writes over the tracker's window.

    Attributes:
        key: the physical partition key (a time-series bucket: ``"7#2023-10-27T15"``).
        write_units: write units it took in the window.
        peak_per_second: write units of its busiest second.
        limit: write units a second one partition accepts.
    """

    key: str
    write_units: float
    peak_per_second: float
    limit: float

    @property
    def peak_load(self) -> float:
        """Its busiest second over the partition limit (1.0: full)."""
        return self.peak_per_second / self.limit


# One second of the window: units and writes per logical key, then per logical key the
# units and the writes of each physical key.
_Second = tuple[
    dict[str, float], Counter[str], dict[str, dict[str, float]], dict[str, Counter[str]]
]


def series_keys(model: Any) -> tuple[str, str, str] | None:
    """A time-series model's (partition key name, sort key name, separator), else None.

    Found by shape (a range key that composes an entity and a time), so that this module
    need not import the time-series package beside it.
    """
    hash_name = range_name = separator = None
    for attribute in model.get_attributes().values():
        if attribute.is_hash_key:
            hash_name = attribute.attr_name
        if attribute.is_range_key and hasattr(attribute, "entity") and hasattr(attribute, "time"):
            range_name, separator = attribute.attr_name, attribute.separator
    if hash_name is None or range_name is None or separator is None:
        return None
    return hash_name, range_name, separator


def _record_time(record: Mapping[str, Any]) -> float | None:
    stamp = record.get("dynamodb", {}).get("ApproximateCreationDateTime")
    if isinstance(stamp, datetime):
        return stamp.timestamp()
    if isinstance(stamp, int | float):
        return float(stamp)
    return None


class HotKeyTracker:
    """Counts writes per logical key of one model over a sliding window.

    Args:
        model: the sharded model whose table's stream is read.
        window: seconds of writes a report covers.
        partition_wcu: write units a second one partition accepts (a provisioned table's
            share: :func:`shardmodel.capacity.per_partition`).
        threshold: a key is hot when one of its physical keys (or each of its shards, on
            average) takes this share of ``partition_wcu`` or more; :meth:`hot` takes
            another share, or a rate of writes on one physical key, per call.
        grow: grow hot ``DynamicShards`` keys to the count their rate needs, with
            ``threshold`` as headroom.
        clock: the time of records that carry none, and of reports.
    """

    def __init__(
        self,
        model: Any,
        window: float = 60.0,
        partition_wcu: float = PARTITION_WCU,
        threshold: float = 0.8,
        grow: bool = False,
        clock: Clock | None = None,
    ) -> None:
        for name, value in (("window", window), ("partition_wcu", partition_wcu)):
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"HotKeyTracker({name}={value!r}): give a number above 0")
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise ValueError(f"HotKeyTracker(threshold={threshold!r}): give a number")
        if not 0 < threshold <= 1:
            raise ValueError(f"HotKeyTracker(threshold={threshold!r}): give a share in (0, 1]")
        if grow and sharding_of(model).directory is None:
            raise ValueError(
                f"HotKeyTracker(grow=True): {model.__name__} has no DynamicShards key to grow"
            )
        self.model = model
        self._series = series_keys(model)
        self.window = float(window)
        self.partition_wcu = float(partition_wcu)
        self.threshold = float(threshold)
        self.grow = grow
        self.clock: Clock = clock or SystemClock()
        # second -> (units per logical key, writes per logical key,
        #            units and writes per logical key and physical key)
        self._seconds: dict[int, _Second] = {}
        self._units: dict[str, float] = {}
        self._writes: Counter[str] = Counter()
        self._newest = -math.inf
        self._lock = threading.Lock()
        if self._series is None:
            self._key_name = sharding_of(model).key().attr_name
        else:
            self._key_name = self._series[0]
        self._table = model.Meta.table_name

    # -- reading records -------------------------------------------------------------

    def record(self, records: Iterable[Mapping[str, Any]]) -> int:
        """Count stream records (DynamoDB JSON, as Streams and Lambda deliver them).

        Returns how many were counted: writes of this model's table whose key follows
        its layout (others are logged and skipped).
        """
        counted = 0
        for record in records:
            change = record.get("dynamodb", {})
            key = change.get("Keys", {}).get(self._key_name, {}).get("S")
            if key is None:
                continue
            image = change.get("NewImage") or change.get("OldImage")
            if image:
                units = float(write_units(item_size(image)))
            else:
                units = float(max(1, math.ceil(change.get("SizeBytes", 1) / 1024)))
            logical = self._logical(key, change.get("Keys", {}))
            if logical is None:
                continue
            self._add(logical, key, units, _record_time(record))
            counted += 1
        return counted

    def _logical(self, key: str, keys: Mapping[str, Any]) -> str | None:
        """The logical key a record counts for: the model's, or a series' entity."""
        if self._series is not None:
            sort_key = keys.get(self._series[1], {}).get("S")
            if not sort_key or self._series[2] not in sort_key:
                log.warning("%s: stream sort key %r skipped", self._table, sort_key)
                return None
            return str(sort_key.split(self._series[2], 1)[0])
        try:
            return str(self.model.logical_key_of(key))
        except ShardKeyError as error:  # written by hand or another layout: skip it
            log.warning("%s: stream key %r skipped: %s", self._table, key, error)
            return None

    def _add(self, logical: str, physical: str, units: float, at: float | None) -> None:
        second = math.floor(at if at is not None else self.clock.now())
        with self._lock:
            if second <= self._newest - self.window:
                return  # a late record of a second the window has left
            if second not in self._seconds:
                self._seconds[second] = ({}, Counter(), {}, {})
            bucket_units, bucket_writes, bucket_physical, physical_writes = self._seconds[second]
            bucket_units[logical] = bucket_units.get(logical, 0.0) + units
            bucket_writes[logical] += 1
            spread = bucket_physical.setdefault(logical, {})
            spread[physical] = spread.get(physical, 0.0) + units
            physical_writes.setdefault(logical, Counter())[physical] += 1
            self._units[logical] = self._units.get(logical, 0.0) + units
            self._writes[logical] += 1
            if second > self._newest:
                self._newest = second
                self._expire(second)

    def _expire(self, newest: float) -> None:
        for second in sorted(s for s in self._seconds if s <= newest - self.window):
            units, writes, _, _ = self._seconds.pop(second)
            self._writes.subtract(writes)
            for key, spent in units.items():
                self._units[key] -= spent
                if self._writes[key] <= 0:
                    del self._units[key], self._writes[key]

    def handler(self, event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
        """A Lambda handler for a DynamoDB Streams trigger: count, report, grow.

        Returns ``{"counted": n, "hot": [...], "grown": {key: count}}``.
        """
        counted = self.record(event.get("Records", []))
        hot = self.hot()
        grown = self.grow_hot(hot) if self.grow else {}
        return {
            "counted": counted,
            "hot": [(k.logical_key, round(k.per_second, 1), k.shards) for k in hot],
            "grown": grown,
        }

    # -- reports -----------------------------------------------------------------------

    def _window(self) -> list[tuple[str, float, int]]:
        """(key, units, writes) of every key in the window, most units first."""
        with self._lock:
            self._expire(max(self._newest, math.floor(self.clock.now())))
            return sorted(
                ((k, u, self._writes[k]) for k, u in self._units.items()),
                key=lambda entry: (-entry[1], entry[0]),
            )

    def _spread(self, logical: str) -> tuple[int, float, float]:
        """(physical keys written, busiest second, busiest second of one physical key)."""
        physical: set[str] = set()
        peak = partition_peak = 0.0
        with self._lock:
            for units, _, spread, _ in self._seconds.values():
                peak = max(peak, units.get(logical, 0.0))
                mine = spread.get(logical, {})
                physical.update(mine)
                partition_peak = max(partition_peak, *mine.values(), 0.0)
        return len(physical), peak, partition_peak

    def _hot_key(self, logical: str, units: float, writes: int) -> HotKey:
        seen, peak, partition_peak = self._spread(logical)
        return HotKey(
            logical_key=logical,
            writes=writes,
            write_units=units,
            per_second=units / self.window,
            shards=self._live_shards(logical, seen),
            limit=self.partition_wcu,
            peak_per_second=peak,
            partition_peak=partition_peak,
        )

    def partitions(self, n: int = 10) -> list[HotPartition]:
        """The ``n`` busiest physical partition keys by their busiest second.

        For a time-series model these are its buckets (``"<shard>#<hour>"``): a hot bucket
        is one whose busiest second comes near the partition limit.
        """
        totals: dict[str, float] = {}
        peaks: dict[str, float] = {}
        self._window()  # expires what left the window
        with self._lock:
            for _, _, spread, _ in self._seconds.values():
                second: dict[str, float] = {}  # every logical key's writes to one partition
                for keys in spread.values():
                    for key, units in keys.items():
                        second[key] = second.get(key, 0.0) + units
                for key, units in second.items():
                    totals[key] = totals.get(key, 0.0) + units
                    peaks[key] = max(peaks.get(key, 0.0), units)
        found = [HotPartition(k, totals[k], peaks[k], self.partition_wcu) for k in totals]
        return sorted(found, key=lambda p: (-p.peak_per_second, p.key))[:n]

    def top(self, n: int = 10) -> list[HotKey]:
        """The ``n`` busiest keys, by the load on each of their shards.

        Reads the shard count of the ``4 n`` busiest dynamic keys (one GetItem each).
        """
        keys = [self._hot_key(*entry) for entry in self._window()[: n * 4]]
        return sorted(keys, key=lambda k: (-k.load, k.logical_key))[:n]

    def hot(
        self, threshold: float | None = None, writes_per_second: float | None = None
    ) -> list[HotKey]:
        """The hot keys, each with its physical keys that reached the threshold.

        Every physical key is judged on its own, by the window's average: a key is hot
        when one of its physical keys takes ``threshold`` of the partition limit or more
        (or, by share only, when each of its shards does on average).

        Args:
            threshold: a share of ``partition_wcu`` in (0, 1] (default: the tracker's,
                0.8 unless set).
            writes_per_second: instead of a share, writes a second on one physical key
                (the time-series guide's 100), whatever their size.

        Raises:
            ValueError: for a threshold out of its range, or both given; before anything
                is read.
        """
        share, rate = _threshold(threshold, writes_per_second, self.threshold)
        if rate is None:
            floor = share * self.partition_wcu * self.window
            candidates = [entry for entry in self._window() if entry[1] >= floor - 1e-9]
        else:  # a physical key's writes are at most its logical key's
            floor = rate * self.window
            candidates = [entry for entry in self._window() if entry[2] >= floor - 1e-9]
        hot = []
        for entry in candidates:
            shards = tuple(
                shard
                for shard in self._shards(entry[0])
                if (
                    shard.load >= share - 1e-12
                    if rate is None
                    else shard.writes_per_second >= rate - 1e-12
                )
            )
            key = self._hot_key(*entry)
            if shards or (rate is None and key.load >= share - 1e-12):
                hot.append(evolve(key, hot_shards=shards))
        return sorted(hot, key=lambda k: (-_busiest_load(k), k.logical_key))

    def _shards(self, logical: str) -> list[HotShard]:
        """The physical keys ``logical`` wrote in the window, the busiest first."""
        units: dict[str, float] = {}
        writes: Counter[str] = Counter()
        with self._lock:
            for _, _, spread, counts in self._seconds.values():
                for physical, spent in spread.get(logical, {}).items():
                    units[physical] = units.get(physical, 0.0) + spent
                writes.update(counts.get(logical, Counter()))
        found = [
            HotShard(key, logical, writes[key], spent, self.window, self.partition_wcu)
            for key, spent in units.items()
        ]
        return sorted(found, key=lambda s: (-s.write_units, s.key))

    def _live_shards(self, logical: str, seen: int) -> int:
        if self._series is not None:
            return max(1, seen)  # the entity's buckets written in the window
        if sharding_of(self.model).directory is None:
            return max(self._fixed_shards(), seen)
        found = self.model.shard_metadata(logical)
        if found is None:
            return 1
        directory = sharding_of(self.model).directory
        assert directory is not None
        return int(found.live_at(directory.settings.clock.now()))

    def _fixed_shards(self) -> int:
        """Shards a random strategy spreads every key over (1 when none does)."""
        layout = sharding_of(self.model).key().layout
        count = 1
        for strategy in layout.strategies:
            n = getattr(strategy, "n", None)
            if isinstance(n, int) and not getattr(strategy, "deterministic", True):
                count *= n
        return count

    # -- acting ------------------------------------------------------------------------

    def grow_hot(self, hot: Iterable[HotKey] | None = None) -> dict[str, int]:
        """Grow each hot ``DynamicShards`` key to the count its rate needs with headroom.

        Returns ``{logical key: new live count}`` for the keys grown.
        """
        directory = sharding_of(self.model).directory
        if directory is None:
            raise ValueError(f"{self.model.__name__} has no DynamicShards key to grow")
        ceiling = directory.settings.max_shards
        grown: dict[str, int] = {}
        for key in self.hot() if hot is None else hot:
            target = min(
                ceiling, math.ceil(round(key.per_second / (self.threshold * key.limit), 9))
            )
            if target <= key.shards:
                continue
            found = self.model.shard_metadata(key.logical_key)
            if found is not None and target <= found.latest:
                continue  # a growth to enough shards is announced: it takes effect soon
            self.model.grow_shards(key.logical_key, to=target)
            log.info(
                "%s: grew hot key %r from %d to %d shards (%.0f WCU/s)",
                self.model.Meta.table_name,
                key.logical_key,
                key.shards,
                target,
                key.per_second,
            )
            grown[key.logical_key] = target
        return grown


def _busiest_load(key: HotKey) -> float:
    """The load of a hot key's busiest physical key (its shards' average, if more)."""
    return max([key.load, *(shard.load for shard in key.hot_shards)])


def _threshold(
    threshold: float | None, writes_per_second: float | None, default: float
) -> tuple[float, float | None]:
    """(share, writes a second or None) that :meth:`HotKeyTracker.hot` judges by."""
    if threshold is not None and writes_per_second is not None:
        raise ValueError(
            f"hot(threshold={threshold!r}, writes_per_second={writes_per_second!r}): give "
            "one, a share of the partition limit or writes a second on one physical key"
        )
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise ValueError(f"hot(threshold={threshold!r}): give a share in (0, 1], e.g. 0.5")
        if not 0 < threshold <= 1:
            raise ValueError(
                f"hot(threshold={threshold!r}): give a share of the partition limit in (0, 1], "
                "e.g. 0.5; for a rate on one physical key, give writes_per_second"
            )
        return float(threshold), None
    if writes_per_second is not None:
        if (
            isinstance(writes_per_second, bool)
            or not isinstance(writes_per_second, int | float)
            or not 0 < writes_per_second < math.inf
        ):
            raise ValueError(
                f"hot(writes_per_second={writes_per_second!r}): give a number of writes a "
                "second above 0, e.g. 100"
            )
        return default, float(writes_per_second)
    return default, None


def read_stream(
    tracker: HotKeyTracker,
    stream_arn: str,
    client: Any,
    iterator_type: str = "TRIM_HORIZON",
    max_calls: int = 100,
) -> int:
    """Feed every shard of a DynamoDB stream to ``tracker`` with ``get_records``.

    Reads each stream shard until it returns no records (or ``max_calls`` calls in all,
    the bound on requests, checked before each one). ``client`` is a boto3
    ``dynamodbstreams`` client. Returns the records counted.
    """
    if isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 1:
        raise ValueError(f"read_stream(max_calls={max_calls!r}): give an int of at least 1")
    calls = 1
    description = client.describe_stream(StreamArn=stream_arn)["StreamDescription"]
    counted = 0
    for shard in description.get("Shards", []):
        if calls >= max_calls:
            break
        calls += 1
        iterator = client.get_shard_iterator(
            StreamArn=stream_arn, ShardId=shard["ShardId"], ShardIteratorType=iterator_type
        ).get("ShardIterator")
        while iterator and calls < max_calls:
            calls += 1
            page = client.get_records(ShardIterator=iterator, Limit=1000)
            records = page.get("Records", [])
            counted += tracker.record(records)
            if not records:
                break
            iterator = page.get("NextShardIterator")
    return counted
