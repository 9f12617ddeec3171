"""All albums, alphabetically, 100 a page, over 21 ordered shards of a global index.

Runs on in-process moto: `python examples/ordered_albums.py`. The boundaries come from
a sample of titles (as `shardmodel boundaries FILE --shards 21` computes them), the
common title "Greatest Hits" gets three sub-shards, and every listing prints the
requests it sent: a page reads the shard it needs, a range its covering shards.
"""

from __future__ import annotations

import itertools
import warnings

from pynamodb.attributes import UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from shardmodel import NormalizedAttribute, OrderedShards, ShardedKeyAttribute, ShardedModel
from shardmodel.testing import create_tables, mock_dynamodb
from shardmodel.testing.titles import generate_titles

# 1. boundaries from a sample of the titles the index will hold
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the sample is small: no value fills a shard here
    SAMPLED = OrderedShards.from_sample(generate_titles(20_000, seed=1), shards=21)
STRATEGY = OrderedShards(SAMPLED.boundaries, on="title_key", overflow={"greatest hits": 3})


class ByTitle(GlobalSecondaryIndex["Album"]):
    class Meta:
        index_name = "by-title"
        projection = AllProjection()

    listing = UnicodeAttribute(hash_key=True)
    title_key = UnicodeAttribute(range_key=True)


class Album(ShardedModel):
    """Albums keyed by artist and title; the index lists them all by normalized title."""

    class Meta:
        table_name = "albums"
        region = "us-east-1"

    artist = UnicodeAttribute(hash_key=True)
    title = UnicodeAttribute(range_key=True)  # the display form
    listing = ShardedKeyAttribute(strategy=STRATEGY, null=True)
    title_key = NormalizedAttribute()  # the sort key of the index: normalized title
    by_title = ByTitle()


def main() -> None:
    with mock_dynamodb():
        create_tables([Album])
        titles = list(itertools.islice(generate_titles(5_000, seed=2), 5_000))
        with Album.batch_write() as batch:
            for n, title in enumerate(titles):
                batch.save(
                    Album(f"artist {n % 700}", f"{title} ({n})", listing="all", title_key=title)
                )
        print(f"{len(titles):,} albums over {STRATEGY.shard_count} shards + 3 sub-shards")

        page = Album.by_title.query("all", limit=100)
        first = [(album.title_key, album.artist, album.title) for album in page]
        print(f"first page: {first[0][0]!r} .. {first[-1][0]!r}, {page.requests} request(s)")
        assert first == sorted(first, key=lambda row: row[0]) and page.requests <= 2

        rest = Album.by_title.query("all", limit=100, last_evaluated_key=page.last_evaluated_key)
        second = [(album.title_key, album.artist, album.title) for album in rest]
        assert second[0][0] >= first[-1][0] and len(second) == 100
        assert not set(first) & set(second)  # the cursor repeats nothing
        print(f"second page from the cursor: {second[0][0]!r} .., {rest.requests} request(s)")

        ranged = Album.by_title.query("all", Album.title_key.between("L", "Lz"))
        found = [album.title_key for album in ranged]
        print(f"titles from 'l' to 'lz': {len(found)}, {ranged.shard_count} shard(s) read")

        hits = Album.by_title.query("all", Album.title_key == "GREATEST HITS")
        print(f"'greatest hits': {len(list(hits))} albums from {hits.shard_count} partitions")

        everything = [album.title_key for album in Album.by_title.query("all")]
        assert everything == sorted(everything) and len(everything) == len(titles)
        print(f"whole listing: {len(everything):,} albums, in order")


if __name__ == "__main__":
    main()
