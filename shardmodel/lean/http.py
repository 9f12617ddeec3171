"""HTTP/1.1 keep-alive requests on plain sockets: the framing DynamoDB's JSON API needs.

urllib3 (botocore's HTTP layer) costs ~300 µs of client CPU per request on this
machine and ``http.client`` alone ~150 µs, most of it in generic header handling;
writing one request and reading a ``Content-Length`` (or chunked) response off a kept
socket costs ~40 µs. Failures raise botocore's own exceptions, the ones botocore's
HTTP session raises for the same failure, so its retry rules and PynamoDB's error
wrapping see no difference:

===============================================  ===========================================
failure                                          exception (botocore.exceptions)
===============================================  ===========================================
connect refused or unreachable                   ``EndpointConnectionError``
connect timed out                                ``ConnectTimeoutError``
TLS handshake or certificate failure             ``SSLError``
read timed out                                   ``ReadTimeoutError``
reset or closed while sending or reading         ``ConnectionClosedError``
a response that is not HTTP/1.x                  ``HTTPClientError``
===============================================  ===========================================

A kept socket the server closed while idle fails on first use; a read (an operation of
:data:`RESENDABLE`) is then sent once more on a new socket, as urllib3 does. Any other
request fails with ``ConnectionClosedError`` instead: the server may have applied it
before the socket went, and only botocore's retry policy, which counts the attempt,
decides whether a write or an ``ADD`` goes again.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import weakref
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "RESENDABLE",
    "HttpPool",
    "Response",
    "content_length",
    "endpoint",
    "keeps_alive",
    "parse_chunked",
    "parse_head",
    "request_bytes",
]

#: The operations sent once more when a kept socket turns out closed: reads, which the
#: server applies no matter how often.
RESENDABLE = frozenset(
    {
        "GetItem",
        "BatchGetItem",
        "Query",
        "Scan",
        "TransactGetItems",
        "DescribeTable",
        "DescribeTimeToLive",
        "ListTables",
    }
)

_CRLF2 = b"\r\n\r\n"
_READ = 65536


class Response:
    """A response: ``status``, ``headers`` (lower-case names) and the whole ``body``."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


class _Stale(Exception):
    """A kept socket was closed by the server before it answered anything."""


