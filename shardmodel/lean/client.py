"""A stand-in for a botocore DynamoDB client that sends reads on the lean path.

:class:`LeanClient` has the one method PynamoDB's ``Connection`` calls on its client,
``_make_api_call``. Query and BatchGetItem go through :meth:`LeanClient.call`, which
does what botocore's ``BaseClient._make_api_call`` and ``Endpoint._send_request`` do,
in the same order and through the same client's event system (so every handler a
test, PynamoDB or a user registered there still runs):

1. ``before-call.dynamodb.<Op>`` (a handler may answer the call);
2. per attempt: sign (:mod:`~shardmodel.lean.sigv4`), emit ``before-send`` with a
   botocore ``AWSPreparedRequest`` (a handler may answer it, as in-process moto and the
   capacity simulator do, or raise), else send it (:mod:`~shardmodel.lean.http`);
3. parse: a 2xx body by :func:`shardmodel.lean.fastparse.parse_body`, anything else by the
   client's own botocore parser (errors keep botocore's codes, messages and modeled
   fields such as ``ThrottlingReasons``);
4. ``response-received``, then ``needs-retry``: botocore's own retry handler (standard
   mode: throttles, 5xx, connection errors, its retry quota and back-off), sleeping what
   it returns;
5. ``after-call`` (or ``after-call-error``), and the same modeled ``ClientError``
   subclass botocore raises for an error response.

``provide-client-params`` and ``before-parameter-build`` are emitted before the body is
serialized, as botocore does. The events' handlers are called through
:class:`~shardmodel.lean.hooks.Hooks` (the same handlers, order and arguments, without
the emitter's per-event overhead; botocore's standard retry handler is not asked about
a first-try 2xx response whose checksum matches, whose answer is known to be no).

Where and with which headers: botocore's own request building decides, once per
operation and table (:class:`Wire`): the URL its endpoint ruleset resolves (an
account-ID endpoint, ``https://<account>.ddb.<region>.amazonaws.com``, where the
credentials carry an account and ``account_id_endpoint_mode`` allows it), the ruleset's
headers and the ``User-Agent`` botocore writes for the client. Per call and attempt the
``amz-sdk-invocation-id`` and ``amz-sdk-request`` headers are written as botocore's
endpoint and retry handlers write them. A ruleset that asks for another signer or
signing scope sends the operation through botocore instead.

What it skips of botocore's pipeline: parameter validation (PynamoDB turns it off) and
the ``request-created`` and ``before-sign`` events.
"""

from __future__ import annotations

import base64
import json
import os
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from attrs import field, frozen

from shardmodel.core import telemetry
from shardmodel.core.bridge import sleep
from shardmodel.lean.fastparse import parse_body
from shardmodel.lean.hooks import (
    EventNames,
    Hooks,
    Resolved,
    first_answer,
    quiet_send,
    rate_limited,
    retry_delay,
    until_answer,
)
from shardmodel.lean.http import RESENDABLE, HttpPool
from shardmodel.lean.private import missing_on, protocol
from shardmodel.lean.sigv4 import Signer

__all__ = ["LEAN_OPERATIONS", "LeanClient", "StandIn", "Wire", "lean_client", "unsupported_reason"]

#: Operations sent on the lean path; every other goes to the botocore client.
LEAN_OPERATIONS = frozenset({"Query", "BatchGetItem"})


#: orjson turns an integer past 64 bits into a float; json keeps it an int
_BIG = float(2**63)

try:  # the optional extra ``shardmodel[lean]``: the same values, a third of the CPU
    import orjson

    def _orjson_loads(body: bytes) -> Any:
        decoded = orjson.loads(body)
        if isinstance(decoded, dict):
            # the read outputs hold integers only at the top (Count, ScannedCount):
            # numbers inside items are strings, capacities are doubles
            for value in decoded.values():
                if type(value) is float and abs(value) >= _BIG:
                    return json.loads(body)
        return decoded

    _loads: Any = _orjson_loads

    def _dumps(value: Any) -> bytes:
        dumped: bytes = orjson.dumps(value, default=_blob)
        return dumped

except ImportError:  # pragma: no cover - the stdlib fallback
    _loads = None

    def _dumps(value: Any) -> bytes:
        return json.dumps(value, separators=(",", ":"), default=_blob).encode("utf-8")


