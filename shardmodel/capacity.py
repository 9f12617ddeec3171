"""Capacity arithmetic: partitions of a table, what each gets, and shards a hot key needs.

DynamoDB's published rules: a partition serves 3,000 read units and 1,000 write units a
second and holds 10 GB; a table starts with ``ceil(rcu / 3000 + wcu / 1000)`` partitions
(at least one per 10 GB), and a provisioned table's throughput is divided evenly over
them. A write costs one unit per started KB; a Query costs one unit per started 4 KB of
the items it reads together, half of that when eventually consistent.

A plan keeps headroom (:data:`DEFAULT_HEADROOM`, 2x, as the capacity guides advise): shards
picked at random, or by hashing values, are never loaded exactly evenly, and a count sized
for the mean throttles on the shards that drew more than their share in a second
(``RandomShards(10)`` at 10,000 writes a second of 1 WCU throttles hundreds of writes on
the capacity simulator; ``RandomShards(20)`` none).
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Literal

from attrs import frozen

__all__ = [
    "DEFAULT_HEADROOM",
    "MAX_HEADROOM",
    "MAX_ITEM_BYTES",
    "PARTITION_GB",
    "PARTITION_RCU",
    "PARTITION_WCU",
    "PartitionCapacity",
    "ShardPlan",
    "initial_partitions",
    "per_partition",
    "query_units",
    "shards_for",
    "write_units",
]

#: Read units a second one partition serves.
PARTITION_RCU = 3000
#: Write units a second one partition serves.
PARTITION_WCU = 1000
#: Gigabytes one partition holds.
PARTITION_GB = 10

#: The capacity a plan keeps over the mean load: 2x, as the capacity guides advise.
DEFAULT_HEADROOM = 2.0
#: The largest headroom a plan takes (more is waste, not safety).
MAX_HEADROOM = 10.0
#: DynamoDB's limit on one item, attribute names included: 400 KB.
MAX_ITEM_BYTES = 400 * 1024

_WRITE_UNIT = 1024
_READ_UNIT = 4096


def _number(name: str, value: object, positive: bool = False) -> float:
    """``value`` as a float, or a ValueError naming ``name`` and what it must be."""
    if isinstance(value, bool) or not isinstance(value, Real) or math.isnan(float(value)):
        raise ValueError(f"{name}={value!r}: give a number")
    number = float(value)
    if math.isinf(number):
        raise ValueError(f"{name}={value!r}: give a finite number")
    if positive and number <= 0:
        raise ValueError(f"{name}={value!r}: give a number above 0")
    if number < 0:
        raise ValueError(f"{name}={value!r}: give a number of at least 0")
    return number


def _ceil(value: float) -> int:
    """``ceil`` that ignores float noise (``0.1 + 0.2`` partitions is not 1 partition + 1)."""
    return math.ceil(round(value, 9))


def initial_partitions(rcu: float, wcu: float, size_gb: float = 0) -> int:
    """The partitions DynamoDB gives a new provisioned table (at least one).

    ``ceil(rcu / 3000 + wcu / 1000)``, and at least ``ceil(size_gb / 10)``.

    >>> from shardmodel.capacity import initial_partitions
    >>> initial_partitions(1500, 500)
    1
    >>> initial_partitions(rcu=3000, wcu=1000)
    2
    """
    reads = _number("rcu", rcu)
    writes = _number("wcu", wcu)
    size = _number("size_gb", size_gb)
    by_throughput = _ceil(reads / PARTITION_RCU + writes / PARTITION_WCU)
    return max(1, by_throughput, _ceil(size / PARTITION_GB))


@frozen
class PartitionCapacity:
    """The throughput one partition of a provisioned table gets.

    Attributes:
        rcu: read units a second.
        wcu: write units a second.
    """

    rcu: float
    wcu: float


def per_partition(rcu: float, wcu: float, partitions: int) -> PartitionCapacity:
    """A provisioned table's throughput divided evenly over its partitions.

    Capacity is divided, not shared: a key on one partition of a 150 WCU table with three
    partitions throttles above 50 WCU, however idle the other two are.

    >>> from shardmodel.capacity import per_partition
    >>> per_partition(rcu=300, wcu=150, partitions=3)
    PartitionCapacity(rcu=100.0, wcu=50.0)
    """
    reads = _number("rcu", rcu)
    writes = _number("wcu", wcu)
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise ValueError(f"partitions={partitions!r}: give an int of at least 1")
    return PartitionCapacity(rcu=reads / partitions, wcu=writes / partitions)


def _item_bytes(item_bytes: object) -> float:
    size = _number("item_bytes", item_bytes, positive=True)
    if size > MAX_ITEM_BYTES:
        raise ValueError(
            f"item_bytes={item_bytes!r}: DynamoDB caps an item at 400 KB "
            f"({MAX_ITEM_BYTES:,} bytes, attribute names included); give a size up to that"
        )
    return size


def write_units(item_bytes: int) -> int:
    """Write units one write of an item of ``item_bytes`` costs: one per started KB."""
    return _ceil(_item_bytes(item_bytes) / _WRITE_UNIT)


def query_units(item_bytes: int, items_per_read: int = 1, consistent: bool = False) -> float:
    """Read units one Query of ``items_per_read`` items costs.

    The items' summed size rounded up to 4 KB, halved when eventually consistent.
    """
    size = _item_bytes(item_bytes)
    items = _number("items_per_read", items_per_read, positive=True)
    units = _ceil(size * items / _READ_UNIT)
    return float(units) if consistent else units / 2


Suggestion = Literal["none", "random", "hashed"]


@frozen
class ShardPlan:
    """How many shards one logical key's traffic needs, and the units behind the count.

    Attributes:
        read_units: read units a second of the key's reads.
        write_units: write units a second of the key's writes.
        read_shards: partitions the reads need at 3,000 RCU each with the headroom (at
            least 1).
        write_shards: partitions the writes need at 1,000 WCU each with the headroom (at
            least 1).
        headroom: the capacity kept over the mean load (2.0: each shard planned half full).
        fan_out_units: read units a second *each* shard takes if every Query reads every
            shard (a Query of the whole logical key under ``RandomShards``): the Queries
            do not spread, only the items each one reads.
    """

    read_units: float
    write_units: float
    read_shards: int
    write_shards: int
    headroom: float = DEFAULT_HEADROOM
    fan_out_units: float = 0.0

    @property
    def shards(self) -> int:
        """The larger of the two counts: what the key needs."""
        return max(self.read_shards, self.write_shards)

    @property
    def binding(self) -> str:
        """``"reads"`` or ``"writes"``: the side that sets the count (writes on a tie)."""
        return "reads" if self.read_shards > self.write_shards else "writes"

    @property
    def suggestion(self) -> Suggestion:
        """The strategy the plan advises.

        ``"none"``: one partition serves the key. ``"random"``: ``RandomShards(shards)``,
        when writes bind and Queries of the whole key (every shard each) still fit each
        shard with the headroom. ``"hashed"``: ``HashShards(shards, on=[...])`` on the
        attributes the reads fix, so each read touches one shard.
        """
        if self.shards == 1:
            return "none"
        fits = self.fan_out_units * self.headroom <= PARTITION_RCU * (1 + 1e-9)
        return "random" if self.binding == "writes" and fits else "hashed"


def shards_for(
    item_bytes: int,
    reads_per_second: float = 0,
    items_per_read: int = 1,
    writes_per_second: float = 0,
    consistent: bool = False,
    headroom: float = DEFAULT_HEADROOM,
) -> ShardPlan:
    """The shards one logical key needs for its traffic, with DynamoDB's unit rounding.

    Each side's count is ``ceil(units * headroom / per-partition limit)``.

    Args:
        item_bytes: the size of one item (attribute names included), at most 400 KB.
        reads_per_second: Queries a second of the key.
        items_per_read: items one Query reads.
        writes_per_second: items written a second to the key.
        consistent: True when the Queries are strongly consistent.
        headroom: capacity kept over the mean load, from 1 (none) to 10; the default 2x
            is what the capacity guides advise.

    >>> from shardmodel.capacity import shards_for
    >>> plan = shards_for(item_bytes=1500, writes_per_second=5000)
    >>> plan.write_units, plan.headroom, plan.write_shards
    (10000.0, 2.0, 20)
    """
    wcu_each = write_units(item_bytes)
    rcu_each = query_units(item_bytes, items_per_read, consistent)
    reads = _number("reads_per_second", reads_per_second)
    writes = _number("writes_per_second", writes_per_second)
    if isinstance(consistent, bool) is False:
        raise ValueError(f"consistent={consistent!r}: give True or False")
    spare = _number("headroom", headroom)
    if not 1 <= spare <= MAX_HEADROOM:
        raise ValueError(
            f"headroom={headroom!r}: give a factor from 1 (none) to {MAX_HEADROOM:g}; "
            f"{DEFAULT_HEADROOM:g} is what the capacity guides advise"
        )
    read_total = reads * rcu_each
    write_total = writes * wcu_each
    read_shards = max(1, _ceil(read_total * spare / PARTITION_RCU))
    write_shards = max(1, _ceil(write_total * spare / PARTITION_WCU))
    shards = max(read_shards, write_shards)
    per_shard_items = math.ceil(_number("items_per_read", items_per_read) / shards)
    return ShardPlan(
        read_units=read_total,
        write_units=write_total,
        read_shards=read_shards,
        write_shards=write_shards,
        headroom=spare,
        fan_out_units=reads * query_units(item_bytes, per_shard_items, consistent),
    )
