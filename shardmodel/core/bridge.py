"""Running the synchronous engine on an asyncio event loop, without threads.

The async API (``await Model.aget(...)``, ``async for item in Model.aquery(...)``) runs
the very code the sync API runs: planning, placement, merging, cursors, validation,
growth of dynamic keys, counters, migration rules. Each call runs it in a greenlet (a
stack of its own, switched in the event loop's thread). Where that code would block,
at the bottom of the house (a socket read, a retry's sleep, waiting for a shard's page),
it hands an awaitable to the event loop (:func:`await_`) and is resumed with its result,
so the loop serves other coroutines meanwhile. SQLAlchemy's asyncio extension works the
same way, for the same reason: one copy of the logic above the transport.

A switch costs well under a microsecond; starting a greenlet a few (both measured in
``benchmarks/aio_bench.py``). ``greenlet`` is a dependency, imported here alone, when an
async call or a sync read's fan-out on its thread's loop first needs it; where it cannot
be imported the sync path keeps to the worker threads. The two paths part where code asks
:func:`in_async` (one context variable).

Inside a call, :func:`in_async` is true: the executor, the lean client and the sleeps
below ask it to choose the event loop's way over the blocking one. Each call runs in a
copy of the caller's context, so a context variable set in one coroutine's operation
(the migration view a write holds, its attempt log) is not seen by another.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Self, TypeVar

__all__ = [
    "AsyncStream",
    "await_",
    "call",
    "has_greenlet",
    "in_async",
    "require_greenlet",
    "run_blocking",
    "sleep",
]

_T = TypeVar("_T")

#: True inside an async call's greenlet (its context is a copy with this set).
_ASYNC: contextvars.ContextVar[bool] = contextvars.ContextVar("shardmodel_async", default=False)


class _Wait:
    """What a greenlet hands its parent: an awaitable to await on its behalf."""

    __slots__ = ("awaitable",)

    def __init__(self, awaitable: Awaitable[Any]) -> None:
        self.awaitable = awaitable


def in_async() -> bool:
    """True when the calling code runs inside an async call (see the module)."""
    return _ASYNC.get()


_greenlet: Any = None  # the module, once an async call has needed it


def require_greenlet() -> Any:
    """The ``greenlet`` module, or a clear error naming the extra to install."""
    global _greenlet
    if _greenlet is not None:
        return _greenlet
    try:
        import greenlet
    except ImportError:  # pragma: no cover - a dependency: installed in tests
        from shardmodel.errors import ShardConfigurationError

        raise ShardConfigurationError(
            "the async API needs the greenlet package, a dependency of shardmodel that "
            "cannot be imported here: pip install greenlet"
        ) from None
    _greenlet = greenlet
    return greenlet


_installed: bool | None = None  # whether greenlet imports (a failed import is not cached)


def has_greenlet() -> bool:
    """True when the ``async`` extra (greenlet) is installed; asked of the import once."""
    global _installed
    if _installed is None:
        try:
            require_greenlet()
        except Exception:  # the extra's absence, as require_greenlet reports it
            _installed = False
        else:
            _installed = True
    return _installed


def await_(awaitable: Awaitable[_T]) -> _T:
    """Wait for ``awaitable`` on the event loop, from synchronous code in an async call.

    Raises:
        RuntimeError: called outside an async call (there is no loop to hand it to).
    """
    if not _ASYNC.get():
        close = getattr(awaitable, "close", None)
        if close is not None:
            close()  # a coroutine never awaited would warn
        raise RuntimeError("await_() outside an async call: use the a-prefixed API")
    greenlet = require_greenlet()
    parent = greenlet.getcurrent().parent
    result: _T = parent.switch(_Wait(awaitable))
    return result


def _context() -> contextvars.Context:
    context = contextvars.copy_context()
    context.run(_ASYNC.set, True)
    return context


async def call(function: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """Run ``function(*args, **kwargs)`` in a greenlet; await what it hands over.

    The greenlet is one of the thread's idle ones when there is one (see :class:`_Idle`).
    """
    child = _lend()
    step = child.switch(function, args, kwargs)
    while type(step) is _Wait:
        step = await _resume(child, step)
    _give_back(child)
    if type(step) is _Raised:
        raise step.error
    result: _T = step
    return result


class _Raised:
    """What a call's greenlet hands back when the call raised."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _serve(function: Callable[..., Any], args: Any, kwargs: Any) -> None:
    """A pooled greenlet's life: run a call, hand back its outcome, wait for the next.

    A greenlet's start and end cost several microseconds (its stack and its Python frame
    memory are made and freed); a switch into a waiting one, well under one.
    """
    getcurrent = _greenlet.getcurrent
    exit_ = _greenlet.GreenletExit
    while True:
        try:
            outcome: Any = function(*args, **kwargs)
        except exit_:
            raise  # killed (its task gone): this greenlet ends, never back in the pool
        except BaseException as error:
            outcome = _Raised(error)
        function = args = kwargs = None  # type: ignore[assignment]
        function, args, kwargs = getcurrent().parent.switch(outcome)


#: the most idle greenlets a thread keeps for later calls
_IDLE_KEPT = 256


class _Idle(threading.local):
    """The calling thread's idle greenlets (a greenlet belongs to its thread)."""

    def __init__(self) -> None:
        self.greenlets: list[Any] = []


_idle = _Idle()


