"""One read in flight per key: concurrent readers of a key's metadata share it.

Threads wait on the leader's future; a coroutine (an async call's greenlet) awaits it on
its event loop, so the loop serves the leader meanwhile. A reader joins a flight only
while it is fresh enough for the caller's cache window; otherwise it starts its own.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

from attrs import frozen

from shardmodel.core import bridge
from shardmodel.core.times import Clock

__all__ = ["SingleFlight"]

_T = TypeVar("_T")


class _Abandoned(Exception):
    """The leader stopped before its read ended (its task was cancelled): read again."""


@frozen(eq=False)
class _Flight:
    """A read in flight: when it started, where, and its outcome to come."""

    started: float
    future: Future[tuple[float, object]]
    thread: int
    in_async: bool


class SingleFlight(Generic[_T]):
    """Share one call of ``read`` among the concurrent callers asking for one key.

    Args:
        clock: the clock that stamps each flight's start.
    """

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._flights: dict[str, _Flight] = {}

    def run(self, key: str, read: Callable[[float], _T], fresh_for: float) -> tuple[float, _T]:
        """``(started, value)``: the value of ``read(started)``, a read of ``key`` that
        began at ``started``.

        The read is this caller's, or one already in flight that began less than
        ``fresh_for`` seconds ago (its outcome, error included, is shared).
        """
        while True:
            now = self.clock.now()
            with self._lock:
                flight = self._flights.get(key)
                if flight is None or not self._joinable(flight, now, fresh_for):
                    flight = _Flight(now, Future(), threading.get_ident(), bridge.in_async())
                    self._flights[key] = flight
                    lead = True
                else:
                    lead = False
            if lead:
                return self._lead(key, flight, read)
            try:
                started, value = self._wait(flight)
            except _Abandoned:
                continue
            return started, value  # type: ignore[return-value]

    @staticmethod
    def _joinable(flight: _Flight, now: float, fresh_for: float) -> bool:
        if not 0 <= now - flight.started < fresh_for:
            return False
        # a blocking wait on the thread of a coroutine leader would stop its event loop
        same_loop = flight.in_async and flight.thread == threading.get_ident()
        return bridge.in_async() or not same_loop

    def _lead(self, key: str, flight: _Flight, read: Callable[[float], _T]) -> tuple[float, _T]:
        try:
            value = read(flight.started)
        except Exception as error:
            flight.future.set_exception(error)
            raise
        except BaseException:
            flight.future.set_exception(_Abandoned())
            raise
        finally:
            with self._lock:
                if self._flights.get(key) is flight:
                    del self._flights[key]
        flight.future.set_result((flight.started, value))
        return flight.started, value

    @staticmethod
    def _wait(flight: _Flight) -> tuple[float, object]:
        if bridge.in_async():
            return bridge.await_(asyncio.wrap_future(flight.future))
        return flight.future.result()
