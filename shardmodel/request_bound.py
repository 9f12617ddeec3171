"""The request bound every sharded read checks before its first request.

A read of one logical key touches buckets x shards partitions: one Query (or one
BatchGetItem key) each. The bound caps that number so a wide time range or a
corrupted shard count cannot send thousands of requests: the read raises
:class:`~shardmodel.errors.FanOutLimitError` instead, naming the bound and how to
raise it. The bound is, first found: the call's ``max_requests``, the model's
``Meta.max_requests``, :data:`DEFAULT_MAX_REQUESTS`.
"""

from __future__ import annotations

from typing import Any

from shardmodel.errors import FanOutLimitError, ShardKeyError

__all__ = ["DEFAULT_MAX_REQUESTS", "check_fan_out", "request_bound"]

#: Partitions (buckets x shards) one read may touch unless the call or Meta says more.
DEFAULT_MAX_REQUESTS = 1000


def request_bound(model: type[Any], per_call: int | None = None) -> int:
    """The bound of one read: the call's ``max_requests``, else ``Meta``'s, else the default."""
    chosen = per_call
    where = "max_requests"
    if chosen is None:
        chosen = getattr(getattr(model, "Meta", None), "max_requests", None)
        where = f"{model.__name__}.Meta.max_requests"
    if chosen is None:
        return DEFAULT_MAX_REQUESTS
    if isinstance(chosen, bool) or not isinstance(chosen, int) or chosen < 1:
        raise ShardKeyError(
            f"{where}={chosen!r}: give a positive int, the most partitions (buckets x shards) "
            f"one read may touch (default {DEFAULT_MAX_REQUESTS:,})"
        )
    return chosen


def check_fan_out(what: str, planned: int, bound: int) -> None:
    """Raise :class:`FanOutLimitError` when ``planned`` partitions exceed ``bound``."""
    if planned > bound:
        raise FanOutLimitError(
            f"{what} would read {planned:,} partitions (buckets x shards), over its bound of "
            f"{bound:,} requests; narrow the range or the shard count, or raise the bound "
            f"with max_requests={planned} on the call or Meta.max_requests on the model",
            planned,
            bound,
        )
