"""moto's table listing, sorted with each key converted once instead of per comparison.

moto answers every Query without an index and every Scan by listing the whole table
sorted by its keys (``Table.all_items``), comparing ``DynamoType`` objects that convert
their value (a ``Decimal`` made from text for a number) at every comparison: a
migration test on in-process moto spent 90 of its 280 s there. :func:`install` sorts by
the converted values instead, computed once per item. The order is the same:
``DynamoType`` orders and compares by its converted value, and a table's key attributes
have one type each (its schema), so the type ``__eq__`` also compares is always equal.
``tests/unit/test_moto_speed.py`` checks the two orders agree on drawn keys.

The rest of the module takes moto's per-request costs that change nothing it answers:
a table Query lists only its partition, DynamoDB results are serialized by a walk of the
response shape, a DynamoDB JSON request reaches its handler without a werkzeug request
built from it, a request id is drawn in one call, and botocore's data files are read once
per process; the same test module compares each against moto's own path.
"""

from __future__ import annotations

import base64
import contextvars
from typing import Any

_ORIGINAL: dict[str, Any] = {}

#: The partition key of the table Query moto is answering (no index), while it answers.
_QUERIED: contextvars.ContextVar[Any] = contextvars.ContextVar("moto_queried", default=None)


def _sort_key(item: Any) -> Any:
    if item.range_key:
        return (item.hash_key.cast_value, item.range_key.cast_value)
    return item.hash_key.cast_value


def all_items(self: Any) -> list[Any]:
    """moto's ``Table.all_items`` with each item's sort key converted once.

    Inside a table Query (no index), moto keeps only the items of the queried partition
    key and sorts them by sort key: the partition's items are all it needs, unsorted.
    """
    queried = _QUERIED.get()
    if queried is not None and queried[0] is self:
        found = self.items.get(queried[1])  # get: the items are a defaultdict
        if found is None:
            return []
        return list(found.values()) if self.range_key_attr else [found]
    items: list[Any] = []
    for hash_set in self.items.values():
        if self.range_key_attr:
            items.extend(hash_set.values())
        else:
            items.append(hash_set)
    return sorted(items, key=_sort_key)


def install() -> None:
    """Make in-process moto cheaper for this process, answering as before (idempotent)."""
    from moto.dynamodb.models.table import Table

    if "all_items" not in _ORIGINAL:
        _ORIGINAL["all_items"] = Table.all_items
        Table.all_items = all_items  # type: ignore[method-assign]
        _ORIGINAL["query"] = Table.query
        Table.query = _query(Table.query)  # type: ignore[method-assign]
    install_serializer()
    _cache_method_names()
    _route_once()
    _draw_request_ids_at_once()
    _share_botocore_data()


def _share_botocore_data() -> None:
    """Read each of botocore's data files once per process instead of once per session.

    PynamoDB makes a botocore session for every connection (a model class, a thread),
    and each session parses the service model and endpoint rules again (about 30 ms a
    file): a fifth of a fast unit test's time. The files do not change while tests run;
    botocore reads what it loads and merges the same extras into it each time.
    """
    import functools

    from botocore import loaders

    if "load_file" not in _ORIGINAL:
        _ORIGINAL["load_file"] = loaders.JSONFileLoader.load_file
        original = _ORIGINAL["load_file"]
        cached = functools.cache(lambda path: original(loaders.JSONFileLoader(), path))
        loaders.JSONFileLoader.load_file = lambda self, path: cached(path)  # type: ignore[method-assign]
        listed = _ORIGINAL["list_available_services"] = loaders.Loader.list_available_services
        services: dict[tuple[Any, ...], Any] = {}

        def list_available_services(self: Any, type_name: str) -> Any:
            key = (tuple(self.search_paths), type_name)
            if key not in services:
                services[key] = listed(self, type_name)
            return list(services[key])

        loaders.Loader.list_available_services = list_available_services  # type: ignore[method-assign]


