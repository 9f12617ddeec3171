"""Spreading the top-of-the-hour burst of a fleet of writers."""

from __future__ import annotations

import hashlib


def herd_offset(entity: str, window: float) -> float:
    """Seconds, in ``[0, window)``, by which ``entity``'s writer delays each bucket's report.

    When every writer reports at the top of the hour, the new bucket's partitions (and
    the table) take the whole fleet's writes in one second. Delaying each writer by an
    offset derived from its entity (md5 of the id, scaled to the window) spreads the
    burst evenly over ``window`` seconds; the offset is stable, so a writer keeps its
    cadence, and readings keep their true time. See the time-series docs for numbers.
    """
    if isinstance(window, bool) or not isinstance(window, int | float) or window < 0:
        raise ValueError(f"herd_offset(window={window!r}): give seconds, 0 or more")
    digest = hashlib.md5(entity.encode("utf-8"), usedforsecurity=False).digest()
    return window * int.from_bytes(digest, "big") / 2**128
