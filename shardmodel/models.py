"""ShardedModel: a PynamoDB model whose partition key is sharded transparently.

Instances always show the logical key. The physical key is chosen when the item is
first serialized for a write, remembered on the instance (so a retried or repeated save
goes to the same shard), and read back from every item loaded from the table.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar, TypeVar

from pynamodb.attributes import Attribute
from pynamodb.constants import NUMBER, STRING
from pynamodb.expressions.condition import Comparison, Condition, In
from pynamodb.expressions.operand import Path, Value
from pynamodb.expressions.update import Action
from pynamodb.indexes import GlobalSecondaryIndex
from pynamodb.models import BatchWrite, MetaModel, Model

from shardmodel._conditions import bounds_of
from shardmodel.attributes import ShardedKeyAttribute
from shardmodel.cursor import Cursor, decode_cursor, encode_cursor
from shardmodel.errors import (
    CursorError,
    DuplicateItemError,
    ShardConfigurationError,
    ShardKeyError,
    ShardModelError,
    UnknownShardError,
    UnsupportedOperationError,
)
from shardmodel.keys import KeyLayout, PhysicalKey
from shardmodel.query import MergedQuery, QueryIdentity, count_shards, dynamodb_sort_key
from shardmodel.retry import Backoff
from shardmodel.strategies import KeyValues, TimeBounds, TimeBuckets

__all__ = ["ShardedModel", "ShardedModelMeta"]

_M = TypeVar("_M", bound="ShardedModel")

#: BatchGetItem's limit on keys per call.
BATCH_GET_KEYS = 100

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
        if not strategy.ordered:
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
        if put_item._shard_attribute() is not None:
            put_item._write_key()
        super().save(put_item)

    def delete(self, del_item: _M) -> None:
        if del_item._shard_attribute() is not None:
            del_item._stored_key()
        super().delete(del_item)


class ShardedModel(Model, metaclass=ShardedModelMeta):
    """A PynamoDB ``Model`` whose ``ShardedKeyAttribute`` partition key is sharded.

    Declare the model as usual; mark the partition key with
    ``ShardedKeyAttribute(hash_key=True, strategy=...)``. Optional ``Meta`` settings:

    * ``shard_backoff``: a :class:`~shardmodel.retry.Backoff` for resending a batch
      call's unprocessed keys and items.
    """

    _shard_box: ClassVar[tuple[ShardedKeyAttribute, ...]] = ()
    _index_shard_box: ClassVar[tuple[ShardedKeyAttribute, ...]] = ()
    # (attribute name, layout, is the table's partition key) of every sharded attribute
    _unshard_plan: ClassVar[tuple[tuple[str, KeyLayout, bool], ...]] = ()
    # per instance, set when known: the physical partition key and sharded index keys
    _physical_key: str | None = None
    _index_keys: dict[str, str] | None = None

    # -- the key layout -------------------------------------------------------------

    @classmethod
    def _shard_attribute(cls) -> ShardedKeyAttribute | None:
        """The sharded partition key attribute, or None on a model without one."""
        return cls._shard_box[0] if cls._shard_box else None

    @classmethod
    def _sharded(cls) -> ShardedKeyAttribute:
        attr = cls._shard_attribute()
        if attr is None:  # pragma: no cover - guarded by callers
            raise ShardConfigurationError(f"{cls.__name__} has no ShardedKeyAttribute")
        return attr

    @classmethod
    def _backoff(cls) -> Backoff:
        backoff = getattr(cls.Meta, "shard_backoff", None)
        return backoff if isinstance(backoff, Backoff) else Backoff()

    @classmethod
    def _check_logical(cls, value: Any, attr: ShardedKeyAttribute | None = None) -> str:
        attr = attr or cls._sharded()
        field = f"{cls.__name__}.{attr.attr_name}"
        if not isinstance(value, str):
            raise ShardKeyError(
                f"{field}: a sharded key must be a str, got {type(value).__name__} {value!r}; "
                f"pass str({value!r})"
            )
        if not value:
            raise ShardKeyError(f"{field}: the key is empty; DynamoDB keys need a value")
        return value

    @classmethod
    def _key_values(
        cls, logical: str, values: dict[str, Any], attr: ShardedKeyAttribute | None = None
    ) -> KeyValues:
        """Build what the strategies see from python values by attribute name."""
        attributes = cls.get_attributes()
        attr = attr or cls._sharded()
        canonical: dict[str, str] = {}
        known: dict[str, Any] = {}
        for name in attr.layout.attributes:
            source = attributes[name]
            if source is attr:
                known[name], canonical[name] = logical, logical
                continue
            value = values.get(name)
            if value is None:
                continue
            known[name] = value
            canonical[name] = str(source.serialize(value))
        return KeyValues(logical_key=logical, values=known, canonical=canonical)

    def _instance_key_values(self) -> KeyValues:
        attr = self._sharded()
        logical = self._check_logical(getattr(self, attr.attr_name))
        names = self._sharded().layout.attributes
        return self._key_values(logical, {n: getattr(self, n, None) for n in names})

    @classmethod
    def _candidate_keys(cls, hash_key: Any, range_key: Any = None) -> list[str]:
        """Every physical key a read of (hash_key, range_key) must touch."""
        if isinstance(hash_key, PhysicalKey):
            cls._sharded().layout.split(hash_key)
            return [hash_key]
        logical = cls._check_logical(hash_key)
        values: dict[str, Any] = {}
        if cls._range_keyname is not None and range_key is not None:
            values[cls._range_keyname] = range_key
        return cls._sharded().layout.candidates(cls._key_values(logical, values))

    def _write_key(self) -> str:
        """The physical key this instance is written under; chosen once, then kept."""
        attr = self._sharded()
        key = self._instance_key_values()
        existing = self._physical_key
        if existing is not None and attr.layout.logical_key(existing) == key.logical_key:
            physical = attr.layout.repick(key, existing, attr.rng)
        else:
            physical = attr.layout.pick(key, attr.rng)
        self._physical_key = physical
        return physical

    def _stored_key(self) -> str:
        """The physical key of this stored item, for update, delete and refresh."""
        attr = self._sharded()
        key = self._instance_key_values()
        existing = self._physical_key
        if existing is not None and attr.layout.logical_key(existing) == key.logical_key:
            return existing
        if attr.layout.deterministic:
            self._physical_key = attr.layout.pick(key, attr.rng)
            return self._physical_key
        raise UnknownShardError(
            f"{type(self).__name__}({attr.attr_name}={key.logical_key!r}) has no known shard: "
            "its strategy is random and this instance was neither loaded nor saved; load it "
            f"with {type(self).__name__}.get(...) first, or shard with HashShards(on=[...]) "
            "so the shard follows from the item"
        )

    def get_physical_key(self) -> str | None:
        """The item's physical partition key, or None while its shard is not yet chosen."""
        if self._shard_attribute() is None:
            return None
        if self._physical_key is None and self._sharded().layout.deterministic:
            return self._stored_key()
        return self._physical_key

    # -- (de)serialization ----------------------------------------------------------

    def serialize(self, null_check: bool = True) -> dict[str, dict[str, Any]]:
        """Serialize with the physical partition key (choosing the shard on first write)."""
        data: dict[str, dict[str, Any]] = super().serialize(null_check=null_check)
        if self._shard_attribute() is not None:
            data[self._sharded().attr_name] = {STRING: self._write_key()}
        for attr in self._index_shard_box:
            physical = self._write_index_key(attr)
            if physical is not None:
                data[attr.attr_name] = {STRING: physical}
        return data

    def _write_index_key(self, attr: ShardedKeyAttribute) -> str | None:
        """The physical value of a sharded index key (None: the item is not in the index)."""
        name = self._python_name(attr)
        logical = getattr(self, name) if name is not None else None
        if logical is None:
            return None
        logical = self._check_logical(logical, attr)
        names = attr.layout.attributes
        key = self._key_values(logical, {n: getattr(self, n, None) for n in names}, attr)
        if self._index_keys is None:
            self._index_keys = {}
        existing = self._index_keys.get(attr.attr_name)
        if existing is not None and attr.layout.logical_key(existing) == logical:
            physical = attr.layout.repick(key, existing, attr.rng)
        else:
            physical = attr.layout.pick(key, attr.rng)
        self._index_keys[attr.attr_name] = physical
        return physical

    @classmethod
    def _logical_raw(cls, data: _RawItem) -> tuple[_RawItem, str | None, dict[str, str] | None]:
        """The item with logical keys, its physical key and its sharded index keys."""
        physical = None
        index_keys: dict[str, str] | None = None
        logical_data = dict(data)  # botocore's item stays as stored (cursors read it)
        for name, layout, is_table_key in cls._unshard_plan:
            stored = data.get(name)
            value = stored.get(STRING) if stored is not None else None
            if value is None:
                continue
            logical_data[name] = {STRING: layout.logical_key(value)}
            if is_table_key:
                physical = value
            else:
                index_keys = index_keys or {}
                index_keys[name] = value
        return logical_data, physical, index_keys

    @classmethod
    def from_raw_data(cls: type[_M], data: _RawItem) -> _M:
        """Build an instance from a stored item: logical key shown, physical key kept."""
        if data is None:
            raise ValueError("Received no data to construct object")
        if not cls._unshard_plan:
            plain: _M = super().from_raw_data(data)
            return plain
        logical_data, physical, index_keys = cls._logical_raw(data)
        instance: _M = cls._instantiate(logical_data)
        if physical is not None:
            instance._physical_key = physical
        if index_keys:
            instance._index_keys = index_keys
        return instance

    def deserialize(self, attribute_values: _RawItem) -> None:
        logical_data, physical, index_keys = self._logical_raw(attribute_values)
        super().deserialize(logical_data)
        if physical is not None:
            self._physical_key = physical
        if index_keys:
            self._index_keys = {**(self._index_keys or {}), **index_keys}

    # -- keys PynamoDB sends for existing items ---------------------------------------

    def _get_hash_range_key_serialized_values(self) -> tuple[Any, Any | None]:
        hash_value, range_value = super()._get_hash_range_key_serialized_values()
        if self._shard_attribute() is None:
            return hash_value, range_value
        return self._stored_key(), range_value

    def _get_serialized_keys(self) -> tuple[Any, Any]:
        hash_value, range_value = super()._get_serialized_keys()
        if self._shard_attribute() is None:
            return hash_value, range_value
        return self._stored_key(), range_value

    def _physical_condition(self, condition: Condition | None, physical: str) -> Condition | None:
        """Rewrite ``key == logical`` comparisons in a condition to the physical key."""
        attr = self._shard_attribute()
        if condition is None or attr is None:
            return condition
        logical = getattr(self, attr.attr_name)

        def rewrite(node: Any) -> Any:
            if not isinstance(node, Condition):
                return node
            values = list(node.values)
            is_key_test = (
                isinstance(node, Comparison | In)
                and node.operator in ("=", "<>", "IN")
                and isinstance(values[0], Path)
                and values[0].path == [attr.attr_name]
            )
            if is_key_test:
                values = [values[0]] + [
                    Value(physical, attribute=attr)
                    if isinstance(v, Value) and v.value == {STRING: logical}
                    else v
                    for v in values[1:]
                ]
            else:
                values = [rewrite(v) for v in values]
            clone = copy.copy(node)
            clone.values = tuple(values)
            return clone

        result: Condition = rewrite(condition)
        return result

    def _check_actions(self, actions: Sequence[Action]) -> None:
        attributes = self.get_attributes()
        guarded: dict[str, str] = {}
        for attr in (*self._shard_box, *self._index_shard_box):
            guarded.update({attributes[n].attr_name: n for n in attr.layout.attributes})
        for attr in self._index_shard_box:
            guarded[attr.attr_name] = self._python_name(attr) or attr.attr_name
        for action in actions:
            path = action.values[0]
            if isinstance(path, Path) and path.path and path.path[0] in guarded:
                name = guarded[path.path[0]]
                raise ShardKeyError(
                    f"{type(self).__name__}.{name}: the shard is computed from {name}, so "
                    "updating it in place would strand the item on the wrong shard; delete() "
                    "the item and save() it with the new value"
                )

    # -- writes -----------------------------------------------------------------------

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
        return super().update(actions, condition, add_version_condition=add_version_condition)

    def delete(
        self, condition: Condition | None = None, *, add_version_condition: bool = True
    ) -> Any:
        if self._shard_attribute() is not None:
            condition = self._physical_condition(condition, self._stored_key())
        return super().delete(condition, add_version_condition=add_version_condition)

    def get_update_kwargs_from_instance(
        self,
        actions: list[Action],
        condition: Condition | None = None,
        return_values_on_condition_failure: str | None = None,
        *,
        add_version_condition: bool = True,
    ) -> dict[str, Any]:
        self._check_actions(actions)
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
        if self._shard_attribute() is not None:
            condition = self._physical_condition(condition, self._stored_key())
        result: dict[str, Any] = super().get_delete_kwargs_from_instance(
            condition,
            return_values_on_condition_failure,
            add_version_condition=add_version_condition,
        )
        return result

    # -- point reads ------------------------------------------------------------------

    @classmethod
    def _with_keys(cls, attributes_to_get: Sequence[str] | None) -> list[str] | None:
        """A projection that still returns the key attributes (the physical key is needed)."""
        if attributes_to_get is None:
            return None
        names = list(attributes_to_get)
        for key_attr in (cls._hash_key_attribute(), cls._range_key_attribute()):
            if key_attr is not None and key_attr.attr_name not in names:
                names.append(key_attr.attr_name)
        return names

    @classmethod
    def batch_write(cls: type[_M], auto_commit: bool = True) -> ShardedBatchWrite[_M]:
        """A batch writer that checks each item's physical key as it is added."""
        return ShardedBatchWrite(cls, auto_commit=auto_commit)

    @classmethod
    def _fetch_raw(
        cls,
        keys: list[dict[str, Any]],
        consistent_read: bool | None,
        attributes_to_get: Sequence[str] | None,
    ) -> list[_RawItem]:
        """BatchGetItem over any number of keys, resending unprocessed keys with backoff."""
        found: list[_RawItem] = []
        for start in range(0, len(keys), BATCH_GET_KEYS):
            pending = keys[start : start + BATCH_GET_KEYS]
            waits = cls._backoff().waits()
            while pending:
                page, unprocessed = cls._batch_get_page(
                    pending, consistent_read=consistent_read, attributes_to_get=attributes_to_get
                )
                found.extend(page or [])
                pending = list(unprocessed or [])
                if pending and next(waits, None) is None:
                    raise UnsupportedOperationError(
                        f"{cls.__name__}: BatchGetItem left {len(pending)} keys unprocessed "
                        "after every retry; the table is throttled, retry later"
                    )
        return found

    @classmethod
    def _resolve(
        cls,
        requests: list[tuple[Any, Any, list[str]]],
        consistent_read: bool | None,
        attributes_to_get: Sequence[str] | None,
    ) -> Iterator[_RawItem | None]:
        """For each (logical, range key, candidates), the one stored raw item or None."""
        hash_attr = cls._sharded()
        range_attr = cls._range_key_attribute()
        keys: list[dict[str, Any]] = []
        wanted: list[tuple[list[str], Any]] = []
        for _, range_key, candidates in requests:
            range_ser = range_attr.serialize(range_key) if range_attr is not None else None
            wanted.append((candidates, range_ser))
            for physical in candidates:
                key: dict[str, Any] = {hash_attr.attr_name: physical}
                if range_attr is not None:
                    key[range_attr.attr_name] = range_ser
                keys.append(key)
        raw_items = cls._fetch_raw(keys, consistent_read, cls._with_keys(attributes_to_get))
        by_key: dict[tuple[str, Any], _RawItem] = {}
        for raw in raw_items:
            range_value = (
                raw[range_attr.attr_name][range_attr.attr_type] if range_attr is not None else None
            )
            by_key[(raw[hash_attr.attr_name][STRING], range_value)] = raw
        for (logical, _, _), (candidates, range_ser) in zip(requests, wanted, strict=True):
            hits = [p for p in candidates if (p, range_ser) in by_key]
            if len(hits) > 1:
                raise DuplicateItemError(
                    f"{cls.__name__}({hash_attr.attr_name}={logical!r}) is stored under "
                    f"{len(hits)} physical keys: {', '.join(hits)}; random shards suit "
                    "append-only items, use HashShards(on=[sort key]) for items you overwrite, "
                    "and delete the extra copies",
                    hits,
                )
            yield by_key[(hits[0], range_ser)] if hits else None

    @classmethod
    def get(
        cls: type[_M],
        hash_key: Any,
        range_key: Any = None,
        consistent_read: bool = False,
        attributes_to_get: Sequence[str] | None = None,
    ) -> _M:
        """Get one item by logical key, reading every candidate shard in one BatchGetItem."""
        if cls._shard_attribute() is None:
            result: _M = super().get(hash_key, range_key, consistent_read, attributes_to_get)
            return result
        candidates = cls._candidate_keys(hash_key, range_key)
        if len(candidates) == 1:
            single: _M = super().get(
                candidates[0], range_key, consistent_read, cls._with_keys(attributes_to_get)
            )
            return single
        (raw,) = cls._resolve(
            [(hash_key, range_key, candidates)], consistent_read, attributes_to_get
        )
        if raw is None:
            raise cls.DoesNotExist()
        return cls.from_raw_data(raw)

    @classmethod
    def batch_get(
        cls: type[_M],
        items: Iterable[Any],
        consistent_read: bool | None = None,
        attributes_to_get: Sequence[str] | None = None,
    ) -> Iterator[_M]:
        """Get many items by logical key; each key's candidate shards are read together."""
        if cls._shard_attribute() is None:
            yield from super().batch_get(items, consistent_read, attributes_to_get)
            return
        group: list[tuple[Any, Any, list[str]]] = []
        size = 0
        for item in dict.fromkeys(items):
            hash_key, range_key = cls._split_batch_key(item)
            candidates = cls._candidate_keys(hash_key, range_key)
            if group and size + len(candidates) > BATCH_GET_KEYS:
                yield from cls._instances(group, consistent_read, attributes_to_get)
                group, size = [], 0
            group.append((hash_key, range_key, candidates))
            size += len(candidates)
        if group:
            yield from cls._instances(group, consistent_read, attributes_to_get)

    @classmethod
    def _instances(
        cls: type[_M],
        group: list[tuple[Any, Any, list[str]]],
        consistent_read: bool | None,
        attributes_to_get: Sequence[str] | None,
    ) -> Iterator[_M]:
        for raw in cls._resolve(group, consistent_read, attributes_to_get):
            if raw is not None:
                yield cls.from_raw_data(raw)

    @classmethod
    def _split_batch_key(cls, item: Any) -> tuple[Any, Any]:
        if cls._range_keyname is None:
            return item, None
        if isinstance(item, str):
            raise ValueError(f"Invalid key value {item!r}: expected a (hash key, range key) pair")
        try:
            hash_key, range_key = item
        except (TypeError, ValueError):
            raise ValueError(
                f"Invalid key value {item!r}: expected a (hash key, range key) pair"
            ) from None
        return hash_key, range_key

    def refresh(self, consistent_read: bool = False) -> None:
        """Reload this item; an instance of unknown shard is looked up on every candidate."""
        attr = self._shard_attribute()
        if attr is None or self._physical_key is not None or attr.layout.deterministic:
            super().refresh(consistent_read)
            return
        logical = self._check_logical(getattr(self, attr.attr_name))
        range_key = getattr(self, self._range_keyname) if self._range_keyname else None
        candidates = self._candidate_keys(logical, range_key)
        (raw,) = self._resolve([(logical, range_key, candidates)], consistent_read, None)
        if raw is None:
            raise self.DoesNotExist("This item does not exist in the table.")
        self.deserialize(raw)

    @classmethod
    def get_operation_kwargs_from_class(
        cls,
        hash_key: str,
        range_key: Any = None,
        condition: Condition | None = None,
    ) -> dict[str, Any]:
        """Request arguments for TransactGet/condition checks: the key must name one shard."""
        if cls._shard_attribute() is None:
            result: dict[str, Any] = super().get_operation_kwargs_from_class(
                hash_key, range_key, condition
            )
            return result
        candidates = cls._candidate_keys(hash_key, range_key)
        if len(candidates) != 1:
            raise UnsupportedOperationError(
                f"{cls.__name__}: a transaction names exactly one item, but key {hash_key!r} "
                f"may be on any of {len(candidates)} shards; pass a loaded instance's "
                "get_physical_key(), or shard with HashShards(on=[sort key]) so the key names "
                "one shard"
            )
        physical_kwargs: dict[str, Any] = super().get_operation_kwargs_from_class(
            candidates[0], range_key, condition
        )
        return physical_kwargs

    # -- queries ----------------------------------------------------------------------

    @classmethod
    def _query_attribute(cls, index_name: str | None, which: str) -> Attribute[Any] | None:
        """The hash or range key attribute of the table or of an index."""
        if index_name is None:
            attr: Attribute[Any] | None = (
                cls._hash_key_attribute() if which == "hash" else cls._range_key_attribute()
            )
            return attr
        for candidate in cls._indexes[index_name].Meta.attributes.values():
            if (candidate.is_hash_key and which == "hash") or (
                candidate.is_range_key and which == "range"
            ):
                return candidate  # type: ignore[no-any-return]
        return None

    @classmethod
    def _query_sharding(cls, index_name: str | None) -> ShardedKeyAttribute | None:
        """The sharded attribute a query's partition key is, or None (a plain query)."""
        hash_attr = cls._query_attribute(index_name, "hash")
        if hash_attr is None:
            return None
        for attr in (*cls._shard_box, *cls._index_shard_box):
            if attr.attr_name == hash_attr.attr_name:
                return attr
        return None

    @classmethod
    def _python_name(cls, attribute: Attribute[Any] | None) -> str | None:
        if attribute is None:
            return None
        for name, candidate in cls.get_attributes().items():
            if candidate.attr_name == attribute.attr_name:
                return name
        return None

    @classmethod
    def _query_groups(
        cls,
        hash_key: Any,
        range_key_condition: Condition | None,
        index_name: str | None,
        time_range: TimeBounds | None,
        forward: bool,
    ) -> list[list[str]]:
        """The physical keys a query reads, grouped: groups are read one after another."""
        attr = cls._query_sharding(index_name) or cls._sharded()
        layout = attr.layout
        if isinstance(hash_key, PhysicalKey):
            layout.split(hash_key)
            return [[hash_key]]
        logical = cls._check_logical(hash_key, attr)
        sort_attr = cls._query_attribute(index_name, "range")
        sort_name = cls._python_name(sort_attr)
        values: dict[str, Any] = {}
        bounds: dict[str, TimeBounds] = {}
        if sort_attr is not None and sort_name is not None:
            found = bounds_of(range_key_condition, sort_attr)
            if found.equal is not None:
                values[sort_name] = found.equal
            bounds[sort_name] = (found.lower, found.upper)
        if time_range is not None:
            for strategy in layout.strategies:
                if isinstance(strategy, TimeBuckets):
                    bounds[strategy.on] = time_range
        key = cls._key_values(logical, values, attr)
        per_strategy = [s.query_candidates(key, bounds) for s in layout.strategies]
        splits = [
            i
            for i, s in enumerate(layout.strategies)
            if s.ordered and sort_name is not None and sort_name in s.attributes
        ]
        groups: dict[tuple[int, ...], list[str]] = {}
        ranges = [range(len(c)) for c in per_strategy]
        for combo in itertools.product(*ranges):
            segments = [per_strategy[i][j] for i, j in enumerate(combo)]
            group = tuple(combo[i] for i in splits)
            groups.setdefault(group, []).append(layout.compose(logical, segments))
        ordered = [groups[g] for g in sorted(groups)]
        return ordered if forward else ordered[::-1]

    @classmethod
    def _cursor_secret(cls) -> bytes | None:
        secret = getattr(cls.Meta, "cursor_secret", None)
        if secret is None:
            return None
        return secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)

    @classmethod
    def _parallelism(cls, parallelism: int | None) -> int:
        """Worker threads per query: at most the connection pool, so none waits for a socket."""
        pool = int(getattr(cls.Meta, "max_pool_connections", 10) or 10)
        if parallelism is None:
            return pool
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
            raise ShardKeyError(
                f"parallelism={parallelism!r}: give a positive int (default: the connection "
                f"pool size, Meta.max_pool_connections = {pool})"
            )
        return min(parallelism, pool)

    @classmethod
    def _warm_client(cls) -> None:
        """Build the botocore client here: PynamoDB builds it lazily without a lock."""
        _ = cls._get_connection().connection.client

    @classmethod
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
    ) -> Iterator[_M]:
        """Query one logical key across its shards as one ordered, resumable stream.

        Keeps PynamoDB's signature. ``limit`` applies to the merged order, exactly.
        ``last_evaluated_key`` of the returned iterator is an opaque cursor string; pass
        it back to resume. ``parallelism`` caps the threads reading shards at once
        (default and maximum: ``Meta.max_pool_connections``). ``time_range=(start, end)``
        bounds the buckets of a ``TimeBuckets`` key whose time is not the sort key.
        """
        if cls._query_sharding(index_name) is None:
            return super().query(
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
            )
        if rate_limit is not None:
            raise UnsupportedOperationError(
                f"{cls.__name__}.query(rate_limit=...): a merged query reads shards in "
                "parallel and cannot share one rate limiter; lower parallelism instead"
            )
        forward = scan_index_forward is not False
        groups = cls._query_groups(hash_key, range_key_condition, index_name, time_range, forward)
        identity = QueryIdentity(
            model=f"{cls.Meta.table_name}:{cls.__name__}",
            index=index_name,
            logical_key=str(hash_key),
            forward=forward,
        )
        secret = cls._cursor_secret()
        resume = cls._resume(last_evaluated_key, identity, groups, secret)
        key_attrs = [
            cls._hash_key_attribute(),
            cls._range_key_attribute(),
            cls._query_attribute(index_name, "hash"),
            cls._query_attribute(index_name, "range"),
        ]
        key_names = list(dict.fromkeys(a.attr_name for a in key_attrs if a is not None))
        projection = None
        if attributes_to_get is not None:
            projection = list(dict.fromkeys([*attributes_to_get, *key_names]))
        connection = cls._get_connection()
        cls._warm_client()

        def fetch(physical: str, start: Any, page: int | None) -> dict[str, Any]:
            response: dict[str, Any] = connection.query(
                physical,
                range_key_condition=range_key_condition,
                filter_condition=filter_condition,
                attributes_to_get=projection,
                consistent_read=consistent_read,
                exclusive_start_key=start,
                index_name=index_name,
                limit=page,
                return_consumed_capacity="TOTAL",
                scan_index_forward=scan_index_forward,
            )
            return response

        return MergedQuery(
            fetch=fetch,
            groups=groups,
            sort_key=dynamodb_sort_key(cls._query_attribute(index_name, "range")),
            forward=forward,
            build=cls.from_raw_data,
            key_names=key_names,
            identity=identity,
            encode=lambda cursor: encode_cursor(cursor, secret),
            limit=limit,
            page_size=page_size,
            parallelism=cls._parallelism(parallelism),
            resume=resume,
        )

    @classmethod
    def _resume(
        cls,
        token: Any,
        identity: QueryIdentity,
        groups: list[list[str]],
        secret: bytes | None,
    ) -> Cursor | None:
        """Decode a cursor and check it belongs to this very query."""
        if token is None:
            return None
        cursor = decode_cursor(token, secret)
        mine = (identity.model, identity.index, identity.logical_key, identity.forward)
        theirs = (cursor.model, cursor.index, cursor.logical_key, cursor.forward)
        if mine != theirs:
            raise CursorError(
                f"last_evaluated_key belongs to another query ({theirs[0]}, key "
                f"{theirs[2]!r}, index {theirs[1]!r}, forward={theirs[3]}); resume with the "
                "same model, key, index and direction, or start over"
            )
        planned = {key for group in groups for key in group}
        if not {p.key for p in cursor.shards} <= planned:
            raise CursorError(
                "last_evaluated_key names shards this query does not read (the range "
                "condition or the shard layout changed); resume with the same conditions"
            )
        return cursor

    @classmethod
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
    ) -> int:
        """Count one logical key's items, summed over its shards (or the table's, keyless)."""
        if hash_key is None or cls._query_sharding(index_name) is None:
            total: int = super().count(
                hash_key,
                range_key_condition,
                filter_condition,
                consistent_read,
                index_name,
                limit,
                rate_limit,
            )
            return total
        groups = cls._query_groups(hash_key, range_key_condition, index_name, time_range, True)
        connection = cls._get_connection()
        cls._warm_client()

        def fetch(physical: str, start: Any) -> dict[str, Any]:
            response: dict[str, Any] = connection.query(
                physical,
                range_key_condition=range_key_condition,
                filter_condition=filter_condition,
                consistent_read=consistent_read,
                exclusive_start_key=start,
                index_name=index_name,
                select="COUNT",
            )
            return response

        counted = count_shards(
            fetch, [key for group in groups for key in group], cls._parallelism(parallelism)
        )
        return counted if limit is None else min(counted, limit)
