"""Drive a steady request rate on the simulated clock and count what failed."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Callable, Mapping

from attrs import frozen
from pynamodb.exceptions import PynamoDBException

from shardmodel.testing.clock import SimulatedClock

__all__ = ["LoadResult", "run_load"]


@frozen
class LoadResult:
    """What a load run did.

    Attributes:
        calls: how many operations were started.
        failures: how many raised one of the caught errors (after every retry).
        errors: failures counted by exception class name.
        started: the simulated time of the first call.
        ended: the simulated time after the last call.
    """

    calls: int
    failures: int
    errors: Mapping[str, int]
    started: float
    ended: float

    @property
    def failure_fraction(self) -> float:
        """The share of calls that failed, 0 to 1."""
        return self.failures / self.calls if self.calls else 0.0


def run_load(
    clock: SimulatedClock,
    rate: float,
    seconds: float,
    operation: Callable[[int], object],
    catch: tuple[type[BaseException], ...] = (PynamoDBException,),
    threads: int = 1,
) -> LoadResult:
    """Call ``operation(n)`` ``rate`` times per simulated second for ``seconds``.

    Calls are spaced evenly: call ``n`` starts at ``start + n / rate`` on ``clock``. With
    the simulator's default ``concurrent=True``, each call's retries wait on the call's own
    timeline, so the offered rate stays steady, as from many clients.

    Args:
        clock: the simulator's clock.
        rate: calls per simulated second.
        seconds: how long to drive the load, in simulated seconds.
        operation: called with the call number; raise to report a failure.
        catch: the errors that count as failures (others propagate).
        threads: how many threads make the calls, as many concurrent clients do. Each
            call runs on its thread's own timeline (:meth:`SimulatedClock.timeline`)
            from its start time, so its waits (back-off, jitter) delay only itself.

    Returns:
        The counts, for assertions.
    """
    if rate <= 0 or seconds < 0:
        raise ValueError(f"run_load(rate={rate!r}, seconds={seconds!r}): both must be positive")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"run_load(threads={threads!r}): give a positive int")
    start = clock.now()
    errors: Counter[str] = Counter()
    total = round(rate * seconds)
    if threads > 1:
        _run_threads(clock, rate, start, total, operation, catch, threads, errors)
        ended = clock.advance_to(start + seconds)
        return LoadResult(total, sum(errors.values()), dict(errors), start, ended)
    for number in range(total):
        clock.advance_to(start + number / rate)
        try:
            operation(number)
        except catch as error:
            errors[type(error).__name__] += 1
    ended = clock.advance_to(start + seconds)
    return LoadResult(total, sum(errors.values()), dict(errors), start, ended)


def _run_threads(
    clock: SimulatedClock,
    rate: float,
    start: float,
    total: int,
    operation: Callable[[int], object],
    catch: tuple[type[BaseException], ...],
    threads: int,
    errors: Counter[str],
) -> None:
    numbers = itertools.count()
    lock = threading.Lock()
    crashed: list[BaseException] = []

    def worker() -> None:
        while not crashed:
            with lock:
                number = next(numbers)
            if number >= total:
                return
            when = start + number / rate
            clock.advance_to(when)
            with clock.timeline(when):
                try:
                    operation(number)
                except catch as error:
                    with lock:
                        errors[type(error).__name__] += 1
                except BaseException as error:
                    crashed.append(error)

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    if crashed:
        raise crashed[0]
