"""Models of the resharding tests: one table key per strategy a migration supports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pynamodb.attributes import NumberAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex, KeysOnlyProjection

from shardmodel import (
    BucketKeyAttribute,
    CounterAttribute,
    HashShards,
    NormalizedAttribute,
    OrderedShards,
    RandomShards,
    SeriesKeyAttribute,
    SeriesTimeAttribute,
    ShardedKeyAttribute,
    ShardedModel,
    TimeBuckets,
    TimeSeriesModel,
)


class Reading(ShardedModel):
    """Hash-sharded on the sort key: one-shard gets, the case a count change breaks."""

    class Meta:
        table_name = "reshard-readings"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(hash_key=True, strategy=HashShards(16, on=["seq"]))
    seq = NumberAttribute(range_key=True)
    value = UnicodeAttribute(null=True)


class VersionedReading(ShardedModel):
    """Reading with optimistic locking: a write a fence redirects is sent again."""

    class Meta:
        table_name = "reshard-versioned-readings"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(hash_key=True, strategy=HashShards(16, on=["seq"]))
    seq = NumberAttribute(range_key=True)
    value = UnicodeAttribute(null=True)
    version = VersionAttribute()


class WideReading(ShardedModel):
    """32 hash shards: the model a shrink to 16 starts from."""

    class Meta:
        table_name = "reshard-wide-readings"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(hash_key=True, strategy=HashShards(32, on=["seq"]))
    seq = NumberAttribute(range_key=True)
    value = UnicodeAttribute(null=True)


class Click(ShardedModel):
    """Append-only clicks on random shards."""

    class Meta:
        table_name = "reshard-clicks"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(16))
    seq = NumberAttribute(range_key=True)
    value = UnicodeAttribute(null=True)


class WideClick(ShardedModel):
    """Append-only clicks on 32 random shards: the model a random shrink starts from."""

    class Meta:
        table_name = "reshard-wide-clicks"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(32))
    seq = NumberAttribute(range_key=True)
    value = UnicodeAttribute(null=True)


class DayReading(ShardedModel):
    """Daily time buckets composed with a hash of the sort key."""

    class Meta:
        table_name = "reshard-day-readings"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(
        hash_key=True, strategy=[TimeBuckets(on="at", granularity="day"), HashShards(16, on=["at"])]
    )
    at = UnicodeAttribute(range_key=True)
    value = UnicodeAttribute(null=True)


def tagged(name: str, table: str, shards: int) -> type[ShardedModel]:
    """A hash-sharded table key with a plain and a sharded global secondary index."""

    class ByColor(GlobalSecondaryIndex[Any]):
        """Items of one color, by sequence: a plain index (its key is not sharded)."""

        class Meta:
            index_name = "by-color"
            projection = KeysOnlyProjection()

        color = UnicodeAttribute(hash_key=True)
        seq = NumberAttribute(range_key=True)

    class ByTeam(GlobalSecondaryIndex[Any]):
        """Items of one team, by sequence: a sharded index key (4 random shards)."""

        class Meta:
            index_name = "by-team"
            projection = AllProjection()

        team = UnicodeAttribute(hash_key=True)
        seq = NumberAttribute(range_key=True)

    meta = type("Meta", (), {"table_name": table, "region": "us-east-1"})
    namespace: dict[str, Any] = {
        "__doc__": f"{name}: {shards} table shards, a plain and a sharded index.",
        "__module__": __name__,
        "__qualname__": name,
        "Meta": meta,
        "sensor": ShardedKeyAttribute(hash_key=True, strategy=HashShards(shards, on=["seq"])),
        "seq": NumberAttribute(range_key=True),
        "value": UnicodeAttribute(null=True),
        "color": UnicodeAttribute(null=True),
        "team": ShardedKeyAttribute(strategy=RandomShards(4), null=True),
        "by_color": ByColor(),
        "by_team": ByTeam(),
    }
    return type(name, (ShardedModel,), namespace)


#: 16 table shards with a plain and a sharded global secondary index.
Tagged: Any = tagged("Tagged", "reshard-tagged", 16)
#: The same with 32 table shards: the model a shrink to 16 starts from.
WideTagged: Any = tagged("WideTagged", "reshard-wide-tagged", 32)


class Views(ShardedModel):
    """Counters spread over 16 random shards, with a title kept on the home shard."""

    class Meta:
        table_name = "reshard-views"
        region = "us-east-1"

    page = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(16))
    views = CounterAttribute(default=0)
    title = UnicodeAttribute(null=True)


class Title(ShardedModel):
    """A shelf of titles in ordered ranges: the boundaries a drifted sample recomputes."""

    class Meta:
        table_name = "reshard-titles"
        region = "us-east-1"

    shelf = ShardedKeyAttribute(hash_key=True, strategy=OrderedShards(["", "g", "p"], on="title"))
    title = NormalizedAttribute(range_key=True)
    value = UnicodeAttribute(null=True)


class PaddedSeq(UnicodeAttribute):
    """An int stored as 12 digits: a number sort key that OrderedShards can range."""

    def serialize(self, value: Any) -> str:
        return f"{int(value):012d}"

    def deserialize(self, value: Any) -> int:
        return int(value)


class OrderedReading(ShardedModel):
    """Readings in two ordered ranges of their number: the under-load test's items (the
    stable ones below 500,000, the writers' above) with boundaries a drift redraws."""

    class Meta:
        table_name = "reshard-ordered-readings"
        region = "us-east-1"

    sensor = ShardedKeyAttribute(
        hash_key=True, strategy=OrderedShards(["", "000000500000"], on="seq")
    )
    seq = PaddedSeq(range_key=True)
    value = UnicodeAttribute(null=True)


