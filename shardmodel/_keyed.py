"""The sharded key machinery every ShardedModel carries: layouts, (de)serialization, keys.

Instances always show the logical key. The physical key is chosen when the item is
first serialized for a write, remembered on the instance (so a retried or repeated save
goes to the same shard), and read back from every item loaded from the table.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import attrs
from pynamodb.attributes import Attribute
from pynamodb.constants import STRING
from pynamodb.expressions.condition import Comparison, Condition, In
from pynamodb.expressions.operand import Path, Value
from pynamodb.expressions.update import Action
from pynamodb.models import Model

from shardmodel._building import build_plan, instantiate
from shardmodel._canonical import canonical_value
from shardmodel.attributes import ShardedKeyAttribute
from shardmodel.counters import aggregate
from shardmodel.errors import (
    ShardConfigurationError,
    ShardKeyError,
    UnknownShardError,
)
from shardmodel.keys import KeyLayout, PhysicalKey
from shardmodel.request_bound import check_fan_out, request_bound
from shardmodel.retry import Backoff
from shardmodel.strategies import ONE_SHARD, DynamicShards, KeyValues, ShardCount

if TYPE_CHECKING:
    from shardmodel.directory import ShardDirectory
    from shardmodel.metadata import ShardMetadata
    from shardmodel.migration.rules import ActiveMigration, ReshardWatch

_M = TypeVar("_M", bound="KeyedModel")
_RawItem = dict[str, dict[str, Any]]


class KeyedModel(Model):
    """Key layout, (de)serialization and key rewriting for existing items."""

    _shard_box: ClassVar[tuple[ShardedKeyAttribute, ...]] = ()
    _index_shard_box: ClassVar[tuple[ShardedKeyAttribute, ...]] = ()
    # (attribute name, layout, is the table's partition key) of every sharded attribute
    _unshard_plan: ClassVar[tuple[tuple[str, KeyLayout, bool], ...]] = ()
    # per instance, set when known: the physical partition key and sharded index keys
    _physical_key: str | None = None
    # python names of the CounterAttributes (counter models spread one item over shards)
    _counter_names: ClassVar[tuple[str, ...]] = ()
    _index_keys: dict[str, str] | None = None
    # a DynamicShards partition key's metadata table access (None: counts are fixed)
    _shard_directory: ClassVar[ShardDirectory | None] = None
    # per instance: the metadata a fresh pick of a dynamic key used (for growth)
    _write_counts: ShardMetadata | None = None
    # a fixed count's migration watch (shardmodel.migration.follow), and per instance a
    # key pinned for one extra copy written or deleted during a migration
    _reshard: ClassVar[ReshardWatch | None] = None
    _pinned_key: str | None = None

    @classmethod
    def _migration(cls) -> ActiveMigration | None:
        """The shard count change in progress, as this process last read it (or None)."""
        return cls._reshard.current() if cls._reshard is not None else None

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
    def logical_key_of(cls, physical_key: str) -> str:
        """The logical key a stored partition key value (``user-1#3``) belongs to.

        For tools that see raw items: streams, exports, CloudWatch Contributor Insights.
        """
        return cls._sharded().layout.logical_key(physical_key)

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
    def _read_counts(
        cls, logical: str, attr: ShardedKeyAttribute | None = None
    ) -> ShardCount | None:
        """A dynamic key's counts for a read (None when ``attr``'s counts are fixed)."""
        directory = cls._shard_directory
        if directory is None or (attr is not None and attr is not cls._shard_attribute()):
            return None
        return directory.for_read(logical)

    @classmethod
    def _key_values(
        cls,
        logical: str,
        values: dict[str, Any],
        attr: ShardedKeyAttribute | None = None,
        counts: ShardCount | None = None,
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
            try:
                canonical[name] = str(canonical_value(source.attr_type, source.serialize(value)))
            except ValueError as error:
                raise ShardKeyError(
                    f"{cls.__name__}.{name}: {error}; the shard is computed from {name}, give "
                    "it a finite number"
                ) from None
        return KeyValues(logical_key=logical, values=known, canonical=canonical, shards=counts)

    def _instance_key_values(self, attr: ShardedKeyAttribute | None = None) -> KeyValues:
        """What the strategies of ``attr`` (default: the partition key) see of this item."""
        attr = attr or self._sharded()
        logical = self._check_logical(getattr(self, self._python_name(attr) or ""), attr)
        names = attr.layout.attributes
        return self._key_values(logical, {n: getattr(self, n, None) for n in names}, attr)

    def _range_value(self) -> Any:
        """This item's sort key value (None on a model without one)."""
        return getattr(self, self._range_keyname) if self._range_keyname else None

    @staticmethod
    def _belongs(attr: ShardedKeyAttribute, existing: str | None, logical: str) -> bool:
        """True when ``existing``, a remembered physical key, is one of ``logical``'s."""
        return existing is not None and attr.layout.logical_key(existing) == logical

    @classmethod
    def _choose_physical(
        cls, attr: ShardedKeyAttribute, key: KeyValues, existing: str | None
    ) -> str:
        """The physical value a write uses: the stored one's shard if known, else a new pick."""
        if existing is not None and cls._belongs(attr, existing, key.logical_key):
            return attr.layout.repick(key, existing, attr.rng)
        return attr.layout.pick(key, attr.rng)

    @classmethod
    def _candidate_keys(
        cls, hash_key: Any, range_key: Any = None, counts: ShardCount | None = None
    ) -> list[str]:
        """Every physical key a read of (hash_key, range_key) must touch.

        ``counts``: a dynamic key's counts, when known (else they are read).
        """
        if isinstance(hash_key, PhysicalKey):
            cls._sharded().layout.split(hash_key)
            return [hash_key]
        logical = cls._check_logical(hash_key)
        values: dict[str, Any] = {}
        if cls._range_keyname is not None and range_key is not None:
            values[cls._range_keyname] = range_key
        counts = counts or cls._read_counts(logical)
        migration = cls._migration()
        layouts = [cls._sharded().layout] if migration is None else migration.read_layouts()
        key = cls._key_values(logical, values, counts=counts)
        what, bound = f"{cls.__name__}.get({logical!r})", request_bound(cls)
        plans = [(layout, layout.candidate_segments(key)) for layout in layouts]
        planned = max(math.prod(len(segments) for segments in plan) for _, plan in plans)
        check_fan_out(what, planned, bound)
        if len(plans) == 1:
            return layouts[0].candidates(key, plans[0][1])
        found = list(
            dict.fromkeys(k for layout, plan in plans for k in layout.candidates(key, plan))
        )
        check_fan_out(what, len(found), bound)  # the union's exact size, before any request
        return found

    @classmethod
    def _home_key(cls, hash_key: Any, range_key: Any = None) -> str:
        """The first candidate shard, where a counter item keeps its other attributes.

        Shard 0 exists at every dynamic count, so no count is read for it.
        """
        return cls._candidate_keys(hash_key, range_key, counts=ONE_SHARD)[0]

    def _write_key(self) -> str:
        """The physical key this instance is written under; chosen once, then kept."""
        if self._pinned_key is not None:
            return self._pinned_key
        attr = self._sharded()
        key = self._instance_key_values()
        existing = self._physical_key
        migration = self._migration()
        if migration is not None:
            known = existing if self._belongs(attr, existing, key.logical_key) else None
            self._physical_key = migration.primary_key(key, known, attr.rng)
            return self._physical_key
        directory = self._shard_directory
        if directory is not None and not self._belongs(attr, existing, key.logical_key):
            seen = self._write_counts
            if seen is None or seen.logical_key != key.logical_key:
                seen = self._write_counts = directory.for_write(key.logical_key)
            key = attrs.evolve(key, shards=seen.count)
        physical = self._choose_physical(attr, key, existing)
        self._physical_key = physical
        return physical

    def _stored_key(self) -> str:
        """The physical key of this stored item, for update, delete and refresh."""
        if self._pinned_key is not None:
            return self._pinned_key
        attr = self._sharded()
        key = self._instance_key_values()
        existing = self._physical_key
        migration = self._migration()
        if migration is not None:
            known = existing if self._belongs(attr, existing, key.logical_key) else None
            self._physical_key = migration.stored_key(key, known)
            return self._physical_key
        if existing is not None and self._belongs(attr, existing, key.logical_key):
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
        if getattr(self, self._python_name(attr) or "", None) is None:
            return None
        if self._index_keys is None:
            self._index_keys = {}
        existing = self._index_keys.get(attr.attr_name)
        physical = self._choose_physical(attr, self._instance_key_values(attr), existing)
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
    def _instantiate(cls: type[_M], attribute_values: _RawItem) -> _M:
        """PynamoDB's instance from stored values, built without its double work."""
        plan = cls.__dict__.get("_build_fields", False)
        if plan is False:
            plan = build_plan(cls)
            cls._build_fields = plan  # type: ignore[attr-defined]
        if plan is None:
            return super()._instantiate(attribute_values)
        return instantiate(cls, plan, attribute_values)

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

    @classmethod
    def _with_keys(
        cls, attributes_to_get: Sequence[str] | None, key_names: Sequence[str] = ()
    ) -> list[str] | None:
        """A projection that still returns the key attributes (the physical key is needed).

        ``key_names`` defaults to the table's partition and sort keys.
        """
        if attributes_to_get is None:
            return None
        if not key_names:
            attrs = (cls._hash_key_attribute(), cls._range_key_attribute())
            key_names = [a.attr_name for a in attrs if a is not None]
        return list(dict.fromkeys([*attributes_to_get, *key_names]))

    @classmethod
    def _merge_shards(cls, items: Sequence[_RawItem], home: str) -> _RawItem:
        """One logical counter item from its shard items: counters summed."""
        return aggregate(items, cls._counter_attr_names(), home, cls._sharded().attr_name)

    @classmethod
    def _counter_attr_names(cls) -> list[str]:
        attributes = cls.get_attributes()
        return [attributes[name].attr_name for name in cls._counter_names]

    @classmethod
    def _current_copy(cls, copies: Sequence[_RawItem]) -> _RawItem:
        """Of one item's copies while a compaction moves it, the one updates go to.

        That is the copy on the retired (highest-numbered) shard, the one it was loaded
        from before the compaction started. During a shard count change it is the copy
        at the item's key in the layout the phase prefers.
        """
        migration = cls._migration()
        if migration is not None and len(copies) > 1:
            attr = cls._sharded()
            for raw in copies:
                item = cls.from_raw_data(raw)
                if migration.is_current(item._instance_key_values(), raw[attr.attr_name][STRING]):
                    return raw
            return copies[0]
        return copies[0] if len(copies) == 1 else max(copies, key=cls._shard_number)

    @classmethod
    def _shard_number(cls, raw: _RawItem) -> int:
        """The dynamic shard a stored item of a dynamic key sits on."""
        attr = cls._sharded()
        layout = attr.layout
        position = next(i for i, s in enumerate(layout.strategies) if isinstance(s, DynamicShards))
        return int(layout.split(raw[attr.attr_name][STRING])[1][position]) - layout.first_shard

    @staticmethod
    def _key_text(attribute: Attribute[Any] | None, serialized: Any) -> Any:
        """A serialized key value of ``attribute`` in the form equal values share."""
        if attribute is None or serialized is None:
            return None
        return canonical_value(attribute.attr_type, serialized)

    @classmethod
    def _python_name(cls, attribute: Attribute[Any] | None) -> str | None:
        """The python name of a model attribute, given it or an index's copy of it."""
        if attribute is None:
            return None
        for name, candidate in cls.get_attributes().items():
            if candidate.attr_name == attribute.attr_name:
                return name
        return None
