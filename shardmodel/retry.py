"""Backoff for the work botocore does not retry: a batch call's unprocessed keys and items."""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from attrs import field, frozen

__all__ = [
    "Backoff",
    "attempt_log",
    "is_condition_failure",
    "is_throttle",
    "is_transient",
    "is_unsent",
    "surely_unapplied",
    "watch_attempts",
]


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


#: Error codes of requests DynamoDB rejected for capacity: nothing was applied.
THROTTLE_CODES = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
)
#: Error codes of failures that may or may not have applied the request.
TRANSIENT_CODES = frozenset({"InternalServerError", "ServiceUnavailable", "InternalFailure"})


def _cause(error: BaseException) -> BaseException:
    return getattr(error, "cause", None) or error


def _code(error: BaseException) -> str | None:
    response = getattr(_cause(error), "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return str(code) if code is not None else None
    return None


def is_condition_failure(error: BaseException) -> bool:
    """A PynamoDB write refused by its condition (not by the network or capacity)."""
    return getattr(error, "cause_response_code", None) == "ConditionalCheckFailedException"


def is_throttle(error: BaseException) -> bool:
    """The request was refused for capacity, so nothing was applied: safe to resend."""
    return _code(error) in THROTTLE_CODES


def is_unsent(error: BaseException) -> bool:
    """The connection failed before the request was sent: safe to resend."""
    from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError

    return isinstance(_cause(error), EndpointConnectionError | ConnectTimeoutError)


def is_transient(error: BaseException) -> bool:
    """A failure after which the request may or may not have been applied.

    Resending is safe only for idempotent requests.
    """
    from botocore.exceptions import ConnectionClosedError, ReadTimeoutError

    cause = _cause(error)
    return (
        _code(error) in TRANSIENT_CODES
        or isinstance(cause, ReadTimeoutError | ConnectionClosedError)
        or is_unsent(error)
        or is_throttle(error)
    )


# -- what each attempt of a call did --------------------------------------------------

#: The open attempt log: (its entries, fail fast); per thread and per async call.
_log: ContextVar[tuple[list[str], bool] | None] = ContextVar("shardmodel_attempts", default=None)
_OBSERVER_ID = "shardmodel-attempt-log"


def watch_attempts(client: Any) -> None:
    """Let :func:`attempt_log` see every attempt botocore makes on ``client`` (idempotent).

    Registered first, so a fail-fast log stops a throttled call before any retry
    handler schedules its next attempt.
    """
    client.meta.events.register_first("needs-retry.dynamodb", _observe, unique_id=_OBSERVER_ID)


def _observe(
    response: Any = None,
    caught_exception: BaseException | None = None,
    operation: Any = None,
    **_: Any,
) -> None:
    log = _log.get()
    if log is None:
        return None
    kinds, fail_fast = log
    if caught_exception is not None:
        kinds.append("unsent" if is_unsent(caught_exception) else "ambiguous")
        return None
    http, parsed = response
    code = parsed.get("Error", {}).get("Code") if isinstance(parsed, dict) else None
    if http.status_code < 300:
        kinds.append("applied")
    elif code in THROTTLE_CODES or http.status_code < 500:
        kinds.append("refused")
        if code in THROTTLE_CODES and fail_fast:
            from botocore.exceptions import ClientError

            # the caller handles throttles itself (it may grow the key): no retry here
            raise ClientError(parsed, getattr(operation, "name", "Unknown"))
    else:
        kinds.append("ambiguous")
    return None  # an observer: botocore's own handler decides the retry


@contextlib.contextmanager
def attempt_log(fail_fast: bool = False) -> Iterator[list[str]]:
    """Collect the outcome of each attempt of the calls made in this block (this thread,
    or this async call).

    Each entry is ``applied``, ``refused`` (throttled or rejected), ``unsent`` (no
    connection) or ``ambiguous`` (a timeout or 5xx: it may have been applied). With
    ``fail_fast``, a throttled attempt raises at once instead of being retried by
    botocore, so the caller sees the first throttle.
    """
    kinds: list[str] = []
    token = _log.set((kinds, fail_fast))
    try:
        yield kinds
    finally:
        _log.reset(token)


def failing_fast() -> bool:
    """True inside an ``attempt_log(fail_fast=True)`` block of this thread.

    Its caller classifies the throttles itself (a dynamic write growing its key).
    """
    return bool(getattr(_log, "fail_fast", False))


def surely_unapplied(kinds: Sequence[str]) -> bool:
    """True when no attempt in ``kinds`` can have been applied, so resending elsewhere is safe."""
    return all(kind in ("refused", "unsent") for kind in kinds)
