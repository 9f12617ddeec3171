"""Writes of sharded items: save, update, delete, batches and transactions.

Each write takes one placement when it begins (``Sharding.operation``) and follows it to
its last request. During a layout change it writes the item's one owning copy: the old
key, on the condition that no move fenced it (else, and once the phase says so, the new
key, after fencing the old: :mod:`shardmodel.engine.moves`). An item is never written
under two keys, so a delete cannot leave a copy behind and no copy goes stale.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pynamodb.exceptions import DeleteError, PynamoDBException
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.operand import Path
from pynamodb.expressions.update import Action

from shardmodel.engine.codec import (
    check_actions,
    physical_condition,
    stored_key,
    write_key,
)
from shardmodel.engine.items import instance_key_values, sharded
from shardmodel.engine.moves import MOVE_ROUNDS, Mover
from shardmodel.engine.placement import Placement
from shardmodel.engine.sharding import sharding_of
from shardmodel.errors import UnsupportedOperationError
from shardmodel.expressions.filters import matches
from shardmodel.keyspace.phases import COPY_MARKER, DELETED, MOVE_MARKER, state_of
from shardmodel.retry import is_condition_failure

__all__ = [
    "batch_delete",
    "batch_save",
    "delete",
    "mover_of",
    "refuse_in_migration",
    "save",
    "update",
]

_T = TypeVar("_T")
#: A write of the item: PynamoDB's own save/update/delete with this condition; the flag
#: says the write replaces a delete's tombstone (an update then removes its marker).
_Write = Callable[[Condition | None, bool], Any]


def mover_of(model: type[Any]) -> Mover:
    """What moves ``model``'s items during a layout change (its table, its keys)."""
    client = sharding_of(model).executor.connection().connection.client
    range_attr = model._range_key_attribute()
    attr = sharded(model)
    attributes = model.get_attributes()
    keys = {attr.attr_name, range_attr.attr_name if range_attr is not None else ""}
    inputs = tuple(
        attributes[name].attr_name
        for name in attr.layout.attributes
        if attributes[name].attr_name not in keys
    )
    return Mover(
        client,
        model.Meta.table_name,
        attr.attr_name,
        range_attr.attr_name if range_attr is not None else None,
        inputs,
    )


def _range_value(item: Any) -> dict[str, Any] | None:
    """The item's sort key as DynamoDB stores it (None on a model without one)."""
    model = type(item)
    range_attr = model._range_key_attribute()
    if range_attr is None:
        return None
    return {range_attr.attr_type: range_attr.serialize(getattr(item, model._range_keyname))}


def _inputs(item: Any) -> dict[str, Any]:
    """The item's stored values of what its key is computed from (a tombstone keeps them)."""
    model = type(item)
    attributes = model.get_attributes()
    found: dict[str, Any] = {}
    for name in sharded(model).layout.attributes:
        attr = attributes[name]
        value = getattr(item, name, None)
        if value is not None and not attr.is_hash_key and not attr.is_range_key:
            found[attr.attr_name] = {attr.attr_type: attr.serialize(value)}
    return found


def _fence_old(item: Any, placement: Placement, new_key: str, redirected: bool = False) -> None:
    """Before writing ``item`` at ``new_key``: no old key may hold it any more.

    ``redirected``: an old-key write found the old copy fenced (a phase where processes
    still write old keys): its move is finished and the old keys fenced first.
    """
    migration = placement.migration
    assert migration is not None
    key = instance_key_values(item)
    if redirected:
        olds = migration.other_old_keys(key, new_key)
    else:
        olds = migration.fence_keys(key, new_key)
    if olds:
        mover_of(type(item)).fence_old(olds, _range_value(item), _inputs(item), new_key)


