"""Helpers for tests: read what a table really holds, bypassing the mapper; empty tables;
the command line's error line."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from pynamodb.models import Model

from shardmodel import ShardedModel
from shardmodel.engine import sharding_of
from shardmodel.engine.cursor import _listed
from shardmodel.testing import create_tables, drop_tables


def token_of(payload: bytes, secret: bytes | str | None = None) -> str:
    """A cursor string for any payload bytes, signed the way the format says (a SHA-256
    checksum without a secret, else an HMAC), written here apart from the library."""
    body = base64.urlsafe_b64encode(payload).decode("ascii").rstrip("=")
    if secret is None:
        return f"{body}.{hashlib.sha256(payload).hexdigest()[:32]}"
    key = secret.encode("utf-8") if isinstance(secret, str) else secret
    return f"{body}.{hmac.new(key, payload, hashlib.sha256).hexdigest()[:32]}"


def cursor_payload(token: str, listed: bool = True) -> Any:
    """A cursor string's payload: its JSON body (inflated when compressed), unchecked.

    ``listed``: in the form of version 2, which lists every shard's position and which
    this release still reads, so a test edits one shard and signs it again; otherwise
    the payload as sent.
    """
    body = token.split(".")[0]
    packed = body.startswith("z")
    text = body[1:] if packed else body
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    payload = json.loads(zlib.decompress(data) if packed else data)
    if listed and payload.get("version") == 3:
        return dict(_listed(payload), version=2)
    return payload


def signed_cursor(payload: Any, secret: bytes | str | None = None) -> str:
    """``payload`` as a cursor string, signed as a model with ``secret`` signs it: what a
    forger makes (anyone without a secret, whoever holds it with one)."""
    return token_of(json.dumps(payload).encode("utf-8"), secret)


def shard_directory(model: type[Model]) -> Any:
    """A dynamic model's metadata table access (None for any other model)."""
    return sharding_of(model).directory if issubclass(model, ShardedModel) else None


@contextmanager
def sent_requests(model: type[Model]) -> Iterator[list[str]]:
    """The DynamoDB operations the model's client hands to the server inside the block.

    Counted in botocore's ``before-send`` event, the last step before the wire (the lean
    read path emits it too): an empty list means nothing left the client.
    """
    sent: list[str] = []
    events = model._get_connection().connection.client.meta.events

    def record(event_name: str, **_: Any) -> None:
        sent.append(event_name.rsplit(".", 1)[-1])

    events.register("before-send.dynamodb", record)
    try:
        yield sent
    finally:
        events.unregister("before-send.dynamodb", record)


#: A progress line: a step that ran past its second (any step, on a loaded machine).
_PROGRESS = re.compile(r" \.\.\. (done in|failed after) [0-9.]+ s$")


def error_line(err: str, *phrases: str) -> str:
    """The one error line of a command's stderr, holding every phrase; no traceback.

    Progress lines are dropped: whether a step's line appears depends on the machine's
    load, not on the command.
    """
    assert err.endswith("\n") and "Traceback" not in err, err
    lines = [line for line in err.splitlines() if not _PROGRESS.search(line)]
    assert len(lines) == 1, err
    for phrase in phrases:
        assert phrase in lines[0], err
    return lines[0]


def paged(read: Callable[[Any], Any]) -> list[Any]:
    """Every item of a listing read page by page: ``read(cursor)`` is one page's result
    (``cursor`` None the first time), resumed from its ``last_evaluated_key`` until None."""
    items: list[Any] = []
    token = None
    while True:
        page = read(token)
        items.extend(page)
        token = page.last_evaluated_key
        if token is None:
            return items


def raw_items(model: type[Model]) -> list[dict[str, Any]]:
    """Every stored item of the model's table, as DynamoDB returns it (all pages)."""
    items: list[dict[str, Any]] = []
    start = None
    while True:
        page = model._get_connection().scan(exclusive_start_key=start)
        items.extend(page.get("Items", []))
        start = page.get("LastEvaluatedKey")
        if not start:
            return items


def stored_keys(model: type[Model]) -> list[str]:
    """The physical partition keys stored in the model's table, sorted."""
    name = model._hash_key_attribute().attr_name
    return sorted(item[name]["S"] for item in raw_items(model))


