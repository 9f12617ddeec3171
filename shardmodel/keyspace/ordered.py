"""Ordered shards: a sorted key space split into contiguous ranges, read in order.

``OrderedShards(boundaries, on="title_key")`` puts an item on shard
``bisect(boundaries, normalize(value)) - 1`` of its ``on`` value, the sort key of the
table or index it shards. Shard ``i`` holds the values from ``boundaries[i]`` up to (not
including) ``boundaries[i + 1]``, so a listing reads the shards one after another and
concatenates them, already in order; a range condition reads only the shards its range
reaches.

Within a shard, DynamoDB orders items by the *stored* sort key. The global order is the
normalized order only when the stored sort key is the normalized value: declare the sort
key a :class:`NormalizedAttribute` (it stores the normalized form; keep the display form
in another attribute), or store normalized values yourself. A write whose stored sort key
is not normalized is refused.

Values that fill more than a shard on their own can be spread over sub-shards
(``overflow={"greatest hits": 3}``). Sub-shards are numbered after the last shard, in
the order of the ``overflow`` mapping: with 21 shards, ``"greatest hits"`` is written to
a random one of ``album#21``, ``album#22``, ``album#23``, and reads of its range merge
them with the shard whose range holds it.
"""

from __future__ import annotations

import bisect
import math
import random
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import evolve, field, frozen
from pynamodb.constants import STRING

from shardmodel.errors import ShardConfigurationError, ShardKeyError
from shardmodel.expressions.conditions import Prefix
from shardmodel.keyspace.normalization import (
    Normalize,
    code_points,
    default_normalize,
    normalized,
    normalized_all,
    same_text,
)
from shardmodel.keyspace.strategies import (
    MAX_SHARDS,
    KeyValues,
    Segment,
    TimeBounds,
    check_attributes_exist,
    check_numbered_separator,
    number_bytes,
)

__all__ = [
    "BoundaryWarning",
    "OrderedShards",
    "prefix_end",
]


def prefix_end(prefix: str) -> str | None:
    """The smallest string above every string that starts with ``prefix`` (None: none).

    Strings starting with ``prefix`` are exactly those in ``[prefix, prefix_end(prefix))``.
    """
    stripped = prefix.rstrip("\U0010ffff")
    if not stripped:
        return None
    following = ord(stripped[-1]) + 1
    if 0xD800 <= following <= 0xDFFF:  # surrogates are never stored: skip them
        following = 0xE000
    return stripped[:-1] + chr(following)


class BoundaryWarning(UserWarning):
    """``from_sample`` found values that fill more than a shard: boundaries repeat."""


