"""Canonical key values: the one form in which values DynamoDB treats as equal are equal.

DynamoDB stores a number by its value: ``250``, ``250.0`` and ``2.5e2`` are one key and
come back as ``"250"``. Every place that hashes, compares or matches a key value uses
:func:`canonical_number` (numbers) or :func:`canonical_value` (any key type), never the
text PynamoDB happened to serialize.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from pynamodb.constants import BINARY, NUMBER

__all__ = ["canonical_number", "canonical_sum", "canonical_value", "storable_number"]

# wide enough that normalizing never rounds: DynamoDB itself refuses over 38 digits
_EXACT = Context(prec=400)


def canonical_number(value: Any) -> str:
    """DynamoDB's text of a number: no exponent, no trailing zeros, ``-0`` is ``0``.

    Accepts the text of a number (``"2.5e2"``), an int, a float or a Decimal.

    Raises:
        ValueError: for text that is not a finite number.
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a number")
    try:
        number = value if isinstance(value, Decimal) else Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"{value!r} is not a number") from None
    if not number.is_finite():
        raise ValueError(f"{value!r} is not a finite number; DynamoDB stores finite numbers only")
    if number.is_zero():
        return "0"
    return format(number.normalize(_EXACT), "f")


def canonical_sum(values: Iterable[Decimal]) -> str:
    """The exact sum of numbers, in :func:`canonical_number`'s form.

    Never rounded (the default context keeps 28 of DynamoDB's 38 digits), and whole
    sums are written whole: ``0.5 + 0.5`` is ``1`` as DynamoDB stores it, not ``1.0``,
    so it reads back as an int like any stored whole number.
    """
    total = Decimal(0)
    for value in values:
        total = _EXACT.add(total, value)
    return canonical_number(total)


#: DynamoDB's number range: 38 significant digits, magnitudes 1E-130 to below 1E+126.
_MAX_DIGITS, _MIN_EXPONENT, _MAX_EXPONENT = 38, -130, 125


def storable_number(value: Any) -> str:
    """:func:`canonical_number`, refusing what DynamoDB cannot store (digits, magnitude).

    Raises:
        ValueError: for NaN, infinities and numbers out of DynamoDB's range, naming the fix.
    """
    text = canonical_number(value)
    if text == "0":
        return text
    normal = Decimal(text)
    digits = len(normal.normalize(_EXACT).as_tuple().digits)
    if digits > _MAX_DIGITS or not _MIN_EXPONENT <= normal.adjusted() <= _MAX_EXPONENT:
        raise ValueError(
            "DynamoDB numbers hold up to 38 significant digits, magnitudes 1E-130 to "
            "9.99E+125; round the amount (e.g. Decimal(value).quantize(...))"
        )
    return text


def canonical_value(kind: str, value: Any) -> Any:
    """A serialized key value (``{kind: value}``'s value) in canonical, hashable form."""
    if kind == NUMBER:
        return canonical_number(value)
    if kind == BINARY and not isinstance(value, bytes | str):
        return bytes(value)
    return value
