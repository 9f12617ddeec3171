"""ShardingSpec: a model class's sharding declaration, checked once when it is defined."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from shardmodel.keyspace.dynamic import DynamicShards
from shardmodel.keyspace.keys import KeyLayout

if TYPE_CHECKING:
    from shardmodel.attributes import ShardedKeyAttribute

__all__ = ["ShardingSpec"]


@frozen
class ShardingSpec:
    """What a model declares about its sharded keys.

    Attributes:
        model_name: the class name (for messages).
        sharded: the sharded key attributes, the table's partition key first if it is
            one (kept in a tuple: an Attribute held bare acts as a descriptor).
        counters: the python names of its ``CounterAttribute``\\ s.
        counter_fields: their names in the table.
    """

    model_name: str
    sharded: tuple[ShardedKeyAttribute, ...] = ()
    counters: tuple[str, ...] = ()
    counter_fields: tuple[str, ...] = ()
    #: (name in the table, layout, is the table's key) of every sharded attribute: what
    #: loading an item rewrites (worked out once: every item loaded reads it)
    unshard_plan: tuple[tuple[str, KeyLayout, bool], ...] = field(init=False)

    def __attrs_post_init__(self) -> None:
        plan = tuple((a.attr_name, a.layout, bool(a.is_hash_key)) for a in self.sharded)
        object.__setattr__(self, "unshard_plan", plan)

    def table_key(self) -> ShardedKeyAttribute | None:
        """The table's sharded partition key (None: only index keys are sharded)."""
        if self.sharded and self.sharded[0].is_hash_key:
            return self.sharded[0]
        return None

    @property
    def index_keys(self) -> tuple[ShardedKeyAttribute, ...]:
        """The sharded partition keys of global secondary indexes."""
        return tuple(a for a in self.sharded if not a.is_hash_key)

    @property
    def dynamic(self) -> DynamicShards | None:
        """The table key's ``DynamicShards`` (None: its counts are fixed)."""
        key = self.table_key()
        if key is None:
            return None
        found = [s for s in key.layout.strategies if isinstance(s, DynamicShards)]
        return found[0] if found else None

    def attribute(self, name: str) -> Any:
        """The sharded attribute stored as ``name`` (None if not sharded)."""
        return next((a for a in self.sharded if a.attr_name == name), None)
