"""A botocore client's event handlers, called as its emitter calls them, for less CPU.

The lean path emits botocore's events so that every handler (botocore's, PynamoDB's,
moto's, the testing toolkit's, a user's) still runs. botocore's ``EventAliaser`` and
``HierarchicalEmitter`` spend about 2 µs an event before any handler runs (an alias
look-up, a debug-log call per handler, a response list), seven events a request.
:class:`Hooks` calls the same handlers, found in the emitter's own look-up cache (which
botocore replaces whenever a handler is registered or unregistered), in the same order,
with the same arguments and ``event_name``. It hands the event to the emitter itself
when botocore's debug log is on (it writes a line per handler), when an event name has
an alias, or when the client's events are not botocore's own classes.

:meth:`Hooks.needs_retry` also knows one answer without asking: botocore's standard
retry handler never retries a first-try 2xx response whose body matches its
``x-amz-crc32`` checksum (no error code, no exception; every standard checker says no
and none has a side effect then), so it is not called for one. Any other handler on
``needs-retry``, a retry context, a checksum mismatch or any other response goes
through the handlers as before.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any
from zlib import crc32

from botocore import hooks
from botocore.retries import standard

__all__ = ["Hooks"]

_Handlers = Sequence[Any]


class Hooks:
    """Emits one botocore client's events (``client.meta.events``)."""

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
        #: per event name: the handler list last checked, and whether it is the
        #: standard retry handler alone
        self._retry_checked: dict[str, tuple[_Handlers, bool]] = {}

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

    def has_handlers(self, name: str) -> bool:
        """False only when emitting ``name`` surely calls nothing (skip building its kwargs)."""
        found = self._handlers(name)
        return found is None or bool(found)

    def emit(self, name: str, **kwargs: Any) -> list[tuple[Any, Any]]:
        """``events.emit(name, **kwargs)``."""
        return self._emit(name, self._handlers(name), kwargs)

    def _emit(
        self, name: str, found: _Handlers | None, kwargs: dict[str, Any]
    ) -> list[tuple[Any, Any]]:
        """Call ``found`` (looked up already) as the emitter would; None: the emitter does."""
        if found is None:
            result: list[tuple[Any, Any]] = self.events.emit(name, **kwargs)
            return result
        if not found:
            return []
        kwargs["event_name"] = name
        return [(handler, handler(**kwargs)) for handler in found]

    def emit_until_response(self, name: str, **kwargs: Any) -> tuple[Any, Any]:
        """``events.emit_until_response(name, **kwargs)``."""
        found = self._handlers(name)
        if found is None:
            answer: tuple[Any, Any] = self.events.emit_until_response(name, **kwargs)
            return answer
        kwargs["event_name"] = name
        handler = response = None
        for handler in found:
            response = handler(**kwargs)
            if response is not None:
                break
        return handler, response  # as botocore: the last handler called, if none answered

    def needs_retry(
        self,
        name: str,
        http: Any,
        parsed: Any,
        exception: Exception | None,
        attempts: int,
        request_dict: dict[str, Any],
        **kwargs: Any,
    ) -> list[tuple[Any, Any]]:
        """``events.emit(name, ...)`` for ``needs-retry``; the standard handler's known no.

        ``kwargs``: the event's other arguments (``endpoint``, ``operation``).
        """
        found = self._handlers(name)
        if (
            found is not None
            and attempts == 1
            and exception is None
            and "retries" not in request_dict["context"]
            and self._standard_retry_alone(name, found)
            and _clean_success(http, parsed)
        ):
            return [(found[0], None)]
        kwargs.update(
            response=None if http is None else (http, parsed),
            attempts=attempts,
            caught_exception=exception,
            request_dict=request_dict,
        )
        return self._emit(name, found, kwargs)

    def _standard_retry_alone(self, name: str, found: _Handlers) -> bool:
        checked = self._retry_checked.get(name)
        if checked is not None and checked[0] is found:
            return checked[1]
        alone = len(found) == 1 and _is_standard_retry(found[0])
        self._retry_checked[name] = (found, alone)
        return alone


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
