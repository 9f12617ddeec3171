"""Helpers for tests: read what a table really holds, bypassing the mapper."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from pynamodb.models import Model


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
