"""A botocore client's event handlers, called as its emitter calls them, for less CPU.

The lean path emits botocore's events so that every handler (botocore's, PynamoDB's,
moto's, the testing toolkit's, a user's) still runs. botocore's ``EventAliaser`` and
``HierarchicalEmitter`` spend about 2 µs an event before any handler runs (an alias
look-up, a debug-log call per handler, a response list), seven events a request.
:meth:`Hooks.resolve` finds one operation's handlers for every event at once, in the
emitter's own look-up cache, and keeps them until botocore replaces that cache (it does
whenever a handler is registered or unregistered); :func:`first_answer` and
:func:`until_answer` call them in the same order, with the same arguments and
``event_name``, and give the answer botocore's ``emit`` or ``emit_until_response``
would, without building the list of every response. Where the emitter must be asked
(botocore's debug log is on, an event name has an alias, the client's events are not
botocore's own classes), an event's list holds one stand-in that asks it.

:func:`retry_delay` also knows one answer without asking: botocore's standard
retry handler never retries a first-try 2xx response whose body matches its
``x-amz-crc32`` checksum (no error code, no exception; every standard checker says no
and none has a side effect then), so it is not called for one. Any other handler on
``needs-retry``, a retry context, a checksum mismatch or any other response goes
through the handlers as before.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any, NamedTuple
from zlib import crc32

from botocore import handlers as botocore_handlers
from botocore import hooks
from botocore.retries import standard
from pynamodb.connection.base import Connection

__all__ = [
    "EventNames",
    "Hooks",
    "Resolved",
    "first_answer",
    "may_wait",
    "nonblocking",
    "quiet_send",
    "rate_limited",
    "retry_delay",
    "until_answer",
]

_Handlers = Sequence[Any]


class Hooks:
    """Finds one botocore client's event handlers (``client.meta.events``)."""

    def __init__(self, events: Any) -> None:
        self.events = events
        emitter = getattr(events, "_emitter", None)
        direct = (
            type(events) is hooks.EventAliaser
            and type(emitter) is hooks.HierarchicalEmitter
            and isinstance(getattr(emitter, "_lookup_cache", None), dict)
            and hasattr(emitter, "_handlers")
        )
        self._emitter: Any = emitter if direct else None
        self._unaliased: dict[str, bool] = {}
        #: per operation's event names: botocore's look-up cache when its handlers were
        #: found, and them; valid while botocore keeps that cache (it makes a new one on
        #: every registration), whichever thread found them
        self._resolved: dict[EventNames, tuple[Any, Resolved]] = {}

    def _handlers(self, name: str) -> _Handlers | None:
        """The handlers botocore's emitter would call for ``name`` (None: ask the emitter)."""
        emitter = self._emitter
        if emitter is None or hooks.logger.isEnabledFor(logging.DEBUG):
            return None
        unaliased = self._unaliased.get(name)
        if unaliased is None:
            unaliased = self._unaliased[name] = self.events._alias_event_name(name) == name
        if not unaliased:
            return None
        cache = emitter._lookup_cache
        found: _Handlers | None = cache.get(name)
        if found is None:  # as HierarchicalEmitter._emit fills its cache
            found = emitter._handlers.prefix_search(name)
            cache[name] = found
        return found

    def resolve(self, names: EventNames, model: Any) -> Resolved:
        """Every event's handlers of one operation, looked up once for a request.

        ``model``: the operation's botocore model; botocore's own handlers that do
        nothing for it whatever the request (:func:`_idle_for`) are left out.
        """
        emitter = self._emitter
        cache = None
        if emitter is not None and not hooks.logger.isEnabledFor(logging.DEBUG):
            cache = emitter._lookup_cache
            kept = self._resolved.get(names)
            if kept is not None and kept[0] is cache:
                return kept[1]
        lists = [self._handlers(name) for name in names]
        handlers: list[_Handlers] = [
            (_Through(self.events, name, until=index == _UNTIL),)
            if listed is None
            else tuple(_stand_in(handler) for handler in listed if not _idle_for(handler, model))
            for index, (name, listed) in enumerate(zip(names, lists, strict=True))
        ]
        retry = lists[_RETRY]
        standard = retry is not None and len(retry) == 1 and _is_standard_retry(retry[0])
        adders = [_extra_headers_of(handler) for handler in handlers[_SEND]]
        quiet = None if any(a is None for a in adders) else tuple(adders)
        safe = all(_never_blocks(h) for listed in handlers for h in listed)
        seed = _seeded_max(self._handlers("request-created." + names.provide.split(".", 1)[1]))
        resolved = Resolved._make([*handlers, names, standard, quiet, safe, seed])
        if cache is not None and all(listed is not None for listed in lists):
            # kept with the look-up cache read before the lists: lists found after a
            # registration are newer than it, never older (else asked anew each time)
            self._resolved[names] = (cache, resolved)
        return resolved


