"""Models shared by the test suites: one per strategy, plus the guides' hand-made layouts."""

from __future__ import annotations

from collections import OrderedDict
from decimal import Decimal
from typing import Any

from pynamodb.attributes import (
    NumberAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
    VersionAttribute,
)
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from shardmodel import (
    BucketKeyAttribute,
    CounterAttribute,
    DynamicShards,
    HashShards,
    NormalizedAttribute,
    OrderedShards,
    RandomShards,
    SeriesKeyAttribute,
    SeriesTimeAttribute,
    ShardChange,
    ShardedKeyAttribute,
    ShardedModel,
    TimeBuckets,
    TimeSeriesModel,
    TokenWindow,
)


class FakeClock:
    """A clock tests move by hand."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


COUNTER_CLOCK = FakeClock()


class PlainNumberAttribute(NumberAttribute):
    """PynamoDB's NumberAttribute (read through json: int or float) writing Decimals exactly.

    PynamoDB's own cannot write a Decimal (json). ints and floats are written as it
    writes them, Decimals as their own text (``1.5E+40`` stays in that form): a plain
    model's numbers as its users see them, stored to the last of 38 digits.
    """

    def serialize(self, value: Any) -> Any:
        if isinstance(value, Decimal):
            return str(value)
        return super().serialize(value)


class ExactNumberAttribute(PlainNumberAttribute):
    """A number written and read exactly: read back as a Decimal, not json's float."""

    def deserialize(self, value: Any) -> Decimal:
        return Decimal(value)


class RandomEvent(ShardedModel):
    """Append-only events on 10 random shards."""

    class Meta:
        table_name = "random-events"
        region = "us-east-1"

    user_id = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(10))
    timestamp = NumberAttribute(range_key=True)
    event_type = UnicodeAttribute(null=True)


class HashedEvent(ShardedModel):
    """Events hashed on the sort key: overwrite semantics and one-shard gets."""

    class Meta:
        table_name = "hashed-events"
        region = "us-east-1"

    user_id = ShardedKeyAttribute(hash_key=True, strategy=HashShards(8, on=["timestamp"]))
    timestamp = NumberAttribute(range_key=True)
    event_type = UnicodeAttribute(null=True)


class DailyEvent(ShardedModel):
    """Events in daily UTC buckets, each bucket spread over 5 random shards."""

    class Meta:
        table_name = "daily-events"
        region = "us-east-1"

    tenant_id = ShardedKeyAttribute(
        hash_key=True, strategy=[TimeBuckets("created", "day"), RandomShards(5)]
    )
    created = UTCDateTimeAttribute(range_key=True)
    event_type = UnicodeAttribute(null=True)


class VersionedDoc(ShardedModel):
    """A hash-sharded document with optimistic locking."""

    class Meta:
        table_name = "versioned-docs"
        region = "us-east-1"

    doc_id = ShardedKeyAttribute(hash_key=True, strategy=HashShards(4, on=["doc_id"]))
    body = UnicodeAttribute(null=True)
    version = VersionAttribute()


class FileLog(ShardedModel):
    """The guides' calculated-suffix layout: path_<md5(path + timestamp) % 10 + 1>."""

    class Meta:
        table_name = "file-log"
        region = "us-east-1"

    path = ShardedKeyAttribute(
        hash_key=True,
        strategy=HashShards(10, on=["path", "timestamp"]),
        separator="_",
        first_shard=1,
    )
    timestamp = NumberAttribute(range_key=True)
    size = NumberAttribute(null=True)


class SensorReading(ShardedModel):
    """A shard-leading key on ShardedKeyAttribute: the hour is the logical key, the sort key hashed.

    Kept to pin prefix placement; the time-series guides' layout (hash of the sensor, not
    of the sort key) is SeriesReading.
    """

    class Meta:
        table_name = "sensor-readings"
        region = "us-east-1"

    hour = ShardedKeyAttribute(
        hash_key=True, strategy=HashShards(10, on=["sk"]), placement="prefix"
    )
    sk = UnicodeAttribute(range_key=True)
    value = NumberAttribute(null=True)


class ByAlbum(GlobalSecondaryIndex["Photo"]):
    """Photos of one album, newest first: the album key is spread over 20 shards."""

    class Meta:
        index_name = "by-album"
        projection = AllProjection()

    album = UnicodeAttribute(hash_key=True)
    taken = NumberAttribute(range_key=True)


class Photo(ShardedModel):
    """A table keyed by photo, with a sharded global secondary index on a hot album."""

    class Meta:
        table_name = "photos"
        region = "us-east-1"

    photo_id = UnicodeAttribute(hash_key=True)
    album = ShardedKeyAttribute(strategy=RandomShards(20), null=True)
    taken = NumberAttribute()
    by_album = ByAlbum()


