"""The two ways a check reaches the models under test: the sync API, or the async one.

The equivalence checks (``tests/equivalence.py``, ``tests/counter_equivalence.py``)
take an ``api``. :data:`SYNC` hands them the models themselves. :class:`AsyncApi` hands
them stand-ins whose ``query``, ``get``, ``batch_get``, ``count``, ``scan``, ``add``,
``batch_write`` and instance ``save`` call the coroutine twins (``aquery``, ``aget``,
...) on one event loop, so the very same check proves the async API. Resumed reads
alternate between the APIs: a cursor from ``aquery`` is resumed by ``query``, one from
``query`` by ``aquery``, and one from ``aquery`` by ``aquery``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from types import TracebackType
from typing import Any

__all__ = ["SYNC", "AsyncApi", "SyncApi"]


class SyncApi:
    """The models themselves."""

    name = "sync"

    def model(self, model: Any) -> Any:
        return model

    def resumed(self, model: Any) -> tuple[Any, Any]:
        """The models reading the first part and the resumed rest of one read."""
        return model, model

    def save(self, item: Any) -> None:
        item.save()


SYNC = SyncApi()


class _Iterator:
    """A sync iterator over an async one, each step run on the loop.

    Started at once (``await``), as the sync read is: its cursor is there before the
    first item, so a read stopped after none resumes like the sync one.
    """

    def __init__(self, runner: asyncio.Runner, results: Any) -> None:
        self._runner = runner
        self._results = runner.run(results.start())

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        try:
            return self._runner.run(self._results.__anext__())
        except StopAsyncIteration:
            raise StopIteration from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._results, name)  # last_evaluated_key, total_count, ...


class _Batch:
    def __init__(self, runner: asyncio.Runner, batch: Any) -> None:
        self._runner = runner
        self._batch = batch

    def __enter__(self) -> _Batch:
        self._runner.run(self._batch.__aenter__())
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Any:
        return self._runner.run(self._batch.__aexit__(exc_type, exc, tb))

    def save(self, item: Any) -> None:
        self._runner.run(self._batch.save(item))

    def delete(self, item: Any) -> None:
        self._runner.run(self._batch.delete(item))


class _AsyncModel:
    """A model class whose reads and writes go through its coroutine twins."""

    def __init__(self, runner: asyncio.Runner, model: Any) -> None:
        self._runner = runner
        self._model = model

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)  # attributes for conditions, DoesNotExist, ...

    def query(self, *args: Any, **kwargs: Any) -> _Iterator:
        return _Iterator(self._runner, self._model.aquery(*args, **kwargs))

    def scan(self, *args: Any, **kwargs: Any) -> _Iterator:
        return _Iterator(self._runner, self._model.ascan(*args, **kwargs))

    def batch_get(self, *args: Any, **kwargs: Any) -> _Iterator:
        return _Iterator(self._runner, self._model.abatch_get(*args, **kwargs))

    def get(self, *args: Any, **kwargs: Any) -> Any:
        return self._runner.run(self._model.aget(*args, **kwargs))

    def count(self, *args: Any, **kwargs: Any) -> int:
        result: int = self._runner.run(self._model.acount(*args, **kwargs))
        return result

    def add(self, *args: Any, **kwargs: Any) -> None:
        self._runner.run(self._model.aadd(*args, **kwargs))

    def batch_write(self, *args: Any, **kwargs: Any) -> _Batch:
        return _Batch(self._runner, self._model.abatch_write(*args, **kwargs))


class AsyncApi:
    """The coroutine twins, run on ``runner``'s event loop."""

    name = "async"

    def __init__(self, runner: asyncio.Runner) -> None:
        self.runner = runner
        self._orders = itertools.cycle([("async", "sync"), ("sync", "async"), ("async", "async")])

    def model(self, model: Any) -> Any:
        return _AsyncModel(self.runner, model)

    def resumed(self, model: Any) -> tuple[Any, Any]:
        first, rest = next(self._orders)
        pick = {"sync": model, "async": self.model(model)}
        return pick[first], pick[rest]

    def save(self, item: Any) -> None:
        self.runner.run(item.asave())
