"""DynamoDB's item size and capacity unit arithmetic, from the wire format of items.

Sizes follow DynamoDB's published rules: an attribute costs the UTF-8 bytes of its name
plus its value; strings by UTF-8 bytes, binary by raw bytes, numbers by one byte per two
significant digits plus one, booleans and nulls one byte, lists and maps three bytes plus
one byte per element plus their elements.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "READ_UNIT_BYTES",
    "WRITE_UNIT_BYTES",
    "attribute_value_size",
    "item_size",
    "read_units",
    "write_units",
]

#: One write capacity unit writes up to this many bytes.
WRITE_UNIT_BYTES = 1024
#: One read capacity unit reads up to this many bytes strongly consistent.
READ_UNIT_BYTES = 4096


def _number_size(text: str) -> int:
    digits = text.lstrip("+-").lower().split("e")[0].replace(".", "")
    significant = digits.strip("0")
    return max(1, math.ceil(len(significant) / 2)) + 1


def _binary_size(value: Any) -> int:
    # parsed responses hold bytes; request bodies hold base64 text
    if isinstance(value, bytes | bytearray):
        return len(value)
    return len(base64.b64decode(value))


def attribute_value_size(value: Mapping[str, Any]) -> int:
    """The size in bytes of one AttributeValue (``{"S": "x"}``), without its name."""
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(str(inner).encode("utf-8"))
    if kind == "N":
        return _number_size(str(inner))
    if kind == "B":
        return _binary_size(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(str(v).encode("utf-8")) for v in inner)
    if kind == "NS":
        return sum(_number_size(str(v)) for v in inner)
    if kind == "BS":
        return sum(_binary_size(v) for v in inner)
    if kind == "L":
        return 3 + sum(1 + attribute_value_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + item_size({k: v}) for k, v in inner.items())
    raise ValueError(f"unknown DynamoDB attribute type {kind!r} in {value!r}")


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """The size in bytes of an item: its attribute names plus their values."""
    return sum(len(name.encode("utf-8")) + attribute_value_size(v) for name, v in item.items())


def write_units(size: int) -> int:
    """Write capacity units for writing ``size`` bytes: one per started KB, at least one."""
    return max(1, math.ceil(size / WRITE_UNIT_BYTES))


def read_units(size: int, consistent: bool) -> float:
    """Read capacity units for reading ``size`` bytes in one item or one query page.

    One unit per started 4 KB strongly consistent, half that eventually consistent; at
    least one (or a half).
    """
    units = max(1, math.ceil(size / READ_UNIT_BYTES))
    return float(units) if consistent else units / 2


def items_size(items: Iterable[Mapping[str, Mapping[str, Any]]]) -> int:
    """The summed size of several items (what a query or scan page reads)."""
    return sum(item_size(item) for item in items)
