"""DynamoDB's wire format: request bodies, synthesized responses, and a side channel.

The simulator answers some attempts itself (throttles, faults); it builds real HTTP
responses so botocore parses and retries them exactly as it would DynamoDB's.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from io import BytesIO
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders

_PREFIX = "com.amazonaws.dynamodb.v20120810#"
#: Where a request the simulator answered is pointed, so that no later ``before-send``
#: handler (moto's) also executes it.
ANSWERED_URL = "https://answered-by-shardmodel-simulator.invalid/"


class _Body(BytesIO):
    """A response body with the ``stream`` method botocore reads."""

    def stream(self, **kwargs: Any) -> Any:
        contents = self.read()
        while contents:
            yield contents
            contents = self.read()


def response(status: int, body: Mapping[str, Any], request_id: str) -> AWSResponse:
    """An HTTP response with a JSON ``body``, as DynamoDB sends it."""
    payload = json.dumps(body).encode("utf-8")
    headers = HTTPHeaders()
    headers["Content-Type"] = "application/x-amz-json-1.0"
    headers["Content-Length"] = str(len(payload))
    headers["x-amzn-RequestId"] = request_id
    return AWSResponse(ANSWERED_URL, status, headers, _Body(payload))


def error(status: int, code: str, message: str, request_id: str, **extra: Any) -> AWSResponse:
    """A DynamoDB error response: ``code`` is the short exception name."""
    return response(status, {"__type": _PREFIX + code, "message": message, **extra}, request_id)


def table_arn(region: str, table: str, index: str | None) -> str:
    """The ARN DynamoDB names in throttling reasons (moto's fixed account id)."""
    arn = f"arn:aws:dynamodb:{region}:123456789012:table/{table}"
    return arn if index is None else f"{arn}/index/{index}"


def key_text(value: Mapping[str, Any]) -> str:
    """A partition key AttributeValue as text: strings and numbers as is, binary as base64."""
    ((kind, inner),) = value.items()
    if kind == "B" and isinstance(inner, bytes | bytearray):
        return base64.b64encode(inner).decode("ascii")
    return str(inner)


def to_wire(value: Any) -> Any:
    """Parsed botocore output (binary as bytes) back to the JSON wire form (base64)."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, Mapping):
        return {k: to_wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [to_wire(v) for v in value]
    return value


def from_wire(value: Any) -> Any:
    """A JSON wire body (binary as base64) to botocore's input form (binary as bytes)."""
    if isinstance(value, Mapping):
        if len(value) == 1:
            ((kind, inner),) = value.items()
            if kind == "B" and isinstance(inner, str):
                return {"B": base64.b64decode(inner)}
            if kind == "BS" and isinstance(inner, list):
                return {"BS": [base64.b64decode(v) for v in inner]}
        return {k: from_wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_wire(v) for v in value]
    return value