def _query(original: Any) -> Any:
    """moto's ``Table.query``, its listing limited to the queried partition key when it
    reads the table itself (with ``SHARDMODEL_CHECK_MOTO_SPEED=1``, checked against
    moto's whole-table listing)."""
    import os

    check = os.environ.get("SHARDMODEL_CHECK_MOTO_SPEED") == "1"

    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        if index_name or hash_key is None:
            return original(self, hash_key, *args, **kwargs)
        token = _QUERIED.set((self, hash_key))
        try:
            result = original(self, hash_key, *args, **kwargs)
        finally:
            _QUERIED.reset(token)
        if check:
            expected = original(self, hash_key, *args, **kwargs)
            if [i.to_json() for i in expected[0]] != [i.to_json() for i in result[0]] or (
                expected[1:] != result[1:]
            ):
                raise AssertionError(f"moto query of {hash_key!r}: {expected} != {result}")
        return result

    return query


def _route_once() -> None:
    """moto finds a request's service by trying every service's URL patterns in turn (70
    regular expressions for DynamoDB) on every request; a DynamoDB URL's handler is found
    once and kept (moto's handlers are its response classes' ``dispatch``, the same for
    every account, region and reset)."""
    from moto.core import botocore_stubber

    if "process_request" in _ORIGINAL:
        return
    stubber = botocore_stubber.BotocoreStubber
    original = _ORIGINAL["process_request"] = stubber.process_request
    routes: dict[str, Any] = {}

    def process_request(self: Any, request: Any) -> Any:
        handler = routes.get(request.url)
        if handler is None:
            handler = _dynamodb_handler(request.url)
            if handler is None:
                return original(self, request)
            routes[request.url] = handler
        from moto.core.exceptions import HTTPException
        from moto.moto_api import recorder

        try:
            if _LIGHT and _light_enough(request, recorder):
                light = _light_handler(handler.__self__, request)
                if light is not None:
                    return light.call_action()
            normalized = botocore_stubber.normalize_request(request)
            recorder._record_request(normalized)
            status, headers, body = handler(normalized, normalized.raw_url, normalized.headers)
        except HTTPException as error:
            return error.code, error.get_headers(), error.get_body()
        return status, headers, body

    stubber.process_request = process_request  # type: ignore[method-assign]


def _draw_request_ids_at_once() -> None:
    """Replace moto's ``BaseResponse._enrich_response`` with :func:`_enrich_response`."""
    from moto.core.responses import BaseResponse

    if "enrich" not in _ORIGINAL:
        _ORIGINAL["enrich"] = BaseResponse.__dict__["_enrich_response"]
        BaseResponse._enrich_response = staticmethod(_enrich_response)  # type: ignore[method-assign]


#: False to send every request through moto's own request building (the light dispatch's
#: test compares the two).
_LIGHT = True


def _enrich_response(headers: dict[str, Any], body: Any) -> tuple[dict[str, Any], Any]:
    """moto's ``BaseResponse._enrich_response``: a request id of 52 letters and digits
    drawn from moto's random source in one call instead of 52, and the id written into
    an XML body's ``RequestId`` only where the body has one (moto's regular expression
    scans every JSON body for it)."""
    import re
    import string

    from moto.moto_api._internal import mock_random

    if "status" in headers:
        headers["status"] = str(headers["status"])
    request_id = "".join(mock_random.choices(string.ascii_letters + string.digits, k=52))
    headers["x-amzn-requestid"] = request_id
    if isinstance(body, str) and "<RequestId>" in body:
        body = re.sub(r"(?<=<RequestId>).*(?=<\/RequestId>)", request_id, body)
    return headers, body


def _light_enough(request: Any, recorder: Any) -> bool:
    """Whether moto's own request building would add nothing to ``request``: a DynamoDB
    JSON body, not compressed, no recording, no IAM checks (moto's defaults)."""
    import math

    from moto import settings

    headers = request.headers
    return (
        request.method == "POST"
        and headers.get("Content-Type")
        in ("application/x-amz-json-1.0", b"application/x-amz-json-1.0")
        and headers.get("Content-Encoding") in (None, b"identity", "identity")
        and not recorder._user_enabled
        and math.isinf(settings.INITIAL_NO_AUTH_ACTION_COUNT)
    )


class MotoSpeedFallback(UserWarning):
    """The light dispatch stepped aside for this moto: shown, never an error (pyproject's
    ``filterwarnings``), since the suite then runs slower but answers the same."""


class _JsonRequest:
    """What moto reads of a werkzeug request to tell a DynamoDB JSON request's protocol
    (its content type and headers; moto 5.2.6 on), built without werkzeug."""

    def __init__(self, request: Any, headers: Any, path: str, host: str) -> None:
        self.method = request.method
        self.headers = headers
        self.content_type = self.mimetype = "application/x-amz-json-1.0"
        self.path = self.raw_path = path
        self.host = host
        self.url = request.url


