"""ShardedModel: a PynamoDB model whose partition key is sharded transparently.

Instances always show the logical key. The physical key is chosen when the item is
first serialized for a write, remembered on the instance (so a retried or repeated save
goes to the same shard), and read back from every item loaded from the table.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, TypeVar

from pynamodb.attributes import Attribute
from pynamodb.constants import NUMBER, STRING
from pynamodb.exceptions import PutError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.operand import Path
from pynamodb.expressions.update import Action
from pynamodb.indexes import GlobalSecondaryIndex
from pynamodb.models import BatchWrite, MetaModel

from shardmodel._resharding import Resharding
from shardmodel.attributes import ShardedKeyAttribute
from shardmodel.counters import CounterAttribute
from shardmodel.directory import ShardDirectory
from shardmodel.errors import (
    ShardConfigurationError,
    ShardModelError,
    UnsupportedOperationError,
)
from shardmodel.keys import KeyLayout
from shardmodel.migration.rules import holding, one_phase
from shardmodel.ordered import OrderedShards, check_sort_key
from shardmodel.retry import is_condition_failure
from shardmodel.strategies import DynamicShards, KeyValues, TimeBuckets

__all__ = ["ShardedBatchWrite", "ShardedModel", "ShardedModelMeta"]

_M = TypeVar("_M", bound="ShardedModel")
_RawItem = dict[str, dict[str, Any]]


class ShardedModelMeta(MetaModel):
    """Checks a model's sharding declaration when the class is defined."""

    def __init__(
        cls,
        name: str,
        bases: tuple[type, ...],
        namespace: dict[str, Any],
        discriminator: Any = None,
    ) -> None:
        meta = namespace.get("Meta")
        pool_chosen = meta is not None and "max_pool_connections" in vars(meta)
        super().__init__(name, bases, namespace, discriminator)
        _configure(cls)
        plan: tuple[tuple[str, KeyLayout, bool], ...] = getattr(cls, "_unshard_plan", ())
        if plan and not pool_chosen and hasattr(cls, "Meta"):
            # one connection per shard a query reads at once, so the fan-out never waits
            # for a socket ("Connection pool is full"); PynamoDB's default is 10
            widest = max(_fan_out(layout) for _, layout, _ in plan)
            current = int(getattr(cls.Meta, "max_pool_connections", 10) or 10)
            cls.Meta.max_pool_connections = max(current, min(widest, MAX_DEFAULT_POOL))


#: The largest connection pool a sharded model gets by default (set Meta to go beyond).
MAX_DEFAULT_POOL = 64


def _fan_out(layout: KeyLayout) -> int:
    """How many shards one query of a key reads at once (one time bucket's worth)."""
    count = 1
    for strategy in layout.strategies:
        if isinstance(strategy, DynamicShards):
            count *= strategy.max_shards
        elif not strategy.ordered:
            count *= len(strategy.query_candidates(KeyValues("x", {}, {}), {}))
    return count


def _configure(cls: Any) -> None:
    attributes: dict[str, Attribute[Any]] = cls.get_attributes()
    sharded = [a for a in attributes.values() if isinstance(a, ShardedKeyAttribute)]
    # kept in tuples: an Attribute stored bare on the class would act as a descriptor
    cls._shard_box = tuple(a for a in sharded if a.is_hash_key)
    cls._index_shard_box = tuple(a for a in sharded if not a.is_hash_key)
    gsi_keys = {
        attr.attr_name
        for index in cls._indexes.values()
        if isinstance(index, GlobalSecondaryIndex)
        for attr in index.Meta.attributes.values()
        if attr.is_hash_key
    }
    for attr in cls._index_shard_box:
        if attr.attr_name not in gsi_keys:
            raise ShardConfigurationError(
                f"{cls.__name__}.{attr.attr_name}: a ShardedKeyAttribute must be the table's "
                "partition key (hash_key=True) or the partition key of a global secondary "
                "index of the model; declare it hash_key=True, or add the index"
            )
    for attr in sharded:
        _check_layout(cls, attr, attributes)
    cls._unshard_plan = tuple((a.attr_name, a.layout, bool(a.is_hash_key)) for a in sharded)
    cls._shard_directory = _directory(cls, sharded)
    counters = tuple(n for n, a in attributes.items() if isinstance(a, CounterAttribute))
    cls._counter_names = counters
    if counters and not cls._shard_box:
        raise ShardConfigurationError(
            f"{cls.__name__}: CounterAttribute {counters[0]!r} needs a sharded partition key "
            "to spread over; declare it ShardedKeyAttribute(hash_key=True, "
            "strategy=RandomShards(n))"
        )
    if counters and cls._version_attribute_name is not None:
        raise ShardConfigurationError(
            f"{cls.__name__}: a counter model cannot have a VersionAttribute "
            f"({cls._version_attribute_name!r}): its item lives on several shards; drop one"
        )


