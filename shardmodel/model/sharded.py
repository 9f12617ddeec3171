"""ShardedModel: a PynamoDB model whose partition key is sharded transparently.

A thin facade: each method hands the call to the engine (:mod:`shardmodel.engine`), or to
PynamoDB's own implementation where nothing is sharded. Instances always show the
logical key; the engine's codec keeps the physical one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.models import BatchWrite, Model

from shardmodel.core import telemetry
from shardmodel.dynamic.metadata import ShardMetadata
from shardmodel.engine import (
    codec,
    counting,
    counts,
    growth,
    migrating_scans,
    queries,
    reads,
    writes,
)
from shardmodel.engine.building import BuildPlan, build_plan, instantiate
from shardmodel.engine.items import sharded
from shardmodel.engine.sharding import sharding_of
from shardmodel.errors import ShardKeyError, ShardModelError, UnsupportedOperationError
from shardmodel.keyspace.strategies import TimeBounds
from shardmodel.lean.context import connection_in_context
from shardmodel.model.aio import AsyncModelMethods
from shardmodel.model.declaration import ShardedModelMeta
from shardmodel.model.dynamic_keys import DynamicKeyAdmin

__all__ = ["ShardedBatchWrite", "ShardedModel"]

_M = TypeVar("_M", bound="ShardedModel")
_RawItem = dict[str, dict[str, Any]]


class ShardedBatchWrite(BatchWrite[_M]):
    """PynamoDB's BatchWrite, checking each item's physical key when it is added.

    A bad item raises at ``save``/``delete``; leaving the ``with`` block on a shardmodel
    error then drops the pending items instead of committing them (PynamoDB commits on
    any exit), so a validation error writes nothing that was still pending.
    """

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> Any:
        if isinstance(exc_val, ShardModelError):
            self.pending_operations = []
            return None
        return super().__exit__(exc_type, exc_val, exc_tb)

    def save(self, put_item: _M) -> None:
        writes.batch_save(put_item, super().save)

    def delete(self, del_item: _M) -> None:
        writes.batch_delete(del_item, super().delete)


def _build_plan(cls: type[Any]) -> BuildPlan | None:
    """The class's own build plan (worked out on first use; None: a discriminator)."""
    plan = cls.__dict__.get("_build_fields", False)
    if plan is False:
        plan = build_plan(cls)
        cls._build_fields = plan
    return plan  # type: ignore[no-any-return]


def _loader(cls: type[_M]) -> Callable[[_RawItem], _M]:
    """``from_raw_data`` of the class, with what it looks up per item looked up once."""
    if not sharding_of(cls).spec.sharded:
        plain: Callable[[_RawItem], _M] = super(ShardedModel, cls).from_raw_data
        return plain
    build: Callable[[_RawItem], _M] = cls._instantiate
    plan = _build_plan(cls)
    if cls._instantiate.__func__ is ShardedModel._instantiate.__func__ and plan is not None:  # type: ignore[attr-defined]
        build = functools.partial(instantiate, cls, plan)
    return codec.loader(cls, build)


