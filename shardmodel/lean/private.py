"""The private names of botocore the lean path relies on, checked against the installed one.

The lean path stands in for parts of botocore's request path and reads names botocore
does not promise to keep. Each is listed here and checked once per process (the names
of a client instance, once per client): a botocore that lacks one, or whose
``AWSPreparedRequest`` takes no ``context`` (botocore before 1.40.62 or so: installing
``aioboto3`` beside shardmodel can bring one), makes :func:`missing` name it, and the
lean path steps aside to botocore's own path for that client, with a
:class:`LeanFallbackWarning` naming the name and the installed version, instead of a
``TypeError`` in a user's query.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any

__all__ = [
    "CLIENT_NAMES",
    "MODULE_NAMES",
    "LeanFallbackWarning",
    "missing",
    "missing_on",
    "protocol",
]


class LeanFallbackWarning(UserWarning):
    """The installed botocore lacks a name the lean path uses: botocore sends instead."""


#: (module, class or function, attribute): names looked up on botocore's modules.
MODULE_NAMES: tuple[tuple[str, str, str | None], ...] = (
    ("botocore.hooks", "HierarchicalEmitter", "_emit"),
    ("botocore.hooks", "logger", None),
    ("botocore.endpoint", "Endpoint", "_send_request"),
    ("botocore.endpoint", "Endpoint", "_add_modeled_error_fields"),
    ("botocore.client", "BaseClient", "_make_api_call"),
    ("botocore.awsrequest", "AWSPreparedRequest", None),
    ("botocore.context", "start_as_current_context", None),
)

#: Attribute paths read on a botocore DynamoDB client instance.
CLIENT_NAMES: tuple[str, ...] = (
    "_request_signer._credentials",
    "_request_signer._region_name",
    "_request_signer._signing_name",
    "_serializer",
    "_endpoint._response_parser_factory",
    "_endpoint._update_retries_context",
    "_endpoint.http_session",
    "_resolve_endpoint_ruleset",
    "_user_agent_creator",
)


def protocol(service_model: Any) -> str:
    """The wire protocol botocore speaks to a service: ``resolved_protocol`` where botocore
    has it (it chooses among a model's ``protocols``), else the model's one ``protocol``
    (botocore before 1.35 or so, inside the range setup.cfg allows)."""
    resolved = getattr(service_model, "resolved_protocol", None)
    return str(resolved if resolved is not None else service_model.protocol)


def _version() -> str:
    import botocore

    return str(getattr(botocore, "__version__", "unknown"))


@functools.lru_cache(maxsize=1)
def missing() -> str | None:
    """The first module-level name the installed botocore lacks (None: it has them all)."""
    import importlib

    for module_name, owner, attribute in MODULE_NAMES:
        try:
            found: Any = getattr(importlib.import_module(module_name), owner)
        except (ImportError, AttributeError):
            return f"{module_name}.{owner}"
        if attribute is not None and not hasattr(found, attribute):
            return f"{module_name}.{owner}.{attribute}"
    from botocore.awsrequest import AWSPreparedRequest

    if "context" not in inspect.signature(AWSPreparedRequest.__init__).parameters:
        return "botocore.awsrequest.AWSPreparedRequest(context=...)"
    return None


def missing_on(client: Any) -> str | None:
    """The first private name the lean path needs that botocore or ``client`` lacks."""
    name = missing()
    if name is None:
        for path in CLIENT_NAMES:
            found: Any = client
            for part in path.split("."):
                found = getattr(found, part, _ABSENT)
                if found is _ABSENT:
                    name = f"client.{path}"
                    break
            if name is not None:
                break
    if name is not None:
        _warn(name)
    return name


_ABSENT = object()


@functools.cache
def _warn(name: str) -> None:
    """Say once per name that the lean path stepped aside, and why."""
    warnings.warn(
        f"botocore {_version()} lacks {name}, which shardmodel's lean request path uses: "
        "requests go through botocore's own path instead (correct, slower); install a "
        "botocore within shardmodel's tested range (see the lean request path docs)",
        LeanFallbackWarning,
        stacklevel=4,
    )
