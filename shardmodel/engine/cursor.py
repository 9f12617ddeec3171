"""The merged query's resume cursor: one opaque, versioned, checksummed string.

A cursor records, for every shard the query reads, where to start again: the key of
the last item the caller received from that shard, or that the shard is finished.
Resuming re-reads nothing the caller saw and skips nothing it did not.

The string is ``<base64url JSON>.<checksum>``, or past 512 bytes of JSON
``z<base64url zlib JSON>.<checksum>``. The JSON (version 3) holds what resuming needs
and no more: the shards' keys as their common prefix and runs of numbers (``[0, 255]``
for 256 shards), the finished ones as runs of their places, and a start key only for
the shards the caller received items from; so a page of a 256-shard read is about as
long as one of a 16-shard read. The checksum is a SHA-256 of the JSON payload, or an
HMAC when the model's ``Meta.cursor_secret`` is set, so a tampered or truncated cursor
is refused; without a secret a determined client could forge one (it would only read
its own key's items, which the query allows anyway). Version 2 cursors (a list of every
shard's position) are still read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import re
import zlib
from datetime import datetime
from decimal import Decimal
from typing import Any

import cattrs
from attrs import frozen
from pynamodb.expressions.condition import Condition

from shardmodel.core.canonical import storable_number
from shardmodel.errors import CursorError

__all__ = [
    "CURSOR_VERSION",
    "Cursor",
    "ShardPosition",
    "conditions_digest",
    "decode_cursor",
    "encode_cursor",
    "start_problem",
]

#: Version 3 holds the shards compactly; version 2 (every shard's position listed) is still
#: read; version 1 did not record the query's conditions: it is refused.
CURSOR_VERSION = 3
#: The earlier format this release still reads: cursors handed out before an upgrade.
_LISTED_VERSION = 2

#: A DynamoDB key as botocore returns it: {"name": {"S" | "N" | "B": value}}.
RawKey = dict[str, dict[str, Any]]


@frozen
class ShardPosition:
    """Where one shard's stream resumes.

    Attributes:
        key: the shard's physical partition key.
        start: the ExclusiveStartKey to resume after (None: from the beginning).
        done: True when the caller has received every item of this shard.
    """

    key: str
    start: dict[str, dict[str, str]] | None
    done: bool


@frozen
class Cursor:
    """The whole resume state of a merged query.

    ``conditions`` is :func:`conditions_digest` of the query's key condition, time range
    and filter: a cursor resumes only the query it was taken from, as each shard's
    position means "received up to here" only under the same conditions.
    """

    version: int
    model: str
    index: str | None
    logical_key: str
    forward: bool
    conditions: str
    shards: tuple[ShardPosition, ...]


_converter = cattrs.Converter(forbid_extra_keys=True)


def _text_key(key: RawKey) -> dict[str, dict[str, str]]:
    """Key values as JSON-safe text (binary values base64-encoded)."""
    out: dict[str, dict[str, str]] = {}
    for name, typed in key.items():
        ((kind, value),) = typed.items()
        if kind == "B":
            value = base64.b64encode(bytes(value)).decode("ascii")
        out[name] = {kind: str(value)}
    return out


def raw_key(key: dict[str, dict[str, str]]) -> RawKey:
    """The inverse of :func:`_text_key`: a key botocore accepts."""
    out: RawKey = {}
    for name, typed in key.items():
        ((kind, value),) = typed.items()
        out[name] = {kind: base64.b64decode(value) if kind == "B" else value}
    return out


def position(key: str, start: RawKey | None, done: bool) -> ShardPosition:
    """A shard position from a botocore key."""
    return ShardPosition(key=key, start=None if start is None else _text_key(start), done=done)


def _sign(payload: bytes, secret: bytes | None) -> str:
    if secret is not None:
        return hmac.new(secret, payload, hashlib.sha256).hexdigest()[:32]
    return hashlib.sha256(payload).hexdigest()[:32]


def encode_cursor(cursor: Cursor, secret: bytes | None = None) -> str:
    """Serialize a cursor to its opaque string form."""
    data = _converter.unstructure(cursor)
    if cursor.version == CURSOR_VERSION:
        data = _compact(data)
    payload = json.dumps(data, sort_keys=True, separators=(",", ":")).encode("utf-8")
    packed = zlib.compress(payload, 9) if len(payload) > _PLAIN_BYTES else payload
    if len(packed) < len(payload):
        body = _COMPRESSED + base64.urlsafe_b64encode(packed).decode("ascii").rstrip("=")
    else:
        body = base64.urlsafe_b64encode(payload).decode("ascii").rstrip("=")
    return f"{body}.{_sign(payload, secret)}"


#: Payloads up to this size stay plain JSON (a few shards: readable when debugging).
_PLAIN_BYTES = 512
#: The first character of a compressed cursor's body (a JSON body's is always ``e``).
_COMPRESSED = "z"
#: The most a compressed cursor may inflate to: far above any real cursor (a 1,000-shard
#: read's is about 200 KB), so a crafted one cannot make the reader allocate gigabytes.
_MAX_PAYLOAD = 4_000_000


def _payload_of(body: str) -> bytes:
    """The JSON payload of a cursor's body, inflated if compressed."""
    compressed = body.startswith(_COMPRESSED)
    text = body[1:] if compressed else body
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if not compressed:
        return raw
    inflater = zlib.decompressobj()
    payload = inflater.decompress(raw, _MAX_PAYLOAD)
    if inflater.unconsumed_tail or not inflater.eof:
        raise ValueError("not a whole zlib stream within the bound")
    return payload