def run_threads(threads: int, per_thread: int, work: Callable[[int, int], None]) -> list[Any]:
    """Call ``work(worker, n)`` per_thread times on each of ``threads`` threads.

    Returns the errors raised in the threads (reported to the test, not lost).
    """
    errors: list[Any] = []

    def loop(worker: int) -> None:
        try:
            for n in range(per_thread):
                work(worker, n)
        except BaseException as error:
            errors.append(error)

    pool = [threading.Thread(target=loop, args=(w,)) for w in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return errors


def model_tables(models: Iterable[type[Model]]) -> dict[str, type[Model]]:
    """Every table the models use, by name: each model's own and a dynamic key's metadata."""
    tables: dict[str, type[Model]] = {}
    for model in models:
        tables[model.Meta.table_name] = model
        directory = shard_directory(model)
        if directory is not None:
            metadata = directory.table()  # bound to the model's endpoint
            tables[metadata.Meta.table_name] = metadata
    return tables


def reset_tables(models: Iterable[type[Model]], client: Any) -> None:
    """Leave the models' tables empty: create the missing ones, delete every item of the rest.

    ``client`` is a botocore DynamoDB client of the models' endpoint. Costs a ListTables
    and one Scan per empty table, where dropping and recreating every table costs four
    requests per table and a client per model; the items a test wrote are deleted by key.
    """
    models = list(models)
    tables = model_tables(models)
    existing: set[str] = set()
    for page in client.get_paginator("list_tables").paginate():
        existing.update(page["TableNames"])
    for model in models:
        own = model_tables([model])
        if not set(own) <= existing:  # dropped by a test: make it, and its metadata, anew
            drop_tables([model])
            create_tables([model])
            existing.difference_update(own)
    for name in sorted(set(tables) & existing):
        _delete_every_item(client, name, tables[name])
    for model in models:
        directory = shard_directory(model)
        if directory is not None:
            directory.clear_cache()  # as delete_table does: no count outlives its items


#: In-process moto's table objects right after :func:`restore_tables` first created them,
#: per set of models: copied into each later test's fresh moto.
_SNAPSHOTS: dict[tuple[type[Model], ...], Any] = {}


def restore_tables(models: Iterable[type[Model]]) -> None:
    """Give the running in-process moto the models' tables, empty, as made by
    ``create_tables``: made through the API the first time in this process, then copied
    from moto's own objects (a deep copy of the empty tables: about 10 ms for 23 tables
    where creating them cost 0.3 s)."""
    import copy

    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    models = tuple(models)
    regions = {getattr(model.Meta, "region", None) or "us-east-1" for model in models}
    if len(regions) != 1:
        raise ValueError(f"models in several regions {sorted(regions)}: restore each apart")
    backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][regions.pop()]
    snapshot = _SNAPSHOTS.get(models)
    if snapshot is None:
        before = set(backend.tables)
        create_tables(models)
        made = {name: table for name, table in backend.tables.items() if name not in before}
        _SNAPSHOTS[models] = copy.deepcopy(made)
        return
    backend.tables.update(copy.deepcopy(snapshot))


def _delete_every_item(client: Any, table: str, model: type[Model]) -> None:
    keys = [model._hash_key_attribute().attr_name]
    if model._range_key_attribute() is not None:
        keys.append(model._range_key_attribute().attr_name)
    # whole items, no ProjectionExpression: moto's server projects through boto3's
    # 38-digit context, which fails on a number written with more digits of text
    # (1E+40 written out, 38 significant digits and trailing zeros), as DynamoDB allows
    scan = {"TableName": table, "ConsistentRead": True}
    for page in client.get_paginator("scan").paginate(**scan):
        items = [{key: item[key] for key in keys} for item in page["Items"]]
        for start in range(0, len(items), 25):
            pending = {
                table: [{"DeleteRequest": {"Key": key}} for key in items[start : start + 25]]
            }
            while pending:
                pending = client.batch_write_item(RequestItems=pending)["UnprocessedItems"]


_MASK = 2**64 - 1
_P1, _P2, _P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_P4, _P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (64 - bits))) & _MASK


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _MASK, 31) * _P1) & _MASK


def xxh64(data: bytes, seed: int = 0) -> int:
    """XXH64 of ``data`` (the xxHash specification, seed 0), as other tools shard with it.

    Written out here so the tests need no extra package; checked against the reference
    vectors in ``tests/unit/test_interop.py``.
    """
    size, at = len(data), 0

    def lane(width: int) -> int:
        return int.from_bytes(data[at : at + width], "little")

    if size >= 32:
        acc = [(seed + _P1 + _P2) & _MASK, (seed + _P2) & _MASK, seed, (seed - _P1) & _MASK]
        while at <= size - 32:
            for n in range(4):
                acc[n] = _round(acc[n], lane(8))
                at += 8
        hashed = _rotl(acc[0], 1) + _rotl(acc[1], 7) + _rotl(acc[2], 12) + _rotl(acc[3], 18)
        hashed &= _MASK
        for value in acc:
            hashed = ((hashed ^ _round(0, value)) * _P1 + _P4) & _MASK
    else:
        hashed = (seed + _P5) & _MASK
    hashed = (hashed + size) & _MASK
    while at + 8 <= size:
        hashed = (_rotl(hashed ^ _round(0, lane(8)), 27) * _P1 + _P4) & _MASK
        at += 8
    if at + 4 <= size:
        hashed = (_rotl(hashed ^ (lane(4) * _P1 & _MASK), 23) * _P2 + _P3) & _MASK
        at += 4
    while at < size:
        hashed = (_rotl(hashed ^ (data[at] * _P5 & _MASK), 11) * _P1) & _MASK
        at += 1
    hashed ^= hashed >> 33
    hashed = (hashed * _P2) & _MASK
    hashed ^= hashed >> 29
    hashed = (hashed * _P3) & _MASK
    return hashed ^ (hashed >> 32)
