"""OrderedShards: configuration errors, the key format, sampling and request counts (moto)."""

from __future__ import annotations

import random
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from shardmodel import (
    BoundaryWarning,
    NormalizedAttribute,
    OrderedShards,
    ShardConfigurationError,
    ShardedKeyAttribute,
    ShardedModel,
    ShardKeyError,
    TimeBuckets,
    UnsupportedOperationError,
)
from shardmodel.expressions.conditions import Prefix, bounds_of
from shardmodel.keyspace.normalization import default_normalize, normalized
from shardmodel.keyspace.ordered import prefix_end
from shardmodel.keyspace.strategies import KeyValues
from shardmodel.testing.titles import generate_titles
from tests.models import IndexedAlbum, OrderedAlbum

#: The guide's layout: 21 shards over the alphabet.
TWENTY_ONE = ["", *"bcdefghijlmnoprstuvw"]


def _key(value: str | None, on: str = "title_key") -> KeyValues:
    values = {} if value is None else {on: value}
    return KeyValues("album", values, values)


# -- configuration ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("boundaries", "message"),
    [
        ("abc", "give a list of strings"),
        ([], "the first boundary must be ''"),
        (["a", "b"], "the first boundary must be ''"),
        (["", "m", "g"], "boundary 2 'g' is below boundary 1 'm'"),
        (["", "m", "m"], "boundary 2 'm' repeats boundary 1 'm'"),
        (["", 5], "boundary 1 is 5 (int); boundaries are strings"),
        (["", "M"], "boundary 'M' is not normalized (normalize gives 'm')"),
        (["", *(f"{n:04d}" for n in range(1000))], "over 1000"),
    ],
)
def test_bad_boundaries_are_refused_with_the_fix(boundaries: Any, message: str) -> None:
    with pytest.raises(ShardConfigurationError) as error:
        OrderedShards(boundaries, on="title_key")
    assert message in str(error.value)


def test_boundaries_in_another_normal_form_are_normalized_then_checked() -> None:
    """A boundary pasted with a precomposed 'ö' (NFC) where normalize gives 'o' and a
    combining mark (NFKD) is the same text: it is normalized, and the order is checked on
    the normalized boundaries."""
    pasted = OrderedShards(["", "bj\u00f6rk", "m"], on="title_key")
    assert pasted.boundaries == ("", "bjo\u0308rk", "m")
    assert pasted == OrderedShards(["", "bjo\u0308rk", "m"], on="title_key")
    assert pasted.shard_of("Björk Live") == 1
    with pytest.raises(ShardConfigurationError, match="repeats boundary 1"):
        OrderedShards(["", "o\u0308", "\u00f6"], on="title_key")
    hits = OrderedShards(["", "m"], on="title_key", overflow={"h\u00f6rt": 2})
    assert hits.overflow == (("ho\u0308rt", 2),)


def test_a_boundary_refused_for_its_case_shows_the_code_points_that_differ() -> None:
    """What is not the same text is refused, naming the first differing code points, so
    a fix that looks identical on screen can still be told apart."""
    with pytest.raises(ShardConfigurationError) as caught:
        OrderedShards(["", "Bj\u00f6rk"], on="title_key")
    assert str(caught.value) == (
        "OrderedShards(boundaries=...): boundary 'Bj\u00f6rk' is not normalized (normalize "
        "gives 'bjo\u0308rk'); stored values are normalized, so write 'bjo\u0308rk' (they "
        "differ at character 1: U+0042, normalized U+0062 U+006A)"
    )
    with pytest.raises(ShardConfigurationError, match=r"character 1: U\+FB01, normalized U\+0066"):
        OrderedShards(["", "\ufb01"], on="title_key")  # the ligature 'ﬁ' is not 'fi'


def test_boundaries_keep_case_when_normalize_is_none() -> None:
    assert OrderedShards(["", "M", "a"], on="title", normalize=None).shard_of("Z") == 1