def decode_cursor(token: Any, secret: bytes | None = None) -> Cursor:
    """Parse and verify a cursor string.

    Raises:
        CursorError: if it is not a cursor, was altered or truncated, or has another version.
    """
    fix = "pass the last_evaluated_key of a query of this model unchanged, or start over"
    if not isinstance(token, str) or token.count(".") != 1:
        raise CursorError(f"last_evaluated_key is not a shardmodel cursor; {fix}")
    body, checksum = token.split(".")
    try:
        payload = _payload_of(body)
    except (binascii.Error, ValueError, zlib.error):
        raise CursorError(f"last_evaluated_key is damaged (bad encoding); {fix}") from None
    if not hmac.compare_digest(checksum, _sign(payload, secret)):
        raise CursorError(f"last_evaluated_key was altered or truncated (checksum); {fix}")
    try:
        data = json.loads(payload)
    except ValueError as error:
        raise CursorError(f"last_evaluated_key is malformed (not JSON); {fix}") from error
    if not isinstance(data, dict):
        raise CursorError(f"last_evaluated_key is malformed (not an object); {fix}")
    version = data.get("version")
    if version == 1 and type(version) is int:
        raise CursorError(
            "last_evaluated_key has cursor version 1, made by an earlier shardmodel, which "
            f"did not record the query's conditions; this shardmodel reads versions "
            f"{_LISTED_VERSION} and {CURSOR_VERSION}; start the query over (its first page "
            "gives a new cursor)"
        )
    if version not in (CURSOR_VERSION, _LISTED_VERSION) or isinstance(version, bool):
        raise CursorError(
            f"last_evaluated_key has cursor version {version!r}, this shardmodel reads "
            f"versions {_LISTED_VERSION} and {CURSOR_VERSION}; {fix}"
        )
    if version == CURSOR_VERSION:
        problem = _compact_problem(data)
        if problem is None:
            data = _listed(data)
    else:
        problem = _payload_problem(data)
    if problem is not None:
        raise CursorError(f"last_evaluated_key is malformed ({problem}); {fix}")
    try:
        return _converter.structure(data, Cursor)
    except (ValueError, TypeError, KeyError, cattrs.BaseValidationError) as error:
        raise CursorError(f"last_evaluated_key is malformed; {fix}") from error


_FIELDS: dict[str, type | tuple[type, ...]] = {
    "version": int,
    "model": str,
    "index": (str, type(None)),
    "logical_key": str,
    "forward": bool,
    "conditions": str,
    "shards": list,
}
_TYPE_TAGS = frozenset({"S", "N", "B"})


