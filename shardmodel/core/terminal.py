"""What the command line prints: aligned tables and progress for slow operations."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

#: Seconds an operation runs before its progress line appears.
PROGRESS_AFTER = 1.0


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Rows under headers, columns aligned: text left, numbers right."""
    cells = [[_cell(value) for value in row] for row in rows]
    numeric = [
        all(isinstance(row[i], int | float) for row in rows) if rows else False
        for i in range(len(headers))
    ]
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if right else v.ljust(w)
            for v, w, right in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    rule = ["-" * w for w in widths]
    return "\n".join([line(list(headers)), line(rule), *(line(row) for row in cells)])


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}" if value != int(value) else f"{int(value):,}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


@contextmanager
def progress(
    message: str, stream: TextIO | None = None, after: float | None = None
) -> Iterator[None]:
    """Say ``message`` on stderr if the block runs longer than ``after`` seconds.

    The line then shows the seconds elapsed (updated in place on a terminal) and ends
    with how long the whole operation took, so a slow step is never silent.
    """
    out = stream if stream is not None else sys.stderr
    wait = PROGRESS_AFTER if after is None else after
    started = time.monotonic()
    done = threading.Event()
    shown = threading.Event()
    live = bool(getattr(out, "isatty", lambda: False)())

    def tick() -> None:
        if done.wait(wait):
            return
        shown.set()
        out.write(f"{message} ...")
        out.flush()
        while live and not done.wait(1.0):
            out.write(f"\r{message} ... {time.monotonic() - started:.0f} s")
            out.flush()

    ticker = threading.Thread(target=tick, name="shardmodel-progress", daemon=True)
    ticker.start()
    outcome = "failed after"
    try:
        yield
        outcome = "done in"
    finally:
        done.set()
        ticker.join()
        if shown.is_set():
            took = f"{outcome} {time.monotonic() - started:.1f} s\n"
            out.write(f"\r{message} ... {took}" if live else f" {took}")
            out.flush()
