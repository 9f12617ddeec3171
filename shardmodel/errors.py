"""The exceptions shardmodel raises.

Every error derives from :class:`ShardModelError`; each also derives from the
built-in exception whose meaning fits, so ``except ValueError`` keeps working::

    ShardModelError
    ├── ShardConfigurationError (TypeError)   a model or strategy is declared wrongly
    ├── ShardKeyError (ValueError)            an item's values cannot make a physical key
    ├── UnknownShardError (LookupError)       an instance's shard cannot be known
    ├── DuplicateItemError (LookupError)      one logical item found on two shards
    ├── UnsupportedOperationError (TypeError) the operation cannot work on this layout
    ├── CursorError (ValueError)              a query cursor cannot be resumed here
    ├── FanOutLimitError (ValueError)         a read would send more requests than its bound
    ├── QueryValidationError (ShardKeyError, pynamodb QueryError)
    │                                         DynamoDB would refuse the query (ValidationException)
    ├── ShardMetadataError (ShardKeyError)    a metadata item of a dynamic key is malformed
    ├── ItemSizeError (ValueError)            an item leaves no room for a layout change
    └── IdempotentParameterMismatchError (ValueError)
                                              a counter token reused with other amounts

Messages name the field at fault and say how to fix it. Errors raised while
preparing a request are raised before anything is sent, so nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence

from botocore.exceptions import ClientError
from pynamodb.exceptions import QueryError


class ShardModelError(Exception):
    """Root of every shardmodel error."""


class ShardConfigurationError(ShardModelError, TypeError):
    """A model, attribute or strategy is declared in a way that cannot work.

    Raised when the class is defined (or the strategy built), never later.
    """


class ShardKeyError(ShardModelError, ValueError):
    """An item's values cannot produce a valid physical key.

    Raised before any request is sent.
    """


class UnknownShardError(ShardModelError, LookupError):
    """The shard of an instance cannot be known, so it cannot be updated or deleted.

    A random-sharded instance built by hand was never saved or loaded, so no one
    knows which shard holds it.
    """


class DuplicateItemError(ShardModelError, LookupError):
    """One logical item was found under more than one physical key."""

    def __init__(self, message: str, physical_keys: Sequence[str]) -> None:
        super().__init__(message)
        self.physical_keys = tuple(physical_keys)


class UnsupportedOperationError(ShardModelError, TypeError):
    """The operation cannot be done on this sharded layout; the message says what can."""


class CursorError(ShardModelError, ValueError):
    """A query cursor is tampered, truncated, from another version, or for another query."""


class FanOutLimitError(ShardModelError, ValueError):
    """A read would touch more partitions (buckets x shards) than its request bound.

    Raised before the first request; the message names the bound and how to raise it.
    """

    def __init__(self, message: str, planned: int, bound: int) -> None:
        super().__init__(message)
        self.planned = planned
        self.bound = bound


class ShardMetadataError(ShardKeyError):
    """A dynamic key's metadata item (read from the table) breaks the strategy's rules.

    The message names the key, the field and the value allowed.
    """


class QueryValidationError(ShardKeyError, QueryError):
    """A query DynamoDB would refuse with ``ValidationException``, refused before sending.

    It is the error a plain PynamoDB model raises for the same query (a ``QueryError``
    whose ``cause_response_code`` is ``"ValidationException"``), and a :class:`ShardKeyError`.
    """

    def __init__(self, message: str) -> None:
        cause = ClientError({"Error": {"Code": "ValidationException", "Message": message}}, "Query")
        QueryError.__init__(self, message, cause)


class ItemSizeError(ShardModelError, ValueError):
    """An item is too large for a layout change to move it.

    A move marks the item while it moves, and its new key may be longer: a save of an
    item within :data:`~shardmodel.keyspace.phases.MOVE_RESERVE_BYTES` of DynamoDB's
    400 KB is refused before it is sent, and a move meeting such an item (grown by an
    update, or written before) stops with this error, the item unchanged.
    """


class PhysicalKeyWarning(UserWarning):
    """A read found nothing under a key that reads as a physical key of the model's
    layout (``celebrity#3``): the logical key (``celebrity``) was likely meant."""


class IdempotentParameterMismatchError(ShardModelError, ValueError):
    """An ``add`` token was already used with other increments; nothing was applied.

    Like DynamoDB's ``IdempotentParameterMismatchException`` for a reused
    ``ClientRequestToken``: a token names one increment, so resending it with other
    amounts is a bug in the caller. ``error.token`` is the token.
    """

    def __init__(self, message: str, token: str) -> None:
        super().__init__(message)
        self.token = token
