"""A controllable clock: simulated seconds that tests advance instead of sleeping."""

from __future__ import annotations

import threading
from typing import Protocol

__all__ = ["Clock", "SimulatedClock"]


class Clock(Protocol):
    """What the simulator needs from a clock: the time now, and a way to wait."""

    def now(self) -> float:
        """Seconds since an arbitrary origin."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        ...


class SimulatedClock:
    """A clock that moves only when told to; ``sleep`` advances it and returns at once.

    Thread-safe. Pass ``clock.sleep`` wherever code takes a sleep function (for example
    :class:`shardmodel.Backoff`), so its waits cost simulated, not real, seconds.

    Args:
        start: the time the clock reads first, in seconds.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SimulatedClock(now={self._now!r})"

    def now(self) -> float:
        """The simulated time, in seconds."""
        return self._now

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
        """Advance the clock by ``seconds`` instead of sleeping."""
        self.advance(max(0.0, seconds))
