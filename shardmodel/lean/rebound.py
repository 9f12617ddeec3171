"""A PynamoDB ``Connection`` whose requests go to another client, all its state the original's.

PynamoDB's ``Connection`` builds every request (``put_item``, ``query``, ...) and hands it
to ``self.client._make_api_call``. A rebound connection runs those same methods with
``self`` itself, so each request reaches the stand-in its :attr:`client` names (the
async one, the traced one), while everything else is read live from the original.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

from pynamodb.connection.base import Connection

__all__ = ["ReboundConnection"]

#: Connection's attribute names -> its plain function of that name (None: not one)
_methods: dict[str, types.FunctionType | None] = {}
_UNKNOWN: Any = object()


class ReboundConnection:
    """PynamoDB's own methods bound to this object; :attr:`client` says where they send."""

    def __init__(self, origin: Connection) -> None:
        self._origin = origin

    def __getattr__(self, name: str) -> Any:
        method = _methods.get(name, _UNKNOWN)
        if method is _UNKNOWN:
            found = inspect.getattr_static(Connection, name, None)
            method = found if isinstance(found, types.FunctionType) else None
            _methods[name] = method  # names are few: each is looked up on the class once
        if method is not None:
            bound = types.MethodType(method, self)  # PynamoDB's code, self.client ours
            self.__dict__[name] = bound
            return bound
        return getattr(self._origin, name)  # state, static and class methods, read live

    @property
    def client(self) -> Any:
        """The stand-in requests go to (a subclass names it)."""
        raise NotImplementedError
