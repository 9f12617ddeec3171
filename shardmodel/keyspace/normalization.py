"""Normalized strings: the form ordered shards compare, store and refuse to mix.

An :class:`~shardmodel.OrderedShards` layout orders values by ``normalize(value)``
(:func:`default_normalize`: lower-case, then Unicode NFKD), and DynamoDB orders a shard
by the stored sort key, so the stored sort key must be the normalized value. Here are
the normalizing itself (:func:`normalized`, re-applied to its fixpoint), the attribute
that stores that form (:class:`NormalizedAttribute`), and the helpers that tell text
in another Unicode normal form from a different value (:func:`same_text`,
:func:`code_points`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable
from typing import Any

from pynamodb.attributes import UnicodeAttribute

__all__ = [
    "Normalize",
    "NormalizedAttribute",
    "code_points",
    "default_normalize",
    "normalized",
    "normalized_all",
    "same_text",
]

Normalize = Callable[[str], str]

#: How often a non-idempotent normalize is re-applied before its value is taken as is.
_FIXPOINT_ROUNDS = 4


def default_normalize(value: str) -> str:
    """Lower-case, then Unicode NFKD: ``"Émile"`` and ``"emile"`` sort together."""
    return unicodedata.normalize("NFKD", value.lower())


def _identity(value: str) -> str:
    return value


def normalized(normalize: Normalize | None, value: str) -> str:
    """``normalize(value)``, re-applied until it no longer changes (NFKD may un-lower).

    ``default_normalize("㎁")`` is ``"nA"``; normalizing again gives ``"na"``. Stored
    values are the fixpoint, so ``normalize(stored) == stored`` holds for them.
    """
    if normalize is None:
        return value
    if normalize is default_normalize:
        if value.isascii():  # the common case, and NFKD leaves ASCII as it is
            return value.lower()
        once = unicodedata.normalize("NFKD", value.lower())
        if once.lower() == once:  # NFKD of NFKD text is itself: only case can change
            return once
    current = value
    for _ in range(_FIXPOINT_ROUNDS):
        following = normalize(current)
        if following == current:
            return current
        current = following
    return current


def normalized_all(normalize: Normalize | None, values: Iterable[str]) -> list[str]:
    """:func:`normalized` of every value (ASCII values of the default inline: fast)."""
    if normalize is default_normalize:
        return [v.lower() if v.isascii() else normalized(normalize, v) for v in values]
    return [normalized(normalize, v) for v in values]


def same_text(one: str, other: str) -> bool:
    """True when two strings are the same text in different Unicode normal forms."""
    return unicodedata.normalize("NFD", one) == unicodedata.normalize("NFD", other)


def code_points(given: str, fixed: str) -> str:
    """Where two strings first differ, code point by code point.

    A precomposed ``'ö'`` and ``'o'`` followed by a combining diaeresis print alike; the
    code points tell them apart: ``character 3: U+00F6, normalized U+006F U+0308``.
    """
    start = next((i for i, (a, b) in enumerate(zip(given, fixed, strict=False)) if a != b), None)
    if start is None:
        start = min(len(given), len(fixed))
    return (
        f"character {start + 1}: {_points(given[start : start + 1])}, normalized "
        f"{_points(fixed[start : start + 2])}"
    )


def _points(text: str) -> str:
    return " ".join(f"U+{ord(ch):04X}" for ch in text) or "nothing"


class NormalizedAttribute(UnicodeAttribute):
    """A string attribute that holds and stores the normalized form of what it is given.

    Declare the sort key an :class:`OrderedShards` orders by with it, and keep the
    display form in another attribute::

        title_key = NormalizedAttribute(range_key=True)   # "greatest hits"
        title = UnicodeAttribute()                        # "Greatest Hits"

    Conditions on it (``between``, ``<``, ``begins_with``...) normalize their values too,
    so ``Album.title_key.begins_with("Gre")`` matches ``"greatest hits"``.

    Args:
        normalize: the same function as the strategy's ``normalize`` (default: lower-case
            then NFKD); checked when the model is defined.
    """

    def __init__(self, *args: Any, normalize: Normalize | None = default_normalize, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.normalize = normalize

    def __set__(self, instance: Any, value: Any) -> None:
        if isinstance(value, str):
            value = normalized(self.normalize, value)
        super().__set__(instance, value)

    def serialize(self, value: Any) -> Any:
        if isinstance(value, str):
            value = normalized(self.normalize, value)
        return super().serialize(value)
