"""Fast, exact parsing of successful DynamoDB Query and Scan responses.

botocore turns a response body into Python by walking the operation's output shape
over every value ``json.loads`` produced. For the ``json`` protocol that walk changes
little: structures keep only their modeled members that are not null, blobs are
base64-decoded and timestamps parsed; everything else is returned as decoded. For an
AttributeValue (a structure of ten members) it still looks up all ten members, for
every attribute of every item: most of the client's CPU per item on a large Query.

:func:`parse_body` applies the same rules with converters compiled once per output shape
(an attribute of one member costs one dictionary look-up). Only the lean path
(:class:`~shardmodel.lean.client.LeanClient`) calls it, for the requests it sends
itself: nothing is registered on a botocore client, so a request that goes through
botocore (the fallback, or the application's own on the same client) is parsed by
botocore's parser. Errors, bodies that are not a JSON object and shapes this module does
not know are botocore's to parse too.
"""

from __future__ import annotations

import base64
import json
import threading
import weakref
from collections.abc import Callable
from functools import partial
from typing import Any

__all__ = ["FAST_OPERATIONS", "parse_body"]

#: Operations whose successful responses the lean path parses here.
FAST_OPERATIONS = ("Query", "Scan")

#: value -> parsed value; None in a converter slot means "returned as decoded"
_Convert = Callable[[Any], Any]

_compiled: weakref.WeakKeyDictionary[Any, _Convert | None] = weakref.WeakKeyDictionary()
_compile_lock = threading.Lock()


def parse_body(
    shape: Any, body: bytes, loads: Callable[[bytes], Any] | None = None
) -> dict[str, Any] | None:
    """What botocore's ``json`` parser makes of ``body`` for ``shape``, without metadata.

    None when this module does not handle the shape (event streams, documents,
    timestamps, an unknown type), the body is not a JSON object, or a value is not of a
    type its shape allows (botocore's parser then makes of it what it makes). ``loads``: a faster
    JSON decoder giving ``json.loads``'s values (``json.loads`` is used if it fails).
    """
    if shape is None or shape.type_name != "structure":
        return None
    convert = _converter(shape)
    if convert is None:
        return None
    try:
        decoded = loads(body) if loads is not None else json.loads(body.decode("utf-8"))
    except ValueError:
        if loads is None:
            return None  # botocore turns it into a message; let it
        return parse_body(shape, body)
    if not isinstance(decoded, dict):
        return None
    try:
        parsed: dict[str, Any] = convert(decoded)
    except Exception:
        return None  # a value of a type the shape does not allow: botocore's to parse
    return parsed


def _converter(shape: Any) -> _Convert | None:
    try:
        return _compiled[shape]
    except KeyError:
        pass
    with _compile_lock:
        if shape not in _compiled:
            try:
                _compiled[shape] = _Compiler().structure(shape)
            except _Unsupported:
                _compiled[shape] = None
        return _compiled[shape]


class _Unsupported(Exception):
    """A shape this module leaves to botocore."""


#: scalar types the json parser returns exactly as decoded
_AS_DECODED = frozenset({"string", "integer", "long", "float", "double", "boolean"})


def _as_decoded(shape: Any) -> bool:
    """Whether botocore's json parser returns values of ``shape`` equal to the decoded."""
    kind = shape.type_name
    if kind == "list":
        return _as_decoded(shape.member)
    if kind == "map":
        return _as_decoded(shape.key) and _as_decoded(shape.value)
    return kind in _AS_DECODED


def _plain_members(shape: Any) -> frozenset[str]:
    """A structure's members that, alone in a value, leave the value as it is."""
    return frozenset(
        name
        for name, member in shape.members.items()
        if member.serialization.get("name", name) == name and _as_decoded(member)
    )


def _late(slot: list[_Convert | None], value: Any) -> Any:
    convert = slot[0]
    assert convert is not None  # filled before any response is converted
    return convert(value)


class _Compiler:
    """Builds one converter per shape; recursive shapes share a late-bound slot."""

    def __init__(self) -> None:
        self._slots: dict[str, list[_Convert | None]] = {}

    def convert(self, shape: Any) -> _Convert | None:
        if _as_decoded(shape):
            return None
        kind = shape.type_name
        if kind == "blob":
            return base64.b64decode
        if kind == "list":
            return self._list(shape)
        if kind == "map":
            return self._map(shape)
        if kind == "structure":
            return self.structure(shape)
        raise _Unsupported(kind)  # timestamps, and anything newer than this module

    def _list(self, shape: Any) -> _Convert | None:
        member = self.convert(shape.member)
        if member is None:
            return None  # a copy of the list: equal to it

        def convert_list(value: list[Any]) -> list[Any]:
            # in place: json.loads made this list for us alone
            for index, item in enumerate(value):
                if item is not None:  # botocore keeps null elements as None
                    value[index] = member(item)
            return value

        return convert_list

    def _map(self, shape: Any) -> _Convert | None:
        if self.convert(shape.key) is not None:
            raise _Unsupported("map key")  # json keys are strings
        convert_value = self.convert(shape.value)
        if convert_value is None:
            return None
        if shape.value.type_name != "structure":

            def convert_map(value: dict[str, Any]) -> dict[str, Any]:
                for key, item in value.items():
                    value[key] = convert_value(item)  # replacing values keeps the size
                return value

            return convert_map

        # an AttributeMap: skip the call for attributes the structure would return as is
        plain = _plain_members(shape.value)

        def convert_structure_map(value: dict[str, Any]) -> dict[str, Any]:
            for key, item in value.items():
                if len(item) == 1:
                    for wire in item:  # noqa: B007 - the only key, the cheapest way
                        break
                    if wire in plain and item[wire] is not None:
                        continue
                value[key] = convert_value(item)
            return value

        return convert_structure_map

    def structure(self, shape: Any) -> _Convert:
        if shape.is_document_type:
            raise _Unsupported("document")
        if shape.event_stream_name:
            raise _Unsupported("event stream")
        slot = self._slots.get(shape.name)
        if slot is not None:
            return partial(_late, slot)  # recursion: call through the slot filled below
        slot = self._slots[shape.name] = [None]
        members: list[tuple[str, str, _Convert | None]] = []
        for name, member in shape.members.items():
            if member.serialization.get("location") or member.serialization.get("eventstream"):
                raise _Unsupported("located member")
            members.append((member.serialization.get("name", name), name, self.convert(member)))
        by_wire = {wire: (name, convert) for wire, name, convert in members}
        verbatim = all(wire == name for wire, name, _ in members)
        union = bool(shape.is_tagged_union)

        def convert_structure(value: dict[str, Any] | None) -> dict[str, Any] | None:
            if value is None:
                return None
            if len(value) == 1:
                # the common case, an AttributeValue: one look-up instead of all members
                for wire, raw in value.items():
                    found = by_wire.get(wire)
                    if found is None or raw is None:
                        if union:
                            raise _Unsupported("union without a known member")
                        return {}
                    name, convert = found
                    if convert is None:
                        return value if verbatim else {name: raw}
                    return {name: convert(raw)}
            if union:
                raise _Unsupported("union of several members")  # botocore checks these
            # botocore's walk: members in model order, absent and null ones left out
            parsed = {}
            for wire, name, convert in members:
                raw = value.get(wire)
                if raw is not None:
                    parsed[name] = raw if convert is None else convert(raw)
            return parsed

        slot[0] = convert_structure
        return convert_structure
