"""The coroutine twins' own surface: index queries, time series, starting a read early,
arguments checked as the sync API checks them, and the cursor of an unstarted read."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from shardmodel import AsyncIndex, RandomShards, ShardedKeyAttribute, ShardedModel
from tests.models import Photo, SeriesReading

pytestmark = pytest.mark.usefixtures("tables")


class ByAlbumAsync(AsyncIndex, GlobalSecondaryIndex["AsyncPhoto"]):
    """The same sharded index as ``Photo.by_album``, with its coroutine twins."""

    class Meta:
        index_name = "by-album"
        projection = AllProjection()

    album = UnicodeAttribute(hash_key=True)
    taken = NumberAttribute(range_key=True)


class AsyncPhoto(ShardedModel):
    """``Photo``'s table and layout, its index declared with :class:`AsyncIndex`."""

    class Meta:
        table_name = "photos"
        region = "us-east-1"

    photo_id = UnicodeAttribute(hash_key=True)
    album = ShardedKeyAttribute(strategy=RandomShards(20), null=True)
    taken = NumberAttribute()
    by_album = ByAlbumAsync()


def _load(n: int) -> None:
    with Photo.batch_write() as batch:
        for i in range(n):
            batch.save(Photo(photo_id=f"p{i}", album="album", taken=1000 + i))


async def _taken(results: Any) -> list[int]:
    return [int(item.taken) async for item in results]


def test_index_queries_have_twins_that_read_what_the_sync_ones_read() -> None:
    """``Model.aquery(..., index_name=...)``, an ``AsyncIndex``'s ``aquery``, ``acount``
    and ``ascan``: the same items, limits and cursors as ``Photo.by_album``'s reads."""
    _load(60)
    AsyncPhoto._connection = Photo._connection  # the same table, on the same endpoint
    expected = [p.taken for p in Photo.by_album.query("album", scan_index_forward=False)]

    async def run() -> None:
        by_name = Photo.aquery("album", index_name="by-album", scan_index_forward=False)
        assert await _taken(by_name) == expected
        assert await _taken(AsyncPhoto.by_album.aquery("album", scan_index_forward=False)) == (
            expected
        )
        first = AsyncPhoto.by_album.aquery("album", AsyncPhoto.taken > 1010, limit=7)
        seen = await _taken(first)
        rest = AsyncPhoto.by_album.query(  # a cursor names its model: the same one, sync
            "album", AsyncPhoto.taken > 1010, last_evaluated_key=first.last_evaluated_key
        )
        assert seen + [p.taken for p in rest] == list(range(1011, 1060))
        assert await AsyncPhoto.by_album.acount("album") == 60
        assert sorted(await _taken(AsyncPhoto.by_album.ascan())) == list(range(1000, 1060))

    asyncio.run(run())


def test_time_series_reads_have_twins() -> None:
    """``aquery_series``, ``alatest``, ``acount_series`` and ``aget_reading`` read what
    the sync reads do."""
    start = 1_700_000_000
    for n in range(30):
        SeriesReading(sensor_id="s-1", timestamp=start + 600 * n, value=n).save()
    end = start + 600 * 29
    sync_series = [r.value for r in SeriesReading.query_series("s-1", start, end)]
    latest_at = start + 600 * 30

    async def run() -> None:
        series = [r.value async for r in SeriesReading.aquery_series("s-1", start, end)]
        assert series == sync_series and len(series) == 30
        latest = [r.value async for r in SeriesReading.alatest("s-1", 2, now=latest_at)]
        assert latest == [r.value for r in SeriesReading.latest("s-1", 2, now=latest_at)]
        assert await SeriesReading.acount_series("s-1", start, end) == 30
        reading = await SeriesReading.aget_reading("s-1", start + 600 * 7)
        assert reading.value == 7

    asyncio.run(run())


def test_an_awaited_read_is_planned_at_once_and_has_its_cursor_before_any_item() -> None:
    """``it = await Model.aquery(...)``: the cursor is there at once (as the sync read's
    is), and resumes the whole read; an unstarted read says how to start it."""
    _load(10)
    unstarted = Photo.aquery("album", index_name="by-album")
    with pytest.raises(AttributeError, match="has not started"):
        _ = unstarted.last_evaluated_key

    async def run() -> list[int]:
        started = await Photo.aquery("album", index_name="by-album")
        cursor = started.last_evaluated_key
        sync = Photo.by_album.query("album")
        assert cursor is not None and sync.last_evaluated_key is not None
        await started.aclose()
        return [p.taken for p in Photo.by_album.query("album", last_evaluated_key=cursor)]

    assert asyncio.run(run()) == list(range(1000, 1010))