def _light_handler(cls: Any, request: Any) -> Any:
    """:func:`_light_dispatch`'s handler, or None (moto's own path from then on, with a
    warning) when this moto's response classes no longer take the attributes it sets: a
    moto release changed them once (5.2.6 routes by the request object), and the suite
    must then run slower, not fail. Nothing has been written when it gives up: the
    action runs only after the handler is set up."""
    global _LIGHT
    try:
        return _light_dispatch(cls, request)
    except (AttributeError, TypeError, KeyError) as error:
        import warnings

        import moto

        _LIGHT = False
        warnings.warn(
            MotoSpeedFallback(
                f"tests/moto_speed.py: moto {moto.__version__} takes no light dispatch "
                f"({type(error).__name__}: {error}); its own request building answers from now"
            ),
            stacklevel=2,
        )
        return None


def _light_dispatch(cls: Any, request: Any) -> Any:
    """moto's ``cls.dispatch`` of a DynamoDB JSON request, set up without building a
    werkzeug request from it (a quarter of an in-process request's time): the attributes
    moto's ``setup_class`` sets, set from botocore's prepared request as it sets them for
    such a request (a JSON body's form and files are empty, its query string moto never
    reads). The action is the ``X-Amz-Target`` header's operation, as DynamoDB's JSON
    protocol names it, not moto's router's reading of a request object. Returns the
    handler, ready for ``call_action()``.
    """
    from urllib.parse import urlparse

    from moto.core.parse import PROTOCOL_PARSERS
    from moto.core.responses import get_service_model, http_date, utcnow
    from moto.iam.models import mark_account_as_visited
    from moto.utilities.utils import get_partition
    from werkzeug.datastructures import Headers

    raw = request.body or b""
    if isinstance(raw, str):
        raw = raw.encode("utf-8")
    headers = request.headers  # botocore's: looked up by any case, as werkzeug's are
    if any(isinstance(value, bytes) for value in headers.values()) or (
        "Transfer-Encoding" in headers
    ):
        headers = Headers(
            [
                (key, value.decode("utf-8") if isinstance(value, bytes) else value)
                for key, value in headers.items()
                if key.lower() != "transfer-encoding"
            ]
        )
    handler = cls()
    parsed = urlparse(request.url)
    handler.is_werkzeug_request = False
    handler.normalized_request = _JsonRequest(request, headers, parsed.path or "/", parsed.netloc)
    handler.parsed_url = parsed
    handler.form_data = {}
    handler.raw_body = raw
    handler.body = raw.decode("utf-8")
    handler.querystring = handler.data = {}
    handler.uri = request.url
    handler.path = handler.raw_path = parsed.path or "/"
    handler.method = request.method
    handler.headers = headers
    handler.region = handler.get_region_from_url(handler, request.url)
    handler.partition = get_partition(handler.region)
    handler.uri_match = {}
    handler.response_headers = {"server": "amazon.com", "date": http_date(utcnow())}
    action = str(headers.get("X-Amz-Target", "")).rpartition(".")[2]
    handler._get_action = lambda: action
    if handler.automated_parameter_parsing and action:
        operation = get_service_model(handler.boto3_service_name).operation_model(action)
        parser = PROTOCOL_PARSERS["json"](operation, map_type=handler.PROTOCOL_PARSER_MAP_TYPE)
        handler.params = parser.parse(
            {
                "method": request.method,
                "values": {},
                "headers": headers,
                "body": raw,
                "url_path": handler.path,
                "url_params": {},
            }
        )
    handler.access_key = handler.get_access_key()
    handler.current_account = handler.get_current_account()
    mark_account_as_visited(
        account_id=handler.current_account,
        access_key=handler.access_key,
        service=handler.service_name,
        region=handler.region,
    )
    return handler


