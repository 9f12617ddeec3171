"""Building model instances from stored items: PynamoDB's result at about half its CPU.

PynamoDB's ``_instantiate`` runs ``__init__`` (which sets the discriminator and the
defaults) and then ``_container_deserialize``, which clears the instance and sets them
all again before deserializing each attribute through its descriptor. A merged query
builds every item it returns, so that double work is a large part of its client CPU.
:func:`instantiate` keeps the first pass, deserializes each attribute the way PynamoDB
does (same ``get_value``, same ``deserialize``, same NULL rule) and stores the value
directly where the descriptor would (through the descriptor when its ``__set__`` is
not the plain one). Models with a discriminator keep PynamoDB's own path.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from attrs import frozen
from pynamodb.attributes import Attribute, AttributeContainer, NumberAttribute
from pynamodb.constants import NULL
from pynamodb.models import Model

__all__ = ["BuildPlan", "build_plan", "instantiate", "number"]

_T = TypeVar("_T")
_RawItem = dict[str, dict[str, Any]]


def number(text: str) -> Any:
    """``NumberAttribute.deserialize``: ``json.loads``, with whole numbers parsed directly."""
    if text.isdigit() and text.isascii() and (text[0] != "0" or len(text) == 1):
        return int(text)  # what json.loads gives for these, at a fraction of its cost
    return json.loads(text)


@frozen
class _Field:
    """How one attribute of a model is read from a stored item."""

    name: str  # the Python attribute name: the key in ``attribute_values``
    stored: str  # the attribute's name in DynamoDB
    kind: str  # its DynamoDB type tag ("S", "N", ...)
    value: Callable[[dict[str, Any]], Any] | None  # a custom get_value, else None
    deserialize: Callable[[Any], Any]
    direct: bool  # the descriptor's __set__ only stores the value


def _field(name: str, attr: Attribute[Any]) -> _Field:
    kind = type(attr)
    deserialize: Callable[[Any], Any] = attr.deserialize
    if kind.deserialize is NumberAttribute.deserialize:
        deserialize = number
    return _Field(
        name=name,
        stored=attr.attr_name,
        kind=attr.attr_type,
        value=None if kind.get_value is Attribute.get_value else attr.get_value,
        deserialize=deserialize,
        direct=kind.__set__ is Attribute.__set__,
    )


@frozen
class BuildPlan:
    """How :func:`instantiate` builds instances of one model."""

    fields: tuple[_Field, ...]
    #: ``__init__`` would only make an empty ``attribute_values``: skip it
    blank: bool


def _blank(model: type[Any]) -> bool:
    """Whether ``model(_user_instantiated=False)`` only sets an empty ``attribute_values``.

    True when neither the model nor its bases change PynamoDB's constructor or its steps,
    and no attribute has a default (a default is set by ``__init__``, maybe computed).
    """
    return (
        model.__new__ is object.__new__  # type: ignore[comparison-overlap]
        and model.__init__ is Model.__init__
        and model._set_defaults is AttributeContainer._set_defaults
        and model._set_discriminator is AttributeContainer._set_discriminator
        and model._set_attributes is AttributeContainer._set_attributes
        and all(attr.default is None for attr in model.get_attributes().values())
    )


def build_plan(model: type[Any]) -> BuildPlan | None:
    """How :func:`instantiate` reads ``model``'s items; None to use PynamoDB's path."""
    if model._get_discriminator_attribute() is not None:
        return None
    fields = tuple(_field(name, attr) for name, attr in model.get_attributes().items())
    return BuildPlan(fields=fields, blank=_blank(model))


def instantiate(model: type[_T], plan: BuildPlan, item: _RawItem) -> _T:
    """An instance of ``model`` holding ``item``, as PynamoDB's ``_instantiate`` builds it."""
    if plan.blank:
        instance = object.__new__(model)
        values: dict[str, Any] = {}
        instance.attribute_values = values  # type: ignore[attr-defined]
    else:
        instance = model(_user_instantiated=False)  # type: ignore[call-arg]
        values = instance.attribute_values  # type: ignore[attr-defined]
    for field in plan.fields:
        raw = item.get(field.stored)
        if not raw or NULL in raw:
            continue
        if field.value is not None:
            stored = field.value(raw)
        elif field.kind in raw:
            stored = raw[field.kind]
        else:  # PynamoDB's own error for a value of the wrong type
            stored = Attribute.get_value(model.get_attributes()[field.name], raw)  # type: ignore[attr-defined]
        value = field.deserialize(stored)
        if field.direct:
            values[field.name] = value
        else:
            setattr(instance, field.name, value)
    return instance
