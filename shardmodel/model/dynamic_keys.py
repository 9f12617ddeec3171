"""DynamicKeyAdmin: ShardedModel's table lifecycle and a dynamic key's shard counts.

The methods an operator calls rather than an application: creating and deleting the
table with a dynamic key's metadata table, reading a key's metadata, finding the hot
keys, growing and shrinking a key's live count, and compacting its retired shards.
:class:`~shardmodel.ShardedModel` inherits them; each hands the call to the engine
(:mod:`shardmodel.engine.growth`, :mod:`shardmodel.engine.compaction`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pynamodb.models import Model

from shardmodel.dynamic.metadata import ShardMetadata

__all__ = ["DynamicKeyAdmin"]

if TYPE_CHECKING:
    _ModelBase = Model
else:  # a mixin: ShardedModel puts Model after it, so super() reaches Model's methods
    _ModelBase = object


class DynamicKeyAdmin(_ModelBase):
    """A mixin of :class:`~shardmodel.ShardedModel`: tables and dynamic keys' shards."""

    @classmethod
    def create_table(cls, *args: Any, **kwargs: Any) -> Any:
        """Create the table and, for a dynamic key, its metadata table (on-demand)."""
        from shardmodel.engine.growth import create_metadata_table

        result = super().create_table(*args, **kwargs)
        create_metadata_table(cls, wait=bool(kwargs.get("wait", False)))
        return result

    @classmethod
    def delete_table(cls, *, wait: bool = False) -> Any:
        """Delete the table and, for a dynamic key, its metadata table."""
        from shardmodel.engine.growth import delete_metadata_table

        result = super().delete_table(wait=wait)
        delete_metadata_table(cls)
        return result

    @classmethod
    def shard_metadata(cls, hash_key: str) -> ShardMetadata | None:
        """A dynamic key's metadata item, read strongly consistent (None: never written)."""
        from shardmodel.engine.growth import shard_metadata

        return shard_metadata(cls, hash_key)

    @classmethod
    def grown_keys(cls, min_shards: int = 2) -> list[ShardMetadata]:
        """Keys whose reads touch at least ``min_shards`` shards, most first: the hot ones.

        Scans the metadata table (one item per key ever written).
        """
        from shardmodel.engine.growth import grown_keys

        return grown_keys(cls, min_shards)

    @classmethod
    def grow_shards(cls, hash_key: str, to: int) -> ShardMetadata:
        """Raise a dynamic key's live count to ``to`` ahead of a known burst.

        The same conditional update and history entry as a growth on throttling; a no-op
        when the key already has ``to`` shards.
        """
        from shardmodel.engine.growth import grow_shards

        return grow_shards(cls, hash_key, to)

    @classmethod
    def shrink_shards(cls, hash_key: str, count: int) -> ShardMetadata:
        """Lower a dynamic key's live count: new writes spread over ``count`` shards.

        Reads keep reading every shard the key had until :meth:`compact_shards` has moved
        the retired shards' items into the live ones, so no item is hidden meanwhile.
        """
        from shardmodel.engine.growth import shrink_shards

        return shrink_shards(cls, hash_key, count)

    @classmethod
    def compact_shards(cls, hash_key: str, grace: float = 5.0) -> int:
        """Move the items of a key's retired shards into its live shards; returns how many.

        It starts once writers' cached counts from before the shrink have expired
        (``writer_cache_seconds`` after it). Each item is copied to a live shard, then
        (after ``grace`` seconds, longer than any read in flight takes) deleted from the
        retired shard with a condition that it is unchanged. Meanwhile reads see both
        copies and return one; an item updated in place meanwhile is copied again. Once
        the retired shards are empty the history is pruned and reads stop touching them.
        """
        from shardmodel.engine.compaction import compact_shards

        return compact_shards(cls, hash_key, grace)
