"""A round trip on the wire: a TCP relay that holds every request's bytes for a delay.

The benches slept their injected round trip in botocore's ``before-send`` event, inside
the client: every request then pays a sleep's wake-up as well as its response's, and on
an event loop a timer, a future and a task switch more, work a real round trip never
asks of the client. This relay, a process of its own on loopback in front of dynalite,
holds each chunk a client sends for ``delay`` seconds (in order, per connection) and
passes the responses straight back: the client sends and waits once, whichever path it
takes (botocore, the lean client, a thread, an event loop), and the delay's CPU is the
relay's, not the client's.

``python -m benchmarks.wire_delay UPSTREAM_URL DELAY`` prints the port it listens on;
:func:`delayed_endpoint` runs it for the length of a ``with`` block.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["delayed_endpoint"]

CHUNK = 1 << 16


class _Relay:
    """What one client connection sent, held until due, then written upstream."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, delay: float, upstream: asyncio.StreamWriter
    ) -> None:
        self.loop = loop
        self.delay = delay
        self.upstream = upstream
        self.pending: deque[tuple[float, bytes | None]] = deque()  # (due, bytes); None: EOF
        self.timer: asyncio.TimerHandle | None = None

    def hold(self, data: bytes | None) -> None:
        """Write ``data`` upstream ``delay`` seconds from now, after what is held already."""
        self.pending.append((self.loop.time() + self.delay, data))
        if self.timer is None:
            self.timer = self.loop.call_at(self.pending[0][0], self._release)

    def _release(self) -> None:
        self.timer = None
        now = self.loop.time()
        while self.pending and self.pending[0][0] <= now:
            _, data = self.pending.popleft()
            if data is None:
                self.upstream.close()
                return
            self.upstream.write(data)
        if self.pending:
            self.timer = self.loop.call_at(self.pending[0][0], self._release)


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Responses, straight back to the client."""
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
    except ConnectionError:
        pass
    finally:
        writer.close()


async def _serve(host: str, port: int, delay: float) -> None:
    loop = asyncio.get_running_loop()

    async def handle(client: asyncio.StreamReader, back: asyncio.StreamWriter) -> None:
        reader, upstream = await asyncio.open_connection(host, port)
        relay = _Relay(loop, delay, upstream)
        responses = asyncio.create_task(_pump(reader, back))
        try:
            while data := await client.read(CHUNK):
                relay.hold(data)
        except ConnectionError:
            pass
        relay.hold(None)
        await responses

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


@contextmanager
def delayed_endpoint(upstream: str, delay: float) -> Iterator[str]:
    """The URL of a relay to ``upstream`` (``http://host:port``) holding requests ``delay`` s."""
    relay = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.wire_delay", upstream, str(delay)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],  # where ``benchmarks`` imports from
    )
    try:
        assert relay.stdout is not None
        port = relay.stdout.readline().strip()
        if not port.isdigit():
            raise RuntimeError(f"the wire-delay relay did not start (printed {port!r})")
        yield f"http://127.0.0.1:{port}"
    finally:
        relay.terminate()
        relay.wait(timeout=10)
        if relay.stdout is not None:
            relay.stdout.close()


def main() -> None:
    upstream, delay = sys.argv[1], float(sys.argv[2])
    parts = urlsplit(upstream)
    if parts.scheme != "http" or parts.hostname is None or parts.port is None:
        raise SystemExit(f"upstream: expected http://host:port, got {upstream!r}")
    asyncio.run(_serve(parts.hostname, parts.port, delay))


if __name__ == "__main__":
    main()
