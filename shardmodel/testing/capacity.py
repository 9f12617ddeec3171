"""Per-partition capacity: token buckets that admit or throttle reads and writes.

Each physical partition accepts its limit of read units or of write units in every
simulated second, or a linear mix of the two, as DynamoDB's partitions do: 2,000 RCU
(two thirds of 3,000) leave a third of 1,000 WCU, 333 WCU. A request is admitted while
its partition's second (and the table's, when a table limit is set) has room; otherwise
it is throttled with a reason that names what ran out, as DynamoDB's
``ThrottlingReasons`` do. A table limit may borrow unused
capacity of earlier seconds (burst credit); a partition limit never does.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Mapping, Sequence
from typing import Literal

from attrs import field, frozen

from shardmodel.capacity import PARTITION_RCU, PARTITION_WCU, initial_partitions, per_partition

__all__ = [
    "CapacityLedger",
    "CapacityLimits",
    "Charge",
    "PartitionId",
    "PartitionUsage",
    "Throttle",
]

Kind = Literal["read", "write"]

_SIDES: tuple[Kind, Kind] = ("read", "write")
#: What one partition serves a second of each side alone (a mix shares it linearly).
_PHYSICAL: dict[Kind, float] = {"read": float(PARTITION_RCU), "write": float(PARTITION_WCU)}


def _positive(instance: object, attribute: object, value: float | None) -> None:
    if value is not None and value <= 0:
        raise ValueError(f"CapacityLimits: limits must be positive, got {value!r}")


def _partition_count(instance: object, attribute: object, value: int | None) -> None:
    if value is not None and value < 1:
        raise ValueError(f"CapacityLimits(partitions={value!r}): use None or at least 1")


@frozen
class CapacityLimits:
    """The capacity the simulator enforces.

    A provisioned table with a partition count divides its table limits evenly over its
    partitions, as DynamoDB does: ``CapacityLimits(table_wcu=150, partitions=3)`` gives
    each partition 50 WCU/s. Per-partition limits given explicitly win; without a table
    limit or a partition count a partition gets DynamoDB's 1,000 WCU/s and 3,000 RCU/s
    (on-demand).

    Attributes:
        partition_wcu: write units per second one physical partition accepts (default:
            ``table_wcu / partitions`` when both are set, else 1,000).
        partition_rcu: read units per second one physical partition accepts (default:
            ``table_rcu / partitions`` when both are set, else 3,000).
        partitions: the number of physical partitions of every table and index, keys
            spread over them by hash; None gives every partition key value its own.
        table_wcu: write units per second the whole table accepts (None: no limit).
        table_rcu: read units per second the whole table accepts (None: no limit).
        burst_seconds: seconds of unused table capacity kept as burst credit (DynamoDB
            keeps up to 300); used only with a table limit.
    """

    partition_wcu: float = field(default=None, validator=_positive)  # type: ignore[assignment]
    partition_rcu: float = field(default=None, validator=_positive)  # type: ignore[assignment]
    partitions: int | None = field(default=None, validator=_partition_count)
    table_wcu: float | None = field(default=None, validator=_positive)
    table_rcu: float | None = field(default=None, validator=_positive)
    burst_seconds: float = 0.0

    def __attrs_post_init__(self) -> None:
        # the divided share of a provisioned table, unless given per partition
        for name, table, default in (
            ("partition_wcu", self.table_wcu, float(PARTITION_WCU)),
            ("partition_rcu", self.table_rcu, float(PARTITION_RCU)),
        ):
            if getattr(self, name) is None:
                share = default
                if table is not None and self.partitions is not None:
                    share = per_partition(table, table, self.partitions).wcu
                object.__setattr__(self, name, share)

    @classmethod
    def provisioned(cls, rcu: float, wcu: float, partitions: int | None = None) -> CapacityLimits:
        """A provisioned table of ``rcu``/``wcu`` over ``partitions`` partitions.

        The partition count defaults to the one DynamoDB gives a new table
        (:func:`shardmodel.capacity.initial_partitions`).
        """
        count = partitions if partitions is not None else initial_partitions(rcu, wcu)
        return cls(partitions=count, table_rcu=rcu, table_wcu=wcu)


@frozen
class PartitionId:
    """One physical partition of a table or of one of its indexes.

    Attributes:
        table: the table name.
        index: the global secondary index name, or None for the table itself.
        partition: the partition key value, or ``"partition-<i>"`` when the limits set
            a partition count.
    """

    table: str
    index: str | None
    partition: str


@frozen
class PartitionUsage:
    """What one partition consumed and refused so far.

    Attributes:
        read_units: read capacity units consumed.
        write_units: write capacity units consumed.
        reads: read requests (or batch keys) admitted.
        writes: write requests (or batch items) admitted.
        read_throttles: reads refused.
        write_throttles: writes refused.
    """

    read_units: float = 0.0
    write_units: float = 0.0
    reads: int = 0
    writes: int = 0
    read_throttles: int = 0
    write_throttles: int = 0


@frozen
class Charge:
    """Units one request (or one item of a batch) asks of one partition."""

    partition: PartitionId
    units: float


@frozen
class Throttle:
    """Why a charge was refused, in DynamoDB's ``ThrottlingReasons`` vocabulary.

    Attributes:
        reason: e.g. ``TableWriteKeyRangeThroughputExceeded`` (a hot partition) or
            ``TableWriteProvisionedThroughputExceeded`` (the table limit).
        partition: the partition the refused charge was for.
    """

    reason: str
    partition: PartitionId

    @property
    def is_partition(self) -> bool:
        """True when a hot partition, not the table limit, refused the charge."""
        return self.reason.endswith("KeyRangeThroughputExceeded")


class _Windows:
    """Units used per one-second window; charges may arrive in any time order.

    Calls retried after a back-off are charged at their own (later) times while other
    calls are still charged at earlier ones, so the windows, not a single moving
    bucket, keep each second's account.
    """

    __slots__ = ("burst", "rate", "used")

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self.used: dict[int, float] = {}

    def room(self, second: int, units: float) -> int | None:
        """The window that can take ``units`` for a charge in ``second``, or None.

        With burst credit, a full second borrows the unused capacity of up to ``burst``
        earlier seconds that saw traffic, oldest first.
        """
        need = min(units, self.rate)
        if self.used.get(second, 0.0) + need <= self.rate + 1e-9:
            return second
        for earlier in range(second - self.burst, second):
            used = self.used.get(earlier)
            if used is not None and used + need <= self.rate + 1e-9:
                return earlier
        return None

    def add(self, second: int, units: float) -> None:
        self.used[second] = self.used.get(second, 0.0) + units


def _reason(partition: PartitionId, kind: Kind, limit: str) -> str:
    resource = "Table" if partition.index is None else "Index"
    operation = "Read" if kind == "read" else "Write"
    return f"{resource}{operation}{limit}"


class CapacityLedger:
    """Admits or throttles charges against partition and table buckets, and keeps counts.

    Thread-safe. Times are simulated seconds from the simulator's clock.

    Args:
        limits: the capacity to enforce.
    """

    def __init__(self, limits: CapacityLimits | None = None) -> None:
        self.limits = limits or CapacityLimits()
        self._windows: dict[tuple[PartitionId, Kind], _Windows] = {}
        self._tables: dict[tuple[str, str | None, Kind], _Windows] = {}
        self._usage: dict[PartitionId, dict[str, float]] = {}
        self._provisioned: dict[tuple[str, str | None, Kind], float] = {}
        self._lock = threading.RLock()

    def provision(self, table: str, index: str | None, kind: Kind, units: float) -> None:
        """Change a table's (or index's) provisioned rate, as an UpdateTable does.

        The table limit becomes ``units``; a partition limit that was the table's share
        (not set on its own) becomes the new share.
        """
        if units <= 0:
            raise ValueError(f"provision(units={units!r}): give a rate above 0")
        with self._lock:
            self._provisioned[(table, index, kind)] = float(units)
            for (part, window_kind), windows in self._windows.items():
                if (part.table, part.index, window_kind) == (table, index, kind):
                    windows.rate = self._partition_rate(part, kind)
            whole = self._tables.get((table, index, kind))
            if whole is not None:
                whole.rate = float(units)

    def _table_rate(self, table: str, index: str | None, kind: Kind) -> float | None:
        default = self.limits.table_rcu if kind == "read" else self.limits.table_wcu
        return self._provisioned.get((table, index, kind), default)

    def _partition_rate(self, partition: PartitionId, kind: Kind) -> float:
        limits = self.limits
        own = limits.partition_rcu if kind == "read" else limits.partition_wcu
        table = limits.table_rcu if kind == "read" else limits.table_wcu
        changed = self._provisioned.get((partition.table, partition.index, kind))
        if changed is None or limits.partitions is None or table is None:
            return own
        if abs(own - table / limits.partitions) > 1e-9:
            return own  # set on its own: an UpdateTable does not change it
        return changed / limits.partitions

    def partition(self, table: str, index: str | None, key: str) -> PartitionId:
        """The physical partition that holds partition key value ``key``."""
        count = self.limits.partitions
        if count is None:
            return PartitionId(table, index, key)
        digest = hashlib.md5(key.encode("utf-8"), usedforsecurity=False).digest()
        position = (int.from_bytes(digest[:8], "big") * count) >> 64
        return PartitionId(table, index, f"partition-{position}")

    def _partition_windows(self, partition: PartitionId, kind: Kind) -> _Windows:
        windows = self._windows.get((partition, kind))
        if windows is None:
            rate = self._partition_rate(partition, kind)
            windows = self._windows[(partition, kind)] = _Windows(rate, 0)
        return windows

    def _table_windows(self, partition: PartitionId, kind: Kind) -> _Windows | None:
        rate = self._table_rate(partition.table, partition.index, kind)
        if rate is None:
            return None
        key = (partition.table, partition.index, kind)
        windows = self._tables.get(key)
        if windows is None:
            burst = max(0, int(self.limits.burst_seconds))
            windows = self._tables[key] = _Windows(rate, burst)
        return windows

    def _count(self, partition: PartitionId, name: str, amount: float) -> None:
        usage = self._usage.setdefault(partition, {})
        usage[name] = usage.get(name, 0.0) + amount

    def _mixed_full(self, partition: PartitionId, kind: Kind, second: int, units: float) -> bool:
        """True when ``units`` more of ``kind`` overfill the partition's reads and writes
        together: each side's share of its physical limit (DynamoDB's 3,000 RCU and 1,000
        WCU, or a larger limit set) added, as DynamoDB's partitions take a linear mix.

        A provisioned share below those limits is each side's own bucket (``room``); an
        idle second takes one charge of any size, as ``room`` does.
        """
        used = 0.0
        for side in _SIDES:
            windows = self._windows.get((partition, side))
            if windows is not None:
                used += windows.used.get(second, 0.0) / max(windows.rate, _PHYSICAL[side])
        own = self._windows[(partition, kind)]
        need = units / max(own.rate, _PHYSICAL[kind])
        return used > 1e-9 and used + need > 1 + 1e-9

    def _try(self, charge: Charge, kind: Kind, now: float) -> Throttle | None:
        second = math.floor(now)
        windows = self._partition_windows(charge.partition, kind)
        full = self._mixed_full(charge.partition, kind, second, charge.units)
        if full or windows.room(second, charge.units) is None:
            return Throttle(
                _reason(charge.partition, kind, "KeyRangeThroughputExceeded"), charge.partition
            )
        table = self._table_windows(charge.partition, kind)
        table_second = second if table is None else table.room(second, charge.units)
        if table is not None and table_second is None:
            return Throttle(
                _reason(charge.partition, kind, "ProvisionedThroughputExceeded"), charge.partition
            )
        windows.add(second, charge.units)
        if table is not None and table_second is not None:
            table.add(table_second, charge.units)
        self._count(charge.partition, f"{kind}_units", charge.units)
        self._count(charge.partition, f"{kind}s", 1)
        return None

    def _refund(self, charge: Charge, kind: Kind, now: float) -> None:
        self.settle(charge.partition, kind, -charge.units, now)
        self._count(charge.partition, f"{kind}s", -1)

    def admit_each(
        self, charges: Sequence[Charge], kind: Kind, now: float
    ) -> list[Throttle | None]:
        """Admit each charge on its own (a batch call); returns each one's throttle or None."""
        with self._lock:
            results = [self._try(charge, kind, now) for charge in charges]
            for charge, result in zip(charges, results, strict=True):
                if result is not None:
                    self._count(charge.partition, f"{kind}_throttles", 1)
            return results

    def admit_all(self, charges: Sequence[Charge], kind: Kind, now: float) -> list[Throttle]:
        """Admit all charges or none (one request, or a transaction); returns the throttles."""
        with self._lock:
            admitted: list[Charge] = []
            throttles: list[Throttle] = []
            for charge in charges:
                result = self._try(charge, kind, now)
                if result is None:
                    admitted.append(charge)
                else:
                    throttles.append(result)
            if throttles:
                for charge in admitted:
                    self._refund(charge, kind, now)
                for throttle in throttles:
                    self._count(throttle.partition, f"{kind}_throttles", 1)
            return throttles

    def settle(self, partition: PartitionId, kind: Kind, units: float, now: float) -> None:
        """Charge (or refund, when negative) ``units`` once a read's true size is known.

        The bucket may go below zero: DynamoDB lets a read finish and throttles the
        partition's next requests instead.
        """
        if units == 0:
            return
        with self._lock:
            second = math.floor(now)
            self._partition_windows(partition, kind).add(second, units)
            table = self._table_windows(partition, kind)
            if table is not None:
                table.add(second, units)
            self._count(partition, f"{kind}_units", units)

    def usage(self) -> Mapping[PartitionId, PartitionUsage]:
        """A snapshot of every partition's consumed units and throttles."""
        with self._lock:
            return {
                partition: PartitionUsage(
                    read_units=counts.get("read_units", 0.0),
                    write_units=counts.get("write_units", 0.0),
                    reads=int(counts.get("reads", 0)),
                    writes=int(counts.get("writes", 0)),
                    read_throttles=int(counts.get("read_throttles", 0)),
                    write_throttles=int(counts.get("write_throttles", 0)),
                )
                for partition, counts in self._usage.items()
            }
