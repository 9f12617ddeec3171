"""shardmodel.lean.fastparse gives exactly what botocore's parser gives, or declines.

``parse_body`` is compared with botocore's own ``json`` parser on the same bodies: equal
value for value and type for type (ResponseMetadata aside, which the lean client writes
itself; ``test_lean.py`` compares whole responses). A body it declines (None) is left to
botocore's parser. And nothing of it is ever registered on a botocore client: a merged
query's requests that go through botocore are parsed by botocore.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import botocore.session
import pytest
from botocore.parsers import create_parser
from hypothesis import given
from hypothesis import strategies as st

from shardmodel.lean import fastparse
from tests.models import RandomEvent


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (1 == 1.0 and True == 1 are not)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _shape(operation: str) -> Any:
    model = botocore.session.get_session().get_service_model("dynamodb")
    return model.operation_model(operation).output_shape


def botocores(body: bytes, operation: str = "Query") -> tuple[str, Any]:
    """What botocore's json parser makes of a 2xx ``body``: ("ok", parsed) or its error."""
    try:
        parsed = create_parser("json").parse(
            {"status_code": 200, "headers": {}, "body": body, "context": {}}, _shape(operation)
        )
    except Exception as error:
        return "raised", type(error)
    parsed.pop("ResponseMetadata", None)
    return "ok", parsed


def both(body: bytes, operation: str = "Query") -> Any:
    """The fast parse of ``body``, checked equal to botocore's (None: it declined)."""
    got = fastparse.parse_body(_shape(operation), body)
    if got is not None:
        expected = botocores(body, operation)
        assert expected[0] == "ok" and same(got, expected[1]), (got, expected)
    return got


KITCHEN_SINK = {
    "pk": {"S": "user#3"},
    "sk": {"N": "1700000000"},
    "s": {"S": "text é ✓"},
    "n": {"N": "-12.5E3"},
    "b": {"B": b64(b"\x00\xffbinary")},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b64(b"x"), b64(b"\x01\x02")]},
    "null": {"NULL": True},
    "true": {"BOOL": True},
    "false": {"BOOL": False},
    "m": {
        "M": {
            "b": {"B": b64(b"inner")},
            "l": {
                "L": [
                    {"B": b64(b"in a list")},
                    {"M": {"deep": {"BS": [b64(b"deeper")]}, "s": {"S": "x"}}},
                    {"NULL": True},
                    {"L": [{"L": [{"B": b64(b"three down")}]}]},
                ]
            },
            "s": {"S": "plain"},
        }
    },
    "l": {"L": [{"N": "1"}, {"S": "two"}, {"BOOL": True}, {"SS": ["s"]}, {"M": {}}]},
    "empty_m": {"M": {}},
    "empty_l": {"L": []},
    "empty_b": {"B": ""},
}

FULL_RESPONSE = {
    "Items": [KITCHEN_SINK, {"pk": {"S": "user#3"}, "sk": {"N": "2"}, "b": {"B": b64(b"2")}}],
    "Count": 2,
    "ScannedCount": 3,
    "LastEvaluatedKey": {"pk": {"S": "user#3"}, "sk": {"B": b64(b"\x00last")}},
    "ConsumedCapacity": {
        "TableName": "t",
        "CapacityUnits": 1.5,
        "ReadCapacityUnits": 1.5,
        "Table": {"CapacityUnits": 0.5, "ReadCapacityUnits": 0.5},
        "GlobalSecondaryIndexes": {"by-type": {"CapacityUnits": 1.0}},
        "LocalSecondaryIndexes": {"by-time": {"CapacityUnits": 2}},
    },
}


def encode(document: Any) -> bytes:
    return json.dumps(document).encode("utf-8")


def test_every_attribute_type_keys_capacity_and_counts() -> None:
    parsed = both(encode(FULL_RESPONSE))
    assert parsed is not None  # the fast path answered
    item = parsed["Items"][0]
    assert item["b"] == {"B": b"\x00\xffbinary"}
    assert item["m"]["M"]["l"]["L"][1]["M"]["deep"] == {"BS": [b"deeper"]}
    assert parsed["LastEvaluatedKey"]["sk"] == {"B": b"\x00last"}
    assert parsed["ConsumedCapacity"]["CapacityUnits"] == 1.5


def test_scan_responses_too() -> None:
    assert both(encode(FULL_RESPONSE), operation="Scan") is not None


@pytest.mark.parametrize(
    "document",
    [
        {"Items": [], "Count": 0, "ScannedCount": 0},
        {},
        {"Items": [{"a": {"S": "x"}}], "Unmodeled": {"B": "not decoded"}, "Count": 1},
        {"Items": [{"a": {"S": "x"}}], "LastEvaluatedKey": None, "ConsumedCapacity": None},
        {"Items": [{"unknown type": {"X": "?"}, "no type": {}, "null type": {"S": None}}]},
        {"Items": [{"two types": {"S": "a", "N": "1", "B": b64(b"both")}}]},
        {"Items": [{"nulls": {"L": [None, {"B": b64(b"after a null")}]}}]},
        {"Items": [{"null in a set": {"BS": [None, b64(b"b")]}}]},
        {"Items": [{"typed": {"S": "a", "__type": "ignored"}}]},
        {"Items": [None, {"a": {"N": "1"}}]},
        {"Items": [{"a": {"B": None}}], "LastEvaluatedKey": {"k": {"B": None}, "n": None}},
        {"Count": 1.0, "ScannedCount": True, "ConsumedCapacity": {"CapacityUnits": 1}},
    ],
    ids=[
        "empty",
        "no members",
        "unmodeled member",
        "null members",
        "odd attributes",
        "several types",
        "null in L",
        "null in BS",
        "__type",
        "null item",
        "null blob",
        "odd numbers",
    ],
)
def test_botocore_rules_for_odd_documents(document: dict[str, Any]) -> None:
    parsed = both(encode(document))
    # a null where a map holds AttributeValues is declined (botocore's parser takes it)
    assert (parsed is None) == (document.get("LastEvaluatedKey", {}) or {}).__contains__("n")


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"null",
        b"[]",
        b"not json",
        b"\xef\xbb\xbf{}",  # a UTF-8 byte order mark: json rejects it in a str
        b'{"Items": [{"a": {"B": "not base64!"}}]}',
        b'{"Items": [{"a": {"M": "not a map"}}]}',
        b'{"Items": {"not": "a list"}}',
    ],
)
def test_bodies_the_fast_path_declines_are_botocores(body: bytes) -> None:
    """Declined (None), never raised: the lean client hands the body to botocore's parser,
    which parses it or raises its own error."""
    from shardmodel.lean.client import _loads  # the lean client's decoder

    assert fastparse.parse_body(_shape("Query"), body) is None
    assert fastparse.parse_body(_shape("Query"), body, _loads) is None


