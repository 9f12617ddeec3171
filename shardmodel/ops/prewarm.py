"""Warm a table before a known event: DynamoDB's warm throughput, set from a capacity plan.

A new on-demand table instantly serves 4,000 write and 12,000 read units a second; more
takes DynamoDB minutes of adapting, with throttles meanwhile. ``UpdateTable`` with
``WarmThroughput`` raises what the table (and each global secondary index) serves at once.
:func:`prewarm` computes that from the event's traffic with :mod:`shardmodel.capacity`'s
unit rounding and the plan's headroom, checks it against what DynamoDB accepts, and sends
one ``UpdateTable``:

* warm throughput only grows: DynamoDB refuses a decrease, so a side already warm enough
  is left as it is (and nothing is sent when every side is);
* an on-demand table with a maximum (``OnDemandThroughput``) throttles above it whatever
  its warm throughput: a target over the maximum is refused, naming it;
* a target over the per-table quota (40,000 units a second of each side by default; an
  account may have more) is refused, naming ``max_units``.

Every index gets the table's targets: a write to the table writes each index that
projects its key, and the event's reads may go to either.

Reads are counted as the model sends them: a Query of a whole logical key under
``RandomShards(n)`` (or ``HashShards(n)`` not fixing its ``on`` attributes) is ``n`` shard
Queries, each reading the first page the merged query asks of it and paying at least
its own half unit. 200 Queries a second of 50 items of 400 bytes are 500 read units
unsharded (1,000 with 2x), and 2,000 over ``RandomShards(20)`` (4,000 with 2x). Pass
``reads_fix_shard=True`` when the event's Queries fix a ``HashShards`` key's attributes:
each then reads one shard.
"""

from __future__ import annotations

import math
from typing import Any

from attrs import frozen

from shardmodel.capacity import DEFAULT_HEADROOM, query_units, shards_for
from shardmodel.core.terminal import table as text_table
from shardmodel.engine import sharding_of
from shardmodel.engine.merge import first_page_size
from shardmodel.errors import ShardConfigurationError
from shardmodel.keyspace.strategies import HashShards, RandomShards

__all__ = ["TABLE_QUOTA", "PrewarmPlan", "WarmChange", "fan_out_of", "prewarm", "warm_units"]

#: DynamoDB's default per-table quota of read (and of write) units a second.
TABLE_QUOTA = 40_000


@frozen
class WarmChange:
    """One table's or index's warm throughput, before and after.

    Attributes:
        index: the global secondary index, or None for the table.
        read_before: read units a second it served at once before.
        write_before: write units a second before.
        read: read units a second after (never below ``read_before``).
        write: write units a second after (never below ``write_before``).
    """

    index: str | None
    read_before: int
    write_before: int
    read: int
    write: int

    @property
    def changed(self) -> bool:
        """True when either side grows."""
        return self.read > self.read_before or self.write > self.write_before


@frozen
class PrewarmPlan:
    """What :func:`prewarm` set (or, with ``dry_run``, would set).

    Attributes:
        table: the table name.
        read_units: the planned read units a second, headroom included.
        write_units: the planned write units a second, headroom included.
        headroom: the headroom the targets keep.
        changes: the table's and each index's warm throughput, before and after.
        sent: True when an UpdateTable was sent.
        fan_out: shard Queries one Query of a whole key is (1: unsharded reads).
    """

    table: str
    read_units: int
    write_units: int
    headroom: float
    changes: tuple[WarmChange, ...]
    sent: bool
    fan_out: int = 1

    def render(self) -> str:
        """The plan as a text table and one closing line."""
        rows = [
            [
                change.index or "(table)",
                change.read_before,
                change.read,
                change.write_before,
                change.write,
            ]
            for change in self.changes
        ]
        head = ("table/index", "read before", "read after", "write before", "write after")
        if self.sent:
            last = f"UpdateTable sent: {self.table} warms up (Status UPDATING, then ACTIVE)"
        elif any(change.changed for change in self.changes):
            last = "dry run: nothing sent"
        else:
            last = f"{self.table} is already warm enough: nothing sent"
        fan_out = f"; each Query reads {self.fan_out} shards" if self.fan_out > 1 else ""
        return (
            f"{self.table}: {self.read_units:,} read / {self.write_units:,} write units a "
            f"second ({self.headroom:g}x headroom{fan_out})\n{text_table(head, rows)}\n{last}"
        )


