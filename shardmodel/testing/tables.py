"""Create and drop the tables of PynamoDB models (sharded or plain) for tests."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pynamodb.models import Model

from shardmodel.core.tables import wait_until_active

__all__ = ["bind_models", "create_tables", "drop_tables"]


def create_tables(models: Iterable[type[Model]]) -> None:
    """Create each model's table (on-demand billing unless its Meta sets capacity), and a
    dynamic model's metadata table, then wait until they are active.

    The tables are created first and waited for after, polling from a few milliseconds
    (:mod:`shardmodel.core.tables`): PynamoDB's own wait sleeps 2 s when a table is not
    active at its first look, which a local server shows for a moment.
    """
    models = list(models)
    for model in models:
        meta = model.Meta
        provisioned = hasattr(meta, "read_capacity_units") or hasattr(meta, "billing_mode")
        billing = None if provisioned else "PAY_PER_REQUEST"
        model.create_table(wait=False, billing_mode=billing)
    wait_until_active([*models, *(m for m in map(_metadata_table, models) if m is not None)])


def _sharding(model: type[Model]) -> Any:
    """A sharded model's engine (None for a plain PynamoDB model)."""
    from shardmodel.engine import sharding_of
    from shardmodel.model.sharded import ShardedModel

    if not (isinstance(model, type) and issubclass(model, ShardedModel)):
        return None
    return sharding_of(model)


def _metadata_table(model: type[Model]) -> Any:
    """A dynamic model's metadata table model (None for any other model)."""
    engine = _sharding(model)
    directory = None if engine is None else engine.directory
    return None if directory is None else directory.table()


def _forget_layout(model: type[Model]) -> None:
    """A sharded model reads its table's layout afresh (the table went, or moved)."""
    engine = _sharding(model)
    if engine is not None:
        engine.forget_table()


def drop_tables(models: Iterable[type[Model]]) -> None:
    """Delete each model's table if it exists."""
    for model in models:
        _forget_layout(model)
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
        _forget_layout(model)
