"""Scan filters on a sharded key see logical keys, as on an unsharded table (moto)."""

from __future__ import annotations

from typing import Any

import pytest

from shardmodel.errors import QueryValidationError
from tests.models import Photo, PlainEvent, RandomEvent, Tally
from tests.support import sent_requests

pytestmark = pytest.mark.usefixtures("tables")


def _store() -> None:
    """Three users' events in RandomEvent and, unsharded, in PlainEvent."""
    with RandomEvent.batch_write() as batch, PlainEvent.batch_write() as plain:
        for user, count in (("u", 3), ("u#1", 2), ("v", 4)):
            for ts in range(count):
                kind = "odd" if ts % 2 else "even"
                batch.save(RandomEvent(user_id=user, timestamp=ts, event_type=kind))
                plain.save(PlainEvent(user_id=user, timestamp=ts, event_type=kind))


def _rows(items: Any) -> list[tuple[str, int, str | None]]:
    return sorted((e.user_id, int(e.timestamp), e.event_type) for e in items)


def _filters(model: Any) -> list[Any]:
    key = model.user_id
    return [
        key == "u",
        key != "u",
        key.startswith("u"),
        key.startswith("u#"),
        key.is_in("u", "v"),
        key.between("u", "u#1"),
        key > "u",
        (key == "v") & (model.event_type == "odd"),
        (key == "u") | (model.timestamp >= 3),
        ~(key == "v"),
        key.exists(),
        key.contains("#"),
    ]


@pytest.mark.parametrize("which", range(12))
def test_a_scan_filter_on_the_sharded_key_matches_as_on_an_unsharded_table(which: int) -> None:
    """``Event.scan(Event.user_id == "u")`` returned [] (stored keys are ``u#3``) and
    ``!=`` everything; the filter is applied to the logical keys: the plain model's items."""
    _store()
    expected = _rows(PlainEvent.scan(_filters(PlainEvent)[which]))
    assert _rows(RandomEvent.scan(_filters(RandomEvent)[which])) == expected
    assert expected  # every filter above matches something: the comparison is not vacuous


def test_limits_pages_projections_and_resumes_keep_their_meaning() -> None:
    """``limit`` counts items returned, ``page_size`` items read per page, a projection
    keeps the key, and ``last_evaluated_key`` resumes after the last item returned."""
    _store()
    condition = RandomEvent.user_id == "v"
    first = RandomEvent.scan(condition, limit=2, page_size=3)
    got = [(e.user_id, e.timestamp) for e in first]
    assert len(got) == 2 and {u for u, _ in got} == {"v"}
    rest = RandomEvent.scan(condition, last_evaluated_key=first.last_evaluated_key, page_size=1)
    more = [(e.user_id, e.timestamp) for e in rest]
    assert sorted(got + more) == [("v", n) for n in range(4)]
    assert rest.last_evaluated_key is None
    slim = list(RandomEvent.scan(condition, attributes_to_get=["event_type"]))
    assert sorted((e.user_id, e.timestamp, e.event_type) for e in slim) == [
        ("v", 0, "even"),
        ("v", 1, "odd"),
        ("v", 2, "even"),
        ("v", 3, "odd"),
    ]
    narrow = list(RandomEvent.scan(condition & (RandomEvent.event_type == "odd"), limit=1))
    assert [(e.user_id, e.event_type) for e in narrow] == [("v", "odd")]


def test_a_projection_without_the_filtered_attribute_still_filters() -> None:
    """The filter reads attributes the projection drops, as DynamoDB filters before it
    projects: they are read, tested, then left out of the item."""
    _store()
    found = list(
        RandomEvent.scan(
            (RandomEvent.user_id == "u") & (RandomEvent.event_type == "odd"),
            attributes_to_get=["timestamp"],
        )
    )
    assert [(e.user_id, e.timestamp, e.event_type) for e in found] == [("u", 1, None)]


def test_parallel_segments_together_return_each_match_once() -> None:
    """Segments split the table as they do unfiltered: together, every match once."""
    _store()
    found: list[tuple[str, int]] = []
    for segment in range(3):
        scan = RandomEvent.scan(RandomEvent.user_id != "v", segment=segment, total_segments=3)
        found.extend((e.user_id, e.timestamp) for e in scan)
    assert sorted(found) == [("u", 0), ("u", 1), ("u", 2), ("u#1", 0), ("u#1", 1)]


def test_an_index_scan_filter_on_a_sharded_index_key_sees_logical_keys() -> None:
    """Photo's album is a sharded index key: a filter on it matches the album's photos,
    on the table and on the index."""
    for n in range(6):
        Photo(photo_id=f"p{n}", album="summer" if n % 2 else "winter", taken=n).save()
    table = sorted(p.photo_id for p in Photo.scan(Photo.album == "summer"))
    index = sorted(p.photo_id for p in Photo.scan(Photo.album == "summer", index_name="by-album"))
    assert table == index == ["p1", "p3", "p5"]


def test_a_counter_models_scan_filter_on_its_key_already_sees_logical_keys() -> None:
    """Counter models filter summed items on the client: their key filters agree too."""
    Tally.add("board-a", 1, hits=2)
    Tally.add("board-b", 1, hits=3)
    assert [(t.board, t.hits) for t in Tally.scan(Tally.board == "board-b")] == [("board-b", 3)]


def test_other_filters_still_run_on_the_server() -> None:
    """A filter that names no sharded key is sent as it is (PynamoDB's own scan)."""
    _store()
    scan = RandomEvent.scan(RandomEvent.event_type == "odd")
    assert type(scan).__name__ == "ResultIterator"
    assert sorted((e.user_id, e.timestamp) for e in scan) == [
        ("u", 1),
        ("u#1", 1),
        ("v", 1),
        ("v", 3),
    ]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"limit": "3"}, "'limit' failed to satisfy constraint: Member must be an integer"),
        ({"limit": 2.5}, "'limit' failed to satisfy constraint: Member must be an integer"),
        ({"limit": True}, "'limit' failed to satisfy constraint: Member must be an integer"),
        ({"limit": -1}, "'limit' failed to satisfy constraint: Member must have value"),
        ({"page_size": 0}, "'page_size' failed to satisfy constraint: Member must have value"),
        ({"page_size": "2"}, "'page_size' failed to satisfy constraint: Member must be an"),
        ({"consistent_read": "no"}, "'consistent_read' failed to satisfy constraint"),
    ],
)
@pytest.mark.parametrize("filtered", [False, True])
def test_a_scan_refuses_paging_and_flags_as_a_query_does(
    options: dict[str, Any], field: str, filtered: bool
) -> None:
    """PynamoDB's scan raised TypeError for ``limit='3'`` and IndexError for
    ``page_size=0``, and the client-side filter gave ``limit=2.5`` and ``-1`` meanings
    of its own (3 items, none); the scan refuses them as the query does, before sending,
    naming the argument."""
    _store()
    condition = RandomEvent.user_id == "u" if filtered else None
    with sent_requests(RandomEvent) as sent, pytest.raises(QueryValidationError) as raised:
        list(RandomEvent.scan(condition, **options))
    assert field in str(raised.value)
    assert sent == []