@pytest.mark.parametrize(
    ("overflow", "message"),
    [
        ({"Greatest Hits": 3}, "write 'greatest hits'"),
        ({"greatest hits": 1}, "at least 2"),
        ({"greatest hits": True}, "at least 2"),
        ({"greatest hits": 999}, "over 1000"),
        ("greatest hits", "give a dict"),
    ],
)
def test_bad_overflow_is_refused(overflow: Any, message: str) -> None:
    with pytest.raises(ShardConfigurationError) as error:
        OrderedShards(["", "m"], on="title_key", overflow=overflow)
    assert message in str(error.value)


def _album_class(**fields: Any) -> type[Any]:
    meta = type("Meta", (), {"table_name": "x", "region": "us-east-1"})
    return type("Album", (ShardedModel,), {"Meta": meta, **fields})


def test_on_must_be_the_sort_key_of_the_table() -> None:
    with pytest.raises(ShardConfigurationError) as error:
        _album_class(
            listing=ShardedKeyAttribute(hash_key=True, strategy=OrderedShards([""], on="title")),
            sort=UnicodeAttribute(range_key=True),
            title=UnicodeAttribute(),
        )
    assert "must order by the sort key of the table 'x', which is 'sort'" in str(error.value)
    assert "pass on='sort'" in str(error.value)


def test_overflow_on_the_tables_partition_key_is_refused() -> None:
    """On a table key the ordered value is the sort key: each value is one item, and a
    random sub-shard per save stored that item under two keys (a query returned it twice,
    get raised DuplicateItemError). Refused at class definition; an index key keeps it."""
    with pytest.raises(ShardConfigurationError) as error:
        _album_class(
            listing=ShardedKeyAttribute(
                hash_key=True,
                strategy=OrderedShards(["", "m"], on="title", overflow={"greatest hits": 3}),
            ),
            title=NormalizedAttribute(range_key=True),
        )
    assert str(error.value) == (
        "Album.listing: OrderedShards(overflow=...) on the table's partition key: the sort "
        "key 'title' is the ordered value, so a key holds one item of each value ('greatest "
        "hits') and no value fills a shard, while a random sub-shard per save would store "
        "one item under two keys; drop overflow= (it spreads values that repeat, on a "
        "global secondary index's key)"
    )
    assert IndexedAlbum.get_attributes()["listing"].layout.strategies[0].overflow


def test_on_must_be_the_sort_key_of_the_index() -> None:
    index_meta = type("Meta", (), {"index_name": "by-title", "projection": AllProjection()})
    index = type(
        "ByName",
        (GlobalSecondaryIndex,),
        {"Meta": index_meta, "listing": UnicodeAttribute(hash_key=True)},
    )
    with pytest.raises(ShardConfigurationError) as error:
        _album_class(
            album_id=UnicodeAttribute(hash_key=True),
            listing=ShardedKeyAttribute(strategy=OrderedShards([""], on="title")),
            title=UnicodeAttribute(),
            by_title=index(),
        )
    assert "index 'by-title', which is None" in str(error.value)
    assert "NormalizedAttribute(range_key=True)" in str(error.value)


def test_on_must_be_named_and_a_string() -> None:
    with pytest.raises(ShardConfigurationError, match="does not name the sort key"):
        _album_class(
            listing=ShardedKeyAttribute(hash_key=True, strategy=OrderedShards([""])),
            title=UnicodeAttribute(range_key=True),
        )
    with pytest.raises(ShardConfigurationError, match="orders strings"):
        _album_class(
            listing=ShardedKeyAttribute(hash_key=True, strategy=OrderedShards([""], on="n")),
            n=NumberAttribute(range_key=True),
        )
    with pytest.raises(ShardConfigurationError, match="contains a digit"):
        _album_class(
            listing=ShardedKeyAttribute(
                hash_key=True, strategy=OrderedShards([""], on="t"), separator="1"
            ),
            t=UnicodeAttribute(range_key=True),
        )


def test_the_attribute_and_the_strategy_must_normalize_alike() -> None:
    with pytest.raises(ShardConfigurationError, match="pass the same function to both"):
        _album_class(
            listing=ShardedKeyAttribute(
                hash_key=True, strategy=OrderedShards([""], on="t", normalize=str.casefold)
            ),
            t=NormalizedAttribute(range_key=True),
        )