class PageViews(ShardedModel):
    """Page view and like counters spread over 10 shards, with a title kept once."""

    class Meta:
        table_name = "page-views"
        region = "us-east-1"
        counter_tokens = TokenWindow(seconds=600, clock=COUNTER_CLOCK)

    page = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(10))
    views = CounterAttribute(default=0)
    likes = CounterAttribute(default=0)
    title = UnicodeAttribute(null=True)


class Score(ShardedModel):
    """A leaderboard: one score counter per (game, player), 4 shards each."""

    class Meta:
        table_name = "scores"
        region = "us-east-1"

    game = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(4))
    player = UnicodeAttribute(range_key=True)
    points = CounterAttribute(default=0)


class Tally(ShardedModel):
    """Counters with a numeric sort key and a non-counter attribute, on 5 shards."""

    class Meta:
        table_name = "tallies"
        region = "us-east-1"

    board = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(5))
    slot = NumberAttribute(range_key=True)
    hits = CounterAttribute(null=True)
    amount = CounterAttribute(null=True)
    kind = UnicodeAttribute(null=True)


class PlainTally(Model):
    """An unsharded reference model holding Tally's logical totals."""

    class Meta:
        table_name = "plain-tallies"
        region = "us-east-1"

    board = UnicodeAttribute(hash_key=True)
    slot = NumberAttribute(range_key=True)
    hits = PlainNumberAttribute(null=True)
    amount = PlainNumberAttribute(null=True)
    kind = UnicodeAttribute(null=True)


#: Every shard count change of the dynamic test models, for assertions (tests clear it).
DYNAMIC_CHANGES: list[ShardChange] = []


class DynamicEvent(ShardedModel):
    """RandomEvent's schema on a dynamic key that grows at once (no cooldown, no jitter).

    No reader cache: readers read the count on every read, so a growth takes effect at
    once instead of being announced ahead (tests grow and write on the system clock).
    """

    class Meta:
        table_name = "dynamic-events"
        region = "us-east-1"

    user_id = ShardedKeyAttribute(
        hash_key=True,
        strategy=DynamicShards(
            cooldown=0,
            jitter=0,
            writer_cache_seconds=0,
            reader_cache_seconds=0,
            on_change=DYNAMIC_CHANGES.append,
        ),
    )
    timestamp = NumberAttribute(range_key=True)
    event_type = UnicodeAttribute(null=True)


class DynamicViews(ShardedModel):
    """Counters on a dynamic key that grows at once (see DynamicEvent)."""

    class Meta:
        table_name = "dynamic-views"
        region = "us-east-1"

    page = ShardedKeyAttribute(
        hash_key=True,
        strategy=DynamicShards(
            cooldown=0, jitter=0, writer_cache_seconds=0, reader_cache_seconds=0
        ),
    )
    views = CounterAttribute(default=0)


class PlainEvent(Model):
    """An unsharded reference model with RandomEvent's schema."""

    class Meta:
        table_name = "plain-events"
        region = "us-east-1"

    user_id = UnicodeAttribute(hash_key=True)
    timestamp = NumberAttribute(range_key=True)
    event_type = UnicodeAttribute(null=True)


class IsoEvent(ShardedModel):
    """Events keyed by an ISO 8601 string time, in daily UTC buckets of 3 random shards."""

    class Meta:
        table_name = "iso-events"
        region = "us-east-1"

    user_id = ShardedKeyAttribute(
        hash_key=True, strategy=[TimeBuckets("at", "day"), RandomShards(3)]
    )
    at = UnicodeAttribute(range_key=True)
    event_type = UnicodeAttribute(null=True)


class PlainIsoEvent(Model):
    """An unsharded reference model with IsoEvent's schema."""

    class Meta:
        table_name = "plain-iso-events"
        region = "us-east-1"

    user_id = UnicodeAttribute(hash_key=True)
    at = UnicodeAttribute(range_key=True)
    event_type = UnicodeAttribute(null=True)


class SeriesReading(TimeSeriesModel):
    """The time-series guides' hybrid layout: PK "7#2023-10-27T15", SK "<sensor>#<UTC time>"."""

    class Meta:
        table_name = "series-readings"
        region = "us-east-1"

    pk = BucketKeyAttribute(
        strategy=[HashShards(10, on="sensor_id"), TimeBuckets("timestamp", "hour")],
        attr_name="PK",
    )
    sk = SeriesKeyAttribute(entity="sensor_id", time="timestamp", attr_name="SK")
    sensor_id = UnicodeAttribute()
    timestamp = SeriesTimeAttribute()
    value = NumberAttribute(null=True)