def _lend() -> Any:
    """One of the thread's idle greenlets (a new one when none is), its parent the caller
    and its context a fresh copy of the caller's: switch in with (function, args, kwargs)."""
    greenlet = require_greenlet()
    idle = _idle.greenlets
    child = idle.pop() if idle else greenlet.greenlet(_serve)
    child.parent = greenlet.getcurrent()
    child.gr_context = _context()
    return child


def _give_back(child: Any) -> None:
    """Keep a greenlet whose call has ended for a later one (up to _IDLE_KEPT a thread)."""
    idle = _idle.greenlets
    if len(idle) < _IDLE_KEPT:
        idle.append(child)


async def _resume(child: Any, step: Any) -> Any:
    """Await what ``child`` handed over (a :class:`_Wait`), then switch back into it."""
    try:
        value = await step.awaitable
    except BaseException as error:  # the greenlet's code sees it where it waited
        return child.throw(error)
    return child.switch(value)


def sleep(seconds: float) -> None:
    """``time.sleep``, or, inside an async call, a sleep of this call alone."""
    if _ASYNC.get():
        import asyncio

        await_(asyncio.sleep(seconds))
    else:
        time.sleep(seconds)


def run_blocking(function: Callable[[], _T]) -> _T:
    """``function()``; inside an async call, on the loop's default thread pool.

    For the rare call with no async path (a credential refresh, CloudWatch, a client the
    lean path cannot stand in for), so it does not stop the loop.
    """
    if not _ASYNC.get():
        return function()
    import asyncio

    # the thread sees the caller's context (an attempt log, a held migration view), but
    # not as an async call: its sleeps and requests block that thread alone
    context = contextvars.copy_context()
    context.run(_ASYNC.set, False)
    loop = asyncio.get_running_loop()
    return await_(loop.run_in_executor(None, context.run, function))


class AsyncStream(AsyncIterator[_T]):
    """An async iterator over a synchronous one, driven in one greenlet.

    ``start()`` makes the iterator (inside the greenlet, so it may send requests); each
    ``__anext__`` takes an item the iterator holds already (its ``next_now``) in the
    greenlet's context, or switches into the greenlet until the next item is ready. The
    greenlet is one of the thread's idle ones (as :func:`call`'s), given back at the end.
    """

    def __init__(self, start: Callable[[], Iterator[_T]]) -> None:
        self._start = start
        self._greenlet: Any = None
        self._iterator: Iterator[_T] | None = None
        #: the iterator's ``next_now(missing)`` (a merged query's): its next item when
        #: that needs no wait, taken here without a switch into the greenlet; else missing
        self._next_now: Callable[[Any], Any] | None = None
        self._done = False

    def _run(self) -> Any:
        this = _greenlet.getcurrent()
        iterator = self._iterator = self._start()
        self._next_now = getattr(iterator, "next_now", None)
        this.parent.switch(_STARTED)
        for item in iterator:
            this.parent.switch(item)  # the parent: whichever task asks now
        return _END

    @property
    def iterator(self) -> Iterator[_T] | None:
        """The sync iterator, once started."""
        return self._iterator

    def __aiter__(self) -> AsyncStream[_T]:
        return self

    async def start(self) -> Self:
        """Make the iterator now (planned, arguments checked), before any item is asked."""
        if self._greenlet is None and not self._done:
            await self._step()  # up to _STARTED (or the error start() raised)
        return self

    async def __anext__(self) -> _T:
        child = self._greenlet
        if child is None:
            if self._done:
                raise StopAsyncIteration
            await self._step()  # _STARTED, or the error start() raised
            child = self._greenlet
        take = self._next_now
        if take is not None:
            # in hand already: taken in the greenlet's context, as the greenlet would
            try:
                item: Any = child.gr_context.run(take, _MISSING)
            except BaseException as error:
                self._kill()  # ends, as a raise inside it would
                if isinstance(error, StopIteration):
                    raise StopAsyncIteration from None
                raise
            if item is not _MISSING:
                found: _T = item
                return found
        step = await self._step()
        if step is _END:
            raise StopAsyncIteration
        waited: _T = step
        return waited

    async def _step(self) -> Any:
        """Run the greenlet up to what it hands back next: _STARTED, an item or _END.

        At _END, or when the iterator raised, the greenlet goes back to the idle ones.
        """
        child = self._greenlet
        if child is None:
            child = self._greenlet = _lend()
            step = child.switch(self._run, (), {})
        else:
            child.parent = _greenlet.getcurrent()  # whichever task iterates now
            step = child.switch()
        while type(step) is _Wait:
            step = await _resume(child, step)
        if step is _END or type(step) is _Raised:
            self._greenlet = None
            self._done = True
            _give_back(child)
            if type(step) is _Raised:
                raise step.error
        return step

    def _kill(self) -> None:
        """End the greenlet where it waits (its iterator is finished with)."""
        child, self._greenlet = self._greenlet, None
        self._done = True
        if child is not None and not child.dead:
            child.parent = _greenlet.getcurrent()
            child.throw(_greenlet.GreenletExit)

    async def aclose(self) -> None:
        """Stop: the iterator's ``close`` (a merged query waits out its requests)."""
        close = getattr(self._iterator, "close", None)
        if close is not None:
            await call(close)
        self._kill()


class _End:
    __slots__ = ()


_END = _End()


class _Started:
    __slots__ = ()


_STARTED = _Started()


class _Missing:
    __slots__ = ()


_MISSING = _Missing()
