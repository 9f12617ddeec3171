"""One model class's sharding engine, reached with :func:`sharding_of`.

A :class:`Sharding` is made once per model class, when the class is defined. It holds
the class's declaration (its :class:`~shardmodel.engine.spec.ShardingSpec`) and the
sources a :class:`~shardmodel.engine.placement.Placement` is composed from: the declared
layouts, the metadata table of a dynamic key (a shard directory), and the migration
state the model follows (a watch). Tools built on the public API (migration, operations,
the command line, the testing toolkit) use it instead of the model's private parts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from shardmodel.core.bridge import in_async
from shardmodel.engine.executor import AsyncExecutor, SyncExecutor
from shardmodel.engine.placement import Placement
from shardmodel.engine.spec import ShardingSpec
from shardmodel.errors import ShardConfigurationError
from shardmodel.keyspace.strategies import ShardCount

if TYPE_CHECKING:
    from shardmodel.attributes import ShardedKeyAttribute
    from shardmodel.dynamic.directory import ShardDirectory
    from shardmodel.keyspace.layout_record import LayoutRecord
    from shardmodel.keyspace.phases import ActiveMigration
    from shardmodel.throttles import CloudWatchCapacity

__all__ = ["MigrationSource", "Sharding", "follow_tables_by_default", "sharding_of"]

#: Where a model class keeps its engine (in its own ``__dict__``: subclasses have theirs).
ENGINE = "_shardmodel_engine"


#: What a process sees of its table's layout: the change in progress and the layout
#: record a finished change left (each None: none)
View: TypeAlias = tuple["ActiveMigration | None", "LayoutRecord | None"]
_NO_VIEW: View = (None, None)


class MigrationSource(Protocol):
    """Where a model learns the shard count change in progress (a migration watch)."""

    def current(self) -> ActiveMigration | None:
        """The migration in progress as this process sees it now (None: none)."""
        ...

    def view(self) -> View:
        """The migration in progress and the table's layout record, read together."""
        ...

    def peek_view(self) -> View:
        """:meth:`view` as last read, without a request (nothing read yet: none)."""
        ...


#: Gives a model that follows no source of its own the one of its table (None: it has no
#: layout to change); set by ``shardmodel.migration``, which sits above the engine.
_table_source: Callable[[type[Any]], MigrationSource | None] | None = None
_UNSET: Any = object()
_source_lock = threading.Lock()


def follow_tables_by_default(factory: Callable[[type[Any]], MigrationSource | None]) -> None:
    """Make every model that is not told otherwise follow its table through ``factory``."""
    global _table_source
    _table_source = factory


