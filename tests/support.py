"""Helpers for tests: read what a table really holds, bypassing the mapper; empty tables."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from pynamodb.models import Model

from shardmodel import ShardedModel
from shardmodel.engine import sharding_of
from shardmodel.testing import create_tables, drop_tables


def shard_directory(model: type[Model]) -> Any:
    """A dynamic model's metadata table access (None for any other model)."""
    return sharding_of(model).directory if issubclass(model, ShardedModel) else None


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
