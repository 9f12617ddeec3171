"""What the capacity simulator's botocore hook and the simulator exchange.

Private. The hook (:mod:`shardmodel.testing._hook`) sees a request; the simulator
(:class:`~shardmodel.testing.simulator.CapacitySimulator`) decides whether it is admitted.
This module holds the values they pass each other (a call's state, an attempt's plan, a
request not built yet) and :class:`Admission`, what the hook asks of the simulator. The
hook depends on this protocol, not on the simulator, so the simulator can build hooks
without the two modules importing each other.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

from attrs import define, frozen

from shardmodel.testing.capacity import CapacityLedger, Charge, Kind

__all__ = ["STATE", "Admission", "Call", "Plan", "Shim"]

#: Where a call's state lives in botocore's request context.
STATE = "shardmodel.testing.call"

# the hook passes itself to the simulator; the protocol takes its type as a parameter
_Hook_contra = TypeVar("_Hook_contra", contravariant=True)


@frozen
class Plan:
    """What one attempt asks of which partitions; ``slots`` locate batch entries."""

    operation: str
    kind: Kind
    charges: tuple[Charge, ...]
    slots: tuple[tuple[str, int], ...] = ()
    consistent: bool = False
    table: str = ""
    strong_tables: frozenset[str] = frozenset()  # BatchGetItem: tables read consistently


@define
class Call:
    """One API call's state, kept in botocore's request context across its attempts."""

    start: float
    offset: float = 0.0
    pending: tuple[Plan, float] | None = None
    # the first attempt's outcome, decided in before-call, for before-send to deliver
    preset: tuple[Any] | None = None
    # the answer to a put stored in the write buffer
    buffered: dict[str, Any] | None = None
    # this attempt holds SERVER_LOCK until its response is received
    holding: bool = False


@define
class Shim:
    """The parts of a request the simulator reads, before botocore has built one."""

    url: str
    context: dict[str, Any]
    body: Any


class Admission(Protocol[_Hook_contra]):
    """What a hook asks of the simulator it was installed by (the simulator implements it)."""

    @property
    def buffer_writes(self) -> bool:
        """Whether admitted unconditional puts are answered at once and stored in batches."""

    @property
    def backoff_rng(self) -> random.Random:
        """The jitter source of the retry handler's back-off."""

    @property
    def ledger(self) -> CapacityLedger:
        """The partitions' capacity, which also names a key's partition."""

    def _first_attempt(self, hook: _Hook_contra, shim: Shim) -> Any:
        """Decide a put's first attempt in before-call; answer it there if it was buffered."""

    def _attempt(self, hook: _Hook_contra, operation: str, request: Any) -> Any:
        """Admit, throttle or fail one attempt; None lets it go to the server."""

    def _provision(self, body: Mapping[str, Any]) -> None:
        """An UpdateTable's new provisioned rates become the table's (and index's) limits."""

    def _settle_reads(
        self, hook: _Hook_contra, plan: Plan, parsed: Mapping[str, Any], now: float
    ) -> None:
        """Charge a read by what it returned, beyond the minimum charged when admitted."""

    def _wait(self, call: Call | None, seconds: float, backoff: bool = False) -> None:
        """Spend latency or a retry's back-off on the simulated clock."""
