"""Writes of sharded items: save, update, delete, their copies, batches and transactions.

Each write takes one placement when it begins (``Sharding.operation``) and follows it to
its last request: the primary key, then the other keys a shard count change needs
(:meth:`~shardmodel.engine.placement.Placement.copies`), in the order the phase names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pynamodb.constants import STRING
from pynamodb.exceptions import PutError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.operand import Path
from pynamodb.expressions.update import Action

from shardmodel.engine.codec import (
    check_actions,
    physical_condition,
    pinned,
    stored_key,
    write_key,
)
from shardmodel.engine.items import instance_key_values, sharded
from shardmodel.engine.sharding import sharding_of
from shardmodel.errors import UnsupportedOperationError
from shardmodel.retry import is_condition_failure

__all__ = [
    "batch_delete",
    "batch_save",
    "delete",
    "refuse_in_migration",
    "save",
    "update",
    "write_copies",
]

_T = TypeVar("_T")


def save(
    item: Any,
    condition: Condition | None,
    add_version_condition: bool,
    plain: Callable[..., dict[str, Any]],
) -> dict[str, Any]:
    """Save the item; on a counter model, update its other attributes on the home shard.

    ``plain`` is PynamoDB's own ``save``.
    """
    from shardmodel.engine.counting import save_other_attributes
    from shardmodel.engine.growth import save_growing

    engine = sharding_of(type(item))
    with engine.operation():
        if engine.spec.counters:
            return save_other_attributes(item, condition)

        def put() -> dict[str, Any]:
            return plain(condition, add_version_condition=add_version_condition)

        if engine.directory is not None:
            attr = sharded(type(item))
            if not engine.placement().belongs(item._physical_key, getattr(item, attr.attr_name)):
                return save_growing(item, put)
        result = put()
        write_copies(item, delete=False)
        return result


def write_copies(item: Any, delete: bool) -> None:
    """Put (or delete) the item's other copies after the primary write succeeded."""
    model = type(item)
    engine = sharding_of(model)
    if engine.spec.table_key() is None:
        return
    placement = engine.placement()
    if placement.migration is None:
        return
    primary = stored_key(item) if delete else write_key(item)
    copies = placement.copies(instance_key_values(item), primary, delete)
    hash_name = sharded(model).attr_name
    range_attr = model._range_key_attribute()
    connection = engine.executor.connection()
    for copy in copies:
        attributes = pinned(item, copy.key).serialize()  # as stored: the version counted
        hash_key = attributes.pop(hash_name)[STRING]
        range_key = None
        if range_attr is not None:
            range_key = attributes.pop(range_attr.attr_name)[range_attr.attr_type]
        if delete:
            connection.delete_item(hash_key, range_key=range_key)
            continue
        if copy.only_if_stored:
            # a retired key that may hold this item's original (RandomShards shrink)
            try:
                connection.put_item(
                    hash_key,
                    range_key=range_key,
                    attributes=attributes,
                    condition=Path([hash_name]).exists(),
                )
            except PutError as error:
                if not is_condition_failure(error):
                    raise
            continue
        connection.put_item(hash_key, range_key=range_key, attributes=attributes)


def update(
    item: Any,
    actions: list[Action],
    condition: Condition | None,
    add_version_condition: bool,
    plain: Callable[..., Any],
) -> Any:
    """Update the item at its stored key, then its other copies (whole)."""
    engine = sharding_of(type(item))
    with engine.operation():
        if isinstance(actions, list):
            check_actions(item, actions)
            if engine.spec.table_key() is not None:
                condition = physical_condition(item, condition, stored_key(item))
        result = plain(actions, condition, add_version_condition=add_version_condition)
        write_copies(item, delete=False)  # the updated item, whole, to its other keys
        if engine.spec.counters:
            item.refresh(consistent_read=True)  # the response holds one shard's counters
        return result


def delete(
    item: Any,
    condition: Condition | None,
    add_version_condition: bool,
    plain: Callable[..., Any],
) -> Any:
    """Delete the item at its stored key and its other copies, in the phase's order."""
    from shardmodel.engine.counting import delete_all_shards

    engine = sharding_of(type(item))
    with engine.operation():
        if engine.spec.counters:
            if condition is not None:
                raise UnsupportedOperationError(
                    f"{type(item).__name__}.delete(condition=...): a counter item spans "
                    "several shard items, which one condition cannot guard; delete without it"
                )
            delete_all_shards(item)
            return None
        old_first = False
        if engine.spec.table_key() is not None:
            condition = physical_condition(item, condition, stored_key(item))
            old_first = engine.placement().old_first
        if old_first:  # the stale copy goes first (see PhaseRules.old_first)
            write_copies(item, delete=True)
        result = plain(condition, add_version_condition=add_version_condition)
        if not old_first:
            write_copies(item, delete=True)
        return result


def refuse_in_migration(item: Any) -> None:
    """Transactions name one key; during a shard count change an item may have two."""
    engine = sharding_of(type(item))
    if engine.spec.table_key() is None:
        return
    migration = engine.placement().migration
    if migration is not None:
        raise UnsupportedOperationError(
            f"{type(item).__name__}: a transaction writes one key, but during the shard "
            f"count change (phase {migration.state.phase.value}) an item may have two "
            "copies to keep equal; write outside the transaction, or wait until the "
            "migration is done"
        )


def batch_save(item: _T, add: Callable[[_T], None]) -> None:
    """Add a save to a batch: the item pinned to this phase's keys, and its copies.

    ``add`` is PynamoDB's ``BatchWrite.save``. The batch may commit a phase later, so
    each key it writes is worked out now.
    """
    model = type(item)
    engine = sharding_of(model)
    if engine.spec.counters:
        raise UnsupportedOperationError(
            f"{model.__name__} has counters: a batched PutItem would overwrite a shard's "
            "share of them; call save() (an update of the other attributes) or add()"
        )
    with engine.operation():
        if engine.spec.table_key() is None:
            add(item)
            return
        primary = write_key(item)
        placement = engine.placement()
        if placement.random_shrink:
            raise UnsupportedOperationError(
                f"{model.__name__}: while RandomShards shrinks a save may reach a retired "
                "shard only if the item's original is there, a condition a batch cannot "
                "carry; call save() until the migration is done"
            )
        if placement.migration is not None:  # the commit may come a phase later
            item = pinned(item, primary)
        add(item)
        for copy in placement.copies(instance_key_values(item), primary, delete=False):
            add(pinned(item, copy.key))


def batch_delete(item: _T, add: Callable[[_T], None]) -> None:
    """Add a delete to a batch: the item pinned to this phase's keys, and its copies."""
    engine = sharding_of(type(item))
    with engine.operation():
        if engine.spec.table_key() is None:
            add(item)
            return
        primary = stored_key(item)
        placement = engine.placement()
        if placement.migration is not None:  # as in save: keep this phase's keys
            item = pinned(item, primary)
        add(item)
        for copy in placement.copies(instance_key_values(item), primary, delete=True):
            add(pinned(item, copy.key))
