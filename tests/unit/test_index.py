"""A global secondary index whose partition key is sharded, queried as one merged stream."""

from __future__ import annotations

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import (
    RandomShards,
    ShardConfigurationError,
    ShardedKeyAttribute,
    ShardedModel,
    ShardKeyError,
)
from tests.models import Photo
from tests.support import raw_items

pytestmark = pytest.mark.usefixtures("tables")


def load(n: int) -> None:
    with Photo.batch_write() as batch:
        for i in range(n):
            batch.save(Photo(photo_id=f"p{i}", album="album", taken=1000 + i))


def test_index_key_is_stored_sharded_and_loaded_logical() -> None:
    """The index key is written as album#k and every load shows album."""
    load(60)
    stored = {item["album"]["S"] for item in raw_items(Photo)}
    assert stored <= {f"album#{n}" for n in range(20)} and len(stored) > 5
    assert Photo.get("p3").album == "album"
    assert {p.album for p in Photo.scan()} == {"album"}


def test_index_query_is_merged_limited_and_resumable() -> None:
    """Photo.by_album.query merges the 20 index shards in sort order, with exact limits."""
    load(60)
    newest = list(Photo.by_album.query("album", scan_index_forward=False, limit=5))
    assert [p.taken for p in newest] == [1059, 1058, 1057, 1056, 1055]
    first = Photo.by_album.query("album", Photo.taken > 1010, limit=7)
    seen = [p.taken for p in first]
    rest = Photo.by_album.query(
        "album", Photo.taken > 1010, last_evaluated_key=first.last_evaluated_key
    )
    assert seen + [p.taken for p in rest] == list(range(1011, 1060))
    assert Photo.count("album", index_name="by-album") == 60


def test_resaving_keeps_the_index_shard_and_sparse_items_stay_out() -> None:
    """A loaded photo re-saved keeps its index shard; a photo without album is not indexed."""
    load(1)
    photo = Photo.get("p0")
    before = raw_items(Photo)[0]["album"]
    photo.taken = 5
    photo.save()
    assert raw_items(Photo)[0]["album"] == before
    Photo(photo_id="loose", taken=1).save()
    assert len(list(Photo.by_album.query("album"))) == 1
    with pytest.raises(ShardKeyError, match=r"Photo\.album"):
        photo.update(actions=[Photo.album.set("other")])


def test_sharded_key_outside_keys_is_refused() -> None:
    """A ShardedKeyAttribute that is neither table nor index partition key is refused."""
    with pytest.raises(ShardConfigurationError, match="global secondary index"):

        class Broken(ShardedModel):
            class Meta:
                table_name = "broken"

            pk = UnicodeAttribute(hash_key=True)
            tag = ShardedKeyAttribute(strategy=RandomShards(4))
            n = NumberAttribute()
