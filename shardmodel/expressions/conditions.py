"""Reading the bounds a PynamoDB key condition puts on one attribute."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from attrs import frozen
from pynamodb.attributes import Attribute
from pynamodb.constants import NUMBER, STRING
from pynamodb.expressions.condition import And, BeginsWith, Between, Comparison, Condition
from pynamodb.expressions.operand import Path, Value

from shardmodel.errors import QueryValidationError


class Prefix(str):
    """The lower bound of ``begins_with(prefix)``: every match also sorts below the end
    of the prefix's range (see :func:`shardmodel.keyspace.ordered.prefix_end`)."""

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


def _dynamodb_order(kind: str, serialized: Any) -> Any:
    """A serialized key value as DynamoDB orders it: numbers by value, the rest by bytes."""
    if kind == NUMBER:
        return Decimal(serialized)
    if kind == STRING:
        return str(serialized).encode("utf-8")
    return bytes(serialized)


def check_key_condition(condition: Condition | None, attribute: Attribute[Any] | None) -> None:
    """Refuse, before sending, a sort key condition DynamoDB answers with ValidationException.

    DynamoDB takes one condition per key (``between`` for a closed range, not ``&`` of two
    comparisons) and a ``between`` whose lower bound is not above its upper bound.
    """
    if condition is None or attribute is None:
        return
    name = attribute.attr_name
    if isinstance(condition, And):
        raise QueryValidationError(
            f"KeyConditionExpressions must only contain one condition per key: the sort key "
            f"condition joins {len(condition.values)} conditions with '&'; for a range write "
            f"Model.{name}.between(low, high) (both ends included), or one comparison such as "
            f"Model.{name} >= low, and move other tests to filter_condition"
        )
    if isinstance(condition, Between) and _names(attribute, condition.values[0]):
        low, high = condition.values[1], condition.values[2]
        if isinstance(low, Value) and isinstance(high, Value):
            kind = attribute.attr_type
            low_value, high_value = low.value.get(kind), high.value.get(kind)
            known = low_value is not None and high_value is not None
            if known and _dynamodb_order(kind, low_value) > _dynamodb_order(kind, high_value):
                raise QueryValidationError(
                    "Invalid KeyConditionExpression: The BETWEEN operator requires upper "
                    "bound to be greater than or equal to lower bound; lower bound operand: "
                    f"AttributeValue: {{{kind}:{low_value}}}, upper bound operand: "
                    f"AttributeValue: {{{kind}:{high_value}}}; swap them: "
                    f"Model.{name}.between({high_value!r}, {low_value!r})"
                )


def named_paths(node: Any) -> set[str]:
    """The top-level attribute names a condition, operand or list of them refers to
    (function operands such as ``size()`` included)."""
    if isinstance(node, Path):
        return {node.path[0]} if node.path else set()
    parts = node if isinstance(node, list | tuple) else getattr(node, "values", ())
    found: set[str] = set()
    for part in parts if isinstance(parts, list | tuple) else ():
        found |= named_paths(part)
    return found


def check_filter(condition: Condition | None, keys: list[Attribute[Any] | None]) -> None:
    """Refuse, before sending, a query filter on a key attribute, as DynamoDB does.

    ``keys`` are the partition and sort key of the table or index the query reads.
    """
    if condition is None:
        return
    names = named_paths(condition)
    for attribute in keys:
        if attribute is not None and attribute.attr_name in names:
            name = attribute.attr_name
            where = "hash_key" if attribute.is_hash_key else "range_key_condition"
            raise QueryValidationError(
                "Filter Expression can only contain non-primary key attributes: Primary key "
                f"attribute: {name}; a query's filter_condition cannot test its key: put the "
                f"test on {name!r} in {where}"
            )


def check_paging(limit: Any, page_size: Any) -> None:
    """Refuse, before sending, a ``limit`` or ``page_size`` DynamoDB would refuse.

    Both are ints (not bools, floats or strings); ``limit`` may be 0 (no item, as
    PynamoDB), ``page_size`` is at least 1 (DynamoDB's ``Limit``).
    """
    for field, value, least in (("limit", limit, 0), ("page_size", page_size, 1)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise QueryValidationError(
                f"1 validation error detected: Value {value!r} at '{field}' failed to satisfy "
                f"constraint: Member must be an integer; pass {field}=None for no {field}, or "
                f"a positive int such as {field}={_whole(value)}"
            )
        if value < least:
            raise QueryValidationError(
                f"1 validation error detected: Value {value!r} at '{field}' failed to satisfy "
                f"constraint: Member must have value greater than or equal to {max(least, 1)}; "
                f"pass {field}=None for no {field}, or a positive int"
            )


def _whole(value: Any) -> int:
    """A positive int near ``value`` to suggest (10 for ``'10'`` or ``10.0``), else 10."""
    try:
        number = int(Decimal(str(value).strip()))
    except (ArithmeticError, ValueError):
        return 10
    return number if number >= 1 else 10


def check_flag(field: str, value: Any) -> None:
    """Refuse, before sending, a flag (``scan_index_forward``, ``consistent_read``) that is
    not a bool: DynamoDB takes ``true`` or ``false`` only, and ``'no'`` or ``0`` would read
    as one thing to the merge and another to each shard's request."""
    if value is not None and not isinstance(value, bool):
        raise QueryValidationError(
            f"1 validation error detected: Value {value!r} at '{field}' failed to satisfy "
            f"constraint: Member must be a boolean; pass {field}=True or {field}=False"
        )
