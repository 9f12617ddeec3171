"""A sync model's requests with their spans and metrics, when OpenTelemetry is on.

A sharded read's shard requests go on the lean path, which makes each one's span
(:meth:`~shardmodel.lean.client.LeanClient.call`); a sync write (``save``, ``update``,
``delete``, a batch) goes through botocore. While :mod:`shardmodel.core.telemetry`
records, a model's connection is this twin, whose requests pass
:class:`TracedClient` on their way to botocore: a span each (none where a tracer's
botocore instrumentation wraps the client: it makes that span) and the same metrics.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from shardmodel.core import telemetry
from shardmodel.lean.client import StandIn, _instrumented
from shardmodel.lean.rebound import ReboundConnection, TwinTables

__all__ = ["TracedClient", "TracedConnection", "traced_table_connection", "untraced"]

_clients: weakref.WeakKeyDictionary[Any, TracedClient] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


class TracedClient(StandIn):
    """Sends through its botocore client, each request inside its span and counted."""

    def __init__(self, client: Any) -> None:
        super().__init__(client, weak=True)  # kept in a table keyed weakly by the client
        self.instrumented = _instrumented(client)

    def _make_api_call(self, operation_name: str, api_params: dict[str, Any]) -> dict[str, Any]:
        traced = telemetry.request(
            operation_name, api_params, self.meta.region_name, span=not self.instrumented
        )
        client = self.client
        if traced is None:
            result: dict[str, Any] = client._make_api_call(operation_name, api_params)
            return result
        try:
            result = client._make_api_call(operation_name, api_params)
        except BaseException as error:
            traced.failed(error)
            raise
        traced.answered(result)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


def _traced_client(client: Any) -> TracedClient:
    found = _clients.get(client)
    if found is None:
        with _lock:
            found = _clients.get(client)
            if found is None:
                found = _clients[client] = TracedClient(client)
    return found


class TracedConnection(ReboundConnection):
    """A PynamoDB ``Connection`` whose every request goes through :class:`TracedClient`."""

    stand_in = staticmethod(_traced_client)


_twins = TwinTables(TracedConnection)


def traced_table_connection(connection: Any) -> Any:
    """The traced twin of a PynamoDB ``TableConnection`` (made once per connection)."""
    return _twins.of(connection)


def untraced(connection: Any) -> Any:
    """The model's own ``TableConnection`` behind a traced twin (itself when it is not one)."""
    if isinstance(getattr(connection, "connection", None), TracedConnection):
        return connection.twin_of
    return connection
