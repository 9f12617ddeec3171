"""Sharding strategies: small immutable value objects that each decide one key segment.

A strategy answers two questions for one logical key:

* ``pick``: which segment a write goes to;
* ``candidates``: which segments a read by full key must touch.

Strategies compose left to right into the key suffix (see :mod:`shardmodel.keyspace.keys`).
Adding a strategy touches only this module.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from attrs import field, frozen

from shardmodel.errors import (
    ShardConfigurationError,
    ShardKeyError,
)

__all__ = [
    "MAX_QUERY_BUCKETS",
    "MAX_SHARDS",
    "ONE_SHARD",
    "HashShards",
    "KeyValues",
    "RandomShards",
    "Segment",
    "ShardCount",
    "ShardFunction",
    "ShardStrategy",
    "TimeBounds",
    "check_attributes_exist",
    "check_count",
    "check_numbered_separator",
    "number_bytes",
]

#: The largest shard count a numbered strategy accepts. A read by full key of a
#: random-sharded item reads every shard, and BatchGetItem takes 100 keys per call.
MAX_SHARDS = 1000

#: A segment is a shard number (formatted with the layout's first shard) or a label.
Segment = int | str

#: Lower and upper bound (either may be None) a query puts on one attribute.
TimeBounds = tuple[Any, Any]

#: The most time buckets a query's range is enumerated to; far above any request bound
#: (see :mod:`shardmodel.request_bound`), it keeps a wild range from running for minutes.
MAX_QUERY_BUCKETS = 100_000


@frozen
class ShardCount:
    """A dynamic key's shard counts: ``live`` for new writes, ``readable`` for reads.

    ``readable`` is at least ``live``: after a shrink, reads keep touching the retired
    shards until a compaction has moved their items.
    """

    live: int
    readable: int


#: The counts of a key with no metadata item yet: one shard, nothing written elsewhere.
ONE_SHARD = ShardCount(live=1, readable=1)


@frozen
class KeyValues:
    """What a strategy may look at: the logical key and the item's known attribute values.

    Attributes:
        logical_key: the logical partition key the application uses.
        values: python values by attribute name; absent names are unknown.
        canonical: the same values as stable strings (DynamoDB's serialized form),
            the input of hashing.
        shards: a dynamic key's counts, read from the metadata table (None otherwise).
    """

    logical_key: str
    values: Mapping[str, Any]
    canonical: Mapping[str, str]
    shards: ShardCount | None = None


@runtime_checkable
class ShardStrategy(Protocol):
    """The protocol every strategy implements."""

    @property
    def attributes(self) -> tuple[str, ...]:
        """Names of the model attributes the strategy reads (beyond the logical key)."""
        ...

    @property
    def deterministic(self) -> bool:
        """True when the item's values alone decide the segment (no randomness)."""
        ...

    def check(self, model_name: str, attributes: Mapping[str, Any], separator: str) -> None:
        """Raise :class:`ShardConfigurationError` if the strategy cannot work on this model.

        That includes a ``separator`` with a character a segment can contain: the key
        could not be split back into its logical key and segments.
        """
        ...

    def segment_bytes(self, first_shard: int) -> int:
        """The most UTF-8 bytes a segment of this strategy takes in a key."""
        ...

    def pick(self, key: KeyValues, rng: random.Random) -> Segment:
        """The segment a write of this item goes to."""
        ...

    def candidates(self, key: KeyValues) -> Sequence[Segment]:
        """Every segment a read of this item by full key must touch."""
        ...

    @property
    def ordered(self) -> bool:
        """True when segments split the sort order (read them one after another).

        An ordered strategy whose several segments share one range of the order may
        define ``group_of(segment) -> int``: segments of one group are merged, groups
        are read in ascending order (OrderedShards' overflow sub-shards).
        """
        ...

    def query_candidates(self, key: KeyValues, bounds: Mapping[str, TimeBounds]) -> list[Segment]:
        """Every segment a query must read, in ascending order of time for ordered ones.

        Args:
            key: the logical key and the values the query fixes by equality.
            bounds: the lower and upper time bounds a query puts on attributes.
        """
        ...


def check_count(name: str, n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int):
        raise ShardConfigurationError(
            f"{name}(n={n!r}): the shard count must be an int; write {name}(10) for 10 shards"
        )
    if not 1 <= n <= MAX_SHARDS:
        raise ShardConfigurationError(
            f"{name}(n={n}): the shard count must be between 1 and {MAX_SHARDS}; "
            "pick the count from your peak load (peak WCU / 1,000 per partition)"
        )


def check_numbered_separator(strategy: str, model_name: str, separator: str) -> None:
    """Shard numbers are digits: a separator holding one could not be split off again."""
    if any(ch.isdigit() for ch in separator):
        raise ShardConfigurationError(
            f"{model_name}: separator {separator!r} contains a digit, and {strategy} writes "
            "shard numbers, so stored keys could not be split back into logical key and "
            "shard; use a separator without digits, such as '#' or '_'"
        )


def number_bytes(count: int, first_shard: int) -> int:
    """Bytes of the widest shard number of ``count`` shards numbered from ``first_shard``."""
    return len(str(count - 1 + first_shard))


def check_attributes_exist(
    strategy: str, model_name: str, names: Sequence[str], attributes: Mapping[str, Any]
) -> None:
    for name in names:
        if name not in attributes:
            known = ", ".join(sorted(attributes))
            raise ShardConfigurationError(
                f"{model_name}: {strategy} reads attribute {name!r}, which the model does not "
                f"define; use one of: {known}"
            )


@frozen
class RandomShards:
    """Write to a uniformly random shard of ``n``; a read by full key reads all ``n``.

    Suits append-only items (events, logs): two saves of the same logical item may land
    on different shards. Use :class:`HashShards` when items are overwritten.
    """

    n: int

    def __attrs_post_init__(self) -> None:
        check_count("RandomShards", self.n)

    @property
    def attributes(self) -> tuple[str, ...]:
        return ()

    @property
    def deterministic(self) -> bool:
        return False

    def check(self, model_name: str, attributes: Mapping[str, Any], separator: str) -> None:
        check_numbered_separator("RandomShards", model_name, separator)

    def segment_bytes(self, first_shard: int) -> int:
        return number_bytes(self.n, first_shard)

    def pick(self, key: KeyValues, rng: random.Random) -> Segment:
        return rng.randrange(self.n)

    def candidates(self, key: KeyValues) -> Sequence[Segment]:
        return range(self.n)

    @property
    def ordered(self) -> bool:
        return False

    def query_candidates(self, key: KeyValues, bounds: Mapping[str, TimeBounds]) -> list[Segment]:
        return list(range(self.n))


_ALGORITHMS = ("md5", "sha256")

#: A shard function: the canonical values of the ``on`` attributes, in order, to an int.
ShardFunction = Callable[[tuple[str, ...]], int]


def _to_on_tuple(value: Sequence[str] | str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def _function_name(function: Any) -> str:
    return str(getattr(function, "__qualname__", None) or repr(function))


@frozen
class HashShards:
    """Write to ``hash(values of on) % n``: the same values always pick the same shard.

    The hash is ``md5`` (or ``sha256``) of the ``on`` attributes' values, in their
    DynamoDB string form, joined by ``joiner`` (default: concatenated, as the public
    write-sharding guides compute it). It is stable across processes and versions.

    ``algorithm`` may instead be a function, for tables another program shards its own
    way (``int(id) % n``, xxhash64): it is given the canonical values of the ``on``
    attributes (a tuple of strings: numbers as DynamoDB writes them, ``"1700000000"``),
    returns an int, and the shard is that int ``% n``. It must be deterministic and
    stable across processes, machines and versions (never Python's ``hash``, which
    changes per process; pin a hash library's seed), or items land where reads never
    look.

    A read by full key touches one shard when every ``on`` attribute is part of the key
    (or given as ``shard_by``); otherwise it reads all ``n``.

    Args:
        n: the shard count.
        on: attribute names whose values are hashed; the partition key's own name means
            the logical key.
        algorithm: ``"md5"``, ``"sha256"``, or a function of the values to an int.
        joiner: the string put between the values before hashing (md5 and sha256).
    """

    n: int
    on: tuple[str, ...] = field(converter=_to_on_tuple)
    algorithm: str | ShardFunction = "md5"
    joiner: str = ""

    def __attrs_post_init__(self) -> None:
        check_count("HashShards", self.n)
        if not self.on:
            raise ShardConfigurationError(
                "HashShards(on=[]): name at least one attribute to hash, e.g. on=['timestamp']"
            )
        if callable(self.algorithm):
            if self.joiner:
                raise ShardConfigurationError(
                    f"HashShards(joiner={self.joiner!r}): a shard function is given the "
                    "values themselves, not joined; leave joiner out (or join them in the "
                    "function)"
                )
        elif self.algorithm not in _ALGORITHMS:
            raise ShardConfigurationError(
                f"HashShards(algorithm={self.algorithm!r}): use one of {_ALGORITHMS}, or a "
                "function of the values to an int, e.g. algorithm=lambda values: "
                "int(values[0])"
            )

    @property
    def attributes(self) -> tuple[str, ...]:
        return self.on

    @property
    def deterministic(self) -> bool:
        return True

    def check(self, model_name: str, attributes: Mapping[str, Any], separator: str) -> None:
        check_attributes_exist("HashShards(on=...)", model_name, self.on, attributes)
        check_numbered_separator("HashShards", model_name, separator)

    def segment_bytes(self, first_shard: int) -> int:
        return number_bytes(self.n, first_shard)

    def shard_of(self, values: Sequence[str]) -> int:
        """The shard of these canonical values: ``int(hexdigest) % n``, or the shard
        function's int ``% n``.

        Raises:
            ShardKeyError: the shard function raised, or returned no int.
        """
        if callable(self.algorithm):
            return self._function_shard(self.algorithm, tuple(values))
        data = self.joiner.join(values).encode("utf-8")
        digest = hashlib.new(self.algorithm, data).digest()
        return int.from_bytes(digest, "big") % self.n

    def _function_shard(self, function: ShardFunction, values: tuple[str, ...]) -> int:
        name = _function_name(function)
        try:
            number = function(values)
        except Exception as error:
            raise ShardKeyError(
                f"HashShards(algorithm={name}) raised {type(error).__name__}: {error} for the "
                f"values {values!r} of {list(self.on)}; fix the value or the function"
            ) from error
        if isinstance(number, bool) or not isinstance(number, int):
            raise ShardKeyError(
                f"HashShards(algorithm={name}) returned {number!r} for the values "
                f"{values!r}; a shard function returns an int (the shard is it % {self.n})"
            )
        return number % self.n

    def _known(self, key: KeyValues) -> list[str] | None:
        if all(name in key.canonical for name in self.on):
            return [key.canonical[name] for name in self.on]
        return None

    def pick(self, key: KeyValues, rng: random.Random) -> Segment:
        known = self._known(key)
        if known is None:
            missing = [name for name in self.on if name not in key.canonical]
            raise ShardKeyError(
                f"HashShards(on={list(self.on)}): attribute {missing[0]!r} has no value; "
                f"set {missing[0]} before saving, the shard is computed from it (to delete "
                f"an item built from its key, pass delete(shard_by={{{missing[0]!r}: ...}}))"
            )
        return self.shard_of(known)

    def candidates(self, key: KeyValues) -> Sequence[Segment]:
        known = self._known(key)
        if known is None:
            return range(self.n)
        return (self.shard_of(known),)

    @property
    def ordered(self) -> bool:
        return False

    def query_candidates(self, key: KeyValues, bounds: Mapping[str, TimeBounds]) -> list[Segment]:
        return list(self.candidates(key))