# -- shards, keys and normalization --------------------------------------------------


def test_shard_of_is_bisect_of_the_normalized_value() -> None:
    strategy = OrderedShards(TWENTY_ONE, on="title_key")
    assert strategy.shard_of("Abbey Road") == 0
    assert strategy.shard_of("Émile") == 4  # é -> e + accent: between 'e' and 'f'
    assert strategy.shard_of("ZZ Top") == 20
    assert strategy.shard_of("中文") == 20
    assert default_normalize("Ǆ") == "dz\u030c"
    assert normalized(default_normalize, "㎁") == "na"  # NFKD gives "nA": normalized again


def test_the_physical_key_format_is_frozen() -> None:
    """album#<shard>; sub-shards numbered after the last shard, in overflow order."""
    strategy = OrderedShards(TWENTY_ONE, on="title_key", overflow={"greatest hits": 3, "live": 2})
    rng = random.Random(3)
    assert strategy.pick(_key("abbey road"), rng) == 0
    assert strategy.pick(_key("thriller"), rng) == 17
    assert {strategy.pick(_key("greatest hits"), rng) for _ in range(60)} == {21, 22, 23}
    assert {strategy.pick(_key("live"), rng) for _ in range(60)} == {24, 25}
    assert strategy.candidates(_key("greatest hits")) == [6, 21, 22, 23]
    assert strategy.group_of(23) == 6 and strategy.group_of(25) == 10
    layout = ShardedKeyAttribute(hash_key=True, strategy=strategy).layout
    assert layout.join("album", [7]) == "album#7"
    assert layout.join("album", [21]) == "album#21"
    one_based = ShardedKeyAttribute(hash_key=True, strategy=strategy, first_shard=1).layout
    assert one_based.join("album", [21]) == "album#22"


def test_a_sort_key_that_is_not_normalized_is_refused_on_save(
    dynamodb_tables: Callable[..., None],
) -> None:
    class RawAlbum(ShardedModel):
        class Meta:
            table_name = "raw-albums"
            region = "us-east-1"

        listing = ShardedKeyAttribute(hash_key=True, strategy=OrderedShards(["", "m"], on="title"))
        title = UnicodeAttribute(range_key=True)

    dynamodb_tables(RawAlbum)
    with pytest.raises(ShardKeyError) as error:
        RawAlbum("album", "Greatest Hits").save()
    assert "not normalized (normalize gives 'greatest hits')" in str(error.value)
    assert "NormalizedAttribute(range_key=True)" in str(error.value)
    RawAlbum("album", "greatest hits").save()
    assert [a.title for a in RawAlbum.query("album")] == ["greatest hits"]


def test_normalized_attribute_stores_and_matches_normalized_values(
    dynamodb_tables: Callable[..., None],
) -> None:
    dynamodb_tables(OrderedAlbum)
    album = OrderedAlbum("albums", "Émile & The Band", title="Émile & The Band")
    assert album.title_key == normalized(default_normalize, "émile & the band")
    album.save()
    assert album.get_physical_key() == "albums#0"
    found = OrderedAlbum.get("albums", "ÉMILE & THE BAND")
    assert found.title == "Émile & The Band"
    assert found.title_key == album.title_key


def test_bounds_of_begins_with_is_a_prefix() -> None:
    found = bounds_of(OrderedAlbum.title_key.startswith("Gre"), OrderedAlbum.title_key)
    assert isinstance(found.lower, Prefix) and found.lower == "gre" and found.upper is None
    assert prefix_end("gre") == "grf"
    assert prefix_end("a\U0010ffff") == "b"
    assert prefix_end("\ud7ff") == "\ue000"
    assert prefix_end("\U0010ffff") is None


def test_time_buckets_still_refuse_begins_with() -> None:
    """A prefix is a lower bound only: time buckets still ask for a range."""
    key = KeyValues("t", {}, {})
    with pytest.raises(UnsupportedOperationError, match="does not bound"):
        TimeBuckets("created").query_candidates(key, {"created": (Prefix("2024-01"), None)})