class _Socket:
    """One connection and the bytes read past the last response."""

    __slots__ = ("buffer", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class HttpPool:
    """Keep-alive sockets to one ``http://`` or ``https://`` endpoint, shared by threads.

    Args:
        url: the endpoint (scheme, host, optional port; the path must be ``/`` or empty).
        connect_timeout: seconds to connect (None: no limit).
        read_timeout: seconds to wait for each read (None: no limit).
        verify: TLS verification as botocore takes it: True, False, or a CA bundle path.
        max_idle: sockets kept between requests.
    """

    def __init__(
        self,
        url: str,
        connect_timeout: float | None = 60.0,
        read_timeout: float | None = 60.0,
        verify: bool | str = True,
        max_idle: int = 10,
    ) -> None:
        self.url = url
        self.tls, self.host, self.port, self.authority = endpoint(url, "HttpPool")
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_idle = max_idle
        self._context: ssl.SSLContext | None = None
        if self.tls:
            self._context = _tls_context(verify)
        self._idle: list[_Socket] = []
        self._lock = threading.Lock()
        # a pool dropped with its client (models rebound) closes its sockets
        weakref.finalize(self, _close_all, self._idle, self._lock)

    def close(self) -> None:
        """Close every idle socket."""
        _close_all(self._idle, self._lock)

    # -- connections ------------------------------------------------------------------

    def _connect(self) -> _Socket:
        from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError, SSLError

        try:
            sock = socket.create_connection((self.host, self.port), self.connect_timeout)
        except TimeoutError as error:
            raise ConnectTimeoutError(endpoint_url=self.url, error=error) from error
        except OSError as error:
            raise EndpointConnectionError(endpoint_url=self.url, error=error) from error
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._context is not None:
            try:
                sock = self._context.wrap_socket(sock, server_hostname=self.host)
            except (ssl.SSLError, ssl.CertificateError) as error:
                sock.close()
                raise SSLError(endpoint_url=self.url, error=error) from error
            except TimeoutError as error:
                sock.close()
                raise ConnectTimeoutError(endpoint_url=self.url, error=error) from error
            except OSError as error:
                sock.close()
                raise EndpointConnectionError(endpoint_url=self.url, error=error) from error
        sock.settimeout(self.read_timeout)
        return _Socket(sock)

    def _take(self) -> _Socket | None:
        with self._lock:
            return self._idle.pop() if self._idle else None

    def _give(self, conn: _Socket) -> None:
        with self._lock:
            if len(self._idle) < self.max_idle:
                self._idle.append(conn)
                return
        conn.close()

    # -- requests ---------------------------------------------------------------------

    def post(self, headers: Any, body: bytes, resend: bool = False) -> Response:
        """POST ``body`` to ``/`` with ``headers`` (name -> value); the whole response.

        ``resend``: True for a read, sent once more on a new socket when a kept one
        turns out closed.
        """
        from botocore.exceptions import ConnectionClosedError

        payload = request_bytes(self.authority, headers, body)
        conn = self._take()
        if conn is not None:
            try:
                return self._exchange(conn, payload, kept=True)
            except _Stale:
                if not resend:
                    raise ConnectionClosedError(endpoint_url=self.url) from None
                # the server closed it while idle: once more, on a new socket
        try:
            return self._exchange(self._connect(), payload, kept=False)
        except _Stale:
            from botocore.exceptions import ConnectionClosedError

            raise ConnectionClosedError(endpoint_url=self.url) from None

    def _exchange(self, conn: _Socket, payload: bytes, kept: bool) -> Response:
        from botocore.exceptions import ConnectionClosedError, HTTPClientError, ReadTimeoutError

        try:
            conn.sock.sendall(payload)
            response, reusable = _read_response(conn)
        except TimeoutError as error:
            conn.close()
            raise ReadTimeoutError(endpoint_url=self.url, error=error) from error
        except _Closed as error:
            conn.close()
            if kept and not error.started:
                raise _Stale() from error
            raise ConnectionClosedError(endpoint_url=self.url) from error
        except OSError as error:  # sending failed: nothing of the response arrived
            conn.close()
            if kept:
                raise _Stale() from error
            raise ConnectionClosedError(endpoint_url=self.url) from error
        except _Malformed as error:
            conn.close()
            raise HTTPClientError(error=error) from error
        if reusable:
            self._give(conn)
        else:
            conn.close()
        return response


def _close_all(idle: list[_Socket], lock: threading.Lock) -> None:
    with lock:
        sockets = list(idle)
        idle.clear()
    for conn in sockets:
        conn.close()


class _Closed(Exception):
    """The peer closed the connection; ``started``: after some of the response arrived."""

    def __init__(self, started: bool) -> None:
        super().__init__("connection closed by the server")
        self.started = started


class _Malformed(Exception):
    """The response is not HTTP/1.x."""


def _recv(conn: _Socket, started: bool) -> bytes:
    try:
        chunk = conn.sock.recv(_READ)
    except TimeoutError:
        raise
    except OSError as error:  # reset by the peer
        raise _Closed(started) from error
    if not chunk:
        raise _Closed(started)
    return chunk


def _read_response(conn: _Socket) -> tuple[Response, bool]:
    """Read one response (skipping 1xx); also whether the socket can be kept."""
    buffer = conn.buffer
    while True:
        while True:
            end = buffer.find(_CRLF2)
            if end >= 0:
                break
            buffer += _recv(conn, bool(buffer))
        version, status, headers = parse_head(buffer[:end])
        buffer = buffer[end + 4 :]
        if not 100 <= status < 200:
            break
        # an interim response (100 Continue): the real one follows
    keep = keeps_alive(version, headers)
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body, buffer = _read_chunked(conn, buffer)
    elif "content-length" in headers:
        length = content_length(headers)
        while len(buffer) < length:
            buffer += _recv(conn, True)
        body, buffer = buffer[:length], buffer[length:]
    elif status in (204, 304):
        body = b""
    else:  # the body runs to the end of the connection
        parts = [buffer]
        while True:
            try:
                parts.append(_recv(conn, True))
            except _Closed:
                break
        body, buffer, keep = b"".join(parts), b"", False
    conn.buffer = buffer
    return Response(status, headers, body), keep


def _read_chunked(conn: _Socket, buffer: bytes) -> tuple[bytes, bytes]:
    while True:
        done = parse_chunked(buffer)
        if done is not None:
            return done
        buffer += _recv(conn, True)


# -- shared with the asyncio pool (shardmodel.lean.aio_http) ----------------------------


def endpoint(url: str, owner: str = "endpoint") -> tuple[bool, str, int, str]:
    """TLS or not, host, port and the ``Host`` header of an ``http(s)://`` endpoint URL.

    Raises:
        ValueError: not an http(s) URL (``owner`` names the caller in the message).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{owner}: {url!r} is not an http(s) URL")
    tls = parts.scheme == "https"
    default = 443 if tls else 80
    authority = parts.netloc.rsplit("@", 1)[-1]
    if parts.port == default:
        authority = authority.rsplit(":", 1)[0]
    return tls, parts.hostname, parts.port or default, authority


def request_bytes(authority: str, headers: Any, body: bytes) -> bytes:
    """The bytes of ``POST /`` with ``headers`` (name -> value) and ``body``."""
    lines = [f"POST / HTTP/1.1\r\nHost: {authority}\r\n"]
    for name, value in headers.items():
        if name.lower() not in ("host", "content-length"):
            lines.append(f"{name}: {value}\r\n")
    if "accept-encoding" not in headers:  # as botocore's HTTP layer (http.client) writes
        lines.append("Accept-Encoding: identity\r\n")
    lines.append(f"Content-Length: {len(body)}\r\n\r\n")
    return "".join(lines).encode("latin-1") + body


def parse_head(head: bytes) -> tuple[str, int, dict[str, str]]:
    """A response head (up to the blank line): HTTP version, status, lower-case headers.

    Raises:
        _Malformed: not an HTTP/1.x response head.
    """
    lines = head.decode("latin-1").split("\r\n")
    status_line = lines[0].split(" ", 2)
    if len(status_line) < 2 or not status_line[0].startswith("HTTP/1."):
        raise _Malformed(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    try:
        status = int(status_line[1])
    except ValueError:
        raise _Malformed(f"bad status code: {lines[0][:80]!r}") from None
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            raise _Malformed(f"bad header line: {line[:80]!r}")
        name = name.strip().lower()
        value = value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return status_line[0], status, headers


def keeps_alive(version: str, headers: dict[str, str]) -> bool:
    """Whether the connection may carry another request after this response."""
    return version != "HTTP/1.0" and "close" not in headers.get("connection", "").lower()


def content_length(headers: dict[str, str]) -> int:
    """The ``Content-Length`` header as a number (raises :class:`_Malformed` if bad)."""
    try:
        return int(headers["content-length"])
    except ValueError:
        raise _Malformed(f"bad Content-Length {headers['content-length']!r}") from None


def parse_chunked(buffer: bytes) -> tuple[bytes, bytes] | None:
    """A chunked body at the start of ``buffer`` and the bytes after it; None: incomplete."""
    parts: list[bytes] = []
    at = 0
    while True:
        end = buffer.find(b"\r\n", at)
        if end < 0:
            return None
        size_text = buffer[at:end].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise _Malformed(f"bad chunk size {size_text[:20]!r}") from None
        at = end + 2
        if size == 0:
            # trailers, then an empty line
            while True:
                end = buffer.find(b"\r\n", at)
                if end < 0:
                    return None
                if end == at:
                    return b"".join(parts), buffer[at + 2 :]
                at = end + 2
        if len(buffer) < at + size + 2:
            return None
        parts.append(buffer[at : at + size])
        at += size + 2


def _tls_context(verify: bool | str) -> ssl.SSLContext:
    """The TLS context botocore would use for ``verify`` (its CA bundle by default)."""
    from botocore.httpsession import get_cert_path

    if verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    path = get_cert_path(verify)
    import os

    if isinstance(path, str) and os.path.isdir(path):
        return ssl.create_default_context(capath=path)
    return ssl.create_default_context(cafile=path)
