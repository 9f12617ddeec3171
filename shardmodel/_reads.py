"""Point reads of sharded items: get, batch_get, refresh, transaction keys."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

from pynamodb.constants import STRING
from pynamodb.expressions.condition import Condition

from shardmodel._keyed import KeyedModel
from shardmodel.errors import (
    DuplicateItemError,
    UnsupportedOperationError,
)
from shardmodel.migration.rules import COPY_MARKER

_M = TypeVar("_M", bound="PointReads")
_RawItem = dict[str, dict[str, Any]]

#: BatchGetItem's limit on keys per call.
BATCH_GET_KEYS = 100


class PointReads(KeyedModel):
    """Reads by full key: every candidate shard in one BatchGetItem, duplicates reported."""

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
    def _batch_get_page(
        cls,
        keys_to_get: list[dict[str, Any]],
        consistent_read: bool | None,
        attributes_to_get: Sequence[str] | None,
    ) -> tuple[list[_RawItem] | None, list[dict[str, Any]] | None]:
        """One BatchGetItem on the lean path (:mod:`shardmodel.lean`): items, unprocessed keys."""
        from shardmodel.lean import table_connection

        table = cls.Meta.table_name
        data = table_connection(cls).batch_get_item(
            keys_to_get, consistent_read=consistent_read, attributes_to_get=attributes_to_get
        )
        unprocessed = data.get("UnprocessedKeys", {}).get(table, {}).get("Keys")
        return data.get("Responses", {}).get(table), unprocessed

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
            serialized = range_attr.serialize(range_key) if range_attr is not None else None
            wanted.append((candidates, cls._key_text(range_attr, serialized)))
            for physical in candidates:
                key: dict[str, Any] = {hash_attr.attr_name: physical}
                if range_attr is not None:
                    key[range_attr.attr_name] = serialized
                keys.append(key)
        projection = cls._with_keys(attributes_to_get)
        migrating = cls._migration() is not None
        if migrating and projection is not None:
            projection.append(COPY_MARKER)
        raw_items = cls._fetch_raw(keys, consistent_read, projection)
        if migrating:  # an unchecked backfill copy: its original is read instead
            raw_items = [raw for raw in raw_items if COPY_MARKER not in raw]
        by_key: dict[tuple[str, Any], _RawItem] = {}
        for raw in raw_items:
            range_value = (
                raw[range_attr.attr_name][range_attr.attr_type] if range_attr is not None else None
            )
            by_key[(raw[hash_attr.attr_name][STRING], cls._key_text(range_attr, range_value))] = raw
        for (logical, _, _), (candidates, range_ser) in zip(requests, wanted, strict=True):
            hits = [p for p in candidates if (p, range_ser) in by_key]
            if hits and cls._counter_names:
                yield cls._merge_shards([by_key[(p, range_ser)] for p in hits], candidates[0])
                continue
            moving = cls._shard_directory is not None or cls._migration() is not None
            if len(hits) > 1 and moving:  # a compaction or a shard count change copies it
                yield cls._current_copy([by_key[(p, range_ser)] for p in hits])
                continue
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
        single = self._physical_key is not None or (attr and attr.layout.deterministic)
        if attr is None or (single and not self._counter_names):
            super().refresh(consistent_read)
            return
        logical = self._check_logical(getattr(self, attr.attr_name))
        range_key = self._range_value()
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
        if len(candidates) != 1 or cls._migration() is not None:
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
