"""Spreading the top-of-the-hour burst of a fleet of writers."""

from __future__ import annotations

import hashlib
import math

from shardmodel.errors import ShardKeyError


def herd_offset(entity: str, window: float) -> float:
    """Seconds, in ``[0, window)``, by which ``entity``'s writer delays each bucket's report.

    When every writer reports at the top of the hour, the new bucket's partitions (and
    the table) take the whole fleet's writes in one second. Delaying each writer by an
    offset derived from its entity (md5 of the id, scaled to the window) spreads the
    burst evenly over ``window`` seconds; the offset is stable, so a writer keeps its
    cadence, and readings keep their true time. See the time-series docs for numbers.

    Raises:
        ShardKeyError: a window that is not a finite number of seconds, 0 or more, or
            an entity that is not a str.
    """
    if isinstance(window, bool) or not isinstance(window, int | float) or not _finite(window):
        raise ShardKeyError(
            f"herd_offset(window={window!r}): give the window in seconds, a finite "
            "number, 0 or more"
        )
    if not isinstance(entity, str):
        raise ShardKeyError(
            f"herd_offset(entity={entity!r}): give the entity id as a str, e.g. str({entity!r})"
        )
    digest = hashlib.md5(entity.encode("utf-8"), usedforsecurity=False).digest()
    return window * int.from_bytes(digest, "big") / 2**128


def _finite(window: float) -> bool:
    """A window of 0 seconds or more that a float holds (NaN, infinities: no time)."""
    try:
        return math.isfinite(window) and window >= 0
    except OverflowError:  # an int too large for a float
        return False
