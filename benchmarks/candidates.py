"""Request-path candidates for the per-shard Query, measured side by side on dynalite.

Issue 11 asks which library to build the lean request path on. Every candidate here
really sends signed ``Query`` requests to a dynalite this module starts (the table of
:mod:`benchmarks.request_floor`: 16 keys of 25 items, ~100-byte items) and checks the
item count of every response. For each it prints:

* **client CPU per 13-item Query**, sent one after another with no injected latency:
  process CPU (every thread, native ones included) over ``CPU_BATCH`` requests, in
  ``CPU_ROUNDS`` rounds that visit the candidates in turn, so a burst of load on this
  shared machine hits every candidate alike; min and median of the rounds;
* **the 16-shard fan-out**: 16 x 13-item queries at once against one 100-item query,
  each request behind the same 5 ms injected round trip as ``request_floor``, median of
  ``FAN_RUNS`` interleaved runs, and the process CPU of one fan-out;
* **body decoding alone**: ``json``, ``orjson`` and ``msgspec`` on a real 13-item and
  100-item Query response body (µs per decode).

The candidates: botocore's ``client.query`` (the baseline); a hand-built request signed
by botocore's ``SigV4Auth`` with frozen credentials and sent on a urllib3 pool;
:class:`shardmodel.lean.LeanClient` (what the merged query uses); shardmodel's
``HttpPool`` and ``Signer`` without the client's event pipeline; awscrt's native HTTP
client and signer (one native event-loop thread); httpx's and aiohttp's async clients on
one asyncio thread; shardmodel's ``AsyncHttpPool`` (the async API's transport) with the
same ``Signer`` on one asyncio thread; and a plain ``selectors`` loop over 16 keep-alive
sockets in one thread. The threaded candidates fan out on a warm 16-thread pool. Except
botocore's and the LeanClient's own parsers, every candidate encodes and decodes with orjson when
it is installed (json otherwise), so the rows differ by transport and signing alone.

A package that is not installed prints "not installed". awscrt is installed apart
(``make bench`` puts it in ``.venv/candidates-crt``, see the Makefile): importable in
the same environment as botocore, it makes botocore sign with awscrt instead of its own
``SigV4Auth``, which would change every other test and benchmark.
"""

from __future__ import annotations

import asyncio
import importlib
import io
import json
import selectors
import socket
import statistics
import sys
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from benchmarks.request_floor import (
    DYNALITE,
    LATENCY,
    SHARDS,
    _client,
    _load,
    _request,
    interleaved_cpu,
)
from shardmodel.lean import LeanClient
from shardmodel.lean.aio_http import AsyncHttpPool
from shardmodel.lean.http import HttpPool
from shardmodel.lean.sigv4 import Signer
from shardmodel.testing import dynalite_server

ITEMS = 13  # per shard query
LATEST = 100  # the single query
CPU_ROUNDS = 7
CPU_BATCH = 40
FAN_RUNS = 25
DECODE_ROUNDS = 7
DECODE_BATCH = 300
REGION = "us-east-1"
TARGET = "DynamoDB_20120810.Query"
CONTENT_TYPE = "application/x-amz-json-1.0"
CRT_SITE = Path(sys.prefix) / "candidates-crt"
KEYS = [f"k#{n}" for n in range(SHARDS)]
#: seconds a kept socket may idle: node's HTTP server (dynalite) closes it after 5
IDLE = 4.0