class Sharding:
    """A model class's sharding: its spec, placement sources and held views.

    Attributes:
        model: the model class.
        spec: its checked declaration.
        directory: the metadata table access of a ``DynamicShards`` key (None otherwise).
        executor: sends the model's requests (inside an async call, on the event loop).
        watch: the migration state the model was told to follow
            (``shardmodel.migration.follow``); None: its table's (:meth:`source`).
    """

    def __init__(
        self, model: type[Any], spec: ShardingSpec, directory: ShardDirectory | None
    ) -> None:
        self.model = model
        self.spec = spec
        self.directory = directory
        self._sync = SyncExecutor(model)
        self._async = AsyncExecutor(model)
        self.watch: MigrationSource | None = None
        self._table_watch: MigrationSource | None = _UNSET
        #: CloudWatch's view of the table, asked when a throttle names no reason
        self.cloudwatch: CloudWatchCapacity | None = None
        # per thread, and per async call (each runs in a context of its own)
        self._held: ContextVar[View | None] = ContextVar(
            f"shardmodel_view_{spec.model_name}", default=None
        )

    @property
    def executor(self) -> SyncExecutor:
        """Sends the model's requests: the async executor inside an async call."""
        return self._async if in_async() else self._sync

    def key(self) -> ShardedKeyAttribute:
        """The table's sharded partition key.

        Raises:
            ShardConfigurationError: the model shards no table key (an index's at most).
        """
        found = self.spec.table_key()
        if found is None:
            raise ShardConfigurationError(
                f"{self.spec.model_name} has no sharded partition key; declare it "
                "ShardedKeyAttribute(hash_key=True, strategy=...)"
            )
        return found

    # -- the migration the model follows -------------------------------------------------

    def view(self, io: bool = True) -> View:
        """The change in progress and the table's layout record, as this process sees them.

        Inside :meth:`operation` (or :meth:`declared`), the view the operation began
        with. ``io=False`` (a bare ``serialize()``): no request for the table's state, the
        view last read (the declared layout if none was), unless ``follow()`` chose
        the source.
        """
        held = self._held.get()
        if held is not None:
            return held
        source = self.source()
        if source is None:
            return _NO_VIEW
        if not io and self.watch is None:
            return source.peek_view()
        return source.view()

    def migration(self, io: bool = True) -> ActiveMigration | None:
        """The shard count change in progress, as this process sees it (None: none);
        see :meth:`view`."""
        return self.view(io)[0]

    @contextmanager
    def declared(self) -> Iterator[None]:
        """Compute keys with the declared layout, asking the table nothing (offline tools
        and tests that compute keys with no DynamoDB to ask)."""
        token = self._held.set(_NO_VIEW)
        try:
            yield
        finally:
            self._held.reset(token)

    def source(self) -> MigrationSource | None:
        """Where the model learns its table's layout: the watch ``follow()`` gave it, else
        its table's (made on first use; None for a model whose layout cannot change)."""
        if self.watch is not None:
            return self.watch
        found = self._table_watch
        if found is _UNSET:
            with _source_lock:
                found = self._table_watch
                if found is _UNSET:
                    factory = _table_source
                    found = self._table_watch = None if factory is None else factory(self.model)
        return found

    def forget_table(self) -> None:
        """Drop what the model's own watch read of its table (the next use reads again):
        the table was dropped, or the model now points at another endpoint."""
        with _source_lock:
            self._table_watch = _UNSET

    @contextmanager
    def operation(self) -> Iterator[ActiveMigration | None]:
        """One operation's view: every placement taken in this thread meanwhile uses it.

        A write follows one phase's rules from its first request to its last: a view
        refreshed in between would mix two phases (a delete begun in ``backfill`` removes
        the old key, and, its other keys worked out in ``read_new``, the old key again
        and never the new one). Holding the view, the write lags at most one phase,
        which the rules tolerate. Nested operations keep the outer view.
        """
        outer = self._held.get()
        source = None if outer is not None else self.source()
        if source is None:
            yield outer[0] if outer is not None else None
            return
        view = source.view()
        token = self._held.set(view)
        try:
            yield view[0]
        finally:
            self._held.reset(token)

    # -- placements ---------------------------------------------------------------------

    def placement(
        self,
        attr: ShardedKeyAttribute | None = None,
        *,
        reading: Iterable[str] = (),
        counts: dict[str, ShardCount] | None = None,
        io: bool = True,
    ) -> Placement:
        """Where the items of ``attr`` (default: the table's sharded key) are, now.

        ``reading``: the logical keys a read touches, whose dynamic shard counts are read
        (strongly consistent unless the reader cache is on). ``counts``: counts already
        known, used instead. ``io``: see :meth:`migration`.
        """
        key = self.spec.table_key()
        attr = attr or key
        if attr is None:
            raise ShardConfigurationError(f"{self.spec.model_name} has no ShardedKeyAttribute")
        if attr is not key:  # an index key: its own fixed layout
            return Placement(attr.layout, key_name=attr.attr_name)
        found = dict(counts or {})
        if self.directory is not None:
            for logical in reading:
                if logical not in found:
                    found[logical] = self.directory.for_read(logical)
        return Placement(attr.layout, self.migration(io), found, key_name=attr.attr_name)


def sharding_of(model: type[Any]) -> Sharding:
    """The sharding engine of ``model``, a :class:`~shardmodel.ShardedModel` subclass.

    Raises:
        ShardConfigurationError: ``model`` is not a sharded model class.
    """
    engine = getattr(model, "__dict__", {}).get(ENGINE)
    if not isinstance(engine, Sharding):
        name = getattr(model, "__name__", repr(model))
        raise ShardConfigurationError(
            f"{name} is not a ShardedModel class; pass a model declared as "
            f"'class {name}(ShardedModel)'"
        )
    return engine