class SensorSeries(TimeSeriesModel):
    """The time-series guide's production layout: PK "<sha256(sensor) % 16>#<hour>",
    SK "<sensor>#<UTC time>Z"."""

    class Meta:
        table_name = "reshard-sensor-series"
        region = "us-east-1"

    pk = BucketKeyAttribute(
        strategy=[
            HashShards(16, on="sensor_id", algorithm="sha256"),
            TimeBuckets("timestamp", "hour"),
        ],
        attr_name="PK",
    )
    sk = SeriesKeyAttribute(entity="sensor_id", time="timestamp", attr_name="SK")
    sensor_id = UnicodeAttribute()
    timestamp = SeriesTimeAttribute()
    value = NumberAttribute(null=True)


def series_redeployed(
    count: int, counts_before: dict[str, int] | None = None, table: str | None = None
) -> Any:
    """SensorSeries as other code declares it: ``count`` shards (and ``counts_before``),
    on the same table (or ``table``); a class of its own follows (or ignores) the change
    by itself."""
    meta = type("Meta", (), {k: v for k, v in vars(SensorSeries.Meta).items() if k[0] != "_"})
    if table is not None:
        meta.table_name = table  # type: ignore[attr-defined]
    namespace = {
        "Meta": meta,
        "__module__": SensorSeries.__module__,
        "pk": BucketKeyAttribute(
            strategy=[
                HashShards(count, on="sensor_id", algorithm="sha256"),
                TimeBuckets("timestamp", "hour"),
            ],
            counts_before=counts_before,
            attr_name="PK",
        ),
        "sk": SeriesKeyAttribute(entity="sensor_id", time="timestamp", attr_name="SK"),
        "sensor_id": UnicodeAttribute(),
        "timestamp": SeriesTimeAttribute(),
        "value": NumberAttribute(null=True),
    }
    return type(f"SensorSeries{count}", (TimeSeriesModel,), namespace)


