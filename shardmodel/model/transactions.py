"""PynamoDB's transactions with the library's spans and metrics.

PynamoDB's ``TransactWrite`` and ``TransactGet`` send on the ``Connection`` they are given,
which the library never sees. These subclasses take the same arguments and items; while
spans or metrics are recorded (:mod:`shardmodel.core.telemetry`) the commit is one
logical operation's span, ``Transaction.transact_write`` or ``Transaction.transact_get``
(the tables in ``aws.dynamodb.table_names``), with the request's span as its child and
the request counted, as every other request of the library is. Untraced, they are
PynamoDB's own, unchanged.
"""

from __future__ import annotations

from typing import Any

from pynamodb import transactions

from shardmodel.core import telemetry
from shardmodel.lean.traced import TracedConnection

__all__ = ["TransactGet", "TransactWrite"]


class Transaction:
    """What a transaction's span is named after (it may span several models)."""

    class Meta:
        table_name = None


def _tables(requests: list[dict[str, Any]]) -> list[str]:
    return sorted({str(r["TableName"]) for r in requests if "TableName" in r})


def _traced_commit(owner: Any, name: str, tables: list[str], commit: Any) -> Any:
    """``commit()`` inside ``name``'s span, its request through a traced connection."""
    if not telemetry.active():
        return commit()
    with telemetry.operation(name, Transaction) as operation:
        if operation is not None and tables:
            operation.span.set_attribute("aws.dynamodb.table_names", tables)
        origin = owner._connection
        owner._connection = TracedConnection(origin)
        try:
            return commit()
        finally:
            owner._connection = origin


class TransactWrite(transactions.TransactWrite):
    """PynamoDB's ``TransactWrite``, traced (see the module)."""

    def _commit(self) -> Any:
        requests = [
            *self._condition_check_items,
            *self._delete_items,
            *self._put_items,
            *self._update_items,
        ]
        return _traced_commit(self, "transact_write", _tables(requests), super()._commit)


class TransactGet(transactions.TransactGet):
    """PynamoDB's ``TransactGet``, traced (see the module)."""

    def _commit(self) -> Any:
        tables = _tables(self._get_items)
        return _traced_commit(self, "transact_get", tables, super()._commit)
