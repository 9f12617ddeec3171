"""HTTP/1.1 keep-alive requests on an asyncio event loop: the async twin of ``HttpPool``.

The same framing as :mod:`shardmodel.lean.http` (its request bytes, head and chunked
parsers are shared), on asyncio ``Protocol`` connections: a response is parsed as its
bytes arrive, and the coroutine that sent the request is woken once, when it is whole.
Failures raise the botocore exceptions ``HttpPool`` raises for the same failure, so
botocore's retry rules and PynamoDB's error wrapping see no difference, and a kept
connection the server closed while idle is replaced once, as there.

The pool is bounded: at most ``max_connections`` sockets are open at once (the model's
``max_pool_connections``); a request finding none free waits for one, first come first
served. ``peak_open`` records the most that were open at once.

The read timeout is watched by one timer a pool, not one a request: a response not whole
by its deadline fails between ``read_timeout`` and a quarter of it (at most a second)
later, as ``ReadTimeoutError``.

A pool belongs to one event loop. It closes its sockets on :meth:`AsyncHttpPool.close`,
and by itself when ``asyncio.run`` (or ``asyncio.Runner``) ends its loop: it registers
an async generator whose ``finally`` closes it, which the loop's
``shutdown_asyncgens`` runs.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from shardmodel.lean.http import (
    Response,
    _Closed,
    _Malformed,
    _Stale,
    _tls_context,
    content_length,
    endpoint,
    keeps_alive,
    parse_chunked,
    parse_head,
    request_bytes,
)

__all__ = ["AsyncHttpPool"]

_CRLF2 = b"\r\n\r\n"


class _Connection(asyncio.Protocol):
    """One socket: writes a request, parses the response as it arrives."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = b""
        self.closed = False
        self._waiter: asyncio.Future[tuple[Response, bool]] | None = None
        self._head: tuple[str, int, dict[str, str], int] | None = None  # parsed once
        self.deadline = 0.0  # the loop time by which the response must be whole

    # -- asyncio's callbacks ------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self._waiter is not None and not self._waiter.done():
            try:
                done = self._parse(eof=False)
            except _Malformed as error:
                self._waiter.set_exception(error)
                return
            if done is not None:
                self._waiter.set_result(done)

    def eof_received(self) -> bool | None:
        return None  # close the transport; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        try:
            done = self._parse(eof=True)
        except _Malformed as error:
            waiter.set_exception(error)
            return
        if done is not None:
            waiter.set_result(done)
        else:
            waiter.set_exception(_Closed(started=bool(self.buffer)))

    # -- one exchange -------------------------------------------------------------------

    def send(self, payload: bytes, loop: asyncio.AbstractEventLoop) -> asyncio.Future[Any]:
        """Write ``payload``; the future of the response and whether the socket is kept."""
        assert self.transport is not None
        self._waiter = waiter = loop.create_future()
        self._head = None
        if self.closed or self.transport.is_closing():
            waiter.set_exception(_Closed(started=False))
            return waiter
        self.transport.write(payload)
        return waiter

    def finish(self) -> None:
        self._waiter = None

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _parse(self, eof: bool) -> tuple[Response, bool] | None:
        """The whole response at the start of the buffer (1xx skipped), or None."""
        buffer = self.buffer
        while self._head is None:
            end = buffer.find(_CRLF2)
            if end < 0:
                return None
            version, status, headers = parse_head(buffer[:end])
            buffer = buffer[end + 4 :]
            self.buffer = buffer
            if not 100 <= status < 200:
                self._head = (version, status, headers, 0)
        version, status, headers, _ = self._head
        keep = keeps_alive(version, headers)
        if "chunked" in headers.get("transfer-encoding", "").lower():
            done = parse_chunked(buffer)
            if done is None:
                return None
            body, rest = done
        elif "content-length" in headers:
            length = content_length(headers)
            if len(buffer) < length:
                return None
            body, rest = buffer[:length], buffer[length:]
        elif status in (204, 304):
            body, rest = b"", buffer
        else:  # the body runs to the end of the connection
            if not eof:
                return None
            body, rest, keep = buffer, b"", False
        self.buffer = rest
        self._head = None
        return Response(status, headers, body), keep


