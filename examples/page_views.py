"""Page views on a hot page: sharded counters, idempotent increments, cheap cached reads.

Runs on in-process moto: `python examples/page_views.py`.
"""

from __future__ import annotations

import boto3
from pynamodb.attributes import UnicodeAttribute

from shardmodel import CounterAttribute, RandomShards, ShardedKeyAttribute, ShardedModel
from shardmodel.testing import create_tables, mock_dynamodb


class PageViews(ShardedModel):
    class Meta:
        table_name = "page-views"
        region = "us-east-1"

    page = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(10))
    views = CounterAttribute(default=0)
    likes = CounterAttribute(default=0)
    title = UnicodeAttribute(null=True)


def main() -> None:
    with mock_dynamodb():
        create_tables([PageViews])
        PageViews(page="/launch", title="Launch day").save()
        for n in range(1000):
            PageViews.add("/launch", views=1, likes=1 if n % 10 == 0 else 0)
        # a client retries a request whose response it never saw: the token counts it once
        PageViews.add("/launch", views=1, token="req-42")
        PageViews.add("/launch", views=1, token="req-42")

        page = PageViews.get("/launch")
        print(f"{page.title}: {page.views} views, {page.likes} likes")
        assert (page.views, page.likes) == (1001, 100)

        cached = PageViews.get_cached("/launch", max_age=30)
        print("cached total (one read while fresh):", cached.views)
        raw = boto3.client("dynamodb", region_name="us-east-1").scan(TableName="page-views")
        shares = sorted(int(item["views"]["N"]) for item in raw["Items"])  # one per shard
        print("per-shard shares of views:", shares)


if __name__ == "__main__":
    main()