def test_query_candidates_cover_exactly_the_range() -> None:
    strategy = OrderedShards(["", "g", "n", "t"], on="title_key", overflow={"greatest hits": 2})

    def shards(lower: Any, upper: Any) -> list[Any]:
        return strategy.query_candidates(_key(None), {"title_key": (lower, upper)})

    assert shards(None, None) == [0, 1, 4, 5, 2, 3]
    assert shards("h", "m") == [1]
    assert shards("g", "g") == [1]  # a boundary itself: its shard only
    assert shards(None, "g") == [0, 1]
    assert shards("greatest hits", "greatest hits") == [1, 4, 5]
    assert shards(Prefix("gr"), None) == [1, 4, 5]
    assert shards(Prefix("f"), None) == [0]  # up to 'g', excluded
    assert shards(Prefix("t"), None) == [3]
    assert shards("m", "h") == []
    assert strategy.query_candidates(_key("greatest hits"), {}) == [1, 4, 5]


# -- from_sample ----------------------------------------------------------------------


def test_from_sample_cuts_every_ceil_nth_normalized_value() -> None:
    values = ["Delta", "alpha", "Charlie", "bravo", "Echo", "foxtrot", "Golf"]
    strategy = OrderedShards.from_sample(values, shards=3, prefix=2, on="title_key")
    # sorted: alpha bravo charlie delta echo foxtrot golf; step ceil(7/3) = 3
    assert strategy.boundaries == ("", "de", "go")
    assert strategy.on == "title_key"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([1, 2, 3], "value 0 is 1 (int); OrderedShards orders a string sort key: pass a sample"),
        (["a", None], "value 1 is None (NoneType)"),
        ("abc", "give a list of the sort key's values (strings), not 'abc'"),
        (5, "give a list of the sort key's values (strings), not 5"),
    ],
)
def test_a_sample_of_other_than_strings_is_refused_by_name(values: Any, message: str) -> None:
    """A sample of numbers (or a bare string) is a ShardConfigurationError naming the
    value, not an AttributeError from inside normalization."""
    with pytest.raises(ShardConfigurationError) as caught:
        OrderedShards.from_sample(values, shards=2)
    assert str(caught.value).startswith("OrderedShards.from_sample(values=...): ")
    assert message in str(caught.value)


def test_from_sample_warns_when_one_value_fills_a_shard() -> None:
    values = ["greatest hits"] * 50 + [f"album {n:02d}" for n in range(50)]
    with pytest.warns(BoundaryWarning, match="'greatest hits'") as caught:
        strategy = OrderedShards.from_sample(values, shards=10)
    assert "overflow=" in str(caught[0].message)
    assert strategy.boundaries.count("greatest hits") == 1
    assert len(strategy.boundaries) < 10


def test_from_sample_of_a_realistic_sample_balances_shards() -> None:
    titles = list(generate_titles(20_000, seed=5))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        strategy = OrderedShards.from_sample(titles[:10_000], shards=21, on="title_key")
    assert len(strategy.boundaries) == 21
    sizes = [0] * 21
    for title in titles[10_000:]:
        sizes[strategy.shard_of(title)] += 1
    assert max(sizes) < 1.5 * (10_000 / 21)


# -- request counts -------------------------------------------------------------------


def _fill(model: Any, titles: list[str]) -> None:
    with model.batch_write() as batch:
        for n, title in enumerate(titles):
            batch.save(model("albums", f"{title} {n:05d}", title=title))


class GuideAlbum(ShardedModel):
    """The guide's 21 alphabetical shards on a table."""

    class Meta:
        table_name = "guide-albums"
        region = "us-east-1"

    listing = ShardedKeyAttribute(hash_key=True, strategy=OrderedShards(TWENTY_ONE, on="title_key"))
    title_key = NormalizedAttribute(range_key=True)
    title = UnicodeAttribute(null=True)