def _migrating(
    item: Any,
    placement: Placement,
    write: _Write,
    condition: Condition | None,
    tombstone: Callable[[Condition | None], Any] | None = None,
) -> Any:
    """Run ``write`` on the copy that owns the item in this phase (see the module).

    ``tombstone``: a delete, which at a new key leaves a tombstone while the phase says so.
    """
    migration = placement.migration
    assert migration is not None
    if placement.writes_new:
        _fence_old(item, placement, stored_key(item) if item._physical_key else write_key(item))
        if tombstone is not None and migration.rules.tombstones:
            return tombstone(condition)
        return _at_new_key(item, write, condition)
    if not placement.fenced:
        return write(condition, False)
    fence = Path(MOVE_MARKER).does_not_exist()
    try:
        return write(fence if condition is None else condition & fence, False)
    except PynamoDBException as error:
        if not is_condition_failure(error):
            raise
        old_key = item._physical_key
        mover = mover_of(type(item))
        if old_key is None or not mover.fenced(mover.key(old_key, _range_value(item))):
            raise  # the caller's own condition failed
    # a move fenced the old copy: the item now belongs at its new key
    new_key = migration.new_key(instance_key_values(item), old_key)
    item._pinned_key = item._physical_key = new_key
    try:
        _fence_old(item, placement, new_key, redirected=True)
        if tombstone is not None and migration.rules.tombstones:
            return tombstone(condition)
        return _at_new_key(item, write, condition)
    finally:
        item._pinned_key = None


def _at_new_key(item: Any, write: _Write, condition: Condition | None) -> Any:
    """Write the item at its new key, where a delete may have left a tombstone.

    A tombstone there means the item does not exist: the caller's condition is checked
    against no item (as DynamoDB would), then the write replaces the tombstone.
    """
    live = Path(MOVE_MARKER).does_not_exist()
    for _ in range(MOVE_ROUNDS):
        try:
            return write(live if condition is None else condition & live, False)
        except PynamoDBException as error:
            if not is_condition_failure(error):
                raise
            mover = mover_of(type(item))
            if state_of(mover.get(mover.key(stored_key(item), _range_value(item)))) != DELETED:
                raise  # the caller's own condition failed on the item
            if not matches(condition, {}):
                raise  # ... or fails on no item
            failure = error
        try:
            return write(Path(MOVE_MARKER) == DELETED, True)
        except PynamoDBException as error:
            if not is_condition_failure(error):
                raise
            failure = error  # the tombstone changed under us: look again
    raise failure


def _tombstone_delete(item: Any, condition: Condition | None, add_version_condition: bool) -> Any:
    """Delete the item at its new key by leaving a tombstone (see :data:`DELETED`).

    Until the sweep a move a phase behind may still copy the item to its new key; a
    copy lands only where nothing or a move's own copy is stored, so the tombstone keeps
    the deleted item deleted. The caller's condition (and the version condition) hold
    against the item as a delete's would; deleting a tombstone changes nothing.
    """
    mover = mover_of(type(item))
    hash_value, range_value = item._get_hash_range_key_serialized_values()
    version = item._handle_version_attribute()
    chosen = condition
    if add_version_condition and version is not None:
        chosen = version if chosen is None else chosen & version
    live = Path(MOVE_MARKER).does_not_exist()
    connection = item._get_connection()
    attributes = {**_inputs(item), MOVE_MARKER: {"S": DELETED}}
    try:
        connection.put_item(
            hash_value,
            range_key=range_value,
            attributes=attributes,
            condition=live if chosen is None else chosen & live,
        )
        return None
    except PynamoDBException as error:
        if not is_condition_failure(error):
            raise DeleteError("Failed to delete item", error.cause) from error
        row = mover.get(mover.key(str(hash_value), _range_value(item)))
        if state_of(row) == DELETED and matches(chosen, {}):
            return None  # already deleted, and the condition holds on no item
        raise DeleteError("Failed to delete item", error.cause) from error


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

        def put(chosen: Condition | None, revive: bool = False) -> dict[str, Any]:
            return plain(chosen, add_version_condition=add_version_condition)

        if engine.spec.table_key() is None:
            return put(condition)
        placement = engine.placement()
        if engine.directory is not None:
            attr = sharded(type(item))
            if not placement.belongs(item._physical_key, getattr(item, attr.attr_name)):
                return save_growing(item, lambda: put(condition))
        if placement.migration is None:
            return put(condition)
        result: dict[str, Any] = _migrating(item, placement, put, condition)
        return result


