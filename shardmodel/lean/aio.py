"""The async request path: every request of an async call, on the running event loop.

Inside an async call (:mod:`shardmodel.core.bridge`) a model's PynamoDB connection is
its async twin (:func:`async_table_connection`): PynamoDB builds each request and wraps
its errors as always, and hands it to :class:`AsyncLeanClient`, the lean client
(:class:`~shardmodel.lean.client.LeanClient`: botocore's events, its retry handler, its
parser for errors, SigV4 with the day's cached key) for every operation, not only reads.
Its sockets are an :class:`~shardmodel.lean.aio_http.AsyncHttpPool` of the running
loop; its waits (a retry's back-off) are the loop's. Credentials that need a refresh are
refreshed on the loop's thread pool (botocore's providers block), then used as botocore
uses them.

A client the lean path cannot stand in for (a proxy, a client certificate, unsigned
requests; :func:`~shardmodel.lean.client.unsupported_reason`) sends through botocore
on the loop's thread pool instead, one thread per request in flight.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any

from shardmodel.core.bridge import await_, run_blocking
from shardmodel.lean.aio_http import AsyncHttpPool
from shardmodel.lean.client import LeanClient, StandIn, unsupported_reason
from shardmodel.lean.http import endpoint
from shardmodel.lean.rebound import ReboundConnection, TwinTables

__all__ = [
    "AsyncConnection",
    "AsyncLeanClient",
    "async_client",
    "async_table_connection",
    "pools",
]

#: Where a botocore client keeps its async stand-in.
#: Each botocore client's async stand-in, keyed weakly (nothing is set on the client).
_async: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
#: Every async client's pools, for :func:`pools` (tests and benchmarks read them).
_clients: weakref.WeakSet[AsyncLeanClient] = weakref.WeakSet()


class _LoopPool:
    """The pool of the running loop, as the lean client's ``pool`` (``post``, ``authority``).

    ``post`` is called in an async call's greenlet and waits on the loop.
    """

    def __init__(self, owner: AsyncLeanClient, url: str) -> None:
        self._owner = owner
        self.url = url
        self.authority = endpoint(url, "AsyncLeanClient")[3]

    def post(self, headers: Any, body: bytes, resend: bool = False) -> Any:
        return await_(self._owner.loop_pool(self.url).post(headers, body, resend))

    def close(self) -> None:
        """Nothing to close here: the loops' pools close with their loops."""


class AsyncLeanClient(LeanClient):
    """A botocore DynamoDB client's every operation, sent on the running event loop.

    One per botocore client; one :class:`AsyncHttpPool` per event loop it is used on
    (sockets belong to a loop), sized by the client's ``max_pool_connections``.
    """

    def __init__(self, client: Any) -> None:
        #: each loop's pools, by URL
        self._pools: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, AsyncHttpPool]
        ] = weakref.WeakKeyDictionary()
        #: the pool of the last loop used (it knows its loop and URL)
        self._last: AsyncHttpPool | None = None
        super().__init__(client, operations=client.meta.service_model.operation_names, weak=True)
        _clients.add(self)

    def _pool(self, url: str | None = None) -> Any:
        return _LoopPool(self, url or self.url)

    def loop_pool(self, url: str) -> AsyncHttpPool:
        """The running loop's pool to ``url`` (made on first use, bound to the loop)."""
        loop = asyncio.get_running_loop()
        last = self._last
        if last is not None and last.loop is loop and last.url == url:
            return last  # the loop of the request before: one look-up a request saved
        pools = self._pools.get(loop)
        if pools is None:
            pools = self._pools[loop] = {}
        pool = pools.get(url)
        if pool is None:
            config = self.meta.config
            session = self.client._endpoint.http_session
            pool = AsyncHttpPool(
                url,
                connect_timeout=config.connect_timeout,
                read_timeout=config.read_timeout,
                verify=getattr(session, "_verify", True),
                max_connections=config.max_pool_connections or 10,
            )
            pools[url] = pool
            await_(pool.start())
        self._last = pool
        return pool

    def pools(self) -> list[AsyncHttpPool]:
        return [pool for pools in list(self._pools.values()) for pool in pools.values()]

    def _elsewhere(self, operation_name: str, api_params: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = run_blocking(
            lambda: self.client._make_api_call(operation_name, api_params)
        )
        return result

    def _make_api_call(self, operation_name: str, api_params: dict[str, Any]) -> dict[str, Any]:
        return self.call(operation_name, api_params)

    def __getattr__(self, name: str) -> Any:
        """botocore's operation methods (``client.get_item(**params)``), sent on the loop:
        code written against a botocore client (a migration's moves) runs on it as is."""
        meta = self.__dict__.get("meta")
        operation = None if meta is None else meta.method_to_api_mapping.get(name)
        if operation is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

        def method(**params: Any) -> dict[str, Any]:
            return self._make_api_call(operation, params)

        self.__dict__[name] = method  # made once per operation
        return method

    def _credentials(self) -> Any:
        credentials = self._request_signer._credentials
        needed = getattr(credentials, "refresh_needed", None)
        if needed is not None and needed():
            # botocore's providers block (STS, the metadata service): not on the loop
            return run_blocking(credentials.get_frozen_credentials)
        return credentials.get_frozen_credentials()

    def _answered_here(self) -> None:
        # an event handler answered (in-process moto, the capacity simulator): no socket
        # waited, so let the loop's other coroutines run, as a round trip would
        await_(asyncio.sleep(0))


class _ThreadedClient(StandIn):
    """A botocore client the lean path cannot stand in for: its calls on a thread."""

    def __init__(self, client: Any) -> None:
        super().__init__(client, weak=True)  # kept in a table keyed weakly by the client

    def _make_api_call(self, operation_name: str, api_params: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = run_blocking(
            lambda: self.client._make_api_call(operation_name, api_params)
        )
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


def async_client(client: Any) -> Any:
    """The async stand-in for a botocore DynamoDB client (built once per client)."""
    found = _async.get(client)
    if found is not None:
        return found
    with _lock:
        found = _async.get(client)
        if found is None:
            reason = unsupported_reason(client)
            found = AsyncLeanClient(client) if reason is None else _ThreadedClient(client)
            if isinstance(found, AsyncLeanClient) and found.rate_limited():
                found = _ThreadedClient(client)  # adaptive mode's waits stay off the loop
            _async[client] = found
        return found


class AsyncConnection(ReboundConnection):
    """A PynamoDB ``Connection`` whose every request goes to the async stand-in.

    PynamoDB's own methods run on it unchanged (request building, signals, error
    wrapping); all state is the original connection's.
    """

    stand_in = staticmethod(async_client)


_twins = TwinTables(AsyncConnection)


def async_table_connection(connection: Any) -> Any:
    """The async twin of a PynamoDB ``TableConnection`` (made once per connection)."""
    return _twins.of(connection)


def pools() -> list[AsyncHttpPool]:
    """Every async client's socket pools (on every loop they were used on)."""
    return [pool for client in list(_clients) for pool in client.pools()]
