"""Fast, exact parsing of successful DynamoDB Query and Scan responses.

botocore turns a response body into Python by walking the operation's output shape
over every value ``json.loads`` produced. For the ``json`` protocol that walk changes
little: structures keep only their modeled members that are not null, blobs are
base64-decoded and timestamps parsed; everything else is returned as decoded. For an
AttributeValue (a structure of ten members) it still looks up all ten members, for
every attribute of every item: most of the client's CPU per item on a large Query.

:func:`install` registers a ``before-parse`` handler on a client for ``Query`` and
``Scan``; it parses only the library's own requests, sent inside :func:`own_requests`
(a context variable: the thread, task or greenlet that sends them), so a Query the
application sends on the same client is parsed by botocore as before. For a 2xx response
it decodes the body with ``json.loads`` and applies the
same rules with converters compiled once per output shape (an attribute of one member
costs one dictionary look-up), hands botocore the result through the event's
``customized_response_dict`` and an empty body. botocore still builds
``ResponseMetadata`` (request id, status code, headers, retry attempts), runs every
other handler, and parses everything else: errors, other operations, bodies that are
not a JSON object, and any response the converters fail on (botocore then raises its
own error). On a botocore that does not emit ``before-parse`` nothing changes.
"""

from __future__ import annotations

import base64
import contextlib
import json
import threading
import weakref
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from functools import partial
from typing import Any

from shardmodel.lean.private import protocol

__all__ = ["FAST_OPERATIONS", "install", "own_requests", "parse_body"]

#: Operations whose successful responses are parsed here.
FAST_OPERATIONS = ("Query", "Scan")

#: value -> parsed value; None in a converter slot means "returned as decoded"
_Convert = Callable[[Any], Any]

_UNIQUE_ID = "shardmodel.lean.fastparse"
_compiled: weakref.WeakKeyDictionary[Any, _Convert | None] = weakref.WeakKeyDictionary()
_compile_lock = threading.Lock()
#: The clients whose handlers are registered (nothing is set on a client).
_installed: weakref.WeakSet[Any] = weakref.WeakSet()
#: True while the library sends its own requests (see :func:`own_requests`).
_OWN: ContextVar[bool] = ContextVar("shardmodel_fast_parse_own", default=False)


@contextlib.contextmanager
def own_requests() -> Iterator[None]:
    """Parse fast the Query and Scan responses of the requests sent in this block."""
    token = _OWN.set(True)
    try:
        yield
    finally:
        _OWN.reset(token)


def install(client: Any) -> bool:
    """Parse this botocore DynamoDB client's Query and Scan responses fast; idempotent.

    Returns False (and changes nothing) when the client does not speak botocore's
    ``json`` protocol.
    """
    if client in _installed:
        return True  # registering is a no-op then, but botocore inspects the handler first
    meta = client.meta
    if protocol(meta.service_model) != "json":
        return False
    service_id = meta.service_model.service_id.hyphenize()
    for operation in FAST_OPERATIONS:
        # one unique_id per event: registering again is a no-op
        meta.events.register(
            f"before-parse.{service_id}.{operation}",
            _before_parse,
            unique_id=f"{_UNIQUE_ID}.{operation}",
        )
    _installed.add(client)
    return True


def _before_parse(
    operation_model: Any,
    response_dict: dict[str, Any],
    customized_response_dict: dict[str, Any],
    **kwargs: Any,
) -> None:
    if not _OWN.get():
        return  # the application's own request: botocore parses it, as without shardmodel
    status = response_dict.get("status_code")
    body = response_dict.get("body")
    if not isinstance(status, int) or not 200 <= status < 300:
        return  # errors (and anything odd) go through botocore's parser
    if not isinstance(body, bytes) or not body:
        return
    try:
        parsed = parse_body(operation_model.output_shape, body)
    except Exception:
        return  # botocore parses it again and raises its own error, if any
    if parsed is None:
        return
    for name, value in parsed.items():
        customized_response_dict.setdefault(name, value)
    # botocore now parses an empty body: only its ResponseMetadata, merged with the above
    response_dict["body"] = b""


def parse_body(
    shape: Any, body: bytes, loads: Callable[[bytes], Any] | None = None
) -> dict[str, Any] | None:
    """What botocore's ``json`` parser makes of ``body`` for ``shape``, without metadata.

    None when this module does not handle the shape (event streams, documents,
    timestamps, an unknown type) or the body is not a JSON object. ``loads``: a faster
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
    parsed: dict[str, Any] = convert(decoded)
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
