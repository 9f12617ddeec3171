"""Reading the bounds a PynamoDB key condition puts on one attribute."""

from __future__ import annotations

from typing import Any

from attrs import frozen
from pynamodb.attributes import Attribute
from pynamodb.constants import STRING
from pynamodb.expressions.condition import And, BeginsWith, Between, Comparison, Condition
from pynamodb.expressions.operand import Path, Value


class Prefix(str):
    """The lower bound of ``begins_with(prefix)``: every match also sorts below the end
    of the prefix's range (see :func:`shardmodel.ordered.prefix_end`)."""

    __slots__ = ()


@frozen
class Bounds:
    """What a condition says of one attribute: an exact value, or lower and upper bounds."""

    equal: Any = None
    lower: Any = None
    upper: Any = None


def _value(attribute: Attribute[Any], operand: Any) -> Any:
    if not isinstance(operand, Value):
        return None
    serialized = operand.value.get(attribute.attr_type)
    return None if serialized is None else attribute.deserialize(serialized)


def _names(attribute: Attribute[Any], operand: Any) -> bool:
    return isinstance(operand, Path) and operand.path == [attribute.attr_name]


def bounds_of(condition: Condition | None, attribute: Attribute[Any]) -> Bounds:
    """The bounds ``condition`` puts on ``attribute`` (inclusive; unknown parts are None)."""
    if condition is None:
        return Bounds()
    if isinstance(condition, And):
        equal, lower, upper = None, None, None
        for part in condition.values:
            found = bounds_of(part, attribute)
            equal = found.equal if found.equal is not None else equal
            lower = found.lower if found.lower is not None else lower
            upper = found.upper if found.upper is not None else upper
        return Bounds(equal, lower, upper)
    if isinstance(condition, Between) and _names(attribute, condition.values[0]):
        return Bounds(
            lower=_value(attribute, condition.values[1]),
            upper=_value(attribute, condition.values[2]),
        )
    if isinstance(condition, BeginsWith) and _names(attribute, condition.values[0]):
        operand = condition.values[1]
        text = operand.value.get(STRING) if isinstance(operand, Value) else None
        return Bounds() if text is None else Bounds(lower=Prefix(text))
    if isinstance(condition, Comparison) and _names(attribute, condition.values[0]):
        value = _value(attribute, condition.values[1])
        if condition.operator == "=":
            return Bounds(equal=value, lower=value, upper=value)
        if condition.operator in (">", ">="):
            return Bounds(lower=value)
        if condition.operator in ("<", "<="):
            return Bounds(upper=value)
    return Bounds()