class PlainReading(Model):
    """An unsharded reference model for SeriesReading: one partition per sensor."""

    class Meta:
        table_name = "plain-readings"
        region = "us-east-1"

    sensor_id = UnicodeAttribute(hash_key=True)
    timestamp = UTCDateTimeAttribute(range_key=True)
    value = NumberAttribute(null=True)


class OrderedAlbum(ShardedModel):
    """Albums listed alphabetically over ordered shards; the sort key is normalized."""

    class Meta:
        table_name = "ordered-albums"
        region = "us-east-1"

    listing = ShardedKeyAttribute(
        hash_key=True, strategy=OrderedShards(["", "g", "n", "t"], on="title_key")
    )
    title_key = NormalizedAttribute(range_key=True)
    title = UnicodeAttribute(null=True)


class ByTitle(GlobalSecondaryIndex["IndexedAlbum"]):
    """Every album by normalized title: the listing key is spread over ordered shards."""

    class Meta:
        index_name = "by-title"
        projection = AllProjection()

    listing = UnicodeAttribute(hash_key=True)
    title_key = UnicodeAttribute(range_key=True)


class IndexedAlbum(ShardedModel):
    """Albums keyed by id, listed by title through an ordered, overflowing index."""

    class Meta:
        table_name = "indexed-albums"
        region = "us-east-1"

    album_id = UnicodeAttribute(hash_key=True)
    listing = ShardedKeyAttribute(
        strategy=OrderedShards(["", "m"], on="title_key", overflow={"greatest hits": 3}),
        null=True,
    )
    title_key = NormalizedAttribute()
    by_title = ByTitle()


class PlainByTitle(GlobalSecondaryIndex["PlainAlbum"]):
    """The unsharded reference index: one partition per listing."""

    class Meta:
        index_name = "by-title"
        projection = AllProjection()

    listing = UnicodeAttribute(hash_key=True)
    title_key = UnicodeAttribute(range_key=True)


class PlainAlbum(Model):
    """The unsharded reference of both album models; ``title_key`` holds normalized text."""

    class Meta:
        table_name = "plain-albums"
        region = "us-east-1"

    album_id = UnicodeAttribute(hash_key=True)
    listing = UnicodeAttribute()
    title_key = UnicodeAttribute()
    by_title = PlainByTitle()


class TenantEvent(ShardedModel):
    """A tenant's events hashed on their region: one busy region makes one busy shard.

    Not in ALL_MODELS: the hot-key tests that need its table create it.
    """

    class Meta:
        table_name = "tenant-events"
        region = "us-east-1"

    tenant = ShardedKeyAttribute(hash_key=True, strategy=HashShards(8, on=["region"]))
    timestamp = NumberAttribute(range_key=True)
    region = UnicodeAttribute()


ALL_MODELS: tuple[type[Model], ...] = (
    RandomEvent,
    HashedEvent,
    DailyEvent,
    VersionedDoc,
    FileLog,
    SensorReading,
    Photo,
    PageViews,
    Score,
    DynamicEvent,
    DynamicViews,
    PlainEvent,
    IsoEvent,
    PlainIsoEvent,
    SeriesReading,
    PlainReading,
    OrderedAlbum,
    IndexedAlbum,
    PlainAlbum,
    Tally,
    PlainTally,
)


# -- models built per drawn shard count -------------------------------------------------
#
# Several classes share a fixed model's table: their items sit under distinct logical
# keys. A class is built per (shape, shard count, cursor secret) and pointed at its
# template's endpoint each time it is handed out (the suites bind the templates). The
# last BUILT_KEPT classes are kept for reuse: each holds a botocore client (~10 MB).

_ENDPOINT = ("host", "region", "aws_access_key_id", "aws_secret_access_key")
BUILT_KEPT = 24
_BUILT: OrderedDict[tuple[Any, ...], type[Model]] = OrderedDict()


def _built(key: tuple[Any, ...], template: type[Model], build: Any) -> Any:
    from shardmodel.testing import bind_models

    model = _BUILT.get(key)
    if model is None:
        model = _BUILT[key] = build()
        while len(_BUILT) > BUILT_KEPT:
            _BUILT.popitem(last=False)
    _BUILT.move_to_end(key)
    meta = template.Meta
    fields = {name: getattr(meta, name) for name in _ENDPOINT[1:] if hasattr(meta, name)}
    bind_models([model], host=getattr(meta, "host", None), **fields)
    return model