def shard_moves(sensor: str) -> bool:
    """True when SensorSeries puts ``sensor`` on another shard at 32 shards than at 16."""
    old = HashShards(16, on="sensor_id", algorithm="sha256").shard_of([sensor])
    return old != HashShards(32, on="sensor_id", algorithm="sha256").shard_of([sensor])


MIGRATION_MODELS = (
    Reading,
    VersionedReading,
    SensorSeries,
    WideReading,
    Click,
    WideClick,
    DayReading,
    Tagged,
    WideTagged,
    Views,
    Title,
    OrderedReading,
)


def redeployed(model: Any, count: int | Sequence[str] | HashShards) -> Any:
    """``model`` as the code deployed after the change declares it: ``count`` shards,
    (an OrderedShards key) the boundaries ``count``, or the strategy ``count`` swaps in."""
    from attrs import evolve

    from shardmodel.engine import sharding_of

    attr = sharding_of(model).key()
    name = next(n for n, a in model.get_attributes().items() if a is attr)
    layout = attr.layout
    strategies = [
        count
        if isinstance(count, HashShards) and isinstance(s, HashShards | RandomShards)
        else evolve(s, n=count)
        if isinstance(s, HashShards | RandomShards)
        else evolve(s, boundaries=count)
        if isinstance(s, OrderedShards)
        else s
        for s in layout.strategies
    ]
    strategy: Any = strategies[0] if len(strategies) == 1 else strategies
    meta = type("Meta", (), {k: v for k, v in vars(model.Meta).items() if not k.startswith("__")})
    namespace = {
        "Meta": meta,
        "__module__": model.__module__,
        name: ShardedKeyAttribute(
            hash_key=True,
            strategy=strategy,
            separator=layout.separator,
            first_shard=layout.first_shard,
            placement=layout.placement,
            attr_name=attr.attr_name,
        ),
    }
    suffix: Any = (
        count
        if isinstance(count, int)
        else f"Hashed{count.n}"
        if isinstance(count, HashShards)
        else len(count)
    )
    return type(f"{model.__name__}At{suffix}", (model,), namespace)


#: Reading as the code deployed after a change to 32 shards declares it.
ReadingAt32 = redeployed(Reading, 32)
#: Title's ranges redrawn for titles that drifted to the end of the alphabet, and Title
#: as the code deployed after that change declares it.
DRIFTED = ("", "r", "t", "v", "x")
TitleDrifted = redeployed(Title, DRIFTED)
#: Click's RandomShards(16) swapped for 8 shards hashed on the sort key, and Click as the
#: code deployed after that swap declares it.
CLICK_HASH = HashShards(8, on="seq")
ClickHashed = redeployed(Click, CLICK_HASH)


def behind(model: Any, clock: Any) -> Any:
    """Make ``model`` a process that has not seen the change yet: it reads the state now
    and keeps that view (every model follows its table by itself; only a view cached
    longer than the settle time lags like this). Returns its watch (``refresh()``
    catches up)."""
    from shardmodel.migration import follow

    watch = follow(model, cache_seconds=10**9, clock=clock)
    watch.refresh()
    return watch


def declared_as(model: Any) -> Any:
    """What ``model`` declares now, in the form :func:`redeployed` takes."""
    from shardmodel.engine import sharding_of

    strategy = sharding_of(model).key().layout.strategies[0]
    if isinstance(strategy, OrderedShards):
        return list(strategy.boundaries)
    if isinstance(strategy, RandomShards):
        return strategy.n
    return strategy


def stranger(model: Any, cache_seconds: float) -> Any:
    """``model`` as other code on the same table declares it, never calling follow(): its
    own watch (``cache_seconds``), seeing only what the table says, as another process
    would (callers patch ``changes_made_here`` while it runs)."""
    from shardmodel.engine import sharding_of
    from shardmodel.migration import TableWatch

    other = redeployed(model, declared_as(model))
    watch = sharding_of(other).source()
    assert isinstance(watch, TableWatch)  # nobody told it to follow anything
    watch.cache_seconds = cache_seconds
    return other
