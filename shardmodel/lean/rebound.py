"""A PynamoDB ``Connection`` whose requests go to another client, all its state the original's.

PynamoDB's ``Connection`` builds every request (``put_item``, ``query``, ...) and hands it
to ``self.client._make_api_call``. A rebound connection runs those same methods with
``self`` itself, so each request reaches the stand-in its :attr:`client` names (the
async one, the traced one), while everything else is read live from the original.
"""

from __future__ import annotations

import copy
import inspect
import threading
import types
import weakref
from typing import Any, ClassVar

from pynamodb.connection.base import Connection

__all__ = ["ReboundConnection", "TwinTables"]

#: Connection's attribute names -> its plain function of that name (None: not one)
_methods: dict[str, types.FunctionType | None] = {}
_UNKNOWN: Any = object()


class ReboundConnection:
    """PynamoDB's own methods bound to this object; :attr:`client` says where they send.

    A subclass names its stand-in: ``stand_in(botocore_client)``, the object each
    request goes to (built once per client by that function).
    """

    stand_in: ClassVar[staticmethod[[Any], Any]]

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
        """The stand-in for the original connection's current botocore client."""
        return type(self).stand_in(self._origin.client)


class TwinTables:
    """Each PynamoDB ``TableConnection``'s twin whose connection is a ``kind`` of
    :class:`ReboundConnection` (made once per table connection, held weakly by it)."""

    def __init__(self, kind: type[ReboundConnection]) -> None:
        self._kind = kind
        self._twins: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def of(self, connection: Any) -> Any:
        """The twin of ``connection``: a copy whose ``connection`` is rebound, and whose
        ``twin_of`` is the original."""
        found = self._twins.get(connection)
        if found is not None:
            return found
        with self._lock:
            found = self._twins.get(connection)
            if found is None:
                found = copy.copy(connection)
                found.connection = self._kind(connection.connection)
                found.twin_of = connection
                self._twins[connection] = found
            return found