class EventNames(NamedTuple):
    """One operation's event names, in the order a request emits them."""

    provide: str
    parameters: str
    before_call: str
    before_send: str
    received: str
    retry: str
    after_call: str
    after_error: str

    @classmethod
    def of(cls, suffix: str) -> EventNames:
        """The names for ``<service id>.<operation>``."""
        return cls(
            *(
                f"{event}.{suffix}"
                for event in (
                    "provide-client-params",
                    "before-parameter-build",
                    "before-call",
                    "before-send",
                    "response-received",
                    "needs-retry",
                    "after-call",
                    "after-call-error",
                )
            )
        )


#: where ``before-call``, ``before-send`` and ``needs-retry`` sit in :class:`EventNames`
_UNTIL, _SEND, _RETRY = 2, 3, 5


class Resolved(NamedTuple):
    """One operation's handlers, per event, in the order the emitter would call them."""

    provide: _Handlers
    parameters: _Handlers
    before_call: _Handlers
    before_send: _Handlers
    received: _Handlers
    retry: _Handlers
    after_call: _Handlers
    after_error: _Handlers
    #: the events' names (a handler is told the name it is called for)
    names: EventNames
    #: ``needs-retry`` has botocore's standard retry handler alone
    standard_retry: bool
    #: every ``before-send`` handler is PynamoDB's, which adds its connection's extra
    #: headers: those connections (the event changes nothing while none has any); None
    #: where another handler listens
    send_adders: tuple[Any, ...] | None
    #: every handler is one that never blocks its thread (:func:`nonblocking`), so many
    #: requests may wait together on one thread's event loop
    never_block: bool
    #: the attempts botocore's standard retry mode writes in a first attempt's
    #: ``amz-sdk-request`` (its ``request-created`` handler seeds them), else None
    seed_max: int | None = None


def _seeded_max(listed: Any) -> int | None:
    """The attempts botocore's retry handler among ``request-created``'s handlers writes
    into a first attempt's retries context (None: it has none, as older botocore)."""
    for handler in listed or ():
        if getattr(handler, "__name__", None) == "seed_max_attempts":
            found = getattr(getattr(handler, "__self__", None), "_max_attempts", None)
            return found if isinstance(found, int) else None
    return None


#: packages whose event handlers never block the thread they run in: they compute, or
#: wait through :mod:`shardmodel.core.bridge` (an event loop's way inside an async call)
_NEVER_BLOCKING = frozenset({"botocore", "pynamodb", "shardmodel", "moto"})
_MARK = "shardmodel_nonblocking"


def nonblocking(handler: Any) -> Any:
    """Mark a botocore event handler as one that never blocks its thread; returns it.

    A sync merged query sends its shard requests on the calling thread's event loop
    only while every handler of their events is marked so, or is botocore's,
    PynamoDB's, moto's or shardmodel's own: a handler that sleeps or does I/O there
    would hold every other shard's request (see ``docs/lean.rst``). Mark a function
    (a method's function, in its class), not a bound method.
    """
    setattr(handler, _MARK, True)
    return handler