def _directory(cls: Any, sharded: list[ShardedKeyAttribute]) -> ShardDirectory | None:
    """The metadata table access of a DynamicShards partition key (None without one)."""
    found: ShardDirectory | None = None
    for attr in sharded:
        dynamic = [s for s in attr.layout.strategies if isinstance(s, DynamicShards)]
        if not dynamic:
            continue
        if not attr.is_hash_key:
            raise ShardConfigurationError(
                f"{cls.__name__}.{attr.attr_name}: DynamicShards grows a key when the table's "
                "partition throttles, so it shards the table's partition key only; give this "
                "index key RandomShards(n) or HashShards(n, on=...)"
            )
        if len(dynamic) > 1:
            raise ShardConfigurationError(
                f"{cls.__name__}.{attr.attr_name}: one DynamicShards per key; remove the others"
            )
        if not hasattr(cls, "Meta") or not getattr(cls.Meta, "table_name", None):
            return None  # an abstract base: its subclasses get their own directory
        found = ShardDirectory(cls, attr.attr_name, dynamic[0])
    return found


def _check_layout(cls: Any, attr: ShardedKeyAttribute, attributes: dict[str, Any]) -> None:
    layout = attr.layout
    for strategy in layout.strategies:
        strategy.check(cls.__name__, attributes, layout.separator)
        for name in strategy.attributes:
            source = attributes[name]
            if source.attr_type not in (STRING, NUMBER):
                raise ShardConfigurationError(
                    f"{cls.__name__}: {type(strategy).__name__} reads {name!r}, a "
                    f"{type(source).__name__}; shard on a string or number attribute"
                )
            if isinstance(strategy, OrderedShards):
                check_sort_key(cls, attr, strategy)
            if isinstance(strategy, TimeBuckets) and source is attr:
                raise ShardConfigurationError(
                    f"{cls.__name__}: TimeBuckets(on={name!r}) names the partition key itself; "
                    "name the time attribute, e.g. the sort key"
                )


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
        if put_item._counter_names:
            raise UnsupportedOperationError(
                f"{type(put_item).__name__} has counters: a batched PutItem would overwrite "
                "a shard's share of them; call save() (an update of the other attributes) "
                "or add()"
            )
        with holding(put_item):
            if put_item._shard_attribute() is not None:
                primary = put_item._write_key()
                migration = put_item._migration()
                if migration is not None and migration.random_shrink:
                    raise UnsupportedOperationError(
                        f"{type(put_item).__name__}: while RandomShards shrinks a save may "
                        "reach a retired shard only if the item's original is there, a "
                        "condition a batch cannot carry; call save() until the migration is "
                        "done"
                    )
                if migration is not None:  # the commit may come a phase later: keep this one
                    put_item = put_item._pinned(primary)
            super().save(put_item)
            for pinned in put_item._migration_copies(delete=False):
                super().save(pinned)

    def delete(self, del_item: _M) -> None:
        with holding(del_item):
            if del_item._shard_attribute() is not None:
                primary = del_item._stored_key()
                if del_item._migration() is not None:  # as in save: keep this phase's keys
                    del_item = del_item._pinned(primary)
            super().delete(del_item)
            for pinned in del_item._migration_copies(delete=True):
                super().delete(pinned)


