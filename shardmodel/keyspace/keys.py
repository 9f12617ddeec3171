"""The physical key format: how a logical key and strategy segments become one string.

The format is a compatibility promise: data written by one version must stay readable
by the next. With the defaults a key is ``<logical>#<segment>#<segment>...``; the
separator, the first shard number and whether segments lead (``placement="prefix"``)
are settable, so tables laid out by hand can be read and written.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Sequence
from typing import Literal

from attrs import field, frozen

from shardmodel.errors import ShardConfigurationError, ShardKeyError
from shardmodel.keyspace.strategies import KeyValues, Segment, ShardStrategy

__all__ = ["MAX_PARTITION_KEY_BYTES", "KeyLayout", "PhysicalKey", "Placement"]

#: DynamoDB's limit on a partition key value, in UTF-8 bytes.
MAX_PARTITION_KEY_BYTES = 2048

#: Where the segments go: after the logical key, before it, or alone (a time series'
#: partition key ``7#2023-10-27T15`` holds no entity: it is in the sort key).
Placement = Literal["suffix", "prefix", "segments"]


class PhysicalKey(str):
    """A partition key value as stored, passed where a logical key is expected.

    ``Model.get(PhysicalKey("user-1#3"), ...)`` reads exactly that shard; transactions
    use it to name one item of a random-sharded model.
    """

    __slots__ = ()


def _to_strategies(value: ShardStrategy | Sequence[ShardStrategy]) -> tuple[ShardStrategy, ...]:
    if isinstance(value, ShardStrategy | type):
        return (value,)
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ShardConfigurationError(
            f"strategy={value!r}: pass a strategy such as RandomShards(10), or a list of them"
        )
    return tuple(value)


@frozen
class KeyLayout:
    """Composes and splits physical keys for one sharded key attribute.

    Attributes:
        strategies: the strategies, one key segment each, left to right.
        separator: the string between the logical key and each segment.
        first_shard: the number written for shard 0 (1 for tables numbered ``_1`` … ``_10``).
        placement: ``"suffix"`` (``user#3``) or ``"prefix"`` (``3#user``).
    """

    strategies: tuple[ShardStrategy, ...] = field(converter=_to_strategies)
    separator: str = "#"
    first_shard: int = 0
    placement: Placement = "suffix"

    def __attrs_post_init__(self) -> None:
        if not self.strategies:
            raise ShardConfigurationError(
                "strategy=[]: give at least one strategy, e.g. RandomShards(10)"
            )
        for strategy in self.strategies:
            if isinstance(strategy, type):
                raise ShardConfigurationError(
                    f"strategy={strategy.__name__}: pass an instance, not the class; write "
                    f"{strategy.__name__}(10) for 10 shards (see the strategies page for the "
                    "arguments of each)"
                )
            if not isinstance(strategy, ShardStrategy):
                raise ShardConfigurationError(
                    f"strategy={strategy!r}: not a sharding strategy; use RandomShards, "
                    "HashShards or TimeBuckets"
                )
        if not isinstance(self.separator, str) or not self.separator:
            raise ShardConfigurationError(
                f"separator={self.separator!r}: give a non-empty string such as '#' or '_'"
            )
        if isinstance(self.first_shard, bool) or not isinstance(self.first_shard, int):
            raise ShardConfigurationError(
                f"first_shard={self.first_shard!r}: give an int, 0 (default) or 1"
            )
        if self.first_shard < 0:
            raise ShardConfigurationError(
                f"first_shard={self.first_shard}: shard numbers cannot be negative; use 0 or 1"
            )
        if self.placement not in ("suffix", "prefix", "segments"):
            raise ShardConfigurationError(
                f"placement={self.placement!r}: use 'suffix' (user#3) or 'prefix' (3#user)"
            )

    @property
    def attributes(self) -> tuple[str, ...]:
        """Every attribute name the strategies read."""
        return tuple(dict.fromkeys(a for s in self.strategies for a in s.attributes))

    @property
    def deterministic(self) -> bool:
        """True when an item's values alone decide its physical key."""
        return all(s.deterministic for s in self.strategies)

    def segment_text(self, segment: Segment) -> str:
        """The text a segment takes in the key."""
        if isinstance(segment, int):
            return str(segment + self.first_shard)
        return segment

    def join(self, logical_key: str, segments: Sequence[Segment]) -> str:
        """Join a logical key and its segments into a physical key (unchecked)."""
        parts = [self.segment_text(s) for s in segments]
        if self.placement == "suffix":
            return self.separator.join([logical_key, *parts])
        if self.placement == "segments":
            return self.separator.join(parts)
        return self.separator.join([*parts, logical_key])

    def longest_key_bytes(self, logical_key: str) -> int:
        """The UTF-8 size of the longest physical key this layout can give ``logical_key``."""
        widest = sum(
            len(self.separator.encode("utf-8")) + s.segment_bytes(self.first_shard)
            for s in self.strategies
        )
        return len(logical_key.encode("utf-8")) + widest

    def check_length(self, logical_key: str) -> None:
        """Refuse a logical key whose longest physical key would pass DynamoDB's limit.

        Checked against the longest key any shard can get, so a key either fits on every
        shard or is refused before its first write.
        """
        size = self.longest_key_bytes(logical_key)
        if size > MAX_PARTITION_KEY_BYTES:
            excess = size - MAX_PARTITION_KEY_BYTES
            raise ShardKeyError(
                f"logical key {logical_key[:40]!r}... makes physical keys of up to {size} "
                f"bytes on this layout, over DynamoDB's {MAX_PARTITION_KEY_BYTES}-byte "
                f"partition key limit; shorten the logical key by at least {excess} bytes"
            )

    def compose(self, logical_key: str, segments: Sequence[Segment]) -> str:
        """A physical key to write: length-checked, and split back to the same parts.

        Raises:
            ShardKeyError: if the key could be too long on some shard, or the logical key
                and separator make a key that splits back differently.
        """
        self.check_length(logical_key)
        physical = self.join(logical_key, segments)
        texts = tuple(self.segment_text(s) for s in segments)
        logical = "" if self.placement == "segments" else logical_key
        if self.split(physical) != (logical, texts):
            raise ShardKeyError(
                f"logical key {logical_key[:40]!r} with separator {self.separator!r} makes "
                f"the key {physical[:60]!r}, which does not split back into the same logical "
                "key and segments; avoid the separator at the end or start of the key"
            )
        return physical

    def readable(self, logical_key: str, segments: Sequence[Segment]) -> str | None:
        """A physical key to read, or None when it is too long to exist in DynamoDB."""
        physical = self.join(logical_key, segments)
        if len(physical.encode("utf-8")) > MAX_PARTITION_KEY_BYTES:
            return None
        return physical

    def candidate_segments(self, key: KeyValues) -> list[Sequence[Segment]]:
        """Each strategy's segments a read of this item by full key touches.

        Their product's size is the read's fan-out, known before any key is composed.
        """
        return [s.candidates(key) for s in self.strategies]

    def split(self, physical_key: str) -> tuple[str, tuple[str, ...]]:
        """Split a physical key into its logical key and segment texts.

        Raises:
            ShardKeyError: if the key does not have this layout's segments.
        """
        count = len(self.strategies)
        if self.placement == "segments":
            pieces = ["", *physical_key.split(self.separator, count - 1)]
            logical, segments = "", pieces[1:]
        elif self.placement == "suffix":
            pieces = physical_key.rsplit(self.separator, count)
            logical, segments = pieces[0], pieces[1:]
        else:
            pieces = physical_key.split(self.separator, count)
            logical, segments = pieces[-1], pieces[:-1]
        if len(pieces) != count + 1:
            raise ShardKeyError(
                f"stored key {physical_key!r} has no {count} segment(s) separated by "
                f"{self.separator!r}; was it written by this model's layout?"
            )
        return logical, tuple(segments)

    def looks_physical(self, key: str) -> str | None:
        """The logical key ``key`` belongs to if it reads as one of this layout's physical
        keys (every segment a shard number the strategy writes), else None.

        A hint only: logical keys may hold the separator (``org#3`` is a valid logical
        key), so this never refuses a key; it names a likely mistake when a read of
        ``key`` finds nothing (a key copied from the table, as the console shows it).
        """
        if self.separator not in key:
            return None
        try:
            logical, segments = self.split(key)
        except ShardKeyError:
            return None
        for strategy, text in zip(self.strategies, segments, strict=True):
            if not text.isdigit():
                return None
            count = getattr(strategy, "n", None)
            if isinstance(count, int) and not 0 <= int(text) - self.first_shard < count:
                return None
        return logical or None

    def logical_key(self, physical_key: str) -> str:
        """The logical key a physical key belongs to."""
        count = len(self.strategies)  # fast path: this runs for every item loaded
        if self.placement == "suffix":
            pieces = physical_key.rsplit(self.separator, count)
            if len(pieces) == count + 1:
                return pieces[0]
        return self.split(physical_key)[0]

    def pick(self, key: KeyValues, rng: random.Random) -> str:
        """The physical key a new write of this item goes to."""
        return PhysicalKey(
            self.compose(key.logical_key, [s.pick(key, rng) for s in self.strategies])
        )

    def expand(
        self, logical_key: str, per_strategy: Sequence[Sequence[Segment]]
    ) -> Iterator[tuple[tuple[int, ...], list[Segment], str]]:
        """Every key of one segment per strategy, in shard order: (positions, segments, key).

        The one enumeration of keys: every read's keys come from it. Keys too long for
        DynamoDB are left out: no item can be stored under them.
        """
        for combo in itertools.product(*(range(len(c)) for c in per_strategy)):
            segments = [per_strategy[i][j] for i, j in enumerate(combo)]
            physical = self.readable(logical_key, segments)
            if physical is not None:
                yield combo, segments, physical

    def candidates(
        self, key: KeyValues, segments: Sequence[Sequence[Segment]] | None = None
    ) -> list[str]:
        """Every physical key a read of this item by full key must touch, in shard order.

        ``segments``: :meth:`candidate_segments` when already computed.
        """
        per_strategy = self.candidate_segments(key) if segments is None else segments
        return [physical for _, _, physical in self.expand(key.logical_key, per_strategy)]

    def repick(self, key: KeyValues, existing: str, rng: random.Random) -> str:
        """The physical key a re-save of a stored item goes to: its own shard.

        Random segments are kept; deterministic ones are recomputed and must agree, so
        a re-save never leaves a copy of the item on another shard.

        Raises:
            ShardKeyError: if the item's ``on`` values changed so it would move shard.
        """
        _, stored = self.split(existing)
        segments: list[Segment] = []
        for strategy, text in zip(self.strategies, stored, strict=True):
            if not strategy.deterministic and not strategy.attributes:
                segments.append(text)
                continue
            if strategy.deterministic:
                fresh = self.segment_text(strategy.pick(key, rng))
            else:  # random among the segments the values allow (OrderedShards overflow)
                allowed = [self.segment_text(c) for c in strategy.candidates(key)]
                fresh = text if text in allowed else allowed[0]
            if fresh != text:
                names = ", ".join(strategy.attributes)
                raise ShardKeyError(
                    f"changing {names} moves this item from {existing!r} to segment {fresh!r}, "
                    "which would leave the old copy behind; delete() it and save a new item"
                )
            segments.append(text)
        return PhysicalKey(self.compose(key.logical_key, segments))