class AsyncHttpPool:
    """Keep-alive connections to one ``http://`` or ``https://`` endpoint, on one loop.

    Args:
        url: the endpoint (scheme, host, optional port; the path must be ``/`` or empty).
        connect_timeout: seconds to connect (None: no limit).
        read_timeout: seconds to wait for a response (None: no limit).
        verify: TLS verification as botocore takes it: True, False, or a CA bundle path.
        max_connections: the most sockets open at once.
    """

    def __init__(
        self,
        url: str,
        connect_timeout: float | None = 60.0,
        read_timeout: float | None = 60.0,
        verify: bool | str = True,
        max_connections: int = 10,
    ) -> None:
        self.url = url
        tls, self.host, self.port, self.authority = endpoint(url, "AsyncHttpPool")
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_connections = max(1, max_connections)
        self._context: ssl.SSLContext | None = _tls_context(verify) if tls else None
        self._idle: list[_Connection] = []
        self._waiting: deque[asyncio.Future[_Connection | None]] = deque()
        self.open = 0
        #: the most sockets open at once
        self.peak_open = 0
        #: requests written to a socket (not answered by an event handler)
        self.sent = 0
        self._closer: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: connections waiting for a response, watched for the read timeout
        self._busy: set[_Connection] = set()
        self._watch: asyncio.TimerHandle | None = None
        self._tick = 1.0 if read_timeout is None else min(1.0, max(0.01, read_timeout / 4))

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the pool belongs to (None before :meth:`start`)."""
        return self._loop

    async def start(self) -> None:
        """Bind the pool to the running loop; its sockets close when ``asyncio.run`` ends."""
        if self._closer is None:
            self._loop = asyncio.get_running_loop()
            self._closer = _close_at_shutdown(self)
            await self._closer.asend(None)  # now the loop knows it

    def close(self) -> None:
        """Close every idle socket (busy ones close when their response is read)."""
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        self.open -= len(idle)

    # -- connections ----------------------------------------------------------------------

    async def _acquire(self) -> _Connection | None:
        """A kept connection, or None when the caller may open a new one."""
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn
            self.open -= 1  # the server closed it while idle
        if self.open < self.max_connections:
            self.open += 1
            self.peak_open = max(self.peak_open, self.open)
            return None
        waiter: asyncio.Future[_Connection | None] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            return await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self._release(waiter.result())  # handed over as we were cancelled
            elif waiter in self._waiting:
                self._waiting.remove(waiter)
            raise

    def _release(self, conn: _Connection | None) -> None:
        """Give a connection back (None: its slot, the socket closed)."""
        if conn is not None and conn.closed:
            conn = None
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(conn)  # None: the waiter opens its own in this slot
                return
        if conn is None:
            self.open -= 1
        else:
            self._idle.append(conn)

    async def _connect(self) -> _Connection:
        from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError, SSLError

        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, conn = await loop.create_connection(
                    _Connection,
                    self.host,
                    self.port,
                    ssl=self._context,
                    server_hostname=self.host if self._context is not None else None,
                )
        except TimeoutError as error:
            raise ConnectTimeoutError(endpoint_url=self.url, error=error) from error
        except (ssl.SSLError, ssl.CertificateError) as error:
            raise SSLError(endpoint_url=self.url, error=error) from error
        except OSError as error:
            raise EndpointConnectionError(endpoint_url=self.url, error=error) from error
        return conn

    # -- requests -------------------------------------------------------------------------

    async def post(self, headers: Any, body: bytes, resend: bool = False) -> Response:
        """POST ``body`` to ``/`` with ``headers`` (name -> value); the whole response.

        ``resend``: True for a read (see :data:`~shardmodel.lean.http.RESENDABLE`), sent
        once more on a new socket when a kept one turns out closed; any other request
        raises ``ConnectionClosedError`` then, for botocore's retry policy to judge.
        """
        from botocore.exceptions import ConnectionClosedError

        payload = request_bytes(self.authority, headers, body)
        conn = await self._acquire()
        if conn is not None:
            try:
                return await self._exchange(conn, payload, kept=True)
            except _Stale:
                if not resend:
                    self._release(None)
                    raise ConnectionClosedError(endpoint_url=self.url) from None
                # closed by the server while idle: once more, on a new socket
        try:
            conn = await self._connect()
        except BaseException:
            self._release(None)
            raise
        try:
            return await self._exchange(conn, payload, kept=False)
        except _Stale:
            raise ConnectionClosedError(endpoint_url=self.url) from None

    async def _exchange(self, conn: _Connection, payload: bytes, kept: bool) -> Response:
        from botocore.exceptions import ConnectionClosedError, HTTPClientError, ReadTimeoutError

        loop = asyncio.get_running_loop()
        self.sent += 1
        waiter = conn.send(payload, loop)
        if self.read_timeout is not None:
            conn.deadline = loop.time() + self.read_timeout
            self._busy.add(conn)
            if self._watch is None:
                self._watch = loop.call_later(self._tick, self._time_out, loop)
        try:
            done: tuple[Response, bool] = await waiter
            response, reusable = done
        except _Closed as error:
            conn.close()
            if kept and not error.started:
                raise _Stale() from error  # its slot stays the caller's, for a new socket
            self._release(None)
            raise ConnectionClosedError(endpoint_url=self.url) from error
        except BaseException as error:
            conn.close()
            self._release(None)
            if isinstance(error, TimeoutError):
                raise ReadTimeoutError(endpoint_url=self.url, error=error) from error
            if isinstance(error, _Malformed):
                raise HTTPClientError(error=error) from error
            raise  # cancelled: the response may still be on its way, the socket is gone
        finally:
            self._busy.discard(conn)
            conn.finish()
        if reusable:
            self._release(conn)
        else:
            conn.close()
            self._release(None)
        return response

    def _time_out(self, loop: asyncio.AbstractEventLoop) -> None:
        """Fail the requests past their deadline; look again in a tick while any wait.

        One timer a pool rather than one a request (a timer costs ~2.7 µs to set and
        cancel, a request on this path a few dozen): a read times out between
        ``read_timeout`` and ``read_timeout`` plus a tick (a quarter of it, at most 1 s).
        """
        self._watch = None
        if not self._busy:
            return
        now = loop.time()
        for conn in list(self._busy):
            waiter = conn._waiter
            if conn.deadline <= now and waiter is not None and not waiter.done():
                waiter.set_exception(TimeoutError("no response within the read timeout"))
        self._watch = loop.call_later(self._tick, self._time_out, loop)


async def _close_at_shutdown(pool: AsyncHttpPool) -> AsyncIterator[None]:
    """Suspended for the pool's life; the loop's ``shutdown_asyncgens`` closes it."""
    try:
        yield
    finally:
        pool.close()
