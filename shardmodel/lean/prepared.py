"""One logical query's per-shard requests, built by PynamoDB once instead of once a shard.

Every shard of a merged query sends the same Query but for its partition key (and its
own ``ExclusiveStartKey`` and ``Limit``). PynamoDB's ``Connection.query`` rebuilds the
whole request each time: conditions serialized, placeholders substituted, the table's
metadata looked up. :class:`PreparedQuery` runs that very code once, with a stand-in
partition key, keeps the request it would have sent, and per shard copies it with the
key value replaced. The template carries the consumed-capacity default PynamoDB's
``dispatch`` adds; sending goes through ``dispatch`` itself only when it would do more
than send (a receiver of its signals, its debug log on), else straight to
``_make_api_call`` (PynamoDB's ``ClientError`` wrapping), saving its request id and log
calls. Errors are wrapped in ``QueryError`` as ``Connection.query`` wraps them.
"""

from __future__ import annotations

import logging
from typing import Any

from pynamodb.connection import base
from pynamodb.connection.base import BOTOCORE_EXCEPTIONS, Connection
from pynamodb.constants import (
    EXPRESSION_ATTRIBUTE_VALUES,
    LIMIT,
    QUERY,
    RETURN_CONSUMED_CAPACITY,
    STRING,
    TOTAL,
)
from pynamodb.exceptions import QueryError
from pynamodb.signals import post_dynamodb_send, pre_dynamodb_send

from shardmodel.core.bridge import in_async

__all__ = ["PreparedQuery"]

#: The partition key the template is built with: a value no real key equals.
_STAND_IN = "\x00shardmodel-prepared-key\x00"


def dispatch_is_plain() -> bool:
    """True when PynamoDB's ``dispatch`` would only send: no signal receivers, no debug log.

    Without blinker PynamoDB's signals are no-ops (they have no ``receivers``).
    """
    return (
        not getattr(pre_dynamodb_send, "receivers", None)
        and not getattr(post_dynamodb_send, "receivers", None)
        and not base.log.isEnabledFor(logging.DEBUG)
    )


class _Recorder:
    """A connection whose ``dispatch`` keeps the request instead of sending it."""

    def __init__(self, origin: Any) -> None:
        self._origin = origin
        self.request: dict[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._origin, name)

    def dispatch(self, operation_name: str, operation_kwargs: dict[str, Any]) -> dict[str, Any]:
        self.request = operation_kwargs
        return {}


class PreparedQuery:
    """``TableConnection.query(key, exclusive_start_key=..., limit=..., **fixed)``, prepared.

    ``connection`` is a PynamoDB ``TableConnection``; ``fixed`` the keyword arguments
    every shard's query shares. When the template cannot be told apart (the stand-in key
    is not found exactly once among the values), every call builds its own request.
    ``twin``, when given, is the connection's async twin: a call made inside an async
    call (a sync caller's shard request on its thread's loop) sends through it.
    """

    def __init__(self, connection: Any, twin: Any = None, **fixed: Any) -> None:
        self._table = connection
        self._twin = twin
        self._fixed = fixed
        origin = connection.connection
        recorder = _Recorder(origin)
        Connection.query(recorder, connection.table_name, _STAND_IN, **fixed)  # type: ignore[arg-type]
        template = recorder.request or {}
        if RETURN_CONSUMED_CAPACITY not in template:  # as dispatch adds it to every Query
            template.update(origin.get_consumed_capacity_map(TOTAL))
        values: dict[str, Any] = template.get(EXPRESSION_ATTRIBUTE_VALUES, {})
        slots = [name for name, value in values.items() if value == {STRING: _STAND_IN}]
        self._slot = slots[0] if len(slots) == 1 else None
        self._template = template

    def __call__(self, key: str, exclusive_start_key: Any = None, limit: int | None = None) -> Any:
        table = self._table
        if self._twin is not None and in_async():
            table = self._twin
        if self._slot is None:
            return table.query(
                key, exclusive_start_key=exclusive_start_key, limit=limit, **self._fixed
            )
        request = dict(self._template)
        values = dict(request[EXPRESSION_ATTRIBUTE_VALUES])
        values[self._slot] = {STRING: key}
        request[EXPRESSION_ATTRIBUTE_VALUES] = values
        connection = table.connection
        if exclusive_start_key:
            request.update(
                connection.get_exclusive_start_key_map(table.table_name, exclusive_start_key)
            )
        if limit is not None:
            request[LIMIT] = limit
        try:
            if dispatch_is_plain():
                return connection._make_api_call(QUERY, request)
            return connection.dispatch(QUERY, request)
        except BOTOCORE_EXCEPTIONS as error:  # as Connection.query wraps them
            raise QueryError(f"Failed to query items: {error}", error)  # noqa: B904