#: botocore's modules whose handlers may wait: adaptive mode's client rate limiter sleeps
#: in ``TokenBucket.acquire`` (a ``Condition.wait``) until its bucket has a token.
_MAY_WAIT = ("botocore.retries.adaptive", "botocore.retries.bucket")


def _module_of(handler: Any) -> str | None:
    target = getattr(handler, "func", handler)  # a functools.partial's function
    target = getattr(target, "__func__", target)  # a bound method's function
    module = getattr(target, "__module__", None)
    return module if isinstance(module, str) else None


def may_wait(handler: Any) -> bool:
    """True for a botocore handler that may wait for its turn (adaptive rate limiting)."""
    module = _module_of(handler)
    return module is not None and module.startswith(_MAY_WAIT)


def rate_limited(resolved: Resolved, config: Any) -> bool:
    """True when a ``before-send`` handler is adaptive mode's rate limiter (where the
    emitter's handlers cannot be seen here, when the client's config asks for that mode)."""
    if any(type(handler) is _Through for handler in resolved.before_send):
        retries = getattr(config, "retries", None) or {}
        return retries.get("mode") == "adaptive"
    return any(may_wait(handler) for handler in resolved.before_send)


def _never_blocks(handler: Any) -> bool:
    if getattr(handler, _MARK, False) is True:
        return True
    if type(handler) is _Through:
        return False  # the emitter's handlers, unknown here
    module = _module_of(handler)
    if module is None or may_wait(handler):
        return False
    return module.partition(".")[0] in _NEVER_BLOCKING


def first_answer(handlers: _Handlers, **kwargs: Any) -> Any:
    """Call every handler, as botocore's ``emit`` does; the first answer not None."""
    answer = None
    for handler in handlers:
        response = handler(**kwargs)
        if answer is None:
            answer = response
    return answer


def until_answer(handlers: _Handlers, **kwargs: Any) -> Any:
    """Call handlers until one answers, as ``emit_until_response`` does; its answer."""
    for handler in handlers:
        response = handler(**kwargs)
        if response is not None:
            return response
    return None


def retry_delay(
    resolved: Resolved,
    http: Any,
    parsed: Any,
    exception: Exception | None,
    attempts: int,
    request_dict: dict[str, Any],
    **kwargs: Any,
) -> Any:
    """The ``needs-retry`` answer (a delay, or None or False: no retry).

    Not asked of botocore's standard retry handler alone where its answer is known
    (see the module). ``kwargs``: the event's other arguments.
    """
    if (
        resolved.standard_retry
        and attempts == 1
        and exception is None
        and "retries" not in request_dict["context"]
        and _clean_success(http, parsed)
    ):
        return None
    return first_answer(
        resolved.retry,
        response=None if http is None else (http, parsed),
        attempts=attempts,
        caught_exception=exception,
        request_dict=request_dict,
        event_name=resolved.names.retry,
        **kwargs,
    )


class _Through:
    """A stand-in handler that emits the event through the emitter itself.

    Where the handlers cannot be called directly (botocore's debug log is on, the name
    has an alias, the events are not botocore's classes), one call emits the event as
    botocore would and answers what it answered.
    """

    __slots__ = ("events", "name", "until")

    def __init__(self, events: Any, name: str, until: bool) -> None:
        self.events = events
        self.name = name
        self.until = until

    def __call__(self, **kwargs: Any) -> Any:
        kwargs.pop("event_name", None)
        if self.until:
            return self.events.emit_until_response(self.name, **kwargs)[1]
        responses = self.events.emit(self.name, **kwargs)
        return next((r for _, r in responses if r is not None), None)


