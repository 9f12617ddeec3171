"""What a layout change will cost: the items it moves, its requests and capacity units,
from DescribeTable's counts or a sampled scan."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from attrs import frozen
from pynamodb.models import Model

from shardmodel.keyspace.ordered import OrderedShards
from shardmodel.keyspace.strategies import RandomShards

__all__ = ["Estimate", "item_bytes", "moving_fraction", "sampled_size"]


@frozen
class Estimate:
    """What a migration will cost, from DescribeTable's (roughly 6-hourly) counts, or
    from a sampled scan when those say the table is empty.

    Attributes:
        items: the table's item count.
        avg_item_bytes: its mean item size.
        moving: the items whose key changes (copied by the backfill, deleted by cleanup).
        requests: the migration's own requests (scans, copies, checks, deletes).
        read_units: read capacity units they consume.
        write_units: write capacity units they consume.
        source: where the item count and size came from.
    """

    items: int
    avg_item_bytes: float
    moving: int
    requests: int
    read_units: float
    write_units: float
    source: str = "DescribeTable"


def moving_fraction(strategy: object, old: int, new: int, swap: bool = False) -> float:
    """The share of items whose shard number changes from ``old`` to ``new`` shards
    (``swap``: to a HashShards of other attributes, whose shard is independent of the
    old one)."""
    if swap:
        return 1 - min(old, new) / (old * new)
    if isinstance(strategy, OrderedShards):
        return 1.0  # at most: which items change range depends on their values
    if isinstance(strategy, RandomShards):
        return 0.0 if new >= old else 1 - new / old
    period = math.lcm(old, new)
    return sum(1 for h in range(period) if h % old != h % new) / period


#: A sampled estimate's pages (of up to 1,000 items) per scan, and the segments of the
#: table the second scan samples one of.
SAMPLE_PAGES = 5
SAMPLE_SEGMENTS = 16


def item_bytes(raw: Mapping[str, Any]) -> int:
    """An item's size roughly as DynamoDB counts it: names plus values as text."""
    total = 0
    for name, typed in raw.items():
        value = next(iter(typed.values()))
        total += len(name.encode()) + len(str(value).encode())
    return total


def sampled_size(model: type[Model]) -> tuple[int, int, str]:
    """Items and bytes from scanning: the whole table if it is small, else one of
    :data:`SAMPLE_SEGMENTS` parallel-scan segments, scaled up."""
    client = model._get_connection().connection.client
    table = model.Meta.table_name
    for segments in (1, SAMPLE_SEGMENTS):
        items = size = 0
        start: dict[str, Any] | None = None
        for _ in range(SAMPLE_PAGES):
            request: dict[str, Any] = {"TableName": table, "Limit": 1000}
            if segments > 1:
                request.update(Segment=0, TotalSegments=segments)
            if start is not None:
                request["ExclusiveStartKey"] = start
            page = client.scan(**request)
            items += len(page.get("Items", []))
            size += sum(item_bytes(raw) for raw in page.get("Items", []))
            start = page.get("LastEvaluatedKey")
            if start is None:
                if segments == 1:
                    return items, size, "a scan of the whole table (DescribeTable said 0)"
                return (
                    items * segments,
                    size * segments,
                    f"a sampled scan of 1/{segments} of the table (DescribeTable said 0)",
                )
    return (
        items * SAMPLE_SEGMENTS,
        size * SAMPLE_SEGMENTS,
        f"at least: a sampled scan of part of 1/{SAMPLE_SEGMENTS} of the table",
    )
