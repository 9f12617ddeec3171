"""ShardedKeyAttribute: a string partition key annotated with how it is sharded."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from pynamodb.attributes import UnicodeAttribute
from pynamodb.models import Model

from shardmodel.errors import ShardConfigurationError
from shardmodel.keyspace.keys import KeyLayout, Placement
from shardmodel.keyspace.strategies import ShardStrategy

__all__ = ["ShardedKeyAttribute"]


class ShardedKeyAttribute(UnicodeAttribute):
    """A string partition key whose stored (physical) value carries shard segments.

    The application reads and writes the logical key (``"user-12345"``); the table holds
    the physical key (``"user-12345#3"``).

    Args:
        hash_key: True for the table's partition key; False for the partition key of a
            global secondary index (the index declares it as a string hash key).
        strategy: a strategy, or a list of strategies composed left to right.
        separator: the string between the logical key and each segment (default ``#``).
        first_shard: the number written for shard 0 (default 0; 1 for ``_1`` … ``_10``).
        placement: ``"suffix"`` (default, ``user#3``) or ``"prefix"`` (``3#user``).
        rng: the random source for random shards (default: a private ``random.Random``);
            pass a seeded one for reproducible tests.
        attr_name: the attribute's name in the table, as on any PynamoDB attribute.
    """

    def __init__(
        self,
        hash_key: bool = False,
        range_key: bool = False,
        *,
        strategy: ShardStrategy | Sequence[ShardStrategy],
        separator: str = "#",
        first_shard: int = 0,
        placement: Placement = "suffix",
        rng: random.Random | None = None,
        attr_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        if range_key:
            raise ShardConfigurationError(
                "ShardedKeyAttribute(range_key=True): only partition keys are sharded; "
                "declare it with hash_key=True and keep the sort key a plain attribute"
            )
        super().__init__(hash_key=hash_key, range_key=False, attr_name=attr_name, **kwargs)
        self.layout = KeyLayout(
            strategies=strategy, separator=separator, first_shard=first_shard, placement=placement
        )
        self.rng = rng if rng is not None else random.Random()

    def __set_name__(self, owner: type[Any], name: str) -> None:
        """Refuse a plain PynamoDB ``Model`` owner: it would store the logical key unsharded.

        The refusal is raised when PynamoDB's metaclass reads the class's attributes,
        just after: raised here, Python 3.11 would report it only as the cause of a
        ``RuntimeError: Error calling __set_name__``.
        """
        super().__set_name__(owner, name)
        if issubclass(owner, Model) and not getattr(owner, "__shardmodel__", False):
            self._refusal = ShardConfigurationError(
                f"{owner.__name__}.{name}: a ShardedKeyAttribute shards only on a "
                f"ShardedModel, and {owner.__name__} is a plain PynamoDB Model that would store "
                f"the logical key unsharded; write 'class {owner.__name__}(ShardedModel)' "
                "(from shardmodel import ShardedModel)"
            )
            self.__class__ = _RefusedKey


class _RefusedKey(ShardedKeyAttribute):
    """A ShardedKeyAttribute declared on a plain PynamoDB Model: read from the class, it
    raises its refusal (PynamoDB's metaclass reads every attribute as the class is made)."""

    _refusal: ShardConfigurationError

    def __get__(self, instance: Any, owner: Any) -> Any:
        if instance is None:
            raise self._refusal
        return super().__get__(instance, owner)
