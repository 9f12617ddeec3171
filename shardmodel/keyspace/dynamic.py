"""DynamicShards: a strategy whose shard count per key grows, kept in a metadata table."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from attrs import field, frozen

from shardmodel.core.times import Clock, SystemClock
from shardmodel.errors import ShardConfigurationError
from shardmodel.keyspace.strategies import (
    MAX_SHARDS,
    KeyValues,
    Segment,
    ShardCount,
    TimeBounds,
    check_numbered_separator,
    number_bytes,
)

__all__ = [
    "DEFAULT_CLOCK_MARGIN",
    "DEFAULT_READER_CACHE",
    "PACES",
    "DynamicShards",
    "ShardChange",
]


#: Seconds a reader reuses a key's metadata by default. One strong read of the item per
#: key, process and window: a process at any read rate costs the item 0.5 RCU a second,
#: so 6,000 processes reading one key stay under a partition's 3,000 RCU; and a growth
#: takes effect this long (plus the clock margin) after it is announced, well inside
#: the default write backoff (about 5.6 s of waits), so throttled writes wait for it.
DEFAULT_READER_CACHE = 2.0
#: Seconds a growth's effective time is put beyond the reader cache window, for clocks
#: of the fleet that disagree (NTP keeps hosts within milliseconds; Amazon Time Sync
#: within a millisecond) and for the announcing update's own time on the wire.
DEFAULT_CLOCK_MARGIN = 1.0
#: How a key's growths are paced (see ``DynamicShards(pace=...)``).
PACES = ("fixed", "history")
#: The most growths of a streak that speed the next one: factor at most cubed, cooldown
#: at least a quarter.
_MOST_STREAK = 2


@frozen
class ShardChange:
    """A change of a dynamic key's shard count, as passed to ``DynamicShards(on_change=...)``.

    Attributes:
        kind: ``"grow"`` (throttling, or ``grow_shards``), ``"shrink"`` or ``"prune"``
            (a compaction emptied the retired shards and dropped them from the history).
        table: the main table.
        logical_key: the key whose count changed.
        old_count: the count before.
        new_count: the count after.
        at: epoch seconds of the change.
    """

    kind: Literal["grow", "shrink", "prune"]
    table: str
    logical_key: str
    old_count: int
    new_count: int
    at: int


def _positive_number(name: str, value: Any, allow_zero: bool = True) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        least = "0 or more" if allow_zero else "more than 0"
        raise ShardConfigurationError(
            f"DynamicShards({name}={value!r}): give a number of seconds, {least}"
        )


@frozen
class DynamicShards:
    """Start every key at one shard; grow a key's count when its partition throttles.

    Each logical key's count lives in a metadata table (see :mod:`shardmodel.dynamic.metadata`),
    so every writer and reader agrees. Writers spread over the live count; readers read
    every shard up to the largest count in the key's history.

    Args:
        table_name: the metadata table (default: the main table's name + ``-shards``).
        cooldown: seconds after a change during which a key does not grow again.
        growth_factor: a growth multiplies the count by this (rounded up) ...
        growth_step: ... and adds at least this many shards.
        max_shards: the largest count a key grows to.
        jitter: the most seconds a writer waits (at random) before growing, so racing
            writers see each other's growth instead of all trying.
        writer_cache_seconds: how long a writer reuses a key's metadata (0: read it on
            every new item). A stale count only spreads writes less.
        reader_cache_seconds: how long a reader reuses a key's metadata (read strongly
            consistent, once per window however many threads or coroutines ask). A
            growth is announced this long plus ``clock_margin_seconds`` ahead, so a
            cached reader never misses a shard. 0 (or None) reads the metadata on every
            read and makes growths take effect at once. Every process of a table must
            use the same value (or less): the grower's sets the wait.
        clock_margin_seconds: how far the clocks of the processes writing a table may
            disagree (plus the announcing update's time on the wire); added to the
            reader cache window before a growth takes effect.
        pace: ``"fixed"`` (default): every growth multiplies by ``growth_factor`` after
            ``cooldown``. ``"history"``: a growth that follows earlier ones closely (each
            within two cooldowns of the next, the last within two cooldowns of now) is
            a spike still rising: its factor is ``growth_factor`` to the power of one
            more than those growths (at most the cube) and the cooldown after it is
            halved for each (at most a quarter). A key that grew once, long ago, grows
            as with ``"fixed"``. See "How a key grows" in the docs for a measured spike.
        clock: epoch seconds and sleeping (inject a simulated clock in tests).
        on_change: called with a :class:`ShardChange` after every grow, shrink or prune.
    """

    table_name: str | None = None
    cooldown: float = 60.0
    growth_factor: float = 2.0
    growth_step: int = 1
    max_shards: int = 100
    jitter: float = 0.5
    writer_cache_seconds: float = 5.0
    reader_cache_seconds: float | None = DEFAULT_READER_CACHE
    clock_margin_seconds: float = DEFAULT_CLOCK_MARGIN
    pace: str = "fixed"
    clock: Clock = field(factory=SystemClock, eq=False)
    on_change: Callable[[ShardChange], None] | None = field(default=None, eq=False)

    def __attrs_post_init__(self) -> None:
        if self.table_name is not None and (
            not isinstance(self.table_name, str) or not self.table_name
        ):
            raise ShardConfigurationError(
                f"DynamicShards(table_name={self.table_name!r}): give a table name, or leave "
                "it out for '<main table>-shards'"
            )
        _positive_number("cooldown", self.cooldown)
        _positive_number("jitter", self.jitter)
        _positive_number("writer_cache_seconds", self.writer_cache_seconds)
        if self.reader_cache_seconds is not None:
            _positive_number("reader_cache_seconds", self.reader_cache_seconds)
        _positive_number("clock_margin_seconds", self.clock_margin_seconds)
        if not isinstance(self.growth_factor, int | float) or self.growth_factor < 1:
            raise ShardConfigurationError(
                f"DynamicShards(growth_factor={self.growth_factor!r}): give a number of at "
                "least 1 (2 doubles the count on each growth)"
            )
        if isinstance(self.growth_step, bool) or not isinstance(self.growth_step, int):
            raise ShardConfigurationError(
                f"DynamicShards(growth_step={self.growth_step!r}): give an int, e.g. 1"
            )
        if self.growth_step < 0 or (self.growth_step == 0 and self.growth_factor == 1):
            raise ShardConfigurationError(
                f"DynamicShards(growth_factor={self.growth_factor}, growth_step="
                f"{self.growth_step}): a growth must add shards; use growth_step >= 1 or "
                "growth_factor > 1"
            )
        if self.pace not in PACES:
            raise ShardConfigurationError(
                f"DynamicShards(pace={self.pace!r}): give 'fixed' (every growth alike) or "
                "'history' (growths close after growths go faster)"
            )
        bad = isinstance(self.max_shards, bool) or not isinstance(self.max_shards, int)
        if bad or not 1 <= self.max_shards <= MAX_SHARDS:
            raise ShardConfigurationError(
                f"DynamicShards(max_shards={self.max_shards!r}): give an int between 1 and "
                f"{MAX_SHARDS}: the most shards a hot key may grow to"
            )

    @property
    def reader_cache(self) -> float:
        """Seconds a reader reuses a key's metadata (0: none)."""
        return float(self.reader_cache_seconds or 0)

    @property
    def settle_seconds(self) -> float:
        """Seconds from a growth's announcement to its effect: every cached reader has
        read it by then (0 without a reader cache: readers read it on every read)."""
        cache = self.reader_cache
        return cache + self.clock_margin_seconds if cache > 0 else 0.0

    def grown(self, count: int, streak: int = 0) -> int:
        """The count after one growth from ``count`` (at most ``max_shards``).

        ``streak``: the growths just before it (see :meth:`streak`); with
        ``pace="history"`` each raises the factor by a power.
        """
        power = 1 + (min(streak, _MOST_STREAK) if self.pace == "history" else 0)
        factor = -(-count * self.growth_factor**power // 1)  # ceil without float surprises
        return min(self.max_shards, max(int(factor), count + self.growth_step))

    def cooldown_after(self, streak: int) -> float:
        """Seconds after a growth before the next: halved per growth of a streak
        (``pace="history"``, at most to a quarter)."""
        if self.pace != "history":
            return self.cooldown
        return float(self.cooldown) / 2.0 ** min(streak, _MOST_STREAK)

    def streak(self, growths: Sequence[float], now: float) -> int:
        """How many growths, ending with the last of ``growths`` (epochs, oldest first),
        followed each other within two cooldowns, the last within two cooldowns of
        ``now`` (0: none, or the last is older)."""
        window = 2 * self.cooldown
        if not growths or now - growths[-1] > window:
            return 0
        streak = 1
        for earlier, later in zip(reversed(growths[:-1]), reversed(growths[1:]), strict=True):
            if later - earlier > window:
                break
            streak += 1
        return streak

    @property
    def attributes(self) -> tuple[str, ...]:
        return ()

    @property
    def deterministic(self) -> bool:
        return False

    @property
    def ordered(self) -> bool:
        return False

    def check(self, model_name: str, attributes: Mapping[str, Any], separator: str) -> None:
        check_numbered_separator("DynamicShards", model_name, separator)

    def segment_bytes(self, first_shard: int) -> int:
        return number_bytes(self.max_shards, first_shard)

    def _counts(self, key: KeyValues) -> ShardCount:
        if key.shards is None:
            raise ShardConfigurationError(
                f"DynamicShards: no shard count for key {key.logical_key!r}; a dynamic key "
                "is read through its model (ShardedModel), which looks the count up"
            )
        return key.shards

    def pick(self, key: KeyValues, rng: random.Random) -> Segment:
        return rng.randrange(self._counts(key).live)

    def candidates(self, key: KeyValues) -> Sequence[Segment]:
        return range(self._counts(key).readable)

    def query_candidates(self, key: KeyValues, bounds: Mapping[str, TimeBounds]) -> list[Segment]:
        return list(range(self._counts(key).readable))
