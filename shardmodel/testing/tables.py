"""Create and drop the tables of PynamoDB models (sharded or plain) for tests."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pynamodb.models import Model

__all__ = ["bind_models", "create_tables", "drop_tables"]


def create_tables(models: Iterable[type[Model]]) -> None:
    """Create each model's table (on-demand billing unless its Meta sets capacity) and wait."""
    for model in models:
        meta = model.Meta
        provisioned = hasattr(meta, "read_capacity_units") or hasattr(meta, "billing_mode")
        billing = None if provisioned else "PAY_PER_REQUEST"
        model.create_table(wait=True, billing_mode=billing)


def drop_tables(models: Iterable[type[Model]]) -> None:
    """Delete each model's table if it exists."""
    for model in models:
        if model.exists():
            model.delete_table()


def bind_models(models: Iterable[type[Model]], host: str | None, **meta: Any) -> None:
    """Point models at an endpoint (None: AWS, or moto in-process) and drop cached clients.

    Extra keyword arguments set other ``Meta`` fields, e.g. ``region``.
    """
    for model in models:
        changed = getattr(model.Meta, "host", None) != host or any(
            getattr(model.Meta, name, None) != value for name, value in meta.items()
        )
        if not changed:
            continue  # keep the cached client: building one costs tens of milliseconds
        model.Meta.host = host
        for name, value in meta.items():
            setattr(model.Meta, name, value)
        model._connection = None
