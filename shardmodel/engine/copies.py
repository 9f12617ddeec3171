"""Index reads during a shard count change: each item once, the copy the phase prefers.

While an item is moved it has two copies (its old key and its new key) with the same
attribute values, so a secondary index holds it twice. An index read keeps, of every
copy it meets, only the one at the item's key in the layout the phase prefers (old until
``read_new``, new from then on): a rule of the copy alone, so pages and cursors never
see the item's other copy. The other copy is either the same item (dropped) or stale
(an old copy in ``new_only``, a backfill copy still being checked: dropped too).

A cursor carries the phase whose preference it read with; resumed at most one phase
later it keeps that preference (both copies are still complete then, by the phase
rules), resumed later still it is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from attrs import evolve, frozen

from shardmodel.engine.items import instance_key_values, sharded
from shardmodel.engine.sharding import sharding_of
from shardmodel.errors import CursorError
from shardmodel.keyspace.phases import PHASES, ActiveMigration, Phase

__all__ = ["PHASE_MARK", "IndexCopies", "PreferredCopies", "index_copies", "split_cursor"]

_T = TypeVar("_T")

#: The entry an index cursor (a key dict) carries for the phase it was read in.
PHASE_MARK = "_shardmodel_phase"
#: Between the phase and a merged query's cursor string.
_JOIN = "~"


def split_cursor(token: Any) -> tuple[Any, Phase | None]:
    """An index cursor without its phase mark, and the phase (None: unmarked)."""
    if isinstance(token, dict) and PHASE_MARK in token:
        rest = {k: v for k, v in token.items() if k != PHASE_MARK}
        return rest, _phase(token[PHASE_MARK].get("S"))
    if isinstance(token, str) and _JOIN in token:
        mark, rest_text = token.split(_JOIN, 1)
        return rest_text, _phase(mark)
    return token, None


def _phase(text: Any) -> Phase:
    try:
        return Phase(text)
    except ValueError:
        raise CursorError(
            f"last_evaluated_key names the phase {text!r}, which is not a migration phase; "
            "pass the cursor of a query unchanged, or start over"
        ) from None


@frozen
class IndexCopies:
    """How one index read picks copies: the migration as of the phase it reads in."""

    migration: ActiveMigration

    def keep(self, item: Any) -> bool:
        """True for the copy of ``item`` this read returns."""
        physical = getattr(item, "_physical_key", None)
        if physical is None:
            return True
        return self.migration.is_preferred(instance_key_values(item), physical)

    def projection(self, model: Any, attributes_to_get: Any) -> list[str] | None:
        """``attributes_to_get`` and what :meth:`keep` reads (the table key's inputs)."""
        if attributes_to_get is None:
            return None
        attr = sharded(model)
        attributes = model.get_attributes()
        names = [attributes[name].attr_name for name in attr.layout.attributes]
        keys = [a.attr_name for a in (attr, model._range_key_attribute()) if a is not None]
        return list(dict.fromkeys([*attributes_to_get, *keys, *names]))

    def wrap(self, results: Any, limit: int | None) -> PreferredCopies[Any]:
        return PreferredCopies(results, self.keep, limit, self.migration.state.phase)


def index_copies(model: Any, token: Any) -> tuple[IndexCopies | None, Any]:
    """The copy rule of an index read of ``model`` (None: no migration) and its cursor."""
    start, phase = split_cursor(token)
    migration = sharding_of(model).migration()
    if migration is None:
        return None, start
    if phase is not None:
        lag = PHASES.index(migration.state.phase) - PHASES.index(phase)
        if not 0 <= lag <= 1:
            raise CursorError(
                f"last_evaluated_key was taken in phase {phase.value} of the shard count "
                f"change, now in phase {migration.state.phase.value}: an index cursor "
                "resumes at most one phase later (the copies it skipped may be gone); "
                "start the index query over"
            )
        migration = evolve(migration, state=evolve(migration.state, phase=phase))
    return IndexCopies(migration), start


class PreferredCopies(Generic[_T]):
    """An index query's items, each logical item once; its cursor carries the phase."""

    def __init__(
        self, results: Any, keep: Callable[[Any], bool], limit: int | None, phase: Phase
    ) -> None:
        self._results = results
        self._keep = keep
        self._limit = limit
        self._phase = phase
        self.total_count = 0

    def __iter__(self) -> Iterator[_T]:
        return self

    def __next__(self) -> _T:
        while self._limit is None or self.total_count < self._limit:
            item = next(self._results)
            if self._keep(item):
                self.total_count += 1
                return item  # type: ignore[no-any-return]
        close = getattr(self._results, "close", None)
        if close is not None:
            close()  # a merged query may have shard requests in flight
        raise StopIteration

    @property
    def last_evaluated_key(self) -> Any:
        """The inner query's cursor, marked with the phase whose preference it read."""
        inner = self._results.last_evaluated_key
        if inner is None:
            return None
        if isinstance(inner, dict):
            return {**inner, PHASE_MARK: {"S": self._phase.value}}
        return f"{self._phase.value}{_JOIN}{inner}"

    def __getattr__(self, name: str) -> Any:
        return getattr(self._results, name)  # requests, consumed capacity, close, ...
