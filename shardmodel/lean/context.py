"""Which connection a model's request uses: its own, or inside an async call its twin.

Light on purpose: the sync path imports it, and loads the async path
(:mod:`shardmodel.lean.aio`) only inside an async call.
"""

from __future__ import annotations

from typing import Any

from pynamodb.models import Model

from shardmodel.core import telemetry
from shardmodel.core.bridge import in_async

__all__ = ["AsyncAwareModel", "connection_in_context"]


def connection_in_context(connection: Any) -> Any:
    """``connection`` (a PynamoDB ``TableConnection``), or inside an async call its
    async twin (:func:`shardmodel.lean.aio.async_table_connection`); while spans or
    metrics are recorded, a sync call's traced twin
    (:func:`shardmodel.lean.traced.traced_table_connection`)."""
    if not in_async():
        if not telemetry.active():
            return connection
        from shardmodel.lean.traced import traced_table_connection

        return traced_table_connection(connection)
    from shardmodel.lean.aio import async_table_connection

    return async_table_connection(connection)


class AsyncAwareModel(Model):
    """A PynamoDB model whose requests inside an async call go on the async path.

    The base of shardmodel's own tables (shard counts, migration state);
    ``ShardedModel`` does the same.
    """

    @classmethod
    def _get_connection(cls) -> Any:
        return connection_in_context(super()._get_connection())