def _blob(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


class Headers(dict[str, str]):
    """HTTP headers: a dict whose names are stored and looked up in lower case.

    Stands in for botocore's case-insensitive header maps on the lean path's requests
    and responses, at a fraction of their cost.
    """

    def __init__(self, items: Any = ()) -> None:
        super().__init__()
        self.update(items)

    def __setitem__(self, name: str, value: str) -> None:
        super().__setitem__(name.lower(), value)

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __delitem__(self, name: str) -> None:
        super().__delitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name.lower() if isinstance(name, str) else name)

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)

    def pop(self, name: str, *default: Any) -> Any:
        return super().pop(name.lower(), *default)

    def setdefault(self, name: str, default: Any = None) -> Any:
        return super().setdefault(name.lower(), default)

    def update(self, items: Any = (), **more: str) -> None:  # type: ignore[override]
        pairs = items.items() if hasattr(items, "items") else items
        for name, value in (*pairs, *more.items()):
            super().__setitem__(name.lower(), value)


def _headers() -> Headers:
    """An empty :class:`Headers`, to be filled with names already in lower case."""
    return dict.__new__(Headers)


class _HttpResponse:
    """What botocore's handlers read of an ``AWSResponse``: status, headers, content."""

    __slots__ = ("content", "headers", "raw", "status_code", "url")

    def __init__(self, url: str, status: int, headers: Headers, content: bytes) -> None:
        self.url = url
        self.status_code = status
        self.headers = headers
        self.content = content
        self.raw = None

    @property
    def text(self) -> str:
        return self.content.decode("utf-8")


def unsupported_reason(client: Any) -> str | None:
    """Why the lean path cannot stand in for ``client`` (None: it can)."""
    from urllib.parse import urlsplit

    meta = client.meta
    model = meta.service_model
    if model.service_name != "dynamodb" or protocol(model) != "json":
        return "not botocore's DynamoDB JSON client"
    parts = urlsplit(meta.endpoint_url or "")
    if parts.scheme not in ("http", "https") or parts.path not in ("", "/") or parts.query:
        return f"endpoint {meta.endpoint_url!r} is not a plain http(s) URL"
    config = meta.config
    signature = getattr(config, "signature_version", None)
    if signature not in (None, "v4"):
        return f"signature version {signature!r}"
    if getattr(config, "client_cert", None):
        return "a client certificate"
    if getattr(config, "endpoint_discovery_enabled", False):
        return "endpoint discovery"
    if (getattr(config, "retries", None) or {}).get("mode") == "adaptive":
        return "adaptive retry mode (its rate limiter waits on a lock the fan-out cannot share)"
    signer = getattr(client, "_request_signer", None)
    if signer is None or getattr(signer, "_credentials", None) is None:
        return "no credentials (unsigned requests)"
    session = getattr(getattr(client, "_endpoint", None), "http_session", None)
    proxies = getattr(session, "_proxy_config", None)
    if proxies is None or proxies.proxy_url_for(meta.endpoint_url) is not None:
        return "a proxy (config or environment)"
    lacking = missing_on(client)
    if lacking is not None:
        return f"the installed botocore lacks {lacking}"
    return None


def _instrumented(client: Any) -> bool:
    """Whether something outside botocore wraps the client's ``_make_api_call``.

    OpenTelemetry's, Datadog's and X-Ray's botocore instrumentation wrap
    ``BaseClient._make_api_call`` (wrapt proxies): a request must pass there to be
    traced. botocore's own decorators wrap it too, so every layer is checked: a plain
    function defined inside botocore is botocore's; anything else is a wrapper.
    """
    import types

    import botocore

    if "_make_api_call" in vars(client):
        return True
    home = os.path.dirname(botocore.__file__)
    layer = next(
        (vars(k)["_make_api_call"] for k in type(client).__mro__ if "_make_api_call" in vars(k)),
        None,
    )
    while layer is not None:
        if type(layer) is not types.FunctionType:
            return True
        if not os.path.abspath(layer.__code__.co_filename).startswith(home):
            return True
        layer = getattr(layer, "__wrapped__", None)
    return False