def _payload_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with a decoded cursor payload, checked field by field (None: nothing).

    The checksum only proves the payload was made by someone who can compute it, which
    without ``Meta.cursor_secret`` is anyone: every field is checked here, strictly (no
    ``"1"`` for ``1``, no ``"false"`` for ``False``), before it reaches a request.
    """
    if set(data) != set(_FIELDS):
        return f"fields {sorted(data)}, expected {sorted(_FIELDS)}"
    for name, kind in _FIELDS.items():
        value = data[name]
        if isinstance(value, bool) and kind is not bool:
            return f"{name} is {value!r}"
        if not isinstance(value, kind):
            return f"{name} is {value!r}"
    if not data["shards"]:
        return "no shards"
    seen: set[str] = set()
    for shard in data["shards"]:
        if not isinstance(shard, dict) or set(shard) != {"key", "start", "done"}:
            return f"shard entry {shard!r}"
        key, start, done = shard["key"], shard["start"], shard["done"]
        if not isinstance(key, str) or not key or key in seen:
            return f"shard key {key!r}"
        seen.add(key)
        if not isinstance(done, bool):
            return f"done of shard {key!r} is {done!r}"
        if start is not None and (wrong := _key_problem(start)) is not None:
            return f"start of shard {key!r}: {wrong}"
    return None


#: The shards a version 3 cursor may name once its runs are expanded: far above any read
#: (a query reads at most a few thousand shards), so a crafted ``[0, 10**12]`` is refused.
_MAX_CURSOR_SHARDS = 100_000
_COUNTED = re.compile(r"0|[1-9][0-9]{0,17}")
_COMPACT_FIELDS: dict[str, type | tuple[type, ...]] = {
    **{name: kind for name, kind in _FIELDS.items() if name != "shards"},
    "prefix": str,
    "keys": list,
    "done": list,
    "starts": list,
}


def _runs(numbers: list[int]) -> list[list[int]]:
    """Ascending places as ``[first, last]`` runs: [0, 1, 2, 5] -> [[0, 2], [5, 5]]."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and runs[-1][1] + 1 == number:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return runs


def _compact(data: dict[str, Any]) -> dict[str, Any]:
    """A listed (version 2 shaped) payload in version 3's form: the shard keys as their
    common prefix and, after it, text or ``[first, last]`` runs of counted numbers; the
    finished shards as runs of their places; a start key only where there is one."""
    shards = data.pop("shards")
    keys = [shard["key"] for shard in shards]
    prefix = os.path.commonprefix(keys)  # noqa: RUF071 (text, not paths)
    items: list[Any] = []
    for key in keys:
        rest = key[len(prefix) :]
        last = items[-1] if items else None
        if _COUNTED.fullmatch(rest) is None:
            items.append(rest)
        elif isinstance(last, list) and last[1] + 1 == int(rest):
            last[1] = int(rest)
        else:
            items.append([int(rest), int(rest)])
    items = [
        str(item[0]) if isinstance(item, list) and item[0] == item[1] else item for item in items
    ]
    data.update(
        prefix=prefix,
        keys=items,
        done=_runs([place for place, shard in enumerate(shards) if shard["done"]]),
        starts=[
            [place, shard["start"]]
            for place, shard in enumerate(shards)
            if shard["start"] is not None
        ],
    )
    return data


def _run_problem(run: Any, name: str) -> str | None:
    """What is wrong with a ``[first, last]`` run (None: nothing)."""
    if (
        not isinstance(run, list)
        or len(run) != 2
        or any(type(end) is not int for end in run)
        or not 0 <= run[0] <= run[1]
    ):
        return f"{name} run {run!r}"
    return None


def _compact_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with a version 3 payload, checked field by field (None: nothing)."""
    if set(data) != set(_COMPACT_FIELDS):
        return f"fields {sorted(data)}, expected {sorted(_COMPACT_FIELDS)}"
    for name, kind in _COMPACT_FIELDS.items():
        value = data[name]
        if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
            return f"{name} is {value!r}"
    count = 0
    for item in data["keys"]:
        if isinstance(item, str):
            count += 1
            continue
        if (problem := _run_problem(item, "keys")) is not None:
            return problem
        count += item[1] - item[0] + 1
        if count > _MAX_CURSOR_SHARDS:
            return f"more than {_MAX_CURSOR_SHARDS} shards"
    if count == 0:
        return "no shards"
    seen: set[str] = set()
    for key in _keys_of(data):
        if not key or key in seen:
            return f"shard key {key!r}"
        seen.add(key)
    after = -1
    for run in data["done"]:
        if (problem := _run_problem(run, "done")) is not None:
            return problem
        if run[0] <= after or run[1] >= count:
            return f"done run {run!r}"
        after = run[1]
    after = -1
    for entry in data["starts"]:
        if not isinstance(entry, list) or len(entry) != 2 or type(entry[0]) is not int:
            return f"starts entry {entry!r}"
        place, start = entry
        if not after < place < count:
            return f"starts entry {entry!r}"
        after = place
        if (wrong := _key_problem(start)) is not None:
            return f"start of shard {place}: {wrong}"
    return None


def _keys_of(data: dict[str, Any]) -> list[str]:
    """The shard keys a checked version 3 payload names, in order."""
    keys: list[str] = []
    for item in data["keys"]:
        if isinstance(item, str):
            keys.append(data["prefix"] + item)
        else:
            keys.extend(f"{data['prefix']}{n}" for n in range(item[0], item[1] + 1))
    return keys


def _listed(data: dict[str, Any]) -> dict[str, Any]:
    """A checked version 3 payload with every shard's position listed, as a Cursor holds it."""
    keys = _keys_of(data)
    done = {place for first, last in data["done"] for place in range(first, last + 1)}
    starts = {place: start for place, start in data["starts"]}
    listed = {name: data[name] for name in _FIELDS if name != "shards"}
    listed["shards"] = [
        {"key": key, "start": starts.get(place), "done": place in done}
        for place, key in enumerate(keys)
    ]
    return listed


