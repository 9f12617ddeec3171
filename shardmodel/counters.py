"""Sharded counters: one logical item spread over its shards, summed on read.

``Model.add(key, views=1)`` is one ``UpdateItem ADD`` on one shard item; reads sum the
counters of every shard item. With a ``token``, an increment counts once however often
it is retried: the shard item records recent tokens in two rotating string sets and the
update is conditional on the token being absent. Beside each token it records a
fingerprint of the increments, so a token reused with other amounts is refused, like
DynamoDB's ``ClientRequestToken``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from typing import Any

from attrs import frozen
from pynamodb.attributes import NumberAttribute
from pynamodb.constants import NUMBER
from pynamodb.expressions.operand import Path

from shardmodel.core.canonical import canonical_sum
from shardmodel.core.canonical import storable_number as canonical_number
from shardmodel.errors import IdempotentParameterMismatchError, ShardKeyError

__all__ = [
    "TOKEN_ATTRIBUTES",
    "CounterAttribute",
    "TokenWindow",
    "aggregate",
]


class CounterAttribute(NumberAttribute):
    """A number summed over the shards of its item; change it with ``Model.add``."""


#: Bookkeeping attributes of shard items; never shown on loaded instances.
TOKEN_ATTRIBUTES = (
    "sm_tokens_0",
    "sm_tokens_1",
    "sm_window_0",
    "sm_window_1",
    "sm_total_at",
    "sm_prints_0",
    "sm_prints_1",
)
TOTAL_PREFIX = "sm_total_"


@frozen
class TokenWindow:
    """How long increment tokens are remembered.

    A token is remembered for at least ``seconds`` and at most twice that: tokens go
    into the set of the current window, and a set is emptied when its slot is reused
    two windows later.

    Attributes:
        seconds: the window length (default 600 s, like DynamoDB's ClientRequestToken).
        clock: returns the time in epoch seconds (inject a fake clock in tests).
    """

    seconds: int = 600
    clock: Callable[[], float] = time.time

    def current(self) -> int:
        """The number of the current window."""
        return int(self.clock() // self.seconds)


def check_increments(model: str, counters: Sequence[str], increments: dict[str, Any]) -> None:
    """Reject unknown counters, non-numbers and numbers DynamoDB cannot store, before sending."""
    if not increments:
        raise ShardKeyError(
            f"{model}.add(): name at least one counter, e.g. {model}.add(key, "
            f"{counters[0] if counters else 'views'}=1)"
        )
    for name, value in increments.items():
        if name not in counters:
            raise ShardKeyError(
                f"{model}.add({name}=...): {name!r} is not a CounterAttribute of {model}; "
                f"counters: {', '.join(counters) or 'none'}"
            )
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
            raise ShardKeyError(
                f"{model}.add({name}={value!r}): increments are numbers (negative to decrement)"
            )
        try:
            canonical_number(value)
        except ValueError as error:
            raise ShardKeyError(f"{model}.add({name}={value!r}): {error}") from None


def increments_print(increments: dict[str, Any]) -> str:
    """A fingerprint of the amounts of an ``add``: equal for equal numbers in any form."""
    text = ";".join(f"{name}={canonical_number(increments[name])}" for name in sorted(increments))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _token_print(token: str, fingerprint: str) -> str:
    """The entry recording that ``token`` was used with these increments."""
    return hashlib.sha256(f"{fingerprint}:{token}".encode()).hexdigest()[:32]


def token_shard(token: str, shards: int) -> int:
    """The shard a token's increment always goes to, so a retry meets its own record."""
    return int.from_bytes(hashlib.md5(token.encode("utf-8")).digest(), "big") % shards


def token_attempts(token: str, window: int, fingerprint: str) -> Iterator[tuple[list[Any], Any]]:
    """The (extra actions, condition) of the two ways to record a token.

    First: the current slot already holds this window's set: add the token to it.
    Second: the slot is empty or holds an old window: start it with this token.
    Both require the token to be in neither slot. Each records, in the slot's print
    set, the token's fingerprint with these increments (see :func:`check_recorded`).
    """
    slot, other = window % 2, 1 - window % 2
    tokens, window_attr = Path(f"sm_tokens_{slot}"), Path(f"sm_window_{slot}")
    prints, entry = Path(f"sm_prints_{slot}"), _token_print(token, fingerprint)
    other_tokens = Path(f"sm_tokens_{other}")
    absent = ~tokens.contains(token) & ~other_tokens.contains(token)
    yield [tokens.add({token}), prints.add({entry})], (window_attr == window) & absent
    fresh = window_attr.does_not_exist() | (window_attr < window)
    yield (
        [tokens.set({token}), prints.set({entry}), window_attr.set(window)],
        fresh & (other_tokens.does_not_exist() | ~other_tokens.contains(token)),
    )


def check_recorded(
    item: dict[str, dict[str, Any]] | None, token: str, fingerprint: str, model: str
) -> bool:
    """Whether a stored shard item already holds this token, with these increments.

    Raises:
        IdempotentParameterMismatchError: the token was recorded with other increments.
    """
    if not item:
        return False
    for slot in (0, 1):
        if token not in item.get(f"sm_tokens_{slot}", {}).get("SS", []):
            continue
        prints = item.get(f"sm_prints_{slot}", {}).get("SS")
        if prints is None or _token_print(token, fingerprint) in prints:
            return True  # no prints: recorded before prints were kept, trust it
        raise IdempotentParameterMismatchError(
            f"{model}.add(token={token!r}): this token was already used with other "
            "increments (within the token window), so this call is refused and nothing "
            "is applied; use a new token for a new increment, or resend the same amounts",
            token,
        )
    return False


def aggregate(
    items: Sequence[dict[str, dict[str, Any]]], counters: Sequence[str], home: str, hash_name: str
) -> dict[str, dict[str, Any]]:
    """One raw item from the shard items of one logical item: counters summed.

    Non-counter attributes come from the home shard's item when it holds them (that is
    where ``save`` writes them), else from the first shard item.
    """
    base = next((i for i in items if i[hash_name]["S"] == home), items[0])
    bookkeeping = set(TOKEN_ATTRIBUTES)
    merged = {
        k: v for k, v in base.items() if k not in bookkeeping and not k.startswith(TOTAL_PREFIX)
    }
    for name in counters:
        values = [Decimal(i[name][NUMBER]) for i in items if name in i and NUMBER in i[name]]
        if values:
            merged[name] = {NUMBER: canonical_sum(values)}
    merged[hash_name] = {"S": home}
    return merged