def lean_client(client: Any) -> LeanClient | None:
    """A :class:`LeanClient` for ``client``, or None when it cannot stand in for it."""
    if unsupported_reason(client) is not None:
        return None
    return LeanClient(client, weak=True)


@frozen
class _Operation:
    """One operation's fixed parts: its model, the names of its events, its headers."""

    model: Any
    suffix: str  # "<service id>.<operation>": the events' common tail
    headers: dict[str, str]  # X-Amz-Target and Content-Type
    lowered: dict[str, str]  # the same, names in lower case (what Headers stores)
    events: EventNames = field(init=False)
    resource: Callable[[dict[str, Any]], Any] = field(init=False)  # the endpoint's inputs

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "events", EventNames.of(self.suffix))
        object.__setattr__(self, "resource", _resource(self.model))


@frozen
class Wire:
    """Where botocore sends one operation's requests for one table, and its fixed headers.

    ``signed``: the headers signed (target, content type, the endpoint ruleset's), as
    given and in lower case; ``user_agent``: botocore's ``User-Agent`` for the client.
    """

    url: str
    signed: dict[str, str]
    lowered: dict[str, str]
    user_agent: str


def _resource(model: Any) -> Callable[[dict[str, Any]], Any]:
    """The parameters an operation's endpoint depends on (its ruleset's context
    parameters: the table name or ARN, a batch's tables), as a dict key."""
    import jmespath

    members = tuple(parameter.member_name for parameter in model.context_parameters)
    paths = tuple(
        jmespath.compile(spec["path"])
        for spec in (getattr(model, "operation_context_parameters", None) or ())
        if isinstance(spec, dict) and "path" in spec
    )
    if not paths and len(members) == 1:
        (member,) = members
        return lambda params: params.get(member)  # a table's name: the common case

    def key(params: dict[str, Any]) -> Any:
        found = [params.get(member) for member in members]
        for path in paths:
            value = path.search(params)
            found.append(tuple(value) if isinstance(value, list) else value)
        return tuple(found)

    return key


class StandIn:
    """What stands in for a botocore client keeps it: strongly, or weakly when the library
    keeps the stand-in in a table keyed weakly by that client (nothing set on the client,
    and a dropped client is freed as it would be without shardmodel)."""

    def __init__(self, client: Any, *, weak: bool = False) -> None:
        self._client: Callable[[], Any] = weakref.ref(client) if weak else (lambda: client)
        self.meta = client.meta

    @property
    def client(self) -> Any:
        """The botocore client this stands in for (alive whenever this is reached)."""
        found = self._client()
        if found is None:  # pragma: no cover - reached only through the live client
            raise RuntimeError("the botocore client of this stand-in was freed")
        return found