def test_shapes_it_does_not_know_are_declined() -> None:
    """Other operations' outputs are parsed only where every shape is known to it."""
    document = {"Item": {"b": {"B": b64(b"bin")}}}
    parsed = both(encode(document), operation="GetItem")
    assert parsed is None or parsed["Item"] == {"b": {"B": b"bin"}}
    assert fastparse.parse_body(None, encode(document)) is None


# -- random attribute values against botocore's parser --------------------------------

_names = st.text(min_size=1, max_size=5)
_scalars = st.one_of(
    st.builds(lambda s: {"S": s}, st.text(max_size=8)),
    st.builds(
        lambda n: {"N": str(n)}, st.integers() | st.decimals(allow_nan=False, allow_infinity=False)
    ),
    st.builds(lambda b: {"B": b64(b)}, st.binary(max_size=8)),
    st.builds(lambda s: {"SS": s}, st.lists(st.text(max_size=4), min_size=1, max_size=3)),
    st.builds(
        lambda s: {"NS": [str(n) for n in s]}, st.lists(st.integers(), min_size=1, max_size=3)
    ),
    st.builds(
        lambda s: {"BS": [b64(b) for b in s]},
        st.lists(st.binary(max_size=4), min_size=1, max_size=3),
    ),
    st.just({"NULL": True}),
    st.builds(lambda b: {"BOOL": b}, st.booleans()),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.builds(lambda m: {"M": m}, st.dictionaries(_names, inner, max_size=3)),
        st.builds(lambda items: {"L": items}, st.lists(inner, max_size=3)),
    ),
    max_leaves=12,
)
_items = st.dictionaries(_names, _values, min_size=1, max_size=4)


@pytest.fixture(scope="module")
def query_shape() -> Any:
    return _shape("Query")


@given(items=st.lists(_items, max_size=4), last=st.none() | _items)
def test_random_items_parse_like_botocore(query_shape: Any, items: list[Any], last: Any) -> None:
    document: dict[str, Any] = {"Items": items, "Count": len(items), "ScannedCount": len(items)}
    if last is not None:
        document["LastEvaluatedKey"] = last
    body = encode(document)
    ok, expected = botocores(body)
    assert ok == "ok"
    assert same(fastparse.parse_body(query_shape, body), expected)


# -- nothing is registered on a botocore client ---------------------------------------


def _handlers(client: Any) -> list[tuple[str, Any]]:
    """Every handler registered on ``client`` for the events a Query goes through."""
    events = client.meta.events
    names = [
        f"{event}.dynamodb.{operation}"
        for event in (
            "provide-client-params",
            "before-parameter-build",
            "before-call",
            "request-created",
            "before-sign",
            "before-send",
            "before-parse",
            "needs-retry",
            "after-call",
        )
        for operation in ("Query", "Scan", "BatchGetItem")
    ]
    emitter = events._emitter
    return [(name, handler) for name in names for handler in emitter._handlers.prefix_search(name)]


@pytest.mark.usefixtures("tables")
@pytest.mark.parametrize("lean", [True, False], ids=["lean", "botocore"])
def test_a_merged_query_registers_nothing_on_the_client(
    monkeypatch: pytest.MonkeyPatch, lean: bool
) -> None:
    """Issue 41: a ``before-parse`` handler on the model's client changed how every Query
    and Scan on it was parsed. On both paths the client keeps exactly its own handlers,
    and nothing is set on it; the botocore path's responses are botocore's to parse."""
    monkeypatch.setattr(RandomEvent.Meta, "lean_requests", lean, raising=False)
    for ts in range(5):
        RandomEvent(user_id="fp", timestamp=ts, event_type="a").save()
    client = RandomEvent._get_connection().connection.client
    handlers, attributes = _handlers(client), set(vars(client))
    assert [e.timestamp for e in RandomEvent.query("fp")] == list(range(5))
    assert [e.timestamp for e in RandomEvent.query("fp", limit=3)] == [0, 1, 2]
    assert RandomEvent.count("fp") == 5
    assert _handlers(client) == handlers
    assert set(vars(client)) == attributes
    if not lean:
        bodies: list[bytes] = []
        client.meta.events.register(
            "before-parse.dynamodb.Query",
            lambda response_dict, **kwargs: bodies.append(response_dict["body"]),
        )
        assert [e.timestamp for e in RandomEvent.query("fp", limit=3)] == [0, 1, 2]
        assert bodies and b"" not in bodies  # botocore parsed every shard's body itself