class ShardedModel(Resharding, metaclass=ShardedModelMeta):
    """A PynamoDB ``Model`` whose ``ShardedKeyAttribute`` partition key is sharded.

    Declare the model as usual; mark the partition key with
    ``ShardedKeyAttribute(hash_key=True, strategy=...)``. Optional ``Meta`` settings:

    * ``shard_backoff``: a :class:`~shardmodel.retry.Backoff` for resending a batch
      call's unprocessed keys and items, and a dynamic key's throttled new writes.
    """

    # -- writes -----------------------------------------------------------------------

    @one_phase
    def save(
        self, condition: Condition | None = None, *, add_version_condition: bool = True
    ) -> dict[str, Any]:
        """Save the item; on a counter model, update its other attributes on the home shard."""
        if self._counter_names:
            return self._save_other_attributes(condition)

        def put() -> dict[str, Any]:
            result: dict[str, Any] = super(ShardedModel, self).save(
                condition, add_version_condition=add_version_condition
            )
            return result

        if self._shard_directory is not None and self._new_on_shard():
            return self._save_growing(put)
        result = put()
        self._write_copies(delete=False)
        return result

    def _migration_copies(self: _M, delete: bool) -> list[_M]:
        """During a shard count change: this item pinned to each other key it goes to."""
        migration = self._migration() if self._shard_attribute() is not None else None
        if migration is None:
            return []
        primary = self._stored_key() if delete else self._write_key()
        key = self._instance_key_values()
        others = (migration.delete_keys if delete else migration.mirror_keys)(key, primary)
        return [self._pinned(other) for other in others]

    def _pinned(self: _M, physical: str) -> _M:
        """This item (its values shared) written or deleted at ``physical`` whatever the phase."""
        pinned = copy.copy(self)
        pinned._pinned_key = physical
        return pinned

    def _refuse_in_migration(self) -> None:
        """Transactions name one key; during a shard count change an item may have two."""
        migration = self._migration() if self._shard_attribute() is not None else None
        if migration is not None:
            raise UnsupportedOperationError(
                f"{type(self).__name__}: a transaction writes one key, but during the shard "
                f"count change (phase {migration.state.phase.value}) an item may have two "
                "copies to keep equal; write outside the transaction, or wait until the "
                "migration is done"
            )

    def _write_copies(self, delete: bool) -> None:
        """Put (or delete) the item's other copies after the primary write succeeded."""
        copies = self._migration_copies(delete)
        if not copies:
            return
        hash_name = self._sharded().attr_name
        range_attr = self._range_key_attribute()
        migration = None if delete else self._migration()
        primary = self._write_key() if migration is not None else ""
        for pinned in copies:
            attributes = pinned.serialize()  # as stored: the version already counted
            hash_key = attributes.pop(hash_name)[STRING]
            range_key = None
            if range_attr is not None:
                range_key = attributes.pop(range_attr.attr_name)[range_attr.attr_type]
            connection = pinned._get_connection()
            if delete:
                connection.delete_item(hash_key, range_key=range_key)
                continue
            if migration is not None and migration.only_if_stored(primary, hash_key):
                # a retired key that may hold this item's original (RandomShards shrink)
                stored = Path([hash_name]).exists()
                try:
                    connection.put_item(
                        hash_key, range_key=range_key, attributes=attributes, condition=stored
                    )
                except PutError as error:
                    if not is_condition_failure(error):
                        raise
                continue
            connection.put_item(hash_key, range_key=range_key, attributes=attributes)

    def _new_on_shard(self) -> bool:
        """True when this save picks a shard (no stored item of this key is known)."""
        return not self._belongs(
            self._sharded(), self._physical_key, getattr(self, self._sharded().attr_name)
        )

    def get_save_kwargs_from_instance(
        self,
        condition: Condition | None = None,
        return_values_on_condition_failure: str | None = None,
    ) -> dict[str, Any]:
        if self._counter_names:
            raise UnsupportedOperationError(
                f"{type(self).__name__} has counters: a transactional PutItem would overwrite "
                "a shard's share of them; use add() outside the transaction"
            )
        self._refuse_in_migration()
        result: dict[str, Any] = super().get_save_kwargs_from_instance(
            condition, return_values_on_condition_failure
        )
        return result

    def _get_save_args(
        self, condition: Condition | None = None, *, add_version_condition: bool = True
    ) -> tuple[Iterable[Any], dict[str, Any]]:
        args, kwargs = super()._get_save_args(
            condition=condition, add_version_condition=add_version_condition
        )
        if self._physical_key is not None:
            kwargs["condition"] = self._physical_condition(
                kwargs.get("condition"), self._physical_key
            )
        return args, kwargs

    @one_phase
    def update(
        self,
        actions: list[Action],
        condition: Condition | None = None,
        *,
        add_version_condition: bool = True,
    ) -> Any:
        if isinstance(actions, list):
            self._check_actions(actions)
        if self._shard_attribute() is not None and isinstance(actions, list):
            condition = self._physical_condition(condition, self._stored_key())
        result = super().update(actions, condition, add_version_condition=add_version_condition)
        self._write_copies(delete=False)  # the updated item, whole, to its other keys
        if self._counter_names:
            self.refresh(consistent_read=True)  # the response holds one shard's counters only
        return result

    @one_phase
    def delete(
        self, condition: Condition | None = None, *, add_version_condition: bool = True
    ) -> Any:
        if self._counter_names:
            if condition is not None:
                raise UnsupportedOperationError(
                    f"{type(self).__name__}.delete(condition=...): a counter item spans "
                    "several shard items, which one condition cannot guard; delete without it"
                )
            self._delete_all_shards()
            return None
        if self._shard_attribute() is not None:
            condition = self._physical_condition(condition, self._stored_key())
        migration = self._migration() if self._shard_attribute() is not None else None
        old_first = migration is not None and migration.rules.old_first
        if old_first:  # the stale copy goes first (see PhaseRules.old_first)
            self._write_copies(delete=True)
        result = super().delete(condition, add_version_condition=add_version_condition)
        if not old_first:
            self._write_copies(delete=True)
        return result

    def get_update_kwargs_from_instance(
        self,
        actions: list[Action],
        condition: Condition | None = None,
        return_values_on_condition_failure: str | None = None,
        *,
        add_version_condition: bool = True,
    ) -> dict[str, Any]:
        self._check_actions(actions)
        self._refuse_in_migration()
        if self._shard_attribute() is not None:
            condition = self._physical_condition(condition, self._stored_key())
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
        self._refuse_in_migration()
        if self._shard_attribute() is not None:
            condition = self._physical_condition(condition, self._stored_key())
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