def _key_problem(start: Any) -> str | None:
    """What is wrong with a cursor's text form of an ExclusiveStartKey (None: nothing)."""
    if not isinstance(start, dict) or not start:
        return f"{start!r} is not a key"
    for name, typed in start.items():
        if not isinstance(typed, dict) or len(typed) != 1:
            return f"attribute {name!r} is {typed!r}"
        ((kind, value),) = typed.items()
        if kind not in _TYPE_TAGS or not isinstance(value, str):
            return f"attribute {name!r} has type {kind!r} and value {value!r}"
        try:
            if kind == "N":
                storable_number(value)
            elif kind == "B":
                base64.b64decode(value, validate=True)
        except (ValueError, binascii.Error):
            return f"attribute {name!r} is not a valid {kind} value"
    return None


def _canonical_values(values: dict[str, Any]) -> dict[str, Any]:
    """Expression values with numbers in canonical form (``3`` and ``3.0`` are one)."""
    out: dict[str, Any] = {}
    for name, typed in values.items():
        ((kind, value),) = typed.items()
        if kind == "N":
            value = storable_number(value)
        elif kind == "B":
            value = base64.b64encode(bytes(value)).decode("ascii")
        out[name] = {kind: value}
    return out


def _time_text(value: Any) -> Any:
    """A time range bound as text that equal bounds share (numbers canonical)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        try:
            return storable_number(value)
        except (ValueError, ArithmeticError):  # no time: planning the buckets refuses it
            return repr(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return repr(value)


def conditions_digest(
    range_condition: Condition | None,
    filter_condition: Condition | None,
    time_range: tuple[Any, Any] | None = None,
) -> str:
    """A short digest of a query's conditions, recorded in its cursor.

    Numbers count by value (``ts > 3`` and ``ts > 3.0`` are one condition). A value
    that cannot be put in canonical form makes the digest of its text.
    """
    parts: list[Any] = []
    for condition in (range_condition, filter_condition):
        if condition is None:
            parts.append(None)
            continue
        names: dict[str, str] = {}
        values: dict[str, Any] = {}
        expression = condition.serialize(names, values)
        try:
            shown: Any = _canonical_values(values)
        except (ValueError, TypeError):
            shown = repr(values)
        parts.append([expression, sorted(names.items()), shown])
    if time_range is not None:
        parts.append([_time_text(bound) for bound in time_range])
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def start_problem(
    start: dict[str, dict[str, str]], key_types: dict[str, str], partition: str, shard: str
) -> str | None:
    """What a cursor's start key does wrong for the query it would resume (None: nothing).

    It must name exactly the query's key attributes (``key_types``: name to ``S``, ``N``
    or ``B``), each of its type, and hold the shard's own physical key as ``partition``:
    DynamoDB refuses an ExclusiveStartKey of another schema or partition, and the
    problem ends with its words.
    """
    if set(start) != set(key_types):
        return (
            f"names {sorted(start)}, the query's keys are {sorted(key_types)}: the provided "
            "starting key is invalid"
        )
    for name, kind in key_types.items():
        ((given, _),) = start[name].items()
        if given != kind:
            return (
                f"has {name!r} of type {given}, the key's type is {kind}: the provided key "
                "element does not match the schema"
            )
    if start[partition]["S"] != shard:
        return (
            f"is in the partition {start[partition]['S']!r}, not in {shard!r}: the provided "
            "starting key is outside query boundaries"
        )
    return None