def _dynamodb_handler(url: str) -> Any:
    """moto's handler of ``url`` when it is DynamoDB's (as moto's stubber finds it)."""
    import re
    from urllib.parse import urlsplit

    import moto.backend_index as backend_index
    from moto.backends import get_backend
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.core.config import passthrough_service, passthrough_url, service_whitelisted

    parts = urlsplit(url)
    clean = f"{parts.scheme}://{parts.netloc}{parts.path}"
    if parts.query or passthrough_url(clean):
        return None
    service = next(
        (name for name, pattern in backend_index.backend_url_patterns if pattern.match(clean)),
        None,
    )
    if service != "dynamodb" or passthrough_service(service) or not service_whitelisted(service):
        return None
    backend = get_backend(service)[DEFAULT_ACCOUNT_ID]["us-east-1"]
    return next((method for u, method in backend.urls.items() if re.compile(u).match(clean)), None)


def _cache_method_names() -> None:
    """moto lists a response class's methods (``inspect.getmembers``) on every request to
    find the action's handler; a class's methods do not change, so list them once."""
    import functools

    from moto.core import responses

    if "method_names_from_class" not in _ORIGINAL:
        _ORIGINAL["method_names_from_class"] = responses.method_names_from_class
        responses.method_names_from_class = functools.cache(  # type: ignore[assignment]
            responses.method_names_from_class
        )


def original_all_items() -> Any:
    """moto's own ``Table.all_items`` (for the test that compares the two)."""
    from moto.dynamodb.models.table import Table

    return _ORIGINAL.get("all_items", Table.all_items)


#: DynamoDB's item operations, whose outputs moto builds as plain JSON-ready values
#: (strings, numbers, lists, maps of AttributeValues, consumed capacity).
_ITEM_OPERATIONS = frozenset(
    {
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "Scan",
        "BatchGetItem",
        "BatchWriteItem",
        "TransactGetItems",
        "TransactWriteItems",
    }
)


def _shaped(value: Any, shape: Any) -> Any:
    """``value`` as moto's JSON serializer writes it for ``shape``: structure members the
    shape names and that are not None, lists and maps walked, anything else as it is."""
    kind = shape.type_name
    if kind == "structure":
        members = shape.members
        return {
            key: _shaped(item, members[key])
            for key, item in value.items()
            if item is not None and key in members
        }
    if kind == "list":
        return [_shaped(item, shape.member) for item in value]
    if kind == "map":
        return {key: _shaped(item, shape.value) for key, item in value.items()}
    if kind == "blob":
        raw = value.encode("utf-8") if isinstance(value, str) else value
        return base64.b64encode(raw).strip().decode("utf-8")
    if kind in ("integer", "long"):
        return int(value)
    if kind in ("float", "double"):
        return float(value)
    if kind == "timestamp":
        raise _Unshaped(kind)
    return value


class _Unshaped(Exception):
    """A value :func:`_shaped` leaves to moto's own serializer."""


def _fast_serialize(original: Any) -> Any:
    """moto's ``JSONSerializer.serialize``, or, for a DynamoDB item operation's result,
    ``json.dumps`` of it walked by its shape (:func:`_shaped`).

    With ``SHARDMODEL_CHECK_MOTO_SPEED=1`` both run and must give the same body.
    """
    import json
    import os

    check = os.environ.get("SHARDMODEL_CHECK_MOTO_SPEED") == "1"

    def serialize(self: Any, result: Any) -> Any:
        model = self.operation_model
        if (
            model.name not in _ITEM_OPERATIONS
            or model.service_model.service_name != "dynamodb"
            or isinstance(result, Exception)
            or self.pretty_print
        ):
            return original(self, result)
        if not isinstance(result, dict):
            return original(self, result)
        try:
            body = json.dumps(_shaped(result, model.output_shape))
        except _Unshaped:
            return original(self, result)
        if check:
            expected = original(self, result)
            if json.loads(expected["body"]) != json.loads(body):
                raise AssertionError(f"{model.name}: {expected['body']!r} != {body!r}")
        return {
            "body": body,
            "headers": {"Content-Type": self._get_protocol_specific_content_type()},
            "status_code": model.http.get("responseCode", self.DEFAULT_RESPONSE_CODE),
        }

    return serialize


def install_serializer() -> None:
    """Serialize DynamoDB item operations' results with ``json.dumps`` (idempotent)."""
    from moto.core.serialize import JSONSerializer

    if "serialize" not in _ORIGINAL:
        _ORIGINAL["serialize"] = JSONSerializer.serialize
        JSONSerializer.serialize = _fast_serialize(JSONSerializer.serialize)  # type: ignore[method-assign]
