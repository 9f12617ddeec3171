"""DynamoDB's item size arithmetic, re-exported for tests (it lives in :mod:`shardmodel.sizing`)."""

from __future__ import annotations

from shardmodel.sizing import (
    READ_UNIT_BYTES,
    WRITE_UNIT_BYTES,
    attribute_value_size,
    item_size,
    items_size,
    read_units,
    write_units,
)

__all__ = [
    "READ_UNIT_BYTES",
    "WRITE_UNIT_BYTES",
    "attribute_value_size",
    "item_size",
    "items_size",
    "read_units",
    "write_units",
]