def update(
    item: Any,
    actions: list[Action],
    condition: Condition | None,
    add_version_condition: bool,
    plain: Callable[..., Any],
) -> Any:
    """Update the item at the key that holds it."""
    engine = sharding_of(type(item))
    with engine.operation():
        if isinstance(actions, list):
            check_actions(item, actions)

        def change(chosen: Condition | None, revive: bool = False) -> Any:
            # a copy each time: PynamoDB appends the version action to the list it gets,
            # and a write a fence redirects is sent again
            done = list(actions) if isinstance(actions, list) else actions
            if engine.spec.table_key() is not None and isinstance(actions, list):
                chosen = physical_condition(item, chosen, stored_key(item))
                # at a new key (the phase's, or the one a fence sent an old-key write to)
                if placement is not None and (placement.writes_new or item._pinned_key):
                    # the copy is the item's own now: a stalled move may not replace it
                    done = [*done, Path(COPY_MARKER).remove()]
                    if revive:  # over a delete's tombstone: the item exists again
                        done.append(Path(MOVE_MARKER).remove())
            return plain(done, chosen, add_version_condition=add_version_condition)

        placement = engine.placement() if engine.spec.table_key() is not None else None
        if placement is None or placement.migration is None:
            result = change(condition)
        else:
            stored_key(item)  # the key the update goes to, remembered for the fence check
            result = _migrating(item, placement, change, condition)
        if engine.spec.counters:
            item.refresh(consistent_read=True)  # the response holds one shard's counters
        return result


def delete(
    item: Any,
    condition: Condition | None,
    add_version_condition: bool,
    plain: Callable[..., Any],
) -> Any:
    """Delete the item at the key that holds it (a counter item: every shard item)."""
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

        def remove(chosen: Condition | None, revive: bool = False) -> Any:
            if engine.spec.table_key() is not None:
                chosen = physical_condition(item, chosen, stored_key(item))
            return plain(chosen, add_version_condition=add_version_condition)

        placement = engine.placement() if engine.spec.table_key() is not None else None
        if placement is None or placement.migration is None:
            return remove(condition)
        stored_key(item)
        return _migrating(
            item,
            placement,
            remove,
            condition,
            lambda chosen: _tombstone_delete(
                item, physical_condition(item, chosen, stored_key(item)), add_version_condition
            ),
        )


def refuse_in_migration(item: Any) -> None:
    """Transactions name one key; during a layout change the key that holds an item moves."""
    engine = sharding_of(type(item))
    if engine.spec.table_key() is None:
        return
    migration = engine.placement().migration
    if migration is not None:
        raise UnsupportedOperationError(
            f"{type(item).__name__}: a transaction writes one key, but during the layout "
            f"change (phase {migration.state.phase.value}) an item's key may move under it "
            "(a write there is conditional on the move); write outside the transaction, or "
            "wait until the migration is done"
        )


def batch_save(item: _T, add: Callable[[_T], None]) -> None:
    """Add a save to a batch (during a layout change: saved now, on its own).

    ``add`` is PynamoDB's ``BatchWrite.save``. A batch cannot carry the condition that
    keeps an item's old copy from being written once a move fenced it, so while a
    migration runs each item is saved as ``save()`` would.
    """
    model = type(item)
    engine = sharding_of(model)
    if engine.spec.counters:
        raise UnsupportedOperationError(
            f"{model.__name__} has counters: a batched PutItem would overwrite a shard's "
            "share of them; call save() (an update of the other attributes) or add()"
        )
    if engine.spec.table_key() is not None and engine.migration() is not None:
        item.save()  # type: ignore[attr-defined]
        return
    add(item)


def batch_delete(item: _T, add: Callable[[_T], None]) -> None:
    """Add a delete to a batch (during a layout change: deleted now, on its own)."""
    engine = sharding_of(type(item))
    if engine.spec.table_key() is not None and engine.migration() is not None:
        item.delete()  # type: ignore[attr-defined]
        return
    add(item)
