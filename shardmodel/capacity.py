"""Capacity arithmetic: partitions of a table, what each gets, and shards a hot key needs.

DynamoDB's published rules: a partition serves 3,000 read units or 1,000 write units a
second, or a linear mix of the two (2,000 RCU leave 333 WCU), and holds 10 GB; a table
starts with ``ceil(rcu / 3000 + wcu / 1000)`` partitions (at least one per 10 GB), and a
provisioned table's throughput is divided evenly over them. A write costs one unit per
started KB; a Query costs one unit per started 4 KB of the items it reads together, half
of that when eventually consistent.

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
    "CHUNKY_EXCESS",
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


#: Writes a second a planned layout may throttle on average when each write is a large
#: share of a partition: at most one in a 50-second run.
CHUNKY_EXCESS = 0.02


def _excess(writes: int, shards: int, fits: int) -> float:
    """Writes a second refused over ``shards`` random shards that each take ``fits`` a second.

    ``shards * E[(X - fits)+]`` for ``X ~ Binomial(writes, 1 / shards)``: a shard's
    writes in one second, when each of ``writes`` evenly spaced writes picks a shard.
    """
    if shards <= 1:
        return float(max(0, writes - fits))
    p = 1.0 / shards
    mean = writes * p
    if fits > mean + 12 * math.sqrt(mean) + 12:
        return 0.0
    log_pmf = writes * math.log1p(-p)  # j = 0
    ratio = math.log(p) - math.log1p(-p)
    excess = 0.0
    top = min(writes, int(fits + 12 * math.sqrt(mean) + 40))
    for j in range(top + 1):
        if j > fits:
            excess += (j - fits) * math.exp(log_pmf)
        if j < writes:
            log_pmf += math.log(writes - j) - math.log(j + 1) + ratio
    return shards * excess


def _chunky_shards(writes: float, units: int, start: int) -> int:
    """Shards at or above ``start`` over which random writes of ``units`` WCU each throttle
    at most :data:`CHUNKY_EXCESS` writes a second.

    A partition takes ``1000 // units`` such writes a second (two of 400 KB): the
    headroom on the mean does not cover a shard that draws one write too many.
    """
    count = math.ceil(writes)
    fits = PARTITION_WCU // units
    if count <= 1 or _excess(count, start, fits) <= CHUNKY_EXCESS:
        return start
    low, high = start, start * 2
    while _excess(count, high, fits) > CHUNKY_EXCESS:
        low, high = high, high * 2
        if high > 10**15:
            return high
    while high - low > 1:
        middle = (low + high) // 2
        if _excess(count, middle, fits) <= CHUNKY_EXCESS:
            high = middle
        else:
            low = middle
    return high


Suggestion = Literal["none", "random", "hashed"]
Binding = Literal["reads", "writes", "both"]


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
        mixed_shards: partitions the reads and writes need together with the headroom: a
            partition serves 3,000 RCU or 1,000 WCU or a linear mix, so the shares add
            (2,000 RCU and 600 WCU are 1.27 partitions' worth, not the larger 0.67).
    """

    read_units: float
    write_units: float
    read_shards: int
    write_shards: int
    headroom: float = DEFAULT_HEADROOM
    fan_out_units: float = 0.0
    mixed_shards: int = 1

    @property
    def shards(self) -> int:
        """What the key needs: the larger side's count, or both sides' shares together."""
        return max(self.read_shards, self.write_shards, self.mixed_shards)

    @property
    def binding(self) -> Binding:
        """The side that sets the count: ``"reads"``, ``"writes"`` (on a tie), or
        ``"both"`` when neither alone needs as many shards as the two together."""
        if self.mixed_shards > max(self.read_shards, self.write_shards):
            return "both"
        return "reads" if self.read_shards > self.write_shards else "writes"

    @property
    def shard_load(self) -> float:
        """The share of its partition each shard takes under ``RandomShards``, headroom
        included: every Query's fan-out units plus a shard's part of the writes."""
        reads = self.fan_out_units / PARTITION_RCU
        writes = self.write_units / (self.shards * PARTITION_WCU)
        return (reads + writes) * self.headroom

    @property
    def suggestion(self) -> Suggestion:
        """The strategy the plan advises.

        ``"none"``: one partition serves the key. ``"random"``: ``RandomShards(shards)``,
        when reads do not bind and Queries of the whole key (every shard each) with each
        shard's writes still fit each shard with the headroom (:attr:`shard_load`).
        ``"hashed"``: ``HashShards(shards, on=[...])`` on the attributes the reads fix, so
        each read touches one shard.
        """
        if self.shards == 1:
            return "none"
        fits = self.shard_load <= 1 + 1e-9
        return "random" if self.binding != "reads" and fits else "hashed"


def shards_for(
    item_bytes: int,
    reads_per_second: float = 0,
    items_per_read: int = 1,
    writes_per_second: float = 0,
    consistent: bool = False,
    headroom: float = DEFAULT_HEADROOM,
) -> ShardPlan:
    """The shards one logical key needs for its traffic, with DynamoDB's unit rounding.

    Each side's count is ``ceil(units * headroom / per-partition limit)``; the key needs
    the larger, or ``ceil((rcu / 3000 + wcu / 1000) * headroom)`` when both sides
    together need more (a partition's reads and writes share one limit, linearly).

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
    if spare > 1 and writes:
        write_shards = _chunky_shards(writes, wcu_each, write_shards)
    mixed_shards = max(1, _ceil((read_total / PARTITION_RCU + write_total / PARTITION_WCU) * spare))
    shards = max(read_shards, write_shards, mixed_shards)
    per_shard_items = math.ceil(_number("items_per_read", items_per_read) / shards)
    return ShardPlan(
        read_units=read_total,
        write_units=write_total,
        read_shards=read_shards,
        write_shards=write_shards,
        headroom=spare,
        fan_out_units=reads * query_units(item_bytes, per_shard_items, consistent),
        mixed_shards=mixed_shards,
    )