def test_bad_arguments_raise_what_the_sync_api_raises() -> None:
    """The same error, before any request: at the await for an async read."""
    with pytest.raises(ValueError) as sync_error:
        list(Photo.query("album", index_name="by-album", limit=-1))

    async def run() -> None:
        await Photo.aquery("album", index_name="by-album", limit=-1)

    with pytest.raises(ValueError) as async_error:
        asyncio.run(run())
    assert type(async_error.value) is type(sync_error.value)
    assert str(async_error.value) == str(sync_error.value)


def test_an_async_increment_with_a_token_counts_once_even_when_its_response_is_lost() -> None:
    """``aadd(..., token=...)``: the write applied, its response lost, the caller's retry
    counts nothing more; a token reused with other amounts is refused, as in sync."""
    from tests.models import PageViews

    events = PageViews._get_connection().connection.client.meta.events
    lost = {"armed": True}

    def lose_response(**_: Any) -> None:
        if lost["armed"]:
            lost["armed"] = False
            raise ConnectionError("response lost after the write was applied")

    async def run() -> int:
        with pytest.raises(ConnectionError):
            await PageViews.aadd("a", views=1, token="req-1")
        await PageViews.aadd("a", views=1, token="req-1")  # the caller's retry
        await PageViews.aadd("a", views=1, token="req-2")
        with pytest.raises(ValueError, match="token"):
            await PageViews.aadd("a", views=5, token="req-2")
        return int((await PageViews.aget("a")).views)

    events.register("after-call.dynamodb.UpdateItem", lose_response)
    try:
        assert asyncio.run(run()) == 2
    finally:
        events.unregister("after-call.dynamodb.UpdateItem", lose_response)


def test_the_sync_api_works_without_greenlet_and_the_async_one_names_the_package() -> None:
    """In a process where ``greenlet`` cannot be imported (a dependency, but a platform
    may lack its wheel), sync reads and writes work on the worker threads; a twin raises
    an error naming the package to install."""
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    script = textwrap.dedent(
        """
        import asyncio, sys
        sys.modules["greenlet"] = None  # import greenlet now fails, as when not installed
        from shardmodel import ShardConfigurationError
        from shardmodel.testing import bind_models, create_tables, mock_dynamodb
        from tests.models import RandomEvent
        with mock_dynamodb():
            bind_models([RandomEvent], host=None)
            create_tables([RandomEvent])
            RandomEvent(user_id="u", timestamp=1, event_type="e").save()
            assert [e.timestamp for e in RandomEvent.query("u")] == [1]
            try:
                asyncio.run(RandomEvent.aget("u", 1))
            except ShardConfigurationError as error:
                print(error)
        """
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "pip install greenlet" in done.stdout


def test_an_async_read_whose_shards_run_dry_item_by_item_reads_what_the_sync_one_does() -> None:
    """One item a page: after most items a shard waits for its next page while the others'
    heads are in hand. Such an item is never taken without that wait (the merge's order),
    with or without a limit, in either direction, and the cursors agree."""
    _load(45)

    async def run() -> None:
        for forward in (True, False):
            for limit in (None, 17):
                options: dict[str, Any] = {
                    "scan_index_forward": forward,
                    "limit": limit,
                    "page_size": 1,
                }
                sync = Photo.by_album.query("album", **options)
                expected = [p.taken for p in sync]
                got = Photo.aquery("album", index_name="by-album", **options)
                assert await _taken(got) == expected
                assert got.last_evaluated_key == sync.last_evaluated_key

    asyncio.run(run())


def test_an_async_read_sends_the_requests_the_sync_read_sends() -> None:
    """The same pages, follow-ups planned at the same points: the request counts agree.

    A follow-up still in flight when the merge plans the next ones may have arrived or
    not (a loaded machine), which moves the plan by a page either way, sync or async:
    each limit gets three tries to agree, so only a lasting difference fails.
    """
    _load(300)

    async def run() -> None:
        for limit in (7, 60, 150):
            seen = []
            for _ in range(3):
                sync = Photo.by_album.query("album", scan_index_forward=False, limit=limit)
                expected = [p.taken for p in sync]
                got = Photo.aquery(
                    "album", index_name="by-album", scan_index_forward=False, limit=limit
                )
                assert await _taken(got) == expected
                seen.append(((got.requests, got.items_read), (sync.requests, sync.items_read)))
                if seen[-1][0] == seen[-1][1]:
                    break
            assert seen[-1][0] == seen[-1][1], (limit, seen)

    asyncio.run(run())
