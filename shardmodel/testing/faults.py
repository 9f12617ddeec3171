"""What the simulator injects besides throttling: latency and faults, drawn from a seeded source.

A fault replaces one attempt of one request, before botocore's retry logic sees it, so
botocore (and PynamoDB, and shardmodel) handle it exactly as they would a real one:

==========================  ================================================================
fault                       what the caller sees
==========================  ================================================================
``throttle``                ``ProvisionedThroughputExceededException`` (retried by botocore)
``internal_error``          HTTP 500 ``InternalServerError``, nothing written (retried)
``connection_error``        ``EndpointConnectionError``, nothing sent (retried)
``lost_response``           a write is applied, then ``ReadTimeoutError`` (retried, so the
                            write is applied again: harmless for puts, not for ``ADD``)
``unprocessed``             a batch call processes only some items or keys and returns the
                            rest as ``UnprocessedItems``/``UnprocessedKeys`` (the caller's to
                            resend)
``transaction_conflict``    ``TransactionCanceledException`` with a ``TransactionConflict``
                            reason (not retried by botocore)
==========================  ================================================================
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator

from attrs import field, frozen

__all__ = ["FAULT_KINDS", "Faults", "Latency"]

#: Every fault kind, in the order a random draw walks them.
FAULT_KINDS = (
    "connection_error",
    "internal_error",
    "throttle",
    "lost_response",
    "unprocessed",
    "transaction_conflict",
)

_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
_BATCHES = frozenset({"BatchWriteItem", "BatchGetItem"})
_TRANSACTIONS = frozenset({"TransactWriteItems", "TransactGetItems"})


def _rate(instance: object, attribute: object, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"Faults: a rate is a probability in [0, 1], got {value!r}")


def _to_names(value: Iterable[str] | None) -> frozenset[str] | None:
    return None if value is None else frozenset(value)


@frozen
class Faults:
    """Per-attempt probabilities of each fault, for the data operations they apply to.

    ``lost_response`` applies to writes, ``unprocessed`` to batch calls,
    ``transaction_conflict`` to transactions; the others to every data operation. The
    rates of the faults that apply to one attempt must sum to at most 1.

    Attributes:
        throttle: a throttling error regardless of capacity.
        internal_error: an HTTP 500 ``InternalServerError``.
        connection_error: a connection error before the request is sent.
        lost_response: the write is applied, then its response is lost.
        unprocessed: a batch call leaves some items or keys unprocessed.
        unprocessed_fraction: the chance each item or key of such a call is left out (at
            least one always is).
        transaction_conflict: a transaction cancelled for a conflict.
        operations: restrict faults to these operation names (None: all data operations).
    """

    throttle: float = field(default=0.0, validator=_rate)
    internal_error: float = field(default=0.0, validator=_rate)
    connection_error: float = field(default=0.0, validator=_rate)
    lost_response: float = field(default=0.0, validator=_rate)
    unprocessed: float = field(default=0.0, validator=_rate)
    unprocessed_fraction: float = field(default=0.5, validator=_rate)
    transaction_conflict: float = field(default=0.0, validator=_rate)
    operations: frozenset[str] | None = field(default=None, converter=_to_names)

    def _applicable(self, operation: str) -> Iterator[tuple[str, float]]:
        if self.operations is not None and operation not in self.operations:
            return
        yield "connection_error", self.connection_error
        yield "internal_error", self.internal_error
        yield "throttle", self.throttle
        if operation in _WRITES:
            yield "lost_response", self.lost_response
        if operation in _BATCHES:
            yield "unprocessed", self.unprocessed
        if operation in _TRANSACTIONS:
            yield "transaction_conflict", self.transaction_conflict

    def draw(self, operation: str, rng: random.Random) -> str | None:
        """The fault for one attempt of ``operation``, or None; uses one draw of ``rng``."""
        roll = rng.random()
        for kind, rate in self._applicable(operation):
            if roll < rate:
                return kind
            roll -= rate
        return None


@frozen
class Latency:
    """Simulated time each attempt takes: ``fixed`` plus a uniform draw in ``[0, jitter]``.

    Attributes:
        fixed: seconds every attempt takes.
        jitter: the most extra seconds, drawn uniformly per attempt.
    """

    fixed: float = 0.0
    jitter: float = 0.0

    def __attrs_post_init__(self) -> None:
        if self.fixed < 0 or self.jitter < 0:
            raise ValueError(f"{self!r}: latencies cannot be negative")

    def draw(self, rng: random.Random) -> float:
        """One attempt's latency in seconds (draws from ``rng`` only when jitter is set)."""
        return self.fixed + (rng.uniform(0.0, self.jitter) if self.jitter else 0.0)
