"""Backoff for the work botocore does not retry: a batch call's unprocessed keys and items."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator

from attrs import field, frozen

__all__ = ["Backoff", "is_throttle", "is_transient", "is_unsent"]


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
