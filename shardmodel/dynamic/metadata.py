"""The metadata table of dynamic shard counts: its item schema and its PynamoDB model.

One item per logical key, keyed like the main table (same partition key name, type S):

* ``number_of_shards`` (N): the count new writes spread over;
* ``last_updated`` (N): epoch seconds of the last change;
* ``shard_history`` (SS): ``"<epoch>:<count>"`` for every count the key has had that
  may still hold items. Readers read up to the largest count in it;
* ``announced`` (S, optional): ``"<epoch>:<count>"``, a growth announced ahead: from
  that epoch on, new writes spread over that count instead of ``number_of_shards``.
  The count is in ``shard_history`` from the announcement on, so every reader reads
  it before any writer writes there. Items without it (hand-written, or written
  before announcements) read as before.

The schema is a compatibility promise: a table created by hand with it works unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from attrs import field, frozen
from pynamodb.attributes import NumberAttribute, UnicodeAttribute, UnicodeSetAttribute
from pynamodb.models import Model

from shardmodel.errors import ShardMetadataError
from shardmodel.keyspace.strategies import MAX_SHARDS, ShardCount
from shardmodel.lean.context import AsyncAwareModel

__all__ = ["HistoryEntry", "ShardMetadata", "metadata_model"]

_WHOLE = re.compile(r"[0-9]+")


@frozen(order=True)
class HistoryEntry:
    """One ``shard_history`` entry: from ``epoch`` on, the key had ``count`` shards."""

    epoch: int
    count: int

    @classmethod
    def parse(
        cls, text: str, max_shards: int | None = None, key: str = "", name: str = "shard_history"
    ) -> HistoryEntry:
        """Read ``"<epoch>:<count>"`` (whole numbers, ``1 <= count <= max_shards``).

        Raises:
            ShardMetadataError: naming the key and the bad entry.
        """
        epoch, sep, count = text.partition(":")
        entry = None
        if sep and _WHOLE.fullmatch(epoch) and _WHOLE.fullmatch(count):
            entry = cls(int(epoch), int(count))
        top = max_shards if max_shards is not None else MAX_SHARDS
        if entry is None or not 1 <= entry.count <= top:
            where = f"metadata of key {key!r}: " if key else ""
            raise ShardMetadataError(
                f"{where}{name} entry {text!r} is not '<epoch>:<count>' with whole "
                f"numbers and a count from 1 to {top}; fix the metadata item (e.g. "
                "'1700000000:4')"
            )
        return entry

    def __str__(self) -> str:
        return f"{self.epoch}:{self.count}"


def _history(entries: Iterable[HistoryEntry]) -> tuple[HistoryEntry, ...]:
    return tuple(sorted(entries))


@frozen
class ShardMetadata:
    """One logical key's metadata item, as read.

    Attributes:
        logical_key: the logical partition key.
        number_of_shards: the count new writes spread over.
        last_updated: epoch seconds of the last change (the optimistic-lock value).
        history: every count that may still hold items, oldest first.
        announced: a growth announced ahead (from its epoch, writes spread over its
            count), or None.
    """

    logical_key: str
    number_of_shards: int
    last_updated: int
    history: tuple[HistoryEntry, ...] = field(converter=_history)
    announced: HistoryEntry | None = None

    @property
    def readable(self) -> int:
        """How many shards a read must touch: the largest count the key has had."""
        ahead = [self.announced.count] if self.announced is not None else []
        return max([self.number_of_shards, *ahead, *(e.count for e in self.history)])

    @property
    def latest(self) -> int:
        """The count writes spread over once any announced growth takes effect."""
        return self.announced.count if self.announced is not None else self.number_of_shards

    def live_at(self, now: float) -> int:
        """The count new writes spread over at epoch ``now``."""
        announced = self.announced
        if announced is not None and now >= announced.epoch:
            return announced.count
        return self.number_of_shards

    def pending_at(self, now: float) -> bool:
        """True while an announced growth has not taken effect yet."""
        return self.announced is not None and now < self.announced.epoch

    @property
    def count(self) -> ShardCount:
        """The counts a read needs (live: the latest count, readable: every shard)."""
        return ShardCount(live=self.latest, readable=self.readable)

    def count_at(self, now: float) -> ShardCount:
        """The counts a write at epoch ``now`` needs: live for writes, readable for reads."""
        return ShardCount(live=self.live_at(now), readable=self.readable)

    @property
    def grown(self) -> bool:
        """True once the count changed after the key's metadata was created."""
        return len(self.history) > 1

    @classmethod
    def from_item(cls, item: Model, max_shards: int | None = None) -> ShardMetadata:
        """Read a metadata model instance (hand-written items included), validated.

        Args:
            item: the metadata item.
            max_shards: the strategy's ``max_shards``: no count may exceed it.

        Raises:
            ShardMetadataError: naming the key and the field that breaks the rules.
        """
        logical = item.key  # type: ignore[attr-defined]
        top = max_shards if max_shards is not None else MAX_SHARDS
        count = _whole(logical, "number_of_shards", item.number_of_shards)  # type: ignore[attr-defined]
        if count is None or not 1 <= count <= top:
            raise ShardMetadataError(
                f"metadata of key {logical!r}: number_of_shards is "
                f"{item.number_of_shards!r}; it must be a whole number from 1 to {top} "  # type: ignore[attr-defined]
                "(the strategy's max_shards); fix the item in the metadata table"
            )
        updated = _whole(logical, "last_updated", item.last_updated)  # type: ignore[attr-defined]
        raw_history = item.shard_history or set()  # type: ignore[attr-defined]
        raw_announced = getattr(item, "announced", None)
        announced = None
        if raw_announced is not None:
            announced = HistoryEntry.parse(raw_announced, top, logical, "announced")
        return cls(
            logical_key=logical,
            number_of_shards=count,
            last_updated=updated or 0,
            history=[HistoryEntry.parse(text, top, logical) for text in raw_history],
            announced=announced,
        )