def warm_units(
    item_bytes: int,
    reads_per_second: float = 0,
    items_per_read: int = 1,
    writes_per_second: float = 0,
    consistent: bool = False,
    headroom: float = DEFAULT_HEADROOM,
    fan_out: int = 1,
) -> tuple[int, int]:
    """The read and write units a second a table must serve at once, headroom included.

    The arguments are :func:`~shardmodel.capacity.shards_for`'s, and raise its errors;
    ``fan_out`` is the shard Queries one Query is (each reading the merged query's first
    page of its shard).

    >>> from shardmodel.ops.prewarm import warm_units
    >>> warm_units(1536, reads_per_second=1000, items_per_read=10, writes_per_second=5000)
    (4000, 20000)
    >>> warm_units(400, reads_per_second=200, items_per_read=50, fan_out=20)
    (4000, 0)
    """
    plan = shards_for(
        item_bytes, reads_per_second, items_per_read, writes_per_second, consistent, headroom
    )
    if isinstance(fan_out, bool) or not isinstance(fan_out, int) or fan_out < 1:
        raise ValueError(f"fan_out={fan_out!r}: give the shards one Query reads, at least 1")
    reads = plan.read_units
    if fan_out > 1:
        page = first_page_size(items_per_read, fan_out)
        reads = reads_per_second * fan_out * query_units(item_bytes, page, consistent)
    return (
        math.ceil(round(reads * plan.headroom, 9)),
        math.ceil(round(plan.write_units * plan.headroom, 9)),
    )


def fan_out_of(model: Any, reads_fix_shard: bool = False) -> int:
    """Shard Queries one Query of a whole logical key of ``model``'s table is.

    The product of its ``RandomShards`` and ``HashShards`` counts (a ``HashShards`` key
    counts 1 with ``reads_fix_shard``); time buckets, ordered ranges and dynamic counts
    are read as the Query's range and the key's history say, not known here: 1 each.
    """
    try:
        key = sharding_of(model).spec.table_key()
    except ShardConfigurationError:
        return 1  # a plain PynamoDB model
    if key is None:
        return 1
    count = 1
    for strategy in key.layout.strategies:
        if isinstance(strategy, RandomShards) or (
            isinstance(strategy, HashShards) and not reads_fix_shard
        ):
            count *= strategy.n
    return count


def _client(model: Any) -> Any:
    """A DynamoDB client on the model's region, endpoint and credentials."""
    import boto3

    meta = model.Meta
    keys = {
        option: getattr(meta, option)
        for option in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token")
        if getattr(meta, option, None)
    }
    return boto3.client(
        "dynamodb",
        region_name=getattr(meta, "region", None),
        endpoint_url=getattr(meta, "host", None),
        **keys,
    )


def _warm(source: dict[str, Any]) -> tuple[int, int]:
    warm = source.get("WarmThroughput") or {}
    return int(warm.get("ReadUnitsPerSecond") or 0), int(warm.get("WriteUnitsPerSecond") or 0)


def _check_quota(side: str, target: int, quota: int) -> None:
    if target > quota:
        raise ValueError(
            f"prewarm: {target:,} {side} units a second is over the per-table quota of "
            f"{quota:,}; pass max_units= (--max-units) your account's quota, or plan less"
        )