class LeanClient(StandIn):
    """Sends Query and BatchGetItem for a botocore DynamoDB client, anything else through it.

    Same endpoint, region, credentials (asked of the client's credential provider per
    request, so refreshed before expiry as botocore refreshes them), TLS verification
    (the client's ``verify``), connect and read timeouts and pool size as the client.
    """

    def __init__(
        self, client: Any, operations: Iterable[str] = LEAN_OPERATIONS, *, weak: bool = False
    ) -> None:
        super().__init__(client, weak=weak)
        meta = client.meta
        #: a tracer's instrumentation wraps the client's ``_make_api_call``: each request
        #: goes through botocore (and is traced there) unless shardmodel traces it itself
        self.instrumented = _instrumented(client)
        self.hooks = Hooks(meta.events)
        service = meta.service_model
        self._service_id = service.service_id.hyphenize()
        self._models = {name: service.operation_model(name) for name in operations}
        prefix = service.metadata["targetPrefix"]
        content_type = f"application/x-amz-json-{service.metadata.get('jsonVersion', '1.0')}"
        self._operations: dict[str, _Operation] = {}
        for name, model in self._models.items():
            headers = {"X-Amz-Target": f"{prefix}.{name}", "Content-Type": content_type}
            self._operations[name] = _Operation(
                model=model,
                suffix=f"{self._service_id}.{name}",
                headers=headers,
                lowered={key.lower(): value for key, value in headers.items()},
            )
        self.url = meta.endpoint_url.rstrip("/") + "/"
        self.pool = self._pool()
        #: the pool of each other URL an endpoint ruleset sent a request to
        self._pools_at: dict[str, Any] = {self.url: self.pool}
        #: (operation, its endpoint's inputs) -> its Wire, or None: botocore sends it
        self._wires: dict[tuple[str, Any], Wire | None] = {}
        request_signer = client._request_signer
        self._request_signer = request_signer
        self.signer = Signer(
            self._credentials,
            region=request_signer._region_name or meta.region_name,
            service=request_signer._signing_name or "dynamodb",
        )

    def _pool(self, url: str | None = None) -> Any:
        """The sockets to ``url`` (the client's endpoint): the client's timeouts, TLS
        verification and pool size."""
        config = self.meta.config
        session = self.client._endpoint.http_session
        return HttpPool(
            url or self.url,
            connect_timeout=config.connect_timeout,
            read_timeout=config.read_timeout,
            verify=getattr(session, "_verify", True),
            max_idle=config.max_pool_connections or 10,
        )

    def pool_at(self, url: str) -> Any:
        """The pool of sockets to ``url`` (made on first use)."""
        pool = self._pools_at.get(url)
        if pool is None:
            pool = self._pools_at.setdefault(url, self._pool(url))
        return pool

    def close(self) -> None:
        """Close every socket this client opened."""
        for pool in list(self._pools_at.values()):
            pool.close()

    def wire(self, operation_name: str, api_params: dict[str, Any]) -> Wire | None:
        """Where and with which fixed headers botocore would send this request (None: a
        signer or scope the lean path does not write; botocore sends it)."""
        operation = self._operations[operation_name]
        key = (operation_name, operation.resource(api_params))
        try:
            return self._wires[key]
        except KeyError:
            pass
        wire = self._wires[key] = self._learn(operation, api_params)
        return wire

    def _learn(self, operation: _Operation, api_params: dict[str, Any]) -> Wire | None:
        """Ask botocore's request building what it would send (without sending)."""
        from botocore.context import start_as_current_context

        client = self.client
        model = operation.model
        meta = self.meta
        context: dict[str, Any] = {
            "client_region": meta.region_name,
            "client_config": meta.config,
            "has_streaming_input": model.has_streaming_input,
            "auth_type": model.resolved_auth_type,
            "unsigned_payload": model.unsigned_payload,
            "auth_options": meta.service_model.metadata.get("auth"),
        }
        with start_as_current_context():
            url, extra, _ = client._resolve_endpoint_ruleset(model, api_params, context)
            user_agent = client._user_agent_creator.to_string()
        signing = context.get("signing") or {}
        if (
            context.get("auth_type") not in (None, "v4")
            or signing.get("region", self.signer.region) != self.signer.region
            or signing.get("signing_name", self.signer.service) != self.signer.service
        ):
            return None
        signed = {**operation.headers, **(extra or {})}
        return Wire(
            url=url.rstrip("/") + "/",
            signed=signed,
            lowered={name.lower(): value for name, value in signed.items()},
            user_agent=user_agent,
        )

    def _credentials(self) -> Any:
        """The client's credentials, frozen for one request (refreshed as botocore does)."""
        return self._request_signer._credentials.get_frozen_credentials()

    def _make_api_call(self, operation_name: str, api_params: dict[str, Any]) -> dict[str, Any]:
        if operation_name not in LEAN_OPERATIONS:
            result: dict[str, Any] = self.client._make_api_call(operation_name, api_params)
            return result
        return self.call(operation_name, api_params)

    def _serialize(self, operation_name: str, api_params: dict[str, Any]) -> bytes:
        try:
            body = _dumps(api_params)
        except (TypeError, ValueError):
            body = b'"B'  # not plain JSON: botocore's serializer knows the shapes
        if b'"B' in body:
            # a binary value given as str: botocore base64-encodes its UTF-8 (PynamoDB's
            # legacy encoding); leave every binary to botocore's own serializer
            request = self.client._serializer.serialize_to_request(
                api_params, self._models[operation_name]
            )
            serialized: bytes = request["body"]
            return serialized
        return body

    def rate_limited(self) -> bool:
        """True when botocore's adaptive retry mode limits this client's sending rate.

        Its limiter may wait on a lock for a token: on an event loop that wait would hold
        every coroutine, so an async call's requests then run on threads instead.
        """
        operation = next(iter(self._operations.values()))
        resolved = self.hooks.resolve(operation.events, operation.model)
        return rate_limited(resolved, self.client.meta.config)

    def never_blocks(self, operation_name: str) -> bool:
        """True when no handler of the operation's events may block its thread
        (:func:`~shardmodel.lean.hooks.nonblocking`), now."""
        operation = self._operations[operation_name]
        return self.hooks.resolve(operation.events, operation.model).never_block

    # -- botocore's pipeline, for one call -------------------------------------------

    def call(self, operation_name: str, api_params: dict[str, Any]) -> dict[str, Any]:
        """Send one request; the parsed response, or the exception botocore raises.

        With OpenTelemetry on (:mod:`shardmodel.core.telemetry`), the request and its
        attempts are one span, a child of the logical operation's. On a client a tracer's
        botocore instrumentation wraps, the request goes through botocore, where it is
        traced, unless shardmodel makes that span itself (then botocore's would be a
        second span of the same request, at several times the CPU).
        """
        traced = telemetry.request(operation_name, api_params, self.meta.region_name)
        send = self._send
        if self.instrumented and (traced is None or traced.span is None):
            send = self._elsewhere  # no span of shardmodel's own: the instrumentation's
        if traced is None:
            return send(operation_name, api_params)
        try:
            result = send(operation_name, api_params)
        except BaseException as error:
            traced.failed(error)
            raise
        traced.answered(result)
        return result

    def _send(self, operation_name: str, api_params: dict[str, Any]) -> dict[str, Any]:
        """:meth:`call`'s request, through botocore's events as botocore sends it."""
        from botocore.awsrequest import AWSPreparedRequest

        client = self.client
        operation = self._operations[operation_name]
        names = operation.events
        model = operation.model
        found = self.hooks.resolve(names, model)
        context: dict[str, Any] = {}
        if found.provide:
            replaced = first_answer(
                found.provide,
                params=api_params,
                model=model,
                context=context,
                event_name=names.provide,
            )
            if replaced is not None:
                api_params = replaced
        if found.parameters:
            first_answer(
                found.parameters,
                params=api_params,
                model=model,
                context=context,
                event_name=names.parameters,
            )
        wire = self.wire(operation_name, api_params)
        if wire is None:
            return self._elsewhere(operation_name, api_params)
        url = wire.url
        body = self._serialize(operation_name, api_params)
        request_dict: dict[str, Any] = {
            "url_path": "/",
            "query_string": "",
            "method": "POST",
            "headers": dict(wire.signed),
            "body": body,
            "url": url,
            "context": context,
        }
        answer = until_answer(
            found.before_call,
            model=model,
            params=request_dict,
            request_signer=client._request_signer,
            context=context,
            event_name=names.before_call,
        )
        if answer is not None:
            http, parsed = answer
        else:
            attempts = 0
            pool = self.pool if url == self.url else self.pool_at(url)
            authority = pool.authority
            seed = found.seed_max
            update_retries = client._endpoint._update_retries_context
            context.setdefault("client_config", self.meta.config)
            http = parsed = None
            while True:
                attempts += 1
                # botocore's endpoint: one invocation id, the attempt, the ttl of a reply
                update_retries(context, attempts, None if http is None else (http, parsed))
                retries = context["retries"]
                if seed is not None:
                    retries["max"] = max(retries.get("max", 0), seed)
                sent = request_dict["headers"]
                headers = _headers()
                if sent == wire.signed:  # as built above: no handler added one
                    dict.update(headers, wire.lowered)
                else:
                    headers.update(sent)
                dict.update(headers, self.signer.sign({"host": authority, **headers}, body))
                # the headers botocore adds after signing (its request-created handlers)
                headers["user-agent"] = wire.user_agent
                headers["amz-sdk-invocation-id"] = retries["invocation-id"]
                headers["amz-sdk-request"] = _sdk_request(retries)
                request = (
                    None
                    if quiet_send(found)
                    else AWSPreparedRequest(
                        "POST", url, headers, body, stream_output=False, context=context
                    )
                )
                exception: Exception | None = None
                http = parsed = None
                try:
                    http, parsed = self._attempt(
                        operation, found, request, headers, body, attempts, pool
                    )
                except Exception as error:
                    exception = error
                if found.received:
                    first_answer(
                        found.received,
                        response_dict=None if http is None else _response_dict(http, model),
                        parsed_response=parsed,
                        context=context,
                        exception=exception,
                        event_name=names.received,
                    )
                delay = retry_delay(
                    found,
                    http,
                    parsed,
                    exception,
                    attempts,
                    request_dict,
                    endpoint=client._endpoint,
                    operation=model,
                )
                if delay is None or delay is False:
                    break
                sleep(delay)  # inside an async call, this call's alone
            if parsed is not None and "ResponseMetadata" in parsed:
                parsed["ResponseMetadata"]["RetryAttempts"] = attempts - 1
            if exception is not None:
                first_answer(
                    found.after_error,
                    exception=exception,
                    context=context,
                    event_name=names.after_error,
                )
                raise exception
        first_answer(
            found.after_call,
            http_response=http,
            parsed=parsed,
            model=model,
            context=context,
            event_name=names.after_call,
        )
        if http.status_code >= 300:
            code = context.get("error_code_override") or parsed.get("Error", {}).get("Code")
            raise client.exceptions.from_code(code)(parsed, operation_name)
        result: dict[str, Any] = parsed
        return result

    def _attempt(
        self,
        operation: _Operation,
        found: Resolved,
        request: Any,
        headers: Headers,
        body: bytes,
        attempts: int,
        pool: Any,
    ) -> tuple[Any, dict[str, Any]]:
        """One attempt: a hook's answer or the server's, parsed as botocore parses it.

        ``request``: the ``AWSPreparedRequest`` of ``headers`` and ``body`` that
        ``before-send`` carries (None: that event would do nothing, see ``quiet_send``).
        """
        model = operation.model
        http: Any = None
        if request is not None:
            http = first_answer(
                found.before_send, request=request, event_name=operation.events.before_send
            )
            headers, body = request.headers, request.body  # as the handlers left them
        if http is None:
            sent = pool.post(headers, body, model.name in RESENDABLE)
            received = _headers()
            dict.update(received, sent.headers)  # already lower case
            http = _HttpResponse(pool.url, sent.status, received, sent.body)
        else:
            self._answered_here()
            received = Headers(http.headers)
        content = http.content
        if 200 <= http.status_code < 300:
            parsed = parse_body(model.output_shape, content, _loads)
            if parsed is not None:
                metadata: dict[str, Any] = {}
                if "x-amzn-requestid" in received:
                    metadata["RequestId"] = received["x-amzn-requestid"]
                metadata["HTTPStatusCode"] = http.status_code
                metadata["HTTPHeaders"] = dict(received)
                metadata["RetryAttempts"] = attempts - 1
                parsed["ResponseMetadata"] = metadata
                return http, parsed
        return http, self._botocore_parse(http, model)

    def _elsewhere(self, operation_name: str, api_params: dict[str, Any]) -> dict[str, Any]:
        """Send one request through botocore (a signer the lean path does not write)."""
        result: dict[str, Any] = self.client._make_api_call(operation_name, api_params)
        return result

    def _answered_here(self) -> None:
        """An event handler answered the request instead of the server (nothing to do)."""

    def _botocore_parse(self, http: Any, model: Any) -> dict[str, Any]:
        """What botocore's endpoint makes of a response (errors, odd bodies)."""
        endpoint = self.client._endpoint
        response_dict = _response_dict(http, model)
        parser = endpoint._response_parser_factory.create_parser(protocol(model.service_model))
        parsed: dict[str, Any] = parser.parse(response_dict, model.output_shape)
        if http.status_code >= 300:
            endpoint._add_modeled_error_fields(response_dict, parsed, model, parser)
        return parsed


def _sdk_request(retries: dict[str, Any]) -> str:
    """The ``amz-sdk-request`` header botocore writes from a call's retries context."""
    return "; ".join(f"{key}={retries[key]}" for key in ("ttl", "attempt", "max") if key in retries)


def _response_dict(http: Any, model: Any) -> dict[str, Any]:
    return {
        "headers": http.headers,
        "status_code": http.status_code,
        "body": http.content,
        "context": {"operation_name": model.name},
    }
