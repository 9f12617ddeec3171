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

#: A call that starts more than this many simulated seconds after its planned time is late.
_LATE = 0.001


@frozen
class LoadResult:
    """What a load run did.

    Attributes:
        calls: how many operations were started.
        failures: how many raised one of the caught errors (after every retry).
        errors: failures counted by exception class name.
        started: the simulated time of the first call.
        ended: the simulated time after the last call.
        lag: the most simulated seconds a call started after its planned time (calls
            are planned at ``start + n / rate``): writers that wait on the shared clock
            (a back-off without ``concurrent=True``, a sleep of the operation) fall
            behind the rate they were asked for, and fewer requests a second reach the
            table than planned. 0 when every call started on time.
        late: calls that started more than a millisecond after their planned time.
    """

    calls: int
    failures: int
    errors: Mapping[str, int]
    started: float
    ended: float
    lag: float = 0.0
    late: int = 0

    def __str__(self) -> str:
        """One line: calls, failures, and how far the calls fell behind the rate."""
        behind = (
            f"{self.late:,} calls late, up to {self.lag:,.2f} s behind the planned rate"
            if self.late
            else "every call on time"
        )
        return f"{self.calls:,} calls, {self.failures:,} failed, {behind}"

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
    delays: list[float] = []
    total = round(rate * seconds)
    if threads > 1:
        # each call starts on its own timeline at its planned time: never late
        _run_threads(clock, rate, start, total, operation, catch, threads, errors)
    else:
        for number in range(total):
            planned = start + number / rate
            delays.append(clock.advance_to(planned) - planned)
            try:
                operation(number)
            except catch as error:
                errors[type(error).__name__] += 1
    ended = clock.advance_to(start + seconds)
    late = [delay for delay in delays if delay > _LATE]
    return LoadResult(
        total, sum(errors.values()), dict(errors), start, ended, max(late, default=0.0), len(late)
    )


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
