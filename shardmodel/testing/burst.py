"""Drive calls at chosen simulated times and measure how late each one completed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from attrs import frozen
from pynamodb.exceptions import PynamoDBException

from shardmodel.testing.clock import SimulatedClock

__all__ = ["BurstResult", "run_burst"]


@frozen
class BurstResult:
    """What a burst did.

    Attributes:
        calls: how many operations were started.
        failures: how many raised one of the caught errors (after every retry): lost,
            unless the caller retries them.
        errors: failures counted by exception class name.
        delays: for each call that succeeded, the simulated seconds from its planned
            start to its completion (retries' back-off included), in call order.
    """

    calls: int
    failures: int
    errors: Mapping[str, int]
    delays: Sequence[float]

    def late(self, seconds: float) -> int:
        """How many calls succeeded more than ``seconds`` after their planned start."""
        return sum(1 for delay in self.delays if delay > seconds)

    def percentile(self, fraction: float) -> float:
        """The delay below which ``fraction`` (0 to 1) of the succeeded calls completed."""
        if not self.delays:
            return 0.0
        ordered = sorted(self.delays)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def run_burst(
    clock: SimulatedClock,
    times: Sequence[float],
    operation: Callable[[int], object],
    catch: tuple[type[BaseException], ...] = (PynamoDBException,),
) -> BurstResult:
    """Call ``operation(n)`` at simulated time ``times[n]``, each on its own timeline.

    Calls start in time order (ties in list order). Each runs on its own timeline from
    its start (see :meth:`SimulatedClock.timeline`), as from its own client, so a
    call's back-off delays only itself; its delay is how far its timeline moved. Use
    with a :class:`~shardmodel.testing.CapacitySimulator` on ``clock`` (``concurrent=True``,
    the default).

    Args:
        clock: the simulator's clock; left at the last start time.
        times: the start time of each call, in simulated seconds.
        operation: called with the call number; raise to report a failure.
        catch: the errors that count as failures (others propagate).
    """
    errors: Counter[str] = Counter()
    delays: list[float] = []
    for number in sorted(range(len(times)), key=lambda n: times[n]):
        when = times[number]
        clock.advance_to(when)
        with clock.timeline(when):
            try:
                operation(number)
            except catch as error:
                errors[type(error).__name__] += 1
                continue
            delays.append(clock.now() - when)
    return BurstResult(len(times), sum(errors.values()), dict(errors), tuple(delays))
