"""Every read checks its request bound before it sends its first request.

Each read path below is run twice on in-process moto, with ``Meta.max_requests`` one
below and then exactly at the number of partitions it must read. Below, it raises
:class:`FanOutLimitError` and not one request leaves the client; at the bound, the same
read goes out, which proves the request counter sees that read's requests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from pynamodb.models import Model

from shardmodel import FanOutLimitError, ShardKeyError
from tests.models import PageViews, Photo, RandomEvent, SeriesReading

pytestmark = pytest.mark.usefixtures("tables")

UTC = timezone.utc
SENSOR = "sensor-alpha-001"
AT = datetime(2023, 10, 27, 15, 4, 5, tzinfo=UTC)


@contextmanager
def sent_requests(model: type[Model]) -> Iterator[list[str]]:
    """The DynamoDB operations the model's client hands to the server inside the block.

    Counted in botocore's ``before-send`` event, the last step before the wire (where
    in-process moto answers); the lean read path emits it too.
    """
    sent: list[str] = []
    events = model._get_connection().connection.client.meta.events

    def record(event_name: str, **_: Any) -> None:
        sent.append(event_name.rsplit(".", 1)[-1])

    events.register("before-send.dynamodb", record)
    try:
        yield sent
    finally:
        events.unregister("before-send.dynamodb", record)


def _drain(result: Any) -> None:
    """Run a read to its end: iterate what it returns (query, batch_get are lazy)."""
    if hasattr(result, "__iter__"):
        list(result)


def _get() -> None:
    with suppress(RandomEvent.DoesNotExist):
        RandomEvent.get("hot", 1)


def _refresh() -> None:
    with suppress(RandomEvent.DoesNotExist):
        RandomEvent(user_id="hot", timestamp=1).refresh()  # never loaded: shard unknown


def _counter_get() -> None:
    with suppress(PageViews.DoesNotExist):
        PageViews.get("home")


# (read, model, partitions it must read); RandomEvent has RandomShards(10), Photo's
# by_album index RandomShards(20), PageViews RandomShards(10), SeriesReading one
# partition per hour covered.
READS: dict[str, tuple[Callable[[], Any], type[Model], int]] = {
    "get": (_get, RandomEvent, 10),
    "batch_get": (lambda: RandomEvent.batch_get([("hot", 1)]), RandomEvent, 10),
    "refresh of an instance of unknown shard": (_refresh, RandomEvent, 10),
    "get of a counter item": (_counter_get, PageViews, 10),
    "query": (lambda: RandomEvent.query("hot"), RandomEvent, 10),
    "count": (lambda: RandomEvent.count("hot"), RandomEvent, 10),
    "query on a sharded index": (lambda: Photo.by_album.query("album"), Photo, 20),
    "count on a sharded index": (lambda: Photo.by_album.count("album"), Photo, 20),
    "query_series": (
        lambda: SeriesReading.query_series(SENSOR, AT, AT + timedelta(hours=48)),
        SeriesReading,
        49,
    ),
    "count_series": (
        lambda: SeriesReading.count_series(SENSOR, AT, AT + timedelta(hours=48)),
        SeriesReading,
        49,
    ),
    "latest": (lambda: SeriesReading.latest(SENSOR, hours=6, now=AT), SeriesReading, 6),
}


@pytest.mark.parametrize("name", list(READS))
def test_every_read_checks_its_bound_before_the_first_request(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read over more partitions than Meta.max_requests raises and sends nothing.

    At a bound of exactly its partitions the same read is sent (so the counter is wired
    to the client the read uses); one below, it raises FanOutLimitError naming the
    partitions and the bound, before any request.
    """
    read, model, partitions = READS[name]
    monkeypatch.setattr(model.Meta, "max_requests", partitions - 1, raising=False)
    with sent_requests(model) as sent:
        with pytest.raises(FanOutLimitError) as error:
            _drain(read())
    assert sent == []
    assert (error.value.planned, error.value.bound) == (partitions, partitions - 1)

    monkeypatch.setattr(model.Meta, "max_requests", partitions)
    with sent_requests(model) as sent:
        _drain(read())
    assert sent != []


def test_get_reading_reads_one_partition_so_any_valid_bound_admits_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """get_reading touches one partition: the least bound (1) admits it, 0 is refused unsent.

    A bound below one partition cannot be set, so the check before its request is the
    bound's validation.
    """
    SeriesReading(sensor_id=SENSOR, timestamp=AT, value=1).save()
    monkeypatch.setattr(SeriesReading.Meta, "max_requests", 1, raising=False)
    with sent_requests(SeriesReading) as sent:
        assert SeriesReading.get_reading(SENSOR, AT).value == 1
    assert sent == ["GetItem"]
    monkeypatch.setattr(SeriesReading.Meta, "max_requests", 0)
    with sent_requests(SeriesReading) as sent:
        with pytest.raises(ShardKeyError, match="max_requests=0"):
            SeriesReading.get_reading(SENSOR, AT)
    assert sent == []
