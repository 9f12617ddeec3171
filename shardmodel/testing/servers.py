"""DynamoDB-compatible servers on loopback for integration tests: dynalite, moto."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["dynalite_server", "free_port", "wait_for_port"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes] | None, timeout: float) -> None:
    """Return once 127.0.0.1:port accepts connections; raise if the server dies or is late."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"test server exited with code {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


@contextmanager
def dynalite_server(executable: str | Path, timeout: float = 20) -> Iterator[str]:
    """Run dynalite on loopback, in memory, tables active at once; yields its URL.

    Args:
        executable: the ``dynalite`` executable, ``node_modules/.bin/dynalite`` after
            ``npm install dynalite``; a directory is taken as the project holding that
            ``node_modules`` (or as ``node_modules/.bin`` itself).
        timeout: seconds to wait for it to listen.
    """
    executable = Path(executable)
    if executable.is_dir():
        inside = [executable / "node_modules" / ".bin" / "dynalite", executable / "dynalite"]
        executable = next((path for path in inside if path.is_file()), inside[0])
    if not executable.exists() or shutil.which("node") is None:
        raise RuntimeError(
            f"dynalite is not installed at {executable}: run `npm ci` (make install) first"
        )
    port = free_port()
    timings = ("--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
    command = [str(executable), "--host", "127.0.0.1", "--port", str(port), *timings]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process, timeout)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