def _to_boundaries(value: Any) -> tuple[str, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise ShardConfigurationError(
            f"OrderedShards(boundaries={value!r}): give a list of strings, the first ''; "
            "e.g. ['', 'g', 'n', 't'] for 4 shards (OrderedShards.from_sample computes them)"
        )
    return tuple(value)


def _to_overflow(value: Any) -> tuple[tuple[str, int], ...]:
    if value is None:
        return ()
    if isinstance(value, Mapping):
        return tuple(value.items())
    if isinstance(value, tuple) and all(isinstance(p, tuple) and len(p) == 2 for p in value):
        return value
    raise ShardConfigurationError(
        f"OrderedShards(overflow={value!r}): give a dict of normalized value to sub-shard "
        "count, e.g. overflow={'greatest hits': 3}"
    )


@frozen
class OrderedShards:
    """Contiguous ranges of the normalized ``on`` value: listings read shards in order.

    Args:
        boundaries: sorted, unique, normalized strings, the first ``''``: shard ``i`` holds
            the values from ``boundaries[i]`` to ``boundaries[i + 1]`` (excluded). A
            boundary that is its normalized value in another Unicode normal form (a
            precomposed ``'ö'`` pasted where normalize gives ``'o'`` and a combining
            mark) is normalized, then the order is checked; other differences are
            refused, naming the code points that differ.
        on: the sort key of the table or index this strategy shards (python name).
        normalize: applied to a value before its shard is looked up (default
            :func:`default_normalize`: lower-case then NFKD); ``None`` keeps values as is.
        overflow: normalized values that fill more than a shard on their own, each with
            its number of sub-shards; such values are written to a random sub-shard.
            For a global secondary index's key (where values repeat); a table's
            partition key refuses it.
    """

    boundaries: tuple[str, ...] = field(converter=_to_boundaries)
    on: str | None = None
    normalize: Normalize | None = default_normalize
    overflow: tuple[tuple[str, int], ...] = field(default=(), converter=_to_overflow)

    def __attrs_post_init__(self) -> None:
        if self.normalize is not None and not callable(self.normalize):
            raise ShardConfigurationError(
                f"OrderedShards(normalize={self.normalize!r}): give a function of a str to "
                "a str, or None to keep values as they are"
            )
        # text pasted in another Unicode normal form (a precomposed 'ö' where normalize
        # gives 'o' and a combining mark) is the same text: normalize it, then check it
        object.__setattr__(self, "boundaries", tuple(map(self._normal_form, self.boundaries)))
        self._check_boundaries()
        if self.on is not None and (not isinstance(self.on, str) or not self.on):
            raise ShardConfigurationError(
                f"OrderedShards(on={self.on!r}): name the sort key it orders by, e.g. "
                "on='title_key'"
            )
        overflow = tuple((self._normal_form(value), count) for value, count in self.overflow)
        object.__setattr__(self, "overflow", overflow)
        self._check_overflow()

    def _normal_form(self, value: Any) -> Any:
        """``value`` normalized when it is the same text in another Unicode normal form.

        Canonically equivalent strings (NFD-equal) look the same on screen; other
        differences (case, compatibility characters such as a ligature) are left for the
        checks to refuse, visibly.
        """
        if isinstance(value, str):
            normal = normalized(self.normalize, value)
            if normal != value and same_text(normal, value):
                return normal
        return value

    def _check_boundaries(self) -> None:
        bounds = self.boundaries
        name = "OrderedShards(boundaries=...)"
        if not bounds or bounds[0] != "":
            raise ShardConfigurationError(
                f"{name}: the first boundary must be '' (the smallest string), so every value "
                f"has a shard; got {bounds[:1]!r}: write ['', {', '.join(map(repr, bounds))}]"
            )
        for position, boundary in enumerate(bounds):
            if not isinstance(boundary, str):
                raise ShardConfigurationError(
                    f"{name}: boundary {position} is {boundary!r} ({type(boundary).__name__}); "
                    "boundaries are strings"
                )
            if position and boundary <= bounds[position - 1]:
                what = "repeats" if boundary == bounds[position - 1] else "is below"
                raise ShardConfigurationError(
                    f"{name}: boundary {position} {boundary!r} {what} boundary {position - 1} "
                    f"{bounds[position - 1]!r}; give them sorted and unique (sorted(set(...)))"
                )
            fixed = normalized(self.normalize, boundary)
            if fixed != boundary:
                raise ShardConfigurationError(
                    f"{name}: boundary {boundary!r} is not normalized (normalize gives "
                    f"{fixed!r}); stored values are normalized, so write {fixed!r} (they "
                    f"differ at {code_points(boundary, fixed)})"
                )
        if len(bounds) > MAX_SHARDS:
            raise ShardConfigurationError(
                f"{name}: {len(bounds)} boundaries make {len(bounds)} shards, over "
                f"{MAX_SHARDS}; use fewer"
            )

    def _check_overflow(self) -> None:
        total = len(self.boundaries)
        seen: set[str] = set()
        for value, count in self.overflow:
            name = f"OrderedShards(overflow={{{value!r}: {count!r}}})"
            if not isinstance(value, str) or normalized(self.normalize, value) != value:
                fixed = normalized(self.normalize, value) if isinstance(value, str) else None
                shown = f" (they differ at {code_points(value, fixed)})" if fixed else ""
                raise ShardConfigurationError(
                    f"{name}: overflow values are normalized strings; write {fixed!r}{shown}"
                )
            if value in seen:
                raise ShardConfigurationError(f"{name}: the value is given twice")
            seen.add(value)
            if isinstance(count, bool) or not isinstance(count, int) or count < 2:
                raise ShardConfigurationError(
                    f"{name}: give the number of sub-shards as an int of at least 2"
                )
            total += count
        if total > MAX_SHARDS:
            raise ShardConfigurationError(
                f"OrderedShards: {total} shards and sub-shards, over {MAX_SHARDS}; use fewer"
            )

    # -- building from a sample -------------------------------------------------------

    @classmethod
    def from_sample(
        cls,
        values: Iterable[str],
        shards: int,
        prefix: int = 20,
        on: str | None = None,
        normalize: Normalize | None = default_normalize,
    ) -> OrderedShards:
        """Boundaries that split a sample of ``on`` values into ``shards`` equal ranges.

        Normalize, sort, take every ``ceil(len / shards)``-th value cut to ``prefix``
        characters; the first boundary is ``''``. ``values`` may be any iterable of
        strings, a polars Series or a pyarrow array among them (nulls are skipped); for
        millions of values, :func:`shardmodel.ordered_sample.boundary_report` sorts a
        polars Series in polars. When one value fills more than a shard,
        boundaries repeat: they are kept once and a :class:`BoundaryWarning` names the
        values (give them ``overflow=`` sub-shards), so fewer shards come back.
        """
        if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= MAX_SHARDS:
            raise ShardConfigurationError(
                f"OrderedShards.from_sample(shards={shards!r}): give an int from 1 to {MAX_SHARDS}"
            )
        if isinstance(prefix, bool) or not isinstance(prefix, int) or prefix < 1:
            raise ShardConfigurationError(
                f"OrderedShards.from_sample(prefix={prefix!r}): give the boundary length in "
                "characters, at least 1 (default 20)"
            )
        # a column's missing values (pyarrow's and polars' nulls) hold no key: dropped; a
        # None in a list is refused below like any other value that is no string
        if hasattr(values, "to_pylist"):  # a pyarrow array: its items are arrow scalars
            values = [value for value in values.to_pylist() if value is not None]
        elif hasattr(values, "drop_nulls"):  # a polars Series
            values = values.drop_nulls()
        ordered = normalized_all(normalize, _sample_strings(values))
        ordered.sort()
        cuts = sample_cuts(ordered, shards, prefix, normalize)
        if cuts.repeated:
            warnings.warn(
                f"OrderedShards.from_sample: {len(cuts.repeated)} value(s) fill more than a "
                f"shard on their own ({', '.join(map(repr, cuts.repeated[:5]))}); their "
                f"boundaries repeat and are kept once, giving {len(cuts.boundaries)} shards "
                f"of the {shards} asked; spread them with overflow={{value: sub-shards}}",
                BoundaryWarning,
                stacklevel=2,
            )
        return cls(cuts.boundaries, on=on, normalize=normalize)

    # -- the protocol -------------------------------------------------------------------

    @property
    def shard_count(self) -> int:
        """The number of ranges (shards), sub-shards not counted."""
        return len(self.boundaries)

    @property
    def total_shards(self) -> int:
        """Shards plus the sub-shards of every overflow value."""
        return len(self.boundaries) + sum(count for _, count in self.overflow)

    @property
    def attributes(self) -> tuple[str, ...]:
        return () if self.on is None else (self.on,)

    @property
    def deterministic(self) -> bool:
        return not self.overflow

    @property
    def ordered(self) -> bool:
        return True

    def check(self, model_name: str, attributes: Mapping[str, Any], separator: str) -> None:
        if self.on is None:
            raise ShardConfigurationError(
                f"{model_name}: OrderedShards(on=None) does not name the sort key it orders "
                "by; pass on='<sort key>' (or evolve a from_sample result: "
                "attrs.evolve(strategy, on='title_key'))"
            )
        check_attributes_exist("OrderedShards(on=...)", model_name, (self.on,), attributes)
        if attributes[self.on].attr_type != STRING:
            raise ShardConfigurationError(
                f"{model_name}: OrderedShards(on={self.on!r}) orders strings, and {self.on!r} "
                f"is a {type(attributes[self.on]).__name__}; order by a string sort key"
            )
        check_numbered_separator("OrderedShards", model_name, separator)

    def segment_bytes(self, first_shard: int) -> int:
        return number_bytes(self.total_shards, first_shard)

    def shard_of(self, value: str) -> int:
        """The shard of a value: ``bisect(boundaries, normalize(value)) - 1``."""
        return bisect.bisect(self.boundaries, normalized(self.normalize, value)) - 1

    def sub_shards(self, value: str) -> range:
        """The sub-shard numbers of a normalized overflow value (empty for other values)."""
        start = len(self.boundaries)
        for candidate, count in self.overflow:
            if candidate == value:
                return range(start, start + count)
            start += count
        return range(0)

    def group_of(self, segment: Segment) -> int:
        """The shard a segment's items sort with: a sub-shard's is its value's shard."""
        number = int(segment)
        if number < len(self.boundaries):
            return number
        start = len(self.boundaries)
        for value, count in self.overflow:
            if number < start + count:
                return self.shard_of(value)
            start += count
        raise ShardKeyError(f"OrderedShards: segment {segment!r} is no shard of this layout")

    def _stored(self, key: KeyValues) -> str | None:
        value = key.canonical.get(self.on or "")
        return None if value is None else str(value)

    def pick(self, key: KeyValues, rng: random.Random) -> Segment:
        stored = self._stored(key)
        if stored is None:
            raise ShardKeyError(
                f"OrderedShards(on={self.on!r}): attribute {self.on!r} has no value; set "
                f"{self.on} before saving, the shard is computed from it"
            )
        fixed = normalized(self.normalize, stored)
        if fixed != stored:
            raise ShardKeyError(
                f"OrderedShards(on={self.on!r}): the sort key {stored[:60]!r} is not "
                f"normalized (normalize gives {fixed[:60]!r}); DynamoDB orders a shard by the "
                "stored sort key, so listings come back in normalized order only when the "
                f"stored value is normalized: declare {self.on} as "
                "NormalizedAttribute(range_key=True) (display form in another attribute), or "
                "store the normalized value"
            )
        subs = self.sub_shards(stored)
        if subs:
            return rng.choice(subs)
        return bisect.bisect(self.boundaries, stored) - 1

    def _holding(self, value: str) -> list[Segment]:
        subs = self.sub_shards(value)
        home = bisect.bisect(self.boundaries, value) - 1
        # the home shard too: items stored before the value got sub-shards stay there
        return [home, *subs]

    def candidates(self, key: KeyValues) -> Sequence[Segment]:
        stored = self._stored(key)
        if stored is None:
            return range(self.total_shards)
        return self._holding(stored)

    def query_candidates(self, key: KeyValues, bounds: Mapping[str, TimeBounds]) -> list[Segment]:
        """The shards (and sub-shards) whose ranges can hold a match, in ascending order."""
        stored = self._stored(key)
        if stored is not None:
            return self._holding(stored)
        lower, upper = bounds.get(self.on or "", (None, None))
        high: str | None = None
        inclusive = True
        if isinstance(lower, Prefix):
            high, inclusive = prefix_end(lower), False
        elif upper is not None:
            high = str(upper)
        low = "" if lower is None else str(lower)
        if high is not None and (high < low or (high == low and not inclusive)):
            return []
        first = bisect.bisect(self.boundaries, low) - 1
        if high is None:
            last = len(self.boundaries) - 1
        elif inclusive:
            last = bisect.bisect(self.boundaries, high) - 1
        else:
            last = bisect.bisect_left(self.boundaries, high) - 1
        found: list[Segment] = []
        for shard in range(first, last + 1):
            found.append(shard)
            for value, _ in self.overflow:
                in_range = value >= low and (
                    high is None or value < high or (inclusive and value == high)
                )
                if in_range and bisect.bisect(self.boundaries, value) - 1 == shard:
                    found.extend(self.sub_shards(value))
        return found

    def with_on(self, on: str) -> OrderedShards:
        """This strategy ordering by ``on`` (e.g. after :meth:`from_sample`)."""
        return evolve(self, on=on)


def _sample_strings(values: Any) -> list[str]:
    """The sample as a list, each value checked to be a str (what a string key holds)."""
    where = "OrderedShards.from_sample(values=...)"
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise ShardConfigurationError(
            f"{where}: give a list of the sort key's values (strings), not {values!r:.60}"
        )
    sample = list(values)
    for position, value in enumerate(sample):
        if not isinstance(value, str):
            raise ShardConfigurationError(
                f"{where}: value {position} is {value!r:.60} ({type(value).__name__}); "
                "OrderedShards orders a string sort key: pass a sample of its values, strings"
            )
    return sample


@frozen
class SampleCuts:
    """Boundaries cut from a sorted, normalized sample, and what did not fit.

    Attributes:
        boundaries: the unique boundaries, first ``''``.
        repeated: values whose cut repeated the previous boundary (overflow candidates).
        sizes: items of the sample per shard of ``boundaries``.
    """

    boundaries: tuple[str, ...]
    repeated: tuple[str, ...]
    sizes: tuple[int, ...]


def sample_cuts(
    ordered: Sequence[str], shards: int, prefix: int, normalize: Normalize | None
) -> SampleCuts:
    """Every ``ceil(len / shards)``-th value of a sorted sample, cut to ``prefix`` chars."""
    step = max(1, math.ceil(len(ordered) / shards))
    boundaries = [""]
    repeated: list[str] = []
    for position in range(step, len(ordered), step):
        cut = normalized(normalize, ordered[position][:prefix])
        if cut <= boundaries[-1]:
            if ordered[position] not in repeated:
                repeated.append(ordered[position])
            continue
        boundaries.append(cut)
    sizes = [0] * len(boundaries)
    previous = 0
    for shard in range(len(boundaries)):
        end = (
            bisect.bisect_left(ordered, boundaries[shard + 1])
            if shard + 1 < len(boundaries)
            else len(ordered)
        )
        sizes[shard] = end - previous
        previous = end
    return SampleCuts(tuple(boundaries), tuple(repeated), tuple(sizes))