class ShardedModel(DynamicKeyAdmin, AsyncModelMethods, Model, metaclass=ShardedModelMeta):
    """A PynamoDB ``Model`` whose ``ShardedKeyAttribute`` partition key is sharded.

    Declare the model as usual; mark the partition key with
    ``ShardedKeyAttribute(hash_key=True, strategy=...)``. Optional ``Meta`` settings:

    * ``shard_backoff``: a :class:`~shardmodel.retry.Backoff` for resending a batch
      call's unprocessed keys and items, and a dynamic key's throttled new writes.
    * ``max_requests``: the most partitions one read may touch (default 1,000).
    * ``cursor_secret``: signs query cursors (HMAC) instead of checksumming them.
    * ``physical_key_hints``: ``False`` silences the hint of a read that finds nothing
      under a key reading as a physical one (``user-1#3``; default ``True``).

    Every operation has an ``a``-prefixed coroutine twin (``aget``, ``aquery``,
    ``asave``, ...; :mod:`shardmodel.model.aio`), with the ``async`` extra installed.
    """

    #: marks the class (and its subclasses) as sharded, for ShardedKeyAttribute's check
    __shardmodel__ = True

    # the codec's per-instance state (see shardmodel.engine.codec)
    _physical_key: str | None = None
    _index_keys: dict[str, str] | None = None
    _write_counts: ShardMetadata | None = None
    _pinned_key: str | None = None
    _loaded_counters: dict[str, Any] | None = None

    # -- keys -----------------------------------------------------------------------------

    @classmethod
    def _get_connection(cls) -> Any:
        """PynamoDB's connection (an opt-in ``Meta.table_throttle_policy`` watches it);
        inside an async call, its twin on the event loop."""
        connection = super()._get_connection()
        growth.watch_table_throttles(cls, connection)
        return connection_in_context(connection)

    @classmethod
    def logical_key_of(cls, physical_key: str) -> str:
        """The logical key a stored partition key value (``user-1#3``) belongs to.

        For tools that see raw items: streams, exports, CloudWatch Contributor Insights.
        """
        return sharded(cls).layout.logical_key(physical_key)

    def get_physical_key(self) -> str | None:
        """The item's physical partition key, or None while its shard is not yet chosen.

        Pure: worked out from the layout change this process last read of the table
        (the declared layout before any read), with no request.
        """
        attr = sharding_of(type(self)).spec.table_key()
        if attr is None:
            return None
        if self._physical_key is None and attr.layout.deterministic:
            return codec.stored_key(self, io=False)  # asks the table nothing
        return self._physical_key

    # -- the codec: PynamoDB's hooks ------------------------------------------------------

    def serialize(self, null_check: bool = True) -> dict[str, dict[str, Any]]:
        """Serialize with the physical partition key (choosing the shard on first write)."""
        return codec.serialize_keys(self, super().serialize(null_check=null_check))

    @classmethod
    def _instantiate(cls: type[_M], attribute_values: _RawItem) -> _M:
        """PynamoDB's instance from stored values, built without its double work."""
        plan = _build_plan(cls)
        if plan is None:  # a discriminator: PynamoDB's own path
            return super()._instantiate(attribute_values)
        return instantiate(cls, plan, attribute_values)

    @classmethod
    def from_raw_data(cls: type[_M], data: _RawItem) -> _M:
        """Build an instance from a stored item: logical key shown, physical key kept."""
        load = cls.__dict__.get("_shardmodel_load")
        if load is None:
            load = _loader(cls)
            cls._shardmodel_load = load  # type: ignore[attr-defined]
        return load(data)  # type: ignore[no-any-return]

    def deserialize(self, attribute_values: _RawItem) -> None:
        codec.deserialize(self, attribute_values, super().deserialize)

    def _get_hash_range_key_serialized_values(self) -> tuple[Any, Any | None]:
        hash_value, range_value = super()._get_hash_range_key_serialized_values()
        return codec.stored_keys(self, hash_value, range_value)

    def _get_serialized_keys(self) -> tuple[Any, Any]:
        hash_value, range_value = super()._get_serialized_keys()
        return codec.stored_keys(self, hash_value, range_value)

    # -- reads ----------------------------------------------------------------------------

    @classmethod
    @telemetry.traced("get")
    def get(
        cls: type[_M],
        hash_key: Any,
        range_key: Any = None,
        consistent_read: bool = False,
        attributes_to_get: Sequence[str] | None = None,
        *,
        shard_by: Mapping[str, Any] | None = None,
    ) -> _M:
        """Get one item by logical key, reading every candidate shard in one BatchGetItem.

        ``shard_by``: the item's values of attributes its shard is computed from beyond
        the key (``HashShards(n, on=["event_id"])``: ``shard_by={"event_id": ...}``);
        the get then reads exactly that shard. A wrong value reads another shard, where
        the item is not.
        """
        if sharding_of(cls).spec.table_key() is None:
            if shard_by is not None:
                raise ShardKeyError(
                    f"{cls.__name__}.get(shard_by=...): the table's partition key is not "
                    "sharded, so there is no shard to choose; leave shard_by out"
                )
            return super().get(hash_key, range_key, consistent_read, attributes_to_get)
        return reads.get(
            cls, hash_key, range_key, consistent_read, attributes_to_get, super().get, shard_by
        )

    @classmethod
    @telemetry.traced("batch_get", stream=True)
    def batch_get(
        cls: type[_M],
        items: Iterable[Any],
        consistent_read: bool | None = None,
        attributes_to_get: Sequence[str] | None = None,
    ) -> Iterator[_M]:
        """Get many items by logical key; each key's candidate shards are read together.

        A key may end with a ``shard_by`` mapping (see :meth:`get`):
        ``(hash_key, range_key, {"event_id": ...})`` reads that key's one shard.
        """
        if sharding_of(cls).spec.table_key() is None:
            return super().batch_get(items, consistent_read, attributes_to_get)
        return reads.batch_get(cls, items, consistent_read, attributes_to_get)

    @telemetry.traced("refresh")
    def refresh(self, consistent_read: bool = False) -> None:
        """Reload this item; an instance of unknown shard is looked up on every candidate."""
        if sharding_of(type(self)).spec.table_key() is None:
            super().refresh(consistent_read)
            return
        reads.refresh(self, consistent_read, super().refresh)

    @classmethod
    def get_operation_kwargs_from_class(
        cls,
        hash_key: str,
        range_key: Any = None,
        condition: Condition | None = None,
    ) -> dict[str, Any]:
        """Request arguments for TransactGet/condition checks: the key must name one shard."""
        if sharding_of(cls).spec.table_key() is not None:
            hash_key = reads.transaction_key(cls, hash_key, range_key)
        result: dict[str, Any] = super().get_operation_kwargs_from_class(
            hash_key, range_key, condition
        )
        return result

    @classmethod
    @telemetry.traced("query", stream=True)
    def query(  # type: ignore[override]
        cls: type[_M],
        hash_key: Any,
        range_key_condition: Condition | None = None,
        filter_condition: Condition | None = None,
        consistent_read: bool = False,
        index_name: str | None = None,
        scan_index_forward: bool | None = None,
        limit: int | None = None,
        last_evaluated_key: Any = None,
        attributes_to_get: Sequence[str] | None = None,
        page_size: int | None = None,
        rate_limit: float | None = None,
        *,
        parallelism: int | None = None,
        time_range: TimeBounds | None = None,
        max_requests: int | None = None,
    ) -> Iterator[_M]:
        """Query one logical key across its shards as one ordered, resumable stream.

        Keeps PynamoDB's signature. ``limit`` applies to the merged order, exactly.
        ``last_evaluated_key`` of the returned iterator is an opaque cursor string; pass
        it back to resume. ``parallelism`` caps the threads reading shards at once
        (default and maximum: ``Meta.max_pool_connections``). ``time_range=(start, end)``
        bounds the buckets of a ``TimeBuckets`` key whose time is not the sort key.
        ``max_requests`` bounds the partitions (buckets x shards) read (default
        ``Meta.max_requests``, else 1,000); a query over more raises before sending.
        """
        return queries.query(
            cls,
            hash_key,
            range_key_condition,
            filter_condition,
            consistent_read,
            index_name,
            scan_index_forward,
            limit,
            last_evaluated_key,
            attributes_to_get,
            page_size,
            rate_limit,
            parallelism=parallelism,
            time_range=time_range,
            max_requests=max_requests,
            plain=super().query,
        )

    @classmethod
    @telemetry.traced("count")
    def count(
        cls,
        hash_key: Any = None,
        range_key_condition: Condition | None = None,
        filter_condition: Condition | None = None,
        consistent_read: bool = False,
        index_name: str | None = None,
        limit: int | None = None,
        rate_limit: float | None = None,
        *,
        parallelism: int | None = None,
        time_range: TimeBounds | None = None,
        max_requests: int | None = None,
    ) -> int:
        """Count one logical key's items, summed over its shards (or the table's, keyless)."""
        return counts.count(
            cls,
            hash_key,
            range_key_condition,
            filter_condition,
            consistent_read,
            index_name,
            limit,
            rate_limit,
            parallelism=parallelism,
            time_range=time_range,
            max_requests=max_requests,
            plain=super().count,
            query_model=cls.query,
        )

    @classmethod
    @telemetry.traced("scan", stream=True)
    def scan(  # type: ignore[override]
        cls: type[_M],
        filter_condition: Condition | None = None,
        segment: int | None = None,
        total_segments: int | None = None,
        limit: int | None = None,
        last_evaluated_key: dict[str, dict[str, Any]] | None = None,
        page_size: int | None = None,
        consistent_read: bool | None = None,
        index_name: str | None = None,
        rate_limit: float | None = None,
        attributes_to_get: Sequence[str] | None = None,
    ) -> Iterator[_M]:
        """Scan; on a counter model, each logical item once with its counters summed.

        A counter model's scan reads the shard items' keys, and for each logical item it
        finds reads every shard item of it (BatchGetItem, 100 keys a call).
        ``filter_condition`` is applied to the summed items on the client. Parallel
        segments together return each logical item once.

        A ``filter_condition`` that tests a sharded key (``Event.user_id == "u"``) is
        applied on the client too, to the logical keys (stored keys carry their shard:
        DynamoDB would compare ``"u#7"``), so it matches what it matches on an unsharded
        table; the scan then reads (and is charged for) every item, as any scan is.
        """
        return migrating_scans.scan(
            cls,
            filter_condition,
            segment,
            total_segments,
            limit,
            last_evaluated_key,
            page_size,
            consistent_read,
            index_name,
            rate_limit,
            attributes_to_get,
            super().scan,
        )

    # -- writes ---------------------------------------------------------------------------

    @telemetry.traced("save")
    def save(
        self, condition: Condition | None = None, *, add_version_condition: bool = True
    ) -> dict[str, Any]:
        """Save the item; on a counter model, update its other attributes on the home shard."""
        return writes.save(self, condition, add_version_condition, super().save)

    @telemetry.traced("update")
    def update(
        self,
        actions: list[Action],
        condition: Condition | None = None,
        *,
        add_version_condition: bool = True,
    ) -> Any:
        """Update the item at its stored key (and, during a migration, its other copy)."""
        return writes.update(self, actions, condition, add_version_condition, super().update)

    @telemetry.traced("delete")
    def delete(
        self,
        condition: Condition | None = None,
        *,
        add_version_condition: bool = True,
        shard_by: Mapping[str, Any] | None = None,
    ) -> Any:
        """Delete the item (a counter item: every shard item of it).

        ``shard_by``: values of attributes the item's shard is computed from that this
        instance lacks (one built by hand from its key), as for :meth:`get`; the same as
        setting them on the instance first, which is left unchanged.
        """
        item = self if shard_by is None else codec.hinted(self, shard_by)
        return writes.delete(
            item, condition, add_version_condition, super(ShardedModel, item).delete
        )

    def _get_save_args(
        self, condition: Condition | None = None, *, add_version_condition: bool = True
    ) -> tuple[Iterable[Any], dict[str, Any]]:
        args, kwargs = super()._get_save_args(
            condition=condition, add_version_condition=add_version_condition
        )
        if self._physical_key is not None:
            kwargs["condition"] = codec.physical_condition(
                self, kwargs.get("condition"), self._physical_key
            )
        return args, kwargs

    def get_save_kwargs_from_instance(
        self,
        condition: Condition | None = None,
        return_values_on_condition_failure: str | None = None,
    ) -> dict[str, Any]:
        if sharding_of(type(self)).spec.counters:
            raise UnsupportedOperationError(
                f"{type(self).__name__} has counters: a transactional PutItem would overwrite "
                "a shard's share of them; use add() outside the transaction"
            )
        writes.refuse_in_migration(self)
        result: dict[str, Any] = super().get_save_kwargs_from_instance(
            condition, return_values_on_condition_failure
        )
        return result

    def get_update_kwargs_from_instance(
        self,
        actions: list[Action],
        condition: Condition | None = None,
        return_values_on_condition_failure: str | None = None,
        *,
        add_version_condition: bool = True,
    ) -> dict[str, Any]:
        codec.check_actions(self, actions)
        writes.refuse_in_migration(self)
        condition = codec.key_condition(self, condition)
        result: dict[str, Any] = super().get_update_kwargs_from_instance(
            actions,
            condition,
            return_values_on_condition_failure,
            add_version_condition=add_version_condition,
        )
        return result

    def get_delete_kwargs_from_instance(
        self,
        condition: Condition | None = None,
        return_values_on_condition_failure: str | None = None,
        *,
        add_version_condition: bool = True,
    ) -> dict[str, Any]:
        writes.refuse_in_migration(self)
        condition = codec.key_condition(self, condition)
        result: dict[str, Any] = super().get_delete_kwargs_from_instance(
            condition,
            return_values_on_condition_failure,
            add_version_condition=add_version_condition,
        )
        return result

    @classmethod
    def batch_write(cls: type[_M], auto_commit: bool = True) -> ShardedBatchWrite[_M]:
        """A batch writer that checks each item's physical key as it is added."""
        return ShardedBatchWrite(cls, auto_commit=auto_commit)

    # -- counters -------------------------------------------------------------------------

    @classmethod
    def add(
        cls, hash_key: Any, range_key: Any = None, *, token: str | None = None, **increments: Any
    ) -> None:
        """Add to counters of one logical item: one ``UpdateItem ADD`` on one shard.

        Args:
            hash_key: the logical key.
            range_key: the sort key, on models that have one.
            token: makes the increment idempotent: the same token counts once within
                the token window (``Meta.counter_tokens``, 10 to 20 minutes by default).
            **increments: counter name to amount (negative amounts decrement).

        Raises:
            IdempotentParameterMismatchError: ``token`` was used with other amounts
                within the window; nothing is applied.
        """
        counting.add(cls, hash_key, range_key, token, increments)

    @classmethod
    def rollup(cls: type[_M], hash_key: Any, range_key: Any = None) -> _M:
        """Read the exact totals and cache them on the home shard with the time read."""
        return counting.rollup(cls, hash_key, range_key)

    @classmethod
    def get_cached(cls: type[_M], hash_key: Any, range_key: Any = None, max_age: float = 60) -> _M:
        """Totals at most ``max_age`` seconds old, from one read of the home shard.

        When the cached totals are older (or absent), reads every shard and refreshes
        the cache (:meth:`rollup`). The counters shown include every increment made up
        to ``max_age`` seconds ago; later ones may be missing.
        """
        return counting.get_cached(cls, hash_key, range_key, max_age)
