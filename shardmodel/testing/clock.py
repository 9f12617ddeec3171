"""A controllable clock: simulated seconds that tests advance instead of sleeping."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from shardmodel.core.times import Clock

__all__ = ["Clock", "SimulatedClock"]


class SimulatedClock:
    """A clock that moves only when told to; ``sleep`` advances it and returns at once.

    Thread-safe. Pass ``clock.sleep`` wherever code takes a sleep function (for example
    :class:`shardmodel.Backoff`), so its waits cost simulated, not real, seconds.

    A thread may run on its own timeline (:meth:`timeline`): there ``now`` reads the
    thread's own time and ``sleep`` advances only it, as for one of many concurrent
    clients, while the shared time stays where the test put it.

    Args:
        start: the time the clock reads first, in seconds.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"SimulatedClock(now={self._now!r})"

    def now(self) -> float:
        """The simulated time, in seconds (the thread's own on a timeline)."""
        own: float | None = getattr(self._local, "now", None)
        return self._now if own is None else own

    @property
    def on_timeline(self) -> bool:
        """True while the calling thread runs on its own timeline."""
        return getattr(self._local, "now", None) is not None

    @contextlib.contextmanager
    def timeline(self, start: float | None = None) -> Iterator[None]:
        """Run the calling thread on its own timeline from ``start`` (default: now)."""
        previous = getattr(self._local, "now", None)
        self._local.now = self.now() if start is None else float(start)
        try:
            yield
        finally:
            self._local.now = previous

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds`` (not negative); returns the new time."""
        if seconds < 0:
            raise ValueError(f"SimulatedClock.advance({seconds!r}): time only moves forward")
        with self._lock:
            self._now += seconds
            return self._now

    def advance_to(self, when: float) -> float:
        """Move the clock to ``when`` if that is later than now; returns the new time."""
        with self._lock:
            self._now = max(self._now, float(when))
            return self._now

    def sleep(self, seconds: float) -> None:
        """Advance the clock by ``seconds`` instead of sleeping (on a timeline: its own)."""
        seconds = max(0.0, seconds)
        own: float | None = getattr(self._local, "now", None)
        if own is not None:
            self._local.now = own + seconds
            return
        self.advance(seconds)
