"""PynamoDB conditions evaluated on a raw item, the way DynamoDB evaluates a filter.

Counter models sum an item's shard items on read, so a filter must see the summed
item: DynamoDB would apply it to each shard item (a share of the counters, and other
attributes on the home shard only). Reads of counter models therefore send no filter
and apply it here, after summing. The rules follow DynamoDB's condition expressions:
numbers compare numerically, strings by their UTF-8 bytes, binary by bytes; values of
different types are never equal or ordered; a missing attribute makes every
comparison false except ``<>``.
"""

from __future__ import annotations

import base64
import operator
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from pynamodb.expressions.condition import (
    And,
    BeginsWith,
    Between,
    Comparison,
    Condition,
    Contains,
    Exists,
    In,
    IsType,
    Not,
    NotExists,
    Or,
)
from pynamodb.expressions.operand import Path, Value, _Size

from shardmodel.errors import UnsupportedOperationError

__all__ = ["matches"]

_RawItem = dict[str, dict[str, Any]]
_Typed = tuple[str, Any]  # (DynamoDB type tag, wire value), or None when missing

_INDEX = re.compile(r"\[(\d+)\]")
_ORDERED = ("N", "S", "B")
_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def matches(condition: Condition | None, item: _RawItem) -> bool:
    """Whether ``item`` passes ``condition`` (always, when there is none)."""
    if condition is None:
        return True
    return _evaluate(condition, item)


def _evaluate(condition: Condition, item: _RawItem) -> bool:
    values = condition.values
    if isinstance(condition, And):
        return _evaluate(values[0], item) and _evaluate(values[1], item)
    if isinstance(condition, Or):
        return _evaluate(values[0], item) or _evaluate(values[1], item)
    if isinstance(condition, Not):
        return not _evaluate(values[0], item)
    operands = [_operand(v, item) for v in values]
    check = _CHECKS.get(type(condition))
    if check is None:
        raise UnsupportedOperationError(
            f"filter_condition: {condition!r} ({type(condition).__name__}) cannot be applied "
            "to a counter model's summed items; use comparisons, between, is_in, exists, "
            "does_not_exist, is_type, startswith, contains or size"
        )
    if isinstance(condition, Comparison):
        return _compare(condition.operator, operands[0], operands[1])
    return check(operands)


def _operand(operand: Any, item: _RawItem) -> _Typed | None:
    if isinstance(operand, Value):
        ((kind, value),) = operand.value.items()
        return kind, value
    if isinstance(operand, _Size):
        return _size(_resolve(operand.values[0], item))
    if isinstance(operand, Path):
        return _resolve(operand, item)
    raise UnsupportedOperationError(  # pragma: no cover - PynamoDB builds no other operand
        f"filter_condition: operand {operand!r} cannot be evaluated on summed items"
    )


def _resolve(path: Path, item: _RawItem) -> _Typed | None:
    """The typed value at a document path (``a.b[0]``), or None when it is missing."""
    current: _Typed | None = ("M", item)
    for segment in path.path:
        name, _, rest = segment.partition("[")
        if current is None or current[0] != "M" or name not in current[1]:
            return None
        ((kind, value),) = current[1][name].items()
        current = kind, value
        for index in _INDEX.findall("[" + rest if rest else ""):
            if current[0] != "L" or int(index) >= len(current[1]):
                return None
            ((kind, value),) = current[1][int(index)].items()
            current = kind, value
    return current


def _size(value: _Typed | None) -> _Typed | None:
    if value is None:
        return None
    kind, raw = value
    if kind == "S":
        return "N", str(len(raw))
    if kind == "B":
        return "N", str(len(_bytes(raw)))
    if kind in ("SS", "NS", "BS", "L", "M"):
        return "N", str(len(raw))
    return None


def _bytes(value: Any) -> bytes:
    return base64.b64decode(value) if isinstance(value, str) else bytes(value)


def _comparable(value: _Typed) -> Any:
    kind, raw = value
    if kind == "N":
        return Decimal(raw)
    if kind == "S":
        return raw.encode("utf-8")
    if kind == "B":
        return _bytes(raw)
    return None


def _plain(value: _Typed) -> Any:
    """A value in a form where DynamoDB-equal values are Python-equal."""
    kind, raw = value
    if kind in _ORDERED:
        return kind, _comparable(value)
    if kind in ("SS", "NS", "BS"):
        return kind, frozenset(_plain((kind[0], v)) for v in raw)
    if kind == "L":
        return kind, tuple(_plain(next(iter(v.items()))) for v in raw)
    if kind == "M":
        return kind, frozenset((k, _plain(next(iter(v.items())))) for k, v in raw.items())
    return kind, raw  # BOOL, NULL


def _equal(left: _Typed | None, right: _Typed | None) -> bool:
    return left is not None and right is not None and _plain(left) == _plain(right)


def _compare(op: str, left: _Typed | None, right: _Typed | None) -> bool:
    if op == "=":
        return _equal(left, right)
    if op == "<>":
        return not _equal(left, right)
    if left is None or right is None or left[0] != right[0] or left[0] not in _ORDERED:
        return False
    return bool(_ORDER[op](_comparable(left), _comparable(right)))


def _between(operands: list[_Typed | None]) -> bool:
    value, low, high = operands
    return _compare(">=", value, low) and _compare("<=", value, high)


def _begins_with(operands: list[_Typed | None]) -> bool:
    value, prefix = operands
    if value is None or prefix is None or value[0] != prefix[0] or value[0] not in ("S", "B"):
        return False
    return bool(_comparable(value).startswith(_comparable(prefix)))


def _contains(operands: list[_Typed | None]) -> bool:
    value, needle = operands
    if value is None or needle is None:
        return False
    kind = value[0]
    if kind in ("S", "B") and needle[0] == kind:
        return bool(_comparable(needle) in _comparable(value))
    if kind in ("SS", "NS", "BS") and needle[0] == kind[0]:
        return _plain(needle) in _plain(value)[1]
    if kind == "L":
        return any(_equal(next(iter(v.items())), needle) for v in value[1])
    return False


_CHECKS: dict[type[Condition], Callable[[list[_Typed | None]], bool]] = {
    Comparison: lambda _: False,  # dispatched on its operator in _evaluate
    Between: _between,
    In: lambda ops: any(_equal(ops[0], other) for other in ops[1:]),
    Exists: lambda ops: ops[0] is not None,
    NotExists: lambda ops: ops[0] is None,
    IsType: lambda ops: ops[0] is not None and ops[1] is not None and ops[0][0] == ops[1][1],
    BeginsWith: _begins_with,
    Contains: _contains,
}