def _whole(logical: str, name: str, value: Any) -> int | None:
    """A metadata number that must be whole (``2.5`` is refused, never truncated)."""
    if value is None:
        return None
    number = Decimal(str(value))
    if not number.is_finite() or number != number.to_integral_value():
        raise ShardMetadataError(
            f"metadata of key {logical!r}: {name} is {value!r}, not a whole number; fix the "
            "item in the metadata table"
        )
    return int(number)


def metadata_model(name: str, table_name: str, hash_name: str, meta: Any) -> type[Model]:
    """A PynamoDB model of a metadata table; ``meta`` lends region, host and credentials.

    Args:
        name: the class name.
        table_name: the metadata table.
        hash_name: the main table's partition key name (the metadata key has the same).
        meta: the main model's ``Meta``.
    """
    settings: dict[str, Any] = {
        "table_name": table_name,
        "billing_mode": "PAY_PER_REQUEST",
    }
    for option in MIRRORED_META:
        if hasattr(meta, option):
            settings[option] = getattr(meta, option)
    namespace: dict[str, Any] = {
        "Meta": type("Meta", (), settings),
        "key": UnicodeAttribute(hash_key=True, attr_name=hash_name),
        "number_of_shards": NumberAttribute(),
        "last_updated": NumberAttribute(),
        "shard_history": UnicodeSetAttribute(null=True),
        "announced": UnicodeAttribute(null=True),
    }
    return type(name, (AsyncAwareModel,), namespace)


#: ``Meta`` options the metadata model copies from the main model (and follows later).
MIRRORED_META = (
    "region",
    "host",
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    "connect_timeout_seconds",
    "read_timeout_seconds",
    "max_retry_attempts",
    "base_backoff_ms",
    "max_pool_connections",
    "extra_headers",
)