def prewarm(
    model: Any,
    *,
    item_bytes: int,
    reads_per_second: float = 0,
    items_per_read: int = 1,
    writes_per_second: float = 0,
    consistent: bool = False,
    headroom: float = DEFAULT_HEADROOM,
    indexes: bool = True,
    max_units: int = TABLE_QUOTA,
    dry_run: bool = False,
    client: Any = None,
    reads_fix_shard: bool = False,
) -> PrewarmPlan:
    """Set ``model``'s table (and its indexes') warm throughput for an event's traffic.

    Args:
        model: the model class; its table must exist.
        item_bytes: the size of one item, as :func:`~shardmodel.capacity.shards_for`
            takes it; so are the event's traffic arguments below (the whole table's,
            not one key's).
        reads_per_second: Queries a second.
        items_per_read: items one Query reads.
        writes_per_second: items written a second.
        consistent: True when the Queries are strongly consistent.
        headroom: capacity kept over the event's rate (2x by default).
        indexes: also warm every global secondary index (to the same targets).
        max_units: the per-table quota of each side (40,000 by default, DynamoDB's).
        dry_run: compute and check, send nothing.
        client: a boto3 DynamoDB client (default: one on the model's region and host).
        reads_fix_shard: the event's Queries fix a ``HashShards`` key's ``on``
            attributes, so each reads one shard (see :func:`fan_out_of`).

    Returns:
        The targets, each table's and index's change, and whether UpdateTable was sent.

    Raises:
        ValueError: a bad argument, or a target DynamoDB would refuse or not honour (over
            the on-demand maximum or the quota); checked before anything is sent.
    """
    fan_out = fan_out_of(model, reads_fix_shard)
    read, write = warm_units(
        item_bytes, reads_per_second, items_per_read, writes_per_second, consistent, headroom,
        fan_out,
    )  # fmt: skip
    if isinstance(max_units, bool) or not isinstance(max_units, int) or max_units < 1:
        raise ValueError(f"prewarm(max_units={max_units!r}): give an int of at least 1")
    _check_quota("read", read, max_units)
    _check_quota("write", write, max_units)
    client = client if client is not None else _client(model)
    name = model.Meta.table_name
    description = client.describe_table(TableName=name)["Table"]
    on_demand = description.get("OnDemandThroughput") or {}
    for target, key in ((read, "MaxReadRequestUnits"), (write, "MaxWriteRequestUnits")):
        maximum = on_demand.get(key)
        if maximum is not None and maximum > 0 and target > maximum:
            raise ValueError(
                f"prewarm: {target:,} units a second is over {name}'s on-demand maximum "
                f"({maximum:,}); requests above it throttle whatever the warm throughput: "
                f"raise OnDemandThroughput.{key} first, or plan less"
            )
    sources: list[tuple[str | None, dict[str, Any]]] = [(None, description)]
    if indexes:
        sources += [(g["IndexName"], g) for g in description.get("GlobalSecondaryIndexes", [])]
    changes = []
    for index, source in sources:
        read_before, write_before = _warm(source)
        changes.append(
            WarmChange(
                index, read_before, write_before, max(read, read_before), max(write, write_before)
            )
        )
    send = not dry_run and any(change.changed for change in changes)
    if send:
        client.update_table(**_update(name, changes))
    return PrewarmPlan(name, read, write, float(headroom), tuple(changes), send, fan_out)


def _update(table: str, changes: list[WarmChange]) -> dict[str, Any]:
    """The UpdateTable arguments: each table or index that grows, both sides given.

    The side that does not grow is sent at its current value (not a decrease, which
    DynamoDB refuses), so that no implementation reads a missing side as zero.
    """

    def warm(change: WarmChange) -> dict[str, int]:
        return {"ReadUnitsPerSecond": change.read, "WriteUnitsPerSecond": change.write}

    request: dict[str, Any] = {"TableName": table}
    for change in changes:
        if not change.changed:
            continue
        if change.index is None:
            request["WarmThroughput"] = warm(change)
        else:
            request.setdefault("GlobalSecondaryIndexUpdates", []).append(
                {"Update": {"IndexName": change.index, "WarmThroughput": warm(change)}}
            )
    return request
