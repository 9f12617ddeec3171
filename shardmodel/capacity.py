"""Capacity arithmetic: partitions of a table, what each gets, and shards a hot key needs.

DynamoDB's published rules: a partition serves 3,000 read units and 1,000 write units a
second and holds 10 GB; a table starts with ``ceil(rcu / 3000 + wcu / 1000)`` partitions
(at least one per 10 GB), and a provisioned table's throughput is divided evenly over
them. A write costs one unit per started KB; a Query costs one unit per started 4 KB of
the items it reads together, half of that when eventually consistent.
"""

from __future__ import annotations

import math
from numbers import Real

from attrs import frozen

__all__ = [
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


def write_units(item_bytes: int) -> int:
    """Write units one write of an item of ``item_bytes`` costs: one per started KB."""
    size = _number("item_bytes", item_bytes, positive=True)
    return _ceil(size / _WRITE_UNIT)


def query_units(item_bytes: int, items_per_read: int = 1, consistent: bool = False) -> float:
    """Read units one Query of ``items_per_read`` items costs.

    The items' summed size rounded up to 4 KB, halved when eventually consistent.
    """
    size = _number("item_bytes", item_bytes, positive=True)
    items = _number("items_per_read", items_per_read, positive=True)
    units = _ceil(size * items / _READ_UNIT)
    return float(units) if consistent else units / 2


@frozen
class ShardPlan:
    """How many shards one logical key's traffic needs, and the units behind the count.

    Attributes:
        read_units: read units a second of the key's reads.
        write_units: write units a second of the key's writes.
        read_shards: partitions the reads need at 3,000 RCU each (at least 1).
        write_shards: partitions the writes need at 1,000 WCU each (at least 1).
    """

    read_units: float
    write_units: float
    read_shards: int
    write_shards: int

    @property
    def shards(self) -> int:
        """The larger of the two counts: what the key needs."""
        return max(self.read_shards, self.write_shards)

    @property
    def binding(self) -> str:
        """``"reads"`` or ``"writes"``: the side that sets the count (writes on a tie)."""
        return "reads" if self.read_shards > self.write_shards else "writes"


def shards_for(
    item_bytes: int,
    reads_per_second: float = 0,
    items_per_read: int = 1,
    writes_per_second: float = 0,
    consistent: bool = False,
) -> ShardPlan:
    """The shards one logical key needs for its traffic, with DynamoDB's unit rounding.

    Args:
        item_bytes: the size of one item (attribute names included).
        reads_per_second: Queries a second of the key.
        items_per_read: items one Query reads.
        writes_per_second: items written a second to the key.
        consistent: True when the Queries are strongly consistent.

    >>> from shardmodel.capacity import shards_for
    >>> plan = shards_for(item_bytes=1500, writes_per_second=5000)
    >>> plan.write_units, plan.write_shards
    (10000.0, 10)
    """
    wcu_each = write_units(item_bytes)
    rcu_each = query_units(item_bytes, items_per_read, consistent)
    reads = _number("reads_per_second", reads_per_second)
    writes = _number("writes_per_second", writes_per_second)
    if isinstance(consistent, bool) is False:
        raise ValueError(f"consistent={consistent!r}: give True or False")
    read_total = reads * rcu_each
    write_total = writes * wcu_each
    return ShardPlan(
        read_units=read_total,
        write_units=write_total,
        read_shards=max(1, _ceil(read_total / PARTITION_RCU)),
        write_shards=max(1, _ceil(write_total / PARTITION_WCU)),
    )
