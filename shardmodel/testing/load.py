"""Drive a steady request rate on the simulated clock and count what failed."""

from __future__ import annotations

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

    Returns:
        The counts, for assertions.
    """
    if rate <= 0 or seconds < 0:
        raise ValueError(f"run_load(rate={rate!r}, seconds={seconds!r}): both must be positive")
    start = clock.now()
    errors: Counter[str] = Counter()
    total = round(rate * seconds)
    for number in range(total):
        clock.advance_to(start + number / rate)
        try:
            operation(number)
        except catch as error:
            errors[type(error).__name__] += 1
    ended = clock.advance_to(start + seconds)
    return LoadResult(total, sum(errors.values()), dict(errors), start, ended)
