"""Creating a table and waiting until it is active, with a short first poll.

PynamoDB's ``create_table(wait=True)`` sleeps 2 s whenever the table is not active at its
first look. DynamoDB takes seconds to create a table anyway, but a local server (dynalite,
moto) takes milliseconds, and the 2 s sleep was most of the time a test or a first
migration spent making its tables. Here the poll starts at 5 ms and doubles up to 2 s.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

__all__ = ["create_table", "wait_until_active"]


def create_table(model: Any, billing_mode: str | None = "PAY_PER_REQUEST") -> None:
    """Create ``model``'s table unless it exists, then wait until it is active."""
    if not model.exists():
        model.create_table(wait=False, billing_mode=billing_mode)
    wait_until_active([model])


def wait_until_active(models: Iterable[Any], timeout: float = 300.0) -> None:
    """Poll each model's table (DescribeTable) until it is active."""
    deadline = time.monotonic() + timeout
    for model in models:
        pause = 0.005
        while model.describe_table().get("TableStatus") != "ACTIVE":
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"table {model.Meta.table_name!r} not active after {timeout:g} s"
                )
            time.sleep(pause)
            pause = min(pause * 2, 2.0)