def _idle_for(handler: Any, model: Any) -> bool:
    """Whether ``handler`` is one of botocore's own that does nothing for ``model``.

    Each reads only the operation's model to decide: an idempotency token only for an
    operation with idempotent members, the API version header only for an endpoint
    discovery operation, the response validation member only for an operation naming
    one.
    """
    if handler is botocore_handlers.generate_idempotent_uuid:
        return not model.idempotent_members
    if handler is botocore_handlers.inject_api_version_header_if_needed:
        return not model.is_endpoint_discovery_operation
    if handler is getattr(botocore_handlers, "_handle_request_validation_mode_member", _NONE):
        return model.http_checksum.get("requestValidationModeMember") is None
    return False


_NONE = object()

#: ``os.environ``'s own store and the encoded name of the variable botocore asks first
_ENVIRON: Any = getattr(os.environ, "_data", None)
_LAMBDA: Any = (
    os.environ.encodekey("AWS_LAMBDA_FUNCTION_NAME")
    if _ENVIRON is not None and hasattr(os.environ, "encodekey")
    else None
)


def _recursion_header(**kwargs: Any) -> Any:
    """botocore's ``add_recursion_detection_header``, asked only inside AWS Lambda.

    It adds a trace header when ``AWS_LAMBDA_FUNCTION_NAME`` is set (and a trace id):
    outside Lambda it does nothing, which one look-up in the environment's own store
    tells (the mapping's ``in`` raises and catches a ``KeyError`` for a missing name,
    twice a request in botocore's handler). The environment is read on every request.
    """
    if _LAMBDA not in _ENVIRON:  # chosen as the stand-in only where _LAMBDA is known
        return None
    return botocore_handlers.add_recursion_detection_header(**kwargs)


def _stand_in(handler: Any) -> Any:
    """``handler``, or a cheaper stand-in that does the same (compared by identity: a
    user's handler need not be hashable)."""
    if handler is botocore_handlers.add_recursion_detection_header and _LAMBDA is not None:
        return _recursion_header
    return handler


def quiet_send(resolved: Resolved) -> bool:
    """Whether emitting ``before-send`` now would change nothing and answer nothing.

    True when its only handlers are PynamoDB's and none of their connections has extra
    headers to add (read now: a connection's may change): the request object the event
    carries need not be built.
    """
    adders = resolved.send_adders
    if adders is None:
        return False
    for connection in adders:  # noqa: SIM110 - no generator a request
        if connection._extra_headers is not None:
            return False
    return True


def _extra_headers_of(handler: Any) -> Any:
    """The PynamoDB connection of a ``before-send`` handler that is its ``_before_send``."""
    if getattr(handler, "__func__", None) is not _PYNAMODB_BEFORE_SEND:
        return None
    return handler.__self__


_PYNAMODB_BEFORE_SEND = getattr(Connection, "_before_send", _NONE)


def _is_standard_retry(handler: Any) -> bool:
    """botocore's standard-mode retry handler, with its standard conditions."""
    owner = getattr(handler, "__self__", None)
    if type(owner) is not standard.RetryHandler:
        return False
    if getattr(handler, "__func__", None) is not getattr(
        standard.RetryHandler, "needs_retry", None
    ):
        return False
    policy = getattr(owner, "_retry_policy", None)
    if type(policy) is not standard.RetryPolicy:
        return False
    return type(getattr(policy, "_retry_checker", None)) is standard.StandardRetryConditions


def _clean_success(http: Any, parsed: Any) -> bool:
    """A 2xx response without an error whose checksum (if sent) matches its body."""
    if http is None or not 200 <= http.status_code < 300:
        return False
    if not isinstance(parsed, dict) or "Error" in parsed:
        return False
    checksum = http.headers.get("x-amz-crc32")
    if checksum is None:
        return True
    try:
        expected = int(checksum)
    except ValueError:
        return False  # botocore's checker decides what a malformed header means
    return crc32(http.content) & 0xFFFFFFFF == expected
