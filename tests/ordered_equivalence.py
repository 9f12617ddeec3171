"""OrderedShards against an unsharded model whose sort key is the normalized value.

Shared by the moto and dynalite suites. Each example builds its own model classes with
random boundaries (and overflow values) on the tables of ``OrderedAlbum`` and
``IndexedAlbum``, writes the same albums there and to ``PlainAlbum``, and compares
what a query returns: the same items in the same order, under random range
conditions, directions, limits, page sizes and a stop-and-resume.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from hypothesis import event
from hypothesis import strategies as st
from pynamodb.attributes import UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from shardmodel import NormalizedAttribute, OrderedShards, ShardedKeyAttribute, ShardedModel
from shardmodel.keyspace.normalization import default_normalize, normalized
from tests.models import IndexedAlbum, OrderedAlbum, PlainAlbum
from tests.strategies import logical_keys

_keys = itertools.count()

#: Mixed case, accents (composed and combining), ligatures, CJK, emoji, compatibility
#: characters whose NFKD form is upper case again (㎁ -> "nA").
ALPHABET = [*"aAbBgGmMnNtTzZ -", "é", "É", "ñ", "ß", "ﬁ", "İ", "㎁", "\u0301"]
ALPHABET += ["中", "文", "日", "😀", "🎵", "Å", "\U0010fffd"]

titles = st.text(st.sampled_from(ALPHABET), min_size=1, max_size=6)

#: Range conditions on the sort key, by name.
RANGES = ["none", "gt", "ge", "lt", "le", "between", "eq", "prefix"]

scenarios = st.fixed_dictionaries(
    {
        "layout": st.sampled_from(["table", "index"]),
        "pool": st.lists(titles, min_size=1, max_size=6),
        "picks": st.lists(st.integers(0, 5), max_size=50),
        "cuts": st.lists(st.tuples(titles, st.integers(1, 4)), max_size=8),
        "overflow": st.integers(0, 3),
        "range": st.sampled_from(RANGES),
        "bounds": st.tuples(titles | st.integers(0, 5), titles | st.integers(0, 5)),
        "forward": st.booleans(),
        "limit": st.none() | st.integers(1, 60),
        "page_size": st.none() | st.integers(1, 20),
        "resume_after": st.none() | st.integers(0, 50),
        "listing": logical_keys,
        "secret": st.sampled_from([None, "s3cret", b"\x00\xffbinary"]),
    }
)


def key_of(title: str) -> str:
    """The stored sort key of a title: the normalized form."""
    return normalized(default_normalize, title)


def _album_titles(scenario: dict[str, Any]) -> list[str]:
    pool = scenario["pool"]
    return [pool[i % len(pool)] for i in scenario["picks"]]


def _strategy(scenario: dict[str, Any], stored: list[str]) -> OrderedShards:
    """Random boundaries: normalized cuts of random titles and of the albums' own keys."""
    cuts = {key_of(title)[:length] for title, length in scenario["cuts"]}
    cuts |= {key[:2] for key in stored[:: max(1, len(stored) // 3)]}
    boundaries = ["", *sorted(c for c in cuts if c and key_of(c) == c)]
    overflow: dict[str, int] = {}
    if scenario["layout"] == "index" and scenario["overflow"] and stored:
        common = [key for key, _ in Counter(stored).most_common(2)]
        overflow = {key: scenario["overflow"] + 1 for key in common[: scenario["overflow"]]}
    return OrderedShards(boundaries, on="title_key", overflow=overflow)


def _meta(template: type[Any], secret: str | bytes | None = None) -> type[Any]:
    """A Meta on the template's table and endpoint (the suites bind the templates)."""
    fields = {
        name: getattr(template.Meta, name)
        for name in ("table_name", "region", "host", "aws_access_key_id", "aws_secret_access_key")
        if hasattr(template.Meta, name)
    }
    if secret is not None:
        fields["cursor_secret"] = secret
    return type("Meta", (), fields)


def sharded_model(
    layout: str, strategy: OrderedShards, secret: str | bytes | None = None
) -> type[Any]:
    """A model class on OrderedAlbum's (table) or IndexedAlbum's (index) table."""
    number = next(_keys)
    if layout == "table":
        namespace = {
            "Meta": _meta(OrderedAlbum, secret),
            "listing": ShardedKeyAttribute(hash_key=True, strategy=strategy),
            "title_key": NormalizedAttribute(range_key=True),
            "title": UnicodeAttribute(null=True),
        }
        return type(f"OrderedAlbum{number}", (ShardedModel,), namespace)
    index_meta = type("Meta", (), {"index_name": "by-title", "projection": AllProjection()})
    index = type(
        f"ByTitle{number}",
        (GlobalSecondaryIndex,),
        {
            "Meta": index_meta,
            "listing": UnicodeAttribute(hash_key=True),
            "title_key": UnicodeAttribute(range_key=True),
        },
    )
    namespace = {
        "Meta": _meta(IndexedAlbum, secret),
        "album_id": UnicodeAttribute(hash_key=True),
        "listing": ShardedKeyAttribute(strategy=strategy, null=True),
        "title_key": NormalizedAttribute(),
        "by_title": index(),
    }
    return type(f"IndexedAlbum{number}", (ShardedModel,), namespace)


def _bound(scenario: dict[str, Any], which: int, stored: list[str]) -> str:
    value = scenario["bounds"][which]
    if isinstance(value, int):  # an album's own key: exact hits and shared prefixes
        return stored[value % len(stored)] if stored else "m"
    return key_of(value)


def _condition(attribute: Any, scenario: dict[str, Any], stored: list[str]) -> Any:
    """The scenario's condition on ``attribute``, with normalized values for both models."""
    low, high = sorted([_bound(scenario, 0, stored), _bound(scenario, 1, stored)])
    return {
        "none": None,
        "gt": attribute > low,
        "ge": attribute >= low,
        "lt": attribute < high,
        "le": attribute <= high,
        "between": attribute.between(low, high),
        "eq": attribute == low,
        "prefix": attribute.startswith(low[:2]),
    }[scenario["range"]]


def _run(
    query: Any, key: str, condition: Any, scenario: dict[str, Any], resumable: bool
) -> list[tuple[str, str]]:
    """(sort key, album id) as a caller sees them, with an optional stop and resume."""
    kwargs = {
        "range_key_condition": condition,
        "scan_index_forward": scenario["forward"],
        "limit": scenario["limit"],
        "page_size": scenario["page_size"],
    }

    def rows(items: Any) -> list[tuple[str, str]]:
        return [(item.title_key, getattr(item, "album_id", item.title_key)) for item in items]

    stop = scenario["resume_after"]
    if stop is None or not resumable:
        return rows(query(key, **kwargs))
    first = query(key, **kwargs)
    seen = rows(itertools.islice(first, stop))
    cursor = first.last_evaluated_key
    if cursor is None:
        return seen
    if scenario["limit"] is not None:
        kwargs["limit"] = scenario["limit"] - len(seen)
        if kwargs["limit"] <= 0:
            return seen
    return seen + rows(query(key, last_evaluated_key=cursor, **kwargs))


def _same_listing(
    got: list[tuple[str, str]], expected: list[tuple[str, str]], keys: dict[str, str]
) -> None:
    """Same sort keys in the same order; items of one sort key in any order among them.

    A DynamoDB index orders items of equal sort key arbitrarily, so a limit may cut a
    run of equal keys at different items; nothing may repeat, every item must be one
    stored with its key (``keys``: album id to sort key), and a full read returns
    exactly the same items.
    """
    assert [k for k, _ in got] == [k for k, _ in expected]
    assert len({i for _, i in got}) == len(got), "an item came back twice"
    assert all(keys.get(i) == k for k, i in got), "an item came back with another key"


def check_ordered_equivalence(scenario: dict[str, Any]) -> None:
    """An ordered-sharded listing equals the unsharded one with normalized sort keys.

    The listing key is any text; the model's cursor secret is none, text or bytes.
    """
    layout = scenario["layout"]
    listing = f"albums-{next(_keys)}:{scenario.get('listing', '')}"
    names = _album_titles(scenario)
    # table sort keys are unique: a title plus the album's number; index ones repeat
    shown = [f"{t}#{n:03d}" for n, t in enumerate(names)] if layout == "table" else names
    stored = [key_of(title) for title in shown]
    strategy = _strategy(scenario, stored)
    event(f"ordered: {layout}, {strategy.shard_count} shards, {len(strategy.overflow)} overflow")
    model = sharded_model(layout, strategy, scenario.get("secret"))
    with PlainAlbum.batch_write() as plain, model.batch_write() as sharded:
        for number, title in enumerate(shown):
            album_id = f"{listing}-{number}"
            plain.save(PlainAlbum(album_id=album_id, listing=listing, title_key=stored[number]))
            if layout == "table":
                sharded.save(model(listing, title, title=title))
            else:
                sharded.save(model(album_id, listing=listing, title_key=title))
    plain_condition = _condition(PlainAlbum.title_key, scenario, stored)
    expected = _run(PlainAlbum.by_title.query, listing, plain_condition, scenario, False)
    condition = _condition(model.title_key, scenario, stored)
    query = model.query if layout == "table" else model.by_title.query
    got = _run(query, listing, condition, scenario, True)
    if layout == "table":
        assert [k for k, _ in got] == [k for k, _ in expected]
    else:
        ids = {f"{listing}-{number}": key for number, key in enumerate(stored)}
        _same_listing(got, expected, ids)
        if scenario["limit"] is None:
            assert sorted(i for _, i in got) == sorted(i for _, i in expected)
    count = model.count if layout == "table" else model.by_title.count
    assert count(listing, condition) == PlainAlbum.by_title.count(listing, plain_condition)
    # a scan filtered on the sharded key (the table's, or the index key as an attribute)
    scanned = sorted(
        normalized(default_normalize, a.title_key)
        for a in model.scan(model.listing == listing, page_size=scenario["page_size"])
    )
    assert scanned == sorted(a.title_key for a in PlainAlbum.scan(PlainAlbum.listing == listing))
