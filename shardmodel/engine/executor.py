"""The executors: they send a model's requests and hand back raw pages.

:class:`SyncExecutor`: point and batch reads and every shard's Query go on the lean path
(:mod:`shardmodel.lean`), writes through the model's PynamoDB connection; both emit
botocore's events, so the testing toolkit (simulator, faults, latency) sees every
request. :class:`AsyncExecutor`, inside an async call: the same requests, every one on
the async path (:mod:`shardmodel.lean.aio`, the running event loop), which emits the
same events. Planning, merging, cursors and validation happen above them, once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from attrs import evolve

from shardmodel.core import bridge
from shardmodel.core.workers import (
    DRIVEN_WORKERS,
    LOOP_WORKERS,
    Runner,
    loop_fanout,
    shared_workers,
)
from shardmodel.errors import UnsupportedOperationError
from shardmodel.retry import Backoff

__all__ = ["BATCH_GET_KEYS", "AsyncExecutor", "SyncExecutor"]

#: BatchGetItem's limit on keys per call.
BATCH_GET_KEYS = 100

_RawItem = dict[str, dict[str, Any]]


class SyncExecutor:
    """Sends one model class's requests, in the calling thread or the shared workers."""

    def __init__(self, model: type[Any]) -> None:
        self.model = model

    def connection(self) -> Any:
        """The model's PynamoDB ``TableConnection`` (writes, and what the lean path lacks)."""
        return self.model._get_connection()

    def backoff(self, sleep: Callable[[float], None] | None = None) -> Backoff:
        """``Meta.shard_backoff``: how unprocessed keys and resent writes wait (else the
        default, sleeping with ``sleep`` when given)."""
        backoff = getattr(self.model.Meta, "shard_backoff", None)
        if isinstance(backoff, Backoff):
            return backoff
        return Backoff() if sleep is None else Backoff(sleep=sleep)

    def resend(self, call: Callable[[], Any], safe: Callable[[Exception], bool]) -> Any:
        """Call, resending with backoff while failures are ``safe`` to resend."""
        waits = self.backoff().waits()
        while True:
            try:
                return call()
            except Exception as error:
                if not safe(error) or next(waits, None) is None:
                    raise

    # -- reads ----------------------------------------------------------------------------

    def batch_get(
        self,
        keys: Sequence[dict[str, Any]],
        consistent_read: bool | None,
        attributes_to_get: Sequence[str] | None,
    ) -> list[_RawItem]:
        """BatchGetItem over any number of keys, resending unprocessed keys with backoff."""
        found: list[_RawItem] = []
        for start in range(0, len(keys), BATCH_GET_KEYS):
            pending = list(keys[start : start + BATCH_GET_KEYS])
            waits = self.backoff().waits()
            while pending:
                page, unprocessed = self._batch_get_page(
                    pending, consistent_read, attributes_to_get
                )
                found.extend(page or [])
                pending = list(unprocessed or [])
                if pending and next(waits, None) is None:
                    raise UnsupportedOperationError(
                        f"{self.model.__name__}: BatchGetItem left {len(pending)} keys "
                        "unprocessed after every retry; the table is throttled, retry later"
                    )
        return found

    def _batch_get_page(
        self,
        keys: list[dict[str, Any]],
        consistent_read: bool | None,
        attributes_to_get: Sequence[str] | None,
    ) -> tuple[list[_RawItem] | None, list[dict[str, Any]] | None]:
        """One BatchGetItem on the lean path: items, and the keys left unprocessed."""
        table = self.model.Meta.table_name
        data = self._read_connection().batch_get_item(
            keys, consistent_read=consistent_read, attributes_to_get=attributes_to_get
        )
        unprocessed = data.get("UnprocessedKeys", {}).get(table, {}).get("Keys")
        return data.get("Responses", {}).get(table), unprocessed

    def _read_connection(self) -> Any:
        """The connection reads go through: the model's on the lean path."""
        from shardmodel.lean import table_connection

        return table_connection(self.model)

    def runner(self) -> Runner:
        """Where a query's shard requests run: the thread's kept loop when they go on the
        lean path, no event handler of theirs may block the thread
        (:func:`~shardmodel.lean.hooks.nonblocking`) and
        :func:`~shardmodel.core.workers.loop_fanout` allows; else the shared worker
        threads (``Meta.lean_requests = False``: botocore, which blocks)."""
        client = self._lean_client_for_loop()
        if client is not None and client.never_blocks("Query"):
            return DRIVEN_WORKERS
        return shared_workers()

    def _lean_client_for_loop(self) -> Any:
        """The model's lean client when its requests may go on the thread's loop."""
        if not loop_fanout():
            return None
        from shardmodel.lean import LeanClient, table_connection

        client = table_connection(self.model).connection.client
        return client if isinstance(client, LeanClient) else None

    def query_fetcher(self, **fixed: Any) -> Callable[..., dict[str, Any]]:
        """fetch(physical key, exclusive start key, page limit): one Query of one shard.

        PynamoDB builds the request once (:class:`~shardmodel.lean.prepared.PreparedQuery`);
        each shard's copy differs in its key, start key and limit. The botocore client is
        built here, in the caller's thread: PynamoDB builds it lazily without a lock, so
        many cold worker threads would each build one. Where the shard requests
        may run on the thread's kept loop (:meth:`runner`), a request that does is sent
        through the connection's async twin, as an async call's are.
        """
        from shardmodel.lean import table_connection
        from shardmodel.lean.prepared import PreparedQuery

        connection = table_connection(self.model)
        connection.connection.client  # noqa: B018 - build the lean client here, too
        twin = None
        if self._lean_client_for_loop() is not None:  # whichever runner it runs on then
            from shardmodel.lean.aio import async_table_connection

            twin = async_table_connection(self.connection())
        return PreparedQuery(connection, twin, **fixed)

    def query_all(self, physical: str, consistent_read: bool = True) -> list[_RawItem]:
        """Every item stored under one physical key, all pages."""
        connection = self.connection()
        items: list[_RawItem] = []
        start = None
        while True:
            page = connection.query(
                physical, exclusive_start_key=start, consistent_read=consistent_read
            )
            items.extend(page.get("Items", []))
            start = page.get("LastEvaluatedKey")
            if not start:
                return items


class AsyncExecutor(SyncExecutor):
    """Sends one model class's requests inside an async call, on the running event loop.

    The model's connection there is its async twin (``ShardedModel._get_connection``):
    every request, reads and writes, goes through :mod:`shardmodel.lean.aio`. Waits are
    the loop's: a back-off that would sleep the thread sleeps this call alone.
    """

    def backoff(self, sleep: Callable[[float], None] | None = None) -> Backoff:
        backoff = super().backoff(sleep)
        if backoff.sleep is time.sleep:
            return evolve(backoff, sleep=bridge.sleep)
        return backoff

    def _read_connection(self) -> Any:
        return self.connection()

    def runner(self) -> Runner:
        """The running loop's tasks."""
        return LOOP_WORKERS

    def query_fetcher(self, **fixed: Any) -> Callable[..., dict[str, Any]]:
        """fetch(physical key, exclusive start key, page limit), built once by PynamoDB
        (:class:`~shardmodel.lean.prepared.PreparedQuery`) on the async connection."""
        from shardmodel.lean.prepared import PreparedQuery

        return PreparedQuery(self.connection(), None, **fixed)