def test_a_first_page_reads_one_shard_and_a_range_its_covering_shards(
    dynamodb_tables: Callable[..., None],
) -> None:
    dynamodb_tables(GuideAlbum)
    letters = "abcdefghijklmnopqrstuvwxyz"
    titles = [f"{letters[n % 26]}{letters[n // 26 % 26]} song" for n in range(2600)]
    _fill(GuideAlbum, titles)  # 100 items per letter: shard 0 ('a') holds 100
    page = GuideAlbum.query("albums", limit=100)
    got = [a.title_key for a in page]
    assert got == sorted(
        k
        for k in (normalized(default_normalize, f"{t} {n:05d}") for n, t in enumerate(titles))
        if k < "b"
    )
    assert page.requests == 1  # type: ignore[attr-defined]
    assert page.shard_count == 21  # type: ignore[attr-defined]

    unlimited = GuideAlbum.query("albums")
    first = [a.title_key for _, a in zip(range(150), unlimited, strict=False)]
    assert len(first) == 150 and first == sorted(first)
    assert unlimited.requests <= 2  # type: ignore[attr-defined]
    unlimited.close()  # type: ignore[attr-defined]

    reverse = GuideAlbum.query("albums", scan_index_forward=False, limit=100)
    assert [a.title_key[0] for a in reverse] == ["z"] * 100
    assert reverse.requests == 1  # type: ignore[attr-defined]  # 'w' holds w, x, y, z

    ranged = GuideAlbum.query("albums", GuideAlbum.title_key.between("c", "ez"))
    assert {a.title_key[0] for a in ranged} == {"c", "d", "e"}
    assert ranged.shard_count == 3 and ranged.requests == 3  # type: ignore[attr-defined]

    prefixed = GuideAlbum.query("albums", GuideAlbum.title_key.startswith("Q"))
    assert len(list(prefixed)) == 100
    assert prefixed.shard_count == 1  # type: ignore[attr-defined]  # 'p' holds p, q

    assert GuideAlbum.count("albums", GuideAlbum.title_key >= "v") == 500


def test_an_overflowing_value_spreads_and_reads_back_merged(
    dynamodb_tables: Callable[..., None],
) -> None:
    """An overflow value spreads over its sub-shards and reads back merged, in order.

    A re-save keeps the item's sub-shard; changing the value that placed it is refused.
    """
    dynamodb_tables(IndexedAlbum)
    for n in range(90):
        title = "Greatest Hits" if n % 3 == 0 else f"Album {n:02d}"
        IndexedAlbum(f"a{n:02d}", listing="albums", title_key=title).save()
    connection = IndexedAlbum._get_connection()
    per_shard = {}
    for shard in range(5):  # ['', 'm'] and 3 sub-shards of 'greatest hits'
        response = connection.query(f"albums#{shard}", index_name="by-title")
        per_shard[shard] = response["Count"]
    assert per_shard[0] == 60 and per_shard[1] == 0
    assert sum(per_shard[s] for s in (2, 3, 4)) == 30 and min(per_shard[s] for s in (2, 3, 4))
    listing = IndexedAlbum.by_title.query("albums")
    keys = [a.title_key for a in listing]
    assert keys == sorted(keys) and keys.count("greatest hits") == 30
    hits = IndexedAlbum.by_title.query("albums", IndexedAlbum.title_key == "GREATEST HITS")
    assert len(list(hits)) == 30 and hits.shard_count == 4  # type: ignore[attr-defined]

    def stored_listing() -> str:
        """The physical index key the table holds for a00: its sub-shard."""
        return str(connection.get_item("a00")["Item"]["listing"]["S"])

    before = stored_listing()
    assert before in {"albums#2", "albums#3", "albums#4"}  # a "greatest hits" sub-shard
    album = IndexedAlbum.get("a00")
    for _ in range(12):  # a re-save keeps its sub-shard (a re-pick moves it 2 times in 3)
        album.save()
        assert stored_listing() == before
        IndexedAlbum.get("a00").save()  # so does a re-save of a freshly loaded copy
        assert stored_listing() == before
    album.title_key = "Abbey Road"
    with pytest.raises(ShardKeyError, match="delete"):
        album.save()
