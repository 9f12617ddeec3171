"""Backoff for the work botocore does not retry: a batch call's unprocessed keys and items."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator

from attrs import field, frozen

__all__ = ["Backoff"]


@frozen
class Backoff:
    """Capped exponential backoff with full jitter.

    Attributes:
        base: the first delay's ceiling, in seconds.
        cap: the largest delay, in seconds.
        attempts: how many times to resend before giving up.
        sleep: the sleep function (inject a fake clock's in tests).
        rng: the random source for jitter.
    """

    base: float = 0.05
    cap: float = 2.0
    attempts: int = 10
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(factory=random.Random)

    def delays(self) -> Iterator[float]:
        """Yield one jittered delay per allowed resend."""
        for attempt in range(self.attempts):
            yield self.rng.uniform(0, min(self.cap, self.base * 2**attempt))

    def waits(self) -> Iterator[int]:
        """Sleep before each resend; yields the resend number (1-based)."""
        for number, delay in enumerate(self.delays(), start=1):
            self.sleep(delay)
            yield number