def _meta_like(template: type[Model], **extra: Any) -> type:
    fields = {
        name: getattr(template.Meta, name) for name in _ENDPOINT if hasattr(template.Meta, name)
    }
    return type("Meta", (), {"table_name": template.Meta.table_name, **fields, **extra})


CursorSecret = str | bytes | None


def event_model(kind: str, shards: int, secret: CursorSecret = None) -> type[ShardedModel]:
    """Events on ``shards`` shards with an exact number sort key (Decimals in and out).

    ``kind`` "random" (RandomShards, on RandomEvent's table) or "hashed" (HashShards on
    the sort key, on HashedEvent's table). Classes differing only in ``secret`` share a
    name, so a cursor of one is a cursor of the same query for the other.
    """
    template = {"random": RandomEvent, "hashed": HashedEvent}[kind]

    def build() -> type[ShardedModel]:
        strategy = (
            RandomShards(shards) if kind == "random" else HashShards(shards, on=["timestamp"])
        )
        meta = (
            _meta_like(template) if secret is None else _meta_like(template, cursor_secret=secret)
        )
        namespace = {
            "Meta": meta,
            "user_id": ShardedKeyAttribute(hash_key=True, strategy=strategy),
            "timestamp": ExactNumberAttribute(range_key=True),
            "event_type": UnicodeAttribute(null=True),
        }
        return type(f"{kind.title()}{shards}", (ShardedModel,), namespace)

    return _built(("event", kind, shards, type(secret), secret), template, build)  # type: ignore[no-any-return]


def plain_event_model() -> type[Model]:
    """The unsharded reference of :func:`event_model`, on PlainEvent's table."""

    def build() -> type[Model]:
        namespace = {
            "Meta": _meta_like(PlainEvent),
            "user_id": UnicodeAttribute(hash_key=True),
            "timestamp": ExactNumberAttribute(range_key=True),
            "event_type": UnicodeAttribute(null=True),
        }
        return type("PlainExactEvent", (Model,), namespace)

    return _built(("plain-event",), PlainEvent, build)  # type: ignore[no-any-return]


def tally_model(shards: int) -> type[ShardedModel]:
    """Tally's schema with its counters spread over ``shards`` shards, on Tally's table."""

    def build() -> type[ShardedModel]:
        namespace = {
            "Meta": _meta_like(Tally),
            "board": ShardedKeyAttribute(hash_key=True, strategy=RandomShards(shards)),
            "slot": NumberAttribute(range_key=True),
            "hits": CounterAttribute(null=True),
            "amount": CounterAttribute(null=True),
            "kind": UnicodeAttribute(null=True),
        }
        return type(f"Tally{shards}", (ShardedModel,), namespace)

    return _built(("tally", shards), Tally, build)  # type: ignore[no-any-return]


def series_model(
    shards: int, secret: CursorSecret = None, counts_before: dict[str, int] | None = None
) -> type[TimeSeriesModel]:
    """SeriesReading's layout with ``shards`` hash shards per hour (``counts_before``: the
    counts of earlier buckets), on its table."""

    def build() -> type[TimeSeriesModel]:
        strategy = [HashShards(shards, on="sensor_id"), TimeBuckets("timestamp", "hour")]
        extra = {} if secret is None else {"cursor_secret": secret}
        namespace = {
            "Meta": _meta_like(SeriesReading, **extra),
            "pk": BucketKeyAttribute(
                strategy=strategy, counts_before=counts_before, attr_name="PK"
            ),
            "sk": SeriesKeyAttribute(entity="sensor_id", time="timestamp", attr_name="SK"),
            "sensor_id": UnicodeAttribute(),
            "timestamp": SeriesTimeAttribute(),
            "value": NumberAttribute(null=True),
        }
        return type(f"SeriesReading{shards}", (TimeSeriesModel,), namespace)

    history = tuple(sorted((counts_before or {}).items()))
    key = ("series", shards, type(secret), secret, history)
    return _built(key, SeriesReading, build)  # type: ignore[no-any-return]


def iso_model(shards: int) -> type[ShardedModel]:
    """IsoEvent's layout with ``shards`` random shards per day bucket, on its table."""

    def build() -> type[ShardedModel]:
        namespace = {
            "Meta": _meta_like(IsoEvent),
            "user_id": ShardedKeyAttribute(
                hash_key=True, strategy=[TimeBuckets("at", "day"), RandomShards(shards)]
            ),
            "at": UnicodeAttribute(range_key=True),
            "event_type": UnicodeAttribute(null=True),
        }
        return type(f"IsoEvent{shards}", (ShardedModel,), namespace)

    return _built(("iso", shards), IsoEvent, build)  # type: ignore[no-any-return]
