"""The lean request path: a sharded read's per-shard requests without botocore's pipeline.

A merged query sends one Query per shard; through botocore each costs ~1.4-1.8 ms of
client CPU, most of it user-agent building, event plumbing, urllib3 and a generic
signer, and at 16 shards that CPU, serialized by the GIL, is most of the query's wall
time. :func:`table_connection` gives a model's reads a PynamoDB ``TableConnection``
whose Query and BatchGetItem calls go through PynamoDB's own request building and error
wrapping (so ``QueryError``/``GetError`` wrap the same botocore ``ClientError``) down to
:class:`~shardmodel.lean.client.LeanClient` instead of botocore's ``_make_api_call``.

Set ``Meta.lean_requests = False`` on a model to send everything through botocore. The
botocore path is also used, automatically, for a client the lean path cannot stand in
for (see :func:`~shardmodel.lean.client.unsupported_reason`: a proxy, a client
certificate, unsigned requests, an endpoint URL with a path) and for any request body
it cannot serialize. In-process moto needs no fallback: it answers in botocore's
``before-send`` event, which the lean path emits like botocore.
"""

from __future__ import annotations

import copy
import threading
import weakref
from typing import Any

from pynamodb.connection.base import Connection

from shardmodel.lean.client import LEAN_OPERATIONS, LeanClient, lean_client, unsupported_reason
from shardmodel.lean.hooks import nonblocking
from shardmodel.lean.traced import untraced

__all__ = [
    "LEAN_OPERATIONS",
    "LeanClient",
    "LeanConnection",
    "lean_client",
    "nonblocking",
    "table_connection",
    "unsupported_reason",
]

#: Each botocore client's lean stand-in (:data:`_PLAIN`: none, the client serves), keyed
#: weakly: nothing is set on the user's client, and a stand-in holds its client weakly.
_stand_ins: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_PLAIN = object()
_tables: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _lean_for(client: Any) -> Any:
    """The lean stand-in for a botocore client, or the client itself (built once)."""
    found = _stand_ins.get(client)
    if found is None:
        with _lock:
            found = _stand_ins.get(client)
            if found is None:
                found = _stand_ins[client] = lean_client(client) or _PLAIN
    return client if found is _PLAIN else found


class LeanConnection:
    """A PynamoDB ``Connection`` whose client is the lean one; all state is the original's.

    PynamoDB's own ``query``, ``batch_get_item``, ``dispatch`` and ``_make_api_call`` run
    on it unchanged: they build the request, send PynamoDB's signals and wrap botocore's
    errors in ``QueryError``/``GetError`` exactly as on the original connection.
    """

    query = Connection.query
    batch_get_item = Connection.batch_get_item
    dispatch = Connection.dispatch
    _make_api_call = Connection._make_api_call

    def __init__(self, origin: Connection) -> None:
        self._origin = origin

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._origin, name)
        if callable(found) and not name.startswith("__"):
            self.__dict__[name] = found  # the original's bound methods: looked up once
        return found

    @property
    def client(self) -> Any:
        """The lean client for the original connection's current botocore client."""
        return _lean_for(self._origin.client)


def table_connection(model: Any) -> Any:
    """``model``'s ``TableConnection`` with its reads on the lean path (see the module).

    The model's own connection when ``Meta.lean_requests`` is False.
    """
    switch = getattr(model.Meta, "lean_requests", True)
    if not isinstance(switch, bool):
        from shardmodel.errors import ShardConfigurationError

        raise ShardConfigurationError(
            f"{model.__name__}.Meta.lean_requests = {switch!r}: give True (the default: "
            "per-shard reads on the lean path) or False (everything through botocore)"
        )
    connection = model._get_connection()
    if not switch:
        return connection
    connection = untraced(connection)  # the lean path makes its requests' spans itself
    try:
        return _tables[connection]
    except KeyError:
        pass
    with _lock:
        if connection not in _tables:
            lean = copy.copy(connection)
            lean.connection = LeanConnection(connection.connection)
            _tables[connection] = lean
        return _tables[connection]