def _optional(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


_orjson = _optional("orjson")
CODEC = "orjson" if _orjson is not None else "json"


def _dumps(value: Any) -> bytes:
    if _orjson is not None:
        dumped: bytes = _orjson.dumps(value)
        return dumped
    return json.dumps(value).encode()


def _loads(body: bytes) -> Any:
    return _orjson.loads(body) if _orjson is not None else json.loads(body)


def _count(response: Any, limit: int) -> int:
    """The number of items, checked: every request must really have been answered."""
    count = len(response["Items"])
    if count != limit:
        raise RuntimeError(f"expected {limit} items, got {count}: {str(response)[:200]}")
    return count


def _body(key: str, limit: int) -> bytes:
    return _dumps(_request(key, limit))


class Candidate:
    """One request path: sequential queries, one 100-item query, and a 16-way fan-out."""

    name = ""

    def batch(self, n: int) -> None:
        """``n`` 13-item queries one after another, no injected latency."""
        raise NotImplementedError

    def one(self) -> None:
        """One 100-item query behind the injected round trip."""
        raise NotImplementedError

    def fan(self) -> None:
        """16 x 13-item queries at once, each behind the injected round trip."""
        raise NotImplementedError

    def close(self) -> None:
        """Release sockets, threads and loops."""


class Threaded(Candidate):
    """A blocking ``query(key, limit) -> response`` fanned out on 16 pool threads."""

    def __init__(self, name: str, query: Callable[[str, int], Any]) -> None:
        self.name = name
        self._query = query
        self._pool = ThreadPoolExecutor(SHARDS)

    def _delayed(self, key: str, limit: int) -> int:
        time.sleep(LATENCY)
        return _count(self._query(key, limit), limit)

    def batch(self, n: int) -> None:
        for i in range(n):
            _count(self._query(KEYS[i % SHARDS], ITEMS), ITEMS)

    def one(self) -> None:
        self._delayed("single", LATEST)

    def fan(self) -> None:
        futures = [self._pool.submit(self._delayed, key, ITEMS) for key in KEYS]
        for future in futures:
            future.result()

    def close(self) -> None:
        self._pool.shutdown()


def botocore_query(url: str) -> Candidate:
    """botocore's ``client.query``: what plain PynamoDB sends through."""
    client = _client(url)
    return Threaded("botocore client.query", lambda key, n: client.query(**_request(key, n)))


def urllib3_sigv4(url: str) -> Candidate:
    """A request signed by botocore's ``SigV4Auth`` (frozen credentials), sent by urllib3."""
    import urllib3
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    credentials = _client(url)._request_signer._credentials
    parts = urlsplit(url)
    pool = urllib3.HTTPConnectionPool(parts.hostname or "", parts.port, maxsize=SHARDS, block=True)
    headers = {"Content-Type": CONTENT_TYPE, "X-Amz-Target": TARGET}

    def query(key: str, limit: int) -> Any:
        body = _body(key, limit)
        request = AWSRequest(method="POST", url=f"{url}/", data=body, headers=dict(headers))
        SigV4Auth(credentials.get_frozen_credentials(), "dynamodb", REGION).add_auth(request)
        response = pool.urlopen(
            "POST", "/", body=body, headers=dict(request.headers.items()), retries=False
        )
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {response.data[:200]!r}")
        return _loads(response.data)

    return Threaded("urllib3 + botocore SigV4Auth", query)


def lean_client(url: str) -> Candidate:
    """:class:`shardmodel.lean.LeanClient`: signing, sockets and botocore's events."""
    lean = LeanClient(_client(url))
    return Threaded("shardmodel LeanClient", lambda key, n: lean.call("Query", _request(key, n)))


def _headers(authority: str) -> dict[str, str]:
    return {"host": authority, "content-type": CONTENT_TYPE, "x-amz-target": TARGET}


def _signer(url: str) -> Signer:
    return Signer(_client(url)._request_signer._credentials.get_frozen_credentials, REGION)


def http_pool(url: str) -> Candidate:
    """shardmodel's ``HttpPool`` and ``Signer`` alone: the LeanClient minus its events."""
    signer, pool = _signer(url), HttpPool(url, max_idle=SHARDS)
    base = _headers(pool.authority)

    def query(key: str, limit: int) -> Any:
        body = _body(key, limit)
        headers = dict(base)
        headers.update(signer.sign(headers, body))
        response = pool.post(headers, body)
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {response.body[:200]!r}")
        return _loads(response.body)

    return Threaded("HttpPool + Signer", query)


class Selector(Candidate):
    """One thread, one ``selectors`` loop over 16 keep-alive sockets, shardmodel's Signer."""

    name = "selectors loop + Signer"

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._signer = _signer(url)
        self._base = _headers(parts.netloc)
        self._address = (parts.hostname or "", parts.port or 80)
        self._selector = selectors.DefaultSelector()
        self._sockets = [self._connect() for _ in range(SHARDS)]
        self._used = [time.monotonic()] * SHARDS

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(self._address)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        return sock

    def _payload(self, key: str, limit: int) -> bytes:
        body = _body(key, limit)
        headers = dict(self._base)
        headers.update(self._signer.sign(headers, body))
        head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        return f"POST / HTTP/1.1\r\n{head}content-length: {len(body)}\r\n\r\n".encode() + body

    def _exchange(self, requests: list[tuple[str, int]]) -> None:
        """Send request i on socket i, then read every response as its bytes arrive."""
        pending: dict[int, tuple[socket.socket, int, bytearray]] = {}
        now = time.monotonic()
        for i, (key, limit) in enumerate(requests):
            if now - self._used[i] > IDLE:  # dynalite (node) drops it after 5 s idle
                self._sockets[i].close()
                self._sockets[i] = self._connect()
            self._used[i] = now
            sock = self._sockets[i]
            sock.sendall(self._payload(key, limit))  # a few hundred bytes: never blocks
            self._selector.register(sock, selectors.EVENT_READ)
            pending[sock.fileno()] = (sock, limit, bytearray())
        while pending:
            for ready, _ in self._selector.select():
                sock, limit, buffer = pending[ready.fd]
                chunk = sock.recv(65536)
                if not chunk:
                    raise RuntimeError("dynalite closed a kept socket")
                buffer += chunk
                body = _complete(buffer)
                if body is not None:
                    self._selector.unregister(sock)
                    del pending[ready.fd]
                    _count(_loads(body), limit)

    def batch(self, n: int) -> None:
        for i in range(n):
            self._exchange([(KEYS[i % SHARDS], ITEMS)])

    def one(self) -> None:
        time.sleep(LATENCY)
        self._exchange([("single", LATEST)])

    def fan(self) -> None:
        time.sleep(LATENCY)  # the 16 round trips overlap, as on the threaded paths
        self._exchange([(key, ITEMS) for key in KEYS])

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()
        self._selector.close()


def _complete(buffer: bytearray) -> bytes | None:
    """The body of a whole 200 response with a Content-Length in ``buffer``, else None."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
    if lines[0].split(" ")[1] != "200":
        raise RuntimeError(f"not a 200 response: {bytes(buffer[:300])!r}")
    lengths = [
        value
        for name, _, value in (line.partition(":") for line in lines[1:])
        if name.strip().lower() == "content-length"
    ]
    if not lengths:
        raise RuntimeError(f"no Content-Length (this loop reads no other framing): {lines}")
    length = int(lengths[0])
    if len(buffer) < end + 4 + length:
        return None
    return bytes(buffer[end + 4 : end + 4 + length])


class Async(Candidate):
    """An asyncio client on one event-loop thread: the fan-out is 16 tasks, not threads."""

    def __init__(self, name: str, url: str) -> None:
        self.name = name
        self.url = url
        self._signer = _signer(url)
        self._base = _headers(urlsplit(url).netloc)
        self._loop = asyncio.new_event_loop()
        self._run(self._open())

    def _run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return self._loop.run_until_complete(coroutine)

    def _signed(self, key: str, limit: int) -> tuple[dict[str, str], bytes]:
        body = _body(key, limit)
        headers = dict(self._base)
        headers.update(self._signer.sign(headers, body))
        return headers, body

    async def _open(self) -> None:
        raise NotImplementedError

    async def _post(self, headers: dict[str, str], body: bytes) -> bytes:
        raise NotImplementedError

    async def _query(self, key: str, limit: int, latency: float) -> int:
        if latency:
            await asyncio.sleep(latency)
        return _count(_loads(await self._post(*self._signed(key, limit))), limit)

    async def _batch(self, n: int) -> None:
        for i in range(n):
            await self._query(KEYS[i % SHARDS], ITEMS, 0)

    async def _fan(self) -> None:
        await asyncio.gather(*(self._query(key, ITEMS, LATENCY) for key in KEYS))

    def batch(self, n: int) -> None:
        self._run(self._batch(n))

    def one(self) -> None:
        self._run(self._query("single", LATEST, LATENCY))

    def fan(self) -> None:
        self._run(self._fan())

    async def _close(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._run(self._close())
        self._loop.close()


class Httpx(Async):
    """``httpx.AsyncClient`` (HTTP/1.1, 16 kept connections) on one asyncio thread."""

    async def _open(self) -> None:
        httpx = importlib.import_module("httpx")
        limits = httpx.Limits(max_connections=SHARDS, max_keepalive_connections=SHARDS)
        self._client = httpx.AsyncClient(limits=limits)

    async def _post(self, headers: dict[str, str], body: bytes) -> bytes:
        response = await self._client.post(f"{self.url}/", content=body, headers=headers)
        if response.status_code != 200:
            raise RuntimeError(f"HTTP {response.status_code}: {response.content[:200]!r}")
        content: bytes = response.content
        return content

    async def _close(self) -> None:
        await self._client.aclose()


class Aiohttp(Async):
    """``aiohttp.ClientSession`` (16 kept connections) on one asyncio thread."""

    async def _open(self) -> None:
        aiohttp = importlib.import_module("aiohttp")
        connector = aiohttp.TCPConnector(limit=SHARDS)
        self._session = aiohttp.ClientSession(connector=connector)

    async def _post(self, headers: dict[str, str], body: bytes) -> bytes:
        async with self._session.post(f"{self.url}/", data=body, headers=headers) as response:
            content: bytes = await response.read()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}: {content[:200]!r}")
            return content

    async def _close(self) -> None:
        await self._session.close()


class LoopPool(Async):
    """shardmodel's ``AsyncHttpPool`` (the asyncio port of ``HttpPool``) and ``Signer``.

    The transport the async API sends on, without the lean client's events around it:
    the same work the aiohttp and httpx rows do.
    """

    async def _open(self) -> None:
        self._pool = AsyncHttpPool(self.url, max_connections=SHARDS)
        await self._pool.start()

    async def _post(self, headers: dict[str, str], body: bytes) -> bytes:
        response = await self._pool.post(headers, body)
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {response.body[:200]!r}")
        return response.body

    async def _close(self) -> None:
        self._pool.close()


class Crt(Candidate):
    """awscrt: its HTTP/1.1 client on one native event-loop thread, its SigV4 signer.

    Credentials reach awscrt through a delegate provider that asks botocore's chain for
    frozen credentials per signature, as a real integration would have to.
    """

    name = "awscrt http + auth"

    def __init__(self, url: str, crt: dict[str, ModuleType]) -> None:
        self._io, self._http, self._auth = crt["io"], crt["http"], crt["auth"]
        parts = urlsplit(url)
        self._authority = parts.netloc
        frozen = _client(url)._request_signer._credentials.get_frozen_credentials

        def credentials() -> Any:
            now = frozen()
            return self._auth.AwsCredentials(now.access_key, now.secret_key, now.token)

        self._provider = self._auth.AwsCredentialsProvider.new_delegate(credentials)
        loops = self._io.EventLoopGroup(1)
        self._bootstrap = self._io.ClientBootstrap(loops, self._io.DefaultHostResolver(loops))
        self._address = (parts.hostname, parts.port)
        self._connections = [self._connect() for _ in range(SHARDS)]
        self._used = [time.monotonic()] * SHARDS

    def _connect(self) -> Any:
        return self._http.HttpClientConnection.new(*self._address, self._bootstrap).result()

    def _connection(self, i: int) -> Any:
        """Kept connection ``i``, replaced when it idled too long or was closed."""
        now = time.monotonic()
        if now - self._used[i] > IDLE or not self._connections[i].is_open():
            self._connections[i].close()
            self._connections[i] = self._connect()
        self._used[i] = now
        return self._connections[i]

    def _start(self, connection: Any, key: str, limit: int) -> tuple[Any, list[bytes]]:
        body = _body(key, limit)
        headers = self._http.HttpHeaders(
            [
                ("host", self._authority),
                ("content-type", CONTENT_TYPE),
                ("x-amz-target", TARGET),
                ("content-length", str(len(body))),
            ]
        )
        request = self._http.HttpRequest("POST", "/", headers, io.BytesIO(body))
        config = self._auth.AwsSigningConfig(
            credentials_provider=self._provider, region=REGION, service="dynamodb"
        )  # a config per request: it holds the signing time
        self._auth.aws_sign_request(request, config).result()
        chunks: list[bytes] = []

        def on_body(chunk: bytes, **_: Any) -> None:
            chunks.append(chunk)

        stream = connection.request(request, on_body=on_body)
        stream.activate()
        return stream.completion_future, chunks

    def _wait(self, started: list[tuple[Any, list[bytes]]], limit: int) -> None:
        for future, chunks in started:
            status = future.result()
            body = b"".join(chunks)
            if status != 200:
                raise RuntimeError(f"HTTP {status}: {body[:200]!r}")
            _count(_loads(body), limit)

    def batch(self, n: int) -> None:
        for i in range(n):
            self._wait([self._start(self._connection(0), KEYS[i % SHARDS], ITEMS)], ITEMS)

    def one(self) -> None:
        time.sleep(LATENCY)
        self._wait([self._start(self._connection(0), "single", LATEST)], LATEST)

    def fan(self) -> None:
        time.sleep(LATENCY)  # the 16 round trips overlap, as on the threaded paths
        started = [self._start(self._connection(i), key, ITEMS) for i, key in enumerate(KEYS)]
        self._wait(started, ITEMS)

    def close(self) -> None:
        for connection in self._connections:
            connection.close().result()


def _crt_modules() -> dict[str, ModuleType] | None:
    """awscrt's modules, from the environment or from ``.venv/candidates-crt``."""
    if _optional("awscrt") is None and CRT_SITE.is_dir():
        # botocore decided at import whether to sign with awscrt; it was not importable then
        sys.path.append(str(CRT_SITE))
    modules = {name: _optional(f"awscrt.{name}") for name in ("io", "http", "auth")}
    found = {name: module for name, module in modules.items() if module is not None}
    return found if len(found) == len(modules) else None


def _candidates(url: str) -> tuple[list[Candidate], list[str]]:
    """The candidates that can run here, and the names of those whose package is missing."""
    found: list[Candidate] = [botocore_query(url), urllib3_sigv4(url), lean_client(url)]
    found.append(http_pool(url))
    missing = []
    crt = _crt_modules()
    if crt is not None:
        found.append(Crt(url, crt))
    else:
        missing.append("awscrt http + auth")
    for package, kind in (("httpx", Httpx), ("aiohttp", Aiohttp)):
        if _optional(package) is not None:
            found.append(kind(f"{package} async, 1 thread", url))
        else:
            missing.append(f"{package} async, 1 thread")
    found.append(LoopPool("AsyncHttpPool + Signer, loop", url))
    found.append(Selector(url))
    return found, missing


def measure(url: str) -> dict[str, dict[str, float]]:
    """Per candidate: CPU per request (min, median), fan-out and single wall and CPU."""
    candidates, missing = _candidates(url)
    for candidate in candidates:  # warm: sockets open, threads started, caches filled
        candidate.batch(5)
        candidate.fan()
        candidate.one()
    batches = interleaved_cpu(
        {c.name: partial(c.batch, CPU_BATCH) for c in candidates}, CPU_ROUNDS, 1
    )
    cpu = {name: [seconds / CPU_BATCH for seconds in values] for name, values in batches.items()}
    wall: dict[str, dict[str, list[float]]] = {
        c.name: {"one": [], "fan": [], "fan_cpu": []} for c in candidates
    }
    for _ in range(FAN_RUNS):
        for candidate in candidates:
            runs = wall[candidate.name]
            started = time.perf_counter()
            candidate.one()
            runs["one"].append(time.perf_counter() - started)
            started, cpu_started = time.perf_counter(), time.process_time()
            candidate.fan()
            runs["fan"].append(time.perf_counter() - started)
            runs["fan_cpu"].append(time.process_time() - cpu_started)
    for candidate in candidates:
        candidate.close()
    found = {
        name: {
            "cpu_min": min(cpu[name]),
            "cpu_median": statistics.median(cpu[name]),
            "one": statistics.median(runs["one"]),
            "fan": statistics.median(runs["fan"]),
            "best_ratio": min(runs["fan"]) / min(runs["one"]),
            "fan_cpu": statistics.median(runs["fan_cpu"]),
        }
        for name, runs in wall.items()
    }
    found.update({name: {} for name in missing})
    return found


def print_requests(found: dict[str, dict[str, float]]) -> None:
    from botocore.compat import HAS_CRT

    if HAS_CRT:
        print("note: awscrt is importable beside botocore here, so botocore signs with it")
    print(
        f"request paths on dynalite; body codec {CODEC} except botocore's and LeanClient's."
        f"\nCPU: process CPU per 13-item Query, one after another, {CPU_ROUNDS} interleaved"
        f" rounds of {CPU_BATCH}.\nfan-out: 16 x 13-item queries at once vs one 100-item"
        f" query, {LATENCY * 1000:.0f} ms injected round trip, median of {FAN_RUNS}"
        " (best: min/min); fan CPU: process CPU of one fan-out, median"
    )
    header = (
        f"{'candidate':<30}{'CPU min':>9}{'median':>8}{'1x100 ms':>10}{'16x13 ms':>10}"
        f"{'ratio':>7}{'best':>6}{'fan CPU':>9}"
    )
    print(header)
    print("-" * len(header))
    base = found.get("botocore client.query", {}).get("cpu_median")
    for name, row in found.items():
        if not row:
            print(f"{name:<30}  not installed")
            continue
        print(
            f"{name:<30}{row['cpu_min'] * 1e3:>8.3f}m{row['cpu_median'] * 1e3:>7.3f}m"
            f"{row['one'] * 1e3:>10.1f}{row['fan'] * 1e3:>10.1f}"
            f"{row['fan'] / row['one']:>7.2f}{row['best_ratio']:>6.2f}"
            f"{row['fan_cpu'] * 1e3:>8.1f}m"
        )
    if base:
        print("CPU per request against botocore's (median):")
        print(
            "  "
            + ", ".join(
                f"{name} {row['cpu_median'] / base:.2f}x" for name, row in found.items() if row
            )
        )


def _response_body(url: str, key: str, limit: int) -> bytes:
    signer, pool = _signer(url), HttpPool(url)
    body = json.dumps(_request(key, limit)).encode()
    headers = _headers(pool.authority)
    headers.update(signer.sign(headers, body))
    response = pool.post(headers, body)
    pool.close()
    _count(json.loads(response.body), limit)
    return response.body


def decoding(url: str) -> dict[str, dict[str, tuple[float, float] | None]]:
    """µs per decode (min, median of interleaved rounds) per codec and response size."""
    codecs: dict[str, Callable[[bytes], Any] | None] = {"json": json.loads}
    codecs["orjson"] = _orjson.loads if _orjson is not None else None
    msgspec = _optional("msgspec")
    codecs["msgspec"] = msgspec.json.decode if msgspec is not None else None
    bodies = {}
    for key, limit in (("k#0", ITEMS), ("single", LATEST)):
        body = _response_body(url, key, limit)
        bodies[f"{limit} items, {len(body):,} B"] = body
    found: dict[str, dict[str, tuple[float, float] | None]] = {}
    for label, body in bodies.items():
        expected = json.loads(body)
        decoders = {name: codec for name, codec in codecs.items() if codec is not None}
        for name, codec in decoders.items():
            if codec(body) != expected:
                raise RuntimeError(f"{name} decodes the {label} body differently from json")
        times = interleaved_cpu(
            {name: partial(codec, body) for name, codec in decoders.items()},
            DECODE_ROUNDS,
            DECODE_BATCH,
        )
        found[label] = {
            name: (min(times[name]), statistics.median(times[name])) if name in times else None
            for name in codecs
        }
    return found


def print_decoding(found: dict[str, dict[str, tuple[float, float] | None]]) -> None:
    print(
        f"\nbody decoding alone: µs per decode of a real Query response (min / median of"
        f" {DECODE_ROUNDS} interleaved rounds of {DECODE_BATCH}), ratio to json"
    )
    for label, codecs in found.items():
        json_median = (codecs["json"] or (0.0, 0.0))[1]
        cells = []
        for name, value in codecs.items():
            if value is None:
                cells.append(f"{name} not installed")
            else:
                cells.append(
                    f"{name} {value[0] * 1e6:.1f} / {value[1] * 1e6:.1f}"
                    f" ({value[1] / json_median:.2f}x)"
                )
        print(f"  {label:<22}" + "   ".join(cells))


def main() -> None:
    with dynalite_server(DYNALITE) as url:
        _load(_client(url))
        print_requests(measure(url))
        print_decoding(decoding(url))


if __name__ == "__main__":
    main()
