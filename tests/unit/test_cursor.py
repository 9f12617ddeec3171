"""The resume cursor's string form: what it holds, how it is signed, what it refuses."""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

import cattrs
import pytest
from attrs import evolve

from shardmodel import CursorError
from shardmodel.engine.cursor import (
    CURSOR_VERSION,
    Cursor,
    ShardPosition,
    _compact,
    _runs,
    decode_cursor,
    encode_cursor,
    position,
    raw_key,
)
from tests.support import token_of

FIX = "pass the last_evaluated_key of a query of this model unchanged, or start over"


def cursor(*shards: ShardPosition, index: str | None = None, forward: bool = True) -> Cursor:
    return Cursor(
        version=CURSOR_VERSION,
        model="Orders",
        index=index,
        logical_key="tenant-1",
        forward=forward,
        conditions="c0ffee",
        shards=shards,
    )


def payload(**changes: Any) -> dict[str, Any]:
    """A well-formed cursor payload with some fields changed (``None`` values kept)."""
    data: dict[str, Any] = {
        "version": 2,
        "model": "Orders",
        "index": None,
        "logical_key": "tenant-1",
        "forward": True,
        "conditions": "c0ffee",
        "shards": [{"key": "tenant-1#0", "start": None, "done": False}],
    }
    data.update(changes)
    return data


def forged(data: Any) -> str:
    return token_of(json.dumps(data).encode("utf-8"))


def refusal(token: Any, secret: bytes | None = None) -> str:
    with pytest.raises(CursorError) as caught:
        decode_cursor(token, secret)
    return str(caught.value)


def test_version_three_is_the_format_this_release_writes() -> None:
    """Cursors carry version 3 (shards held compactly); a change of format changes this
    number."""
    assert CURSOR_VERSION == 3


def test_a_version_one_cursor_is_refused_as_from_an_earlier_release() -> None:
    """Version 1 did not record the query's conditions: it is refused, saying to start over."""
    data = payload(version=1)
    del data["conditions"]
    assert refusal(forged(data)) == (
        "last_evaluated_key has cursor version 1, made by an earlier shardmodel, which did "
        "not record the query's conditions; this shardmodel reads versions 2 and 3; start the "
        "query over (its first page gives a new cursor)"
    )


def test_the_string_is_base64url_json_then_a_sha256_checksum() -> None:
    """``<base64url of compact, key-sorted JSON, unpadded>.<first 32 hex of its SHA-256>``:
    the shard keys' common prefix, then what follows it; finished shards as runs of their
    places; a start key by place, only where there is one."""
    start = {"pk": {"S": "tenant-1#1"}, "ts": {"N": "17"}}
    token = encode_cursor(
        cursor(
            position("tenant-1#0", None, True),
            position("tenant-1#1", start, False),
            position("tenant-1#2", None, False),
        )
    )
    expected = (
        b'{"conditions":"c0ffee","done":[[0,0]],"forward":true,"index":null,"keys":[[0,2]],'
        b'"logical_key":"tenant-1","model":"Orders","prefix":"tenant-1#","starts":[[1,{"pk":'
        b'{"S":"tenant-1#1"},"ts":{"N":"17"}}]],"version":3}'
    )
    assert token == token_of(expected)
    assert "=" not in token


def test_a_secret_signs_with_hmac_and_only_that_secret_reads_it() -> None:
    """With Meta.cursor_secret the checksum is an HMAC: other secrets, or none, are refused."""
    original = cursor(position("k#0", None, True), position("k#1", None, False))
    token = encode_cursor(original, b"s3cret")
    body = token.split(".")[0]
    payload_bytes = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    assert token == token_of(payload_bytes, b"s3cret")
    assert decode_cursor(token, b"s3cret") == original
    for other in (None, b"other"):
        assert refusal(token, other) == (
            f"last_evaluated_key was altered or truncated (checksum); {FIX}"
        )
    assert refusal(encode_cursor(original), b"s3cret").startswith(
        "last_evaluated_key was altered or truncated (checksum)"
    )


def test_every_key_type_survives_the_round_trip() -> None:
    """String, number and binary key values, an index, descending order, finished shards."""
    start = {"pk": {"S": "k#1"}, "ts": {"N": "1.50"}, "blob": {"B": b"\x00\xffraw"}}
    original = cursor(
        position("k#0", None, True),
        position("k#1", start, False),
        position("k#2", {"blob": {"B": bytearray(b"\x01")}}, False),
        index="by_type",
        forward=False,
    )
    back = decode_cursor(encode_cursor(original))
    assert back == original
    assert back.shards[1].start == {
        "pk": {"S": "k#1"},
        "ts": {"N": "1.50"},
        "blob": {"B": base64.b64encode(b"\x00\xffraw").decode("ascii")},
    }
    assert raw_key(back.shards[1].start) == {
        "pk": {"S": "k#1"},
        "ts": {"N": "1.50"},
        "blob": {"B": b"\x00\xffraw"},
    }
    assert raw_key(back.shards[2].start or {}) == {"blob": {"B": b"\x01"}}


def test_position_keeps_none_as_from_the_beginning() -> None:
    """A shard not yet read resumes from its start: its position's start is None."""
    assert position("k#3", None, False) == ShardPosition(key="k#3", start=None, done=False)
    assert position("k#3", {"n": {"N": "5"}}, True) == ShardPosition(
        key="k#3", start={"n": {"N": "5"}}, done=True
    )


@pytest.mark.parametrize("token", [None, 17, b"abc.def", "no-dot-here", "a.b.c", ""])
def test_what_is_not_a_cursor_string_is_refused_first(token: Any) -> None:
    """Not a string, or not exactly one dot: not a shardmodel cursor."""
    assert refusal(token) == f"last_evaluated_key is not a shardmodel cursor; {FIX}"


def test_a_body_that_is_not_base64_is_damaged() -> None:
    """A body with a character count base64 cannot have is refused as bad encoding."""
    assert refusal("a.0123") == f"last_evaluated_key is damaged (bad encoding); {FIX}"


def test_a_changed_checksum_or_body_is_refused() -> None:
    """One character off in either half fails the checksum."""
    token = encode_cursor(cursor(position("k#0", None, False)))
    body, checksum = token.split(".")
    flipped = "0" if checksum[0] != "0" else "1"
    message = f"last_evaluated_key was altered or truncated (checksum); {FIX}"
    assert refusal(f"{body}.{flipped}{checksum[1:]}") == message
    assert refusal(f"{body}.{checksum[:-1]}") == message
    assert refusal(f"{body[:-4]}.{checksum}") == message


def test_a_signed_payload_that_is_not_json_or_not_an_object_is_malformed() -> None:
    """The checksum passes (anyone can compute it without a secret); the content is checked."""
    assert refusal(token_of(b"{not json")) == (f"last_evaluated_key is malformed (not JSON); {FIX}")
    assert refusal(forged([1, 2])) == f"last_evaluated_key is malformed (not an object); {FIX}"


@pytest.mark.parametrize("version", [4, 0, "2", None, True])
def test_another_version_is_named_in_the_refusal(version: Any) -> None:
    """A cursor of another format version says which it has and which this release reads."""
    assert refusal(forged(payload(version=version))) == (
        f"last_evaluated_key has cursor version {version!r}, this shardmodel reads versions 2 "
        f"and 3; {FIX}"
    )


def test_a_payload_without_a_version_is_refused_as_another_version() -> None:
    """No version field at all reads as version None."""
    data = payload()
    del data["version"]
    assert "has cursor version None" in refusal(forged(data))


def malformed(problem: str) -> str:
    return f"last_evaluated_key is malformed ({problem}); {FIX}"


def test_fields_must_be_exactly_the_cursor_fields() -> None:
    """An extra or a missing field is named with the expected set."""
    data = payload(extra=1)
    expected = "['conditions', 'forward', 'index', 'logical_key', 'model', 'shards', 'version']"
    assert refusal(forged(data)) == malformed(
        "fields ['conditions', 'extra', 'forward', 'index', 'logical_key', 'model', 'shards', "
        f"'version'], expected {expected}"
    )
    data = payload()
    del data["forward"]
    assert refusal(forged(data)) == malformed(
        "fields ['conditions', 'index', 'logical_key', 'model', 'shards', 'version'], "
        f"expected {expected}"
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("model", 5),
        ("model", None),
        ("index", 3),
        ("index", False),
        ("logical_key", ["k"]),
        ("forward", "false"),
        ("forward", 1),
        ("conditions", None),
        ("conditions", 7),
        ("shards", {"k#0": None}),
    ],
)
def test_each_field_has_its_type_strictly(field: str, value: Any) -> None:
    """No "1" for 1, no 1 for True, no True for 1: each field is refused by name."""
    assert refusal(forged(payload(**{field: value}))) == malformed(f"{field} is {value!r}")


def test_an_index_name_and_a_descending_cursor_are_accepted() -> None:
    """index may be a string or null; forward may be false."""
    back = decode_cursor(forged(payload(index="by_type", forward=False)))
    assert (back.index, back.forward) == ("by_type", False)


def test_a_cursor_reads_at_least_one_shard() -> None:
    """An empty shard list is refused."""
    assert refusal(forged(payload(shards=[]))) == malformed("no shards")


@pytest.mark.parametrize(
    "entry",
    [
        "k#0",
        None,
        {"key": "k#0", "start": None},
        {"key": "k#0", "start": None, "done": False, "extra": 1},
    ],
)
def test_a_shard_entry_has_exactly_key_start_done(entry: Any) -> None:
    """A shard entry that is not an object of the three fields is named."""
    assert refusal(forged(payload(shards=[entry]))) == malformed(f"shard entry {entry!r}")


@pytest.mark.parametrize("key", [3, "", None])
def test_a_shard_key_is_a_nonempty_string(key: Any) -> None:
    """The shard's physical key must be a non-empty string."""
    shards = [{"key": key, "start": None, "done": False}]
    assert refusal(forged(payload(shards=shards))) == malformed(f"shard key {key!r}")


def test_a_shard_appears_once() -> None:
    """The same physical key twice is refused at its second entry."""
    shards = [
        {"key": "k#0", "start": None, "done": False},
        {"key": "k#1", "start": None, "done": True},
        {"key": "k#0", "start": None, "done": True},
    ]
    assert refusal(forged(payload(shards=shards))) == malformed("shard key 'k#0'")


@pytest.mark.parametrize("done", [1, "true", None])
def test_done_is_a_boolean(done: Any) -> None:
    """``done`` must be true or false, not a truthy stand-in."""
    shards = [{"key": "k#0", "start": None, "done": done}]
    assert refusal(forged(payload(shards=shards))) == malformed(f"done of shard 'k#0' is {done!r}")


@pytest.mark.parametrize(
    ("start", "problem"),
    [
        ({}, "{} is not a key"),
        ([], "[] is not a key"),
        ("pk", "'pk' is not a key"),
        ({"pk": "k#0"}, "attribute 'pk' is 'k#0'"),
        ({"pk": {}}, "attribute 'pk' is {}"),
        ({"pk": {"S": "a", "N": "1"}}, "attribute 'pk' is {'S': 'a', 'N': '1'}"),
        ({"pk": {"SS": "a"}}, "attribute 'pk' has type 'SS' and value 'a'"),
        ({"ts": {"N": 5}}, "attribute 'ts' has type 'N' and value 5"),
        ({"ts": {"N": "five"}}, "attribute 'ts' is not a valid N value"),
        ({"ts": {"N": "NaN"}}, "attribute 'ts' is not a valid N value"),
        ({"ts": {"N": "1e400"}}, "attribute 'ts' is not a valid N value"),  # DynamoDB's range
        ({"ts": {"N": "1" * 39}}, "attribute 'ts' is not a valid N value"),  # 38 digits at most
        ({"b": {"B": "not base64!"}}, "attribute 'b' is not a valid B value"),
        ({"b": {"B": "AAAA!"}}, "attribute 'b' is not a valid B value"),  # strict base64
    ],
)
def test_a_start_key_is_checked_attribute_by_attribute(start: Any, problem: str) -> None:
    """Each attribute of a start key is one typed value of S, N or B, valid for its type."""
    shards = [{"key": "k#0", "start": start, "done": False}]
    assert refusal(forged(payload(shards=shards))) == malformed(f"start of shard 'k#0': {problem}")


def test_valid_start_keys_of_every_type_pass_the_checks() -> None:
    """A string, a number in any DynamoDB form and base64 binary are accepted as sent."""
    start = {"pk": {"S": ""}, "ts": {"N": "-2.5E3"}, "b": {"B": "AAE="}}
    shards = [{"key": "k#0", "start": start, "done": False}]
    back = decode_cursor(forged(payload(shards=shards)))
    assert back.shards[0].start == start
    assert raw_key(start) == {"pk": {"S": ""}, "ts": {"N": "-2.5E3"}, "b": {"B": b"\x00\x01"}}


def _wide(shards: int) -> Cursor:
    """A cursor of a read over ``shards`` shards, each at its own timestamp."""
    return cursor(
        *(
            position(
                f"tenant-1#{n}",
                {"pk": {"S": f"tenant-1#{n}"}, "ts": {"S": f"2026-11-29T02:15:{n:02d}.{n:06d}Z"}},
                n % 3 == 0,
            )
            for n in range(shards)
        )
    )


def test_a_cursor_past_512_bytes_is_compressed_and_reads_back() -> None:
    """20 shards: zlib'd JSON behind a ``z``, under half the plain size; the checksum is
    the plain JSON's, so a secret and tampering work as before."""
    wide = _wide(20)
    token = encode_cursor(wide)
    payload = json.dumps(
        _compact(cattrs.Converter().unstructure(wide)), sort_keys=True, separators=(",", ":")
    ).encode("utf-8")
    assert len(payload) > 512 and token.startswith("z")
    assert len(token) < len(token_of(payload)) / 2
    assert decode_cursor(token) == wide
    assert token.split(".")[1] == token_of(payload).split(".")[1]
    signed = encode_cursor(wide, b"s3cret")
    assert decode_cursor(signed, b"s3cret") == wide
    assert refusal(signed).startswith("last_evaluated_key was altered or truncated")
    body, checksum = token.split(".")
    for damaged in (body[:-4], body[:10] + "A" + body[11:]):
        assert "last_evaluated_key" in refusal(f"{damaged}.{checksum}")


def test_a_compressed_cursor_that_inflates_past_the_bound_is_refused_unread() -> None:
    """A crafted cursor of zeros that would inflate to 10 MB: refused as damaged."""
    bomb = zlib.compress(b"0" * 10_000_000, 9)
    body = "z" + base64.urlsafe_b64encode(bomb).decode("ascii").rstrip("=")
    assert refusal(f"{body}.{'0' * 32}") == f"last_evaluated_key is damaged (bad encoding); {FIX}"


def compact(**changes: Any) -> dict[str, Any]:
    """A well-formed version 3 payload (shards k#0..k#3, k#1 finished, k#2 started) with
    some fields changed."""
    data: dict[str, Any] = {
        "version": 3,
        "model": "Orders",
        "index": None,
        "logical_key": "tenant-1",
        "forward": True,
        "conditions": "c0ffee",
        "prefix": "k#",
        "keys": [[0, 3]],
        "done": [[1, 1]],
        "starts": [[2, {"pk": {"S": "k#2"}}]],
    }
    data.update(changes)
    return data


def test_a_version_three_payload_lists_every_shard_once_decoded() -> None:
    """Runs and text after the prefix, in order; places not finished or started resume
    from the beginning."""
    back = decode_cursor(forged(compact(keys=["x", [8, 10], "", "07"], done=[[0, 1], [4, 4]])))
    assert back.shards == (
        ShardPosition("k#x", None, True),
        ShardPosition("k#8", None, True),
        ShardPosition("k#9", {"pk": {"S": "k#2"}}, False),
        ShardPosition("k#10", None, False),
        ShardPosition("k#", None, True),
        ShardPosition("k#07", None, False),
    )


def test_runs_join_consecutive_places_only() -> None:
    assert _runs([0, 1, 2, 5, 7, 8]) == [[0, 2], [5, 5], [7, 8]]
    assert _runs([]) == []


@pytest.mark.parametrize(
    "keys",
    [
        [f"t#{n}" for n in range(256)],
        ["t#1", "t#10", "t#11", "t#12", "t#2"],
        ["a#3", "a#2", "a#1"],
        ["only"],
        ["s#2026-11-29T05#0", "s#2026-11-29T05#1", "s#2026-11-29T06#0", "s#00", "s#01"],
        ["9", "10", "11", "x"],
    ],
)
def test_every_key_list_survives_the_round_trip(keys: list[str]) -> None:
    """Counted suffixes, ones with leading zeros, descending, no common prefix, one shard."""
    original = cursor(
        *(
            position(key, {"pk": {"S": key}} if place % 3 == 1 else None, place % 2 == 0)
            for place, key in enumerate(keys)
        )
    )
    assert decode_cursor(encode_cursor(original)) == original


def test_the_cursor_does_not_grow_with_shards_not_yet_read() -> None:
    """A page of ten items starts ten shards: 256 shards cost what 16 do, and far less
    than version 2's list of every shard (the sizes in docs/querying.rst)."""

    def page(shards: int) -> Cursor:
        return cursor(
            *(
                position(
                    f"tenant-1#{n}",
                    {"pk": {"S": f"tenant-1#{n}"}, "ts": {"S": f"2026-11-29T05:00:{n:02d}Z"}}
                    if n < 10
                    else None,
                    False,
                )
                for n in range(shards)
            )
        )

    sizes = {shards: len(encode_cursor(page(shards))) for shards in (16, 64, 256)}
    assert sizes[256] <= sizes[16] + 40, sizes
    listed = cattrs.Converter().unstructure(evolve(page(256), version=2))
    assert len(encode_cursor(evolve(page(256), version=2))) > 3 * sizes[256]
    assert len(json.dumps(listed)) > 10 * sizes[256]


def test_a_version_two_cursor_of_an_earlier_release_still_reads() -> None:
    """A cursor handed out before an upgrade resumes: version 2 decodes to the same shards."""
    shards = [
        {"key": "k#0", "start": None, "done": True},
        {"key": "k#1", "start": {"pk": {"S": "k#1"}}, "done": False},
    ]
    back = decode_cursor(forged(payload(shards=shards)))
    assert back.version == 2
    assert back.shards == (
        ShardPosition("k#0", None, True),
        ShardPosition("k#1", {"pk": {"S": "k#1"}}, False),
    )


def test_version_three_fields_must_be_exactly_its_fields() -> None:
    expected = (
        "['conditions', 'done', 'forward', 'index', 'keys', 'logical_key', 'model', "
        "'prefix', 'starts', 'version']"
    )
    assert refusal(forged(compact(shards=[]))) == malformed(
        "fields ['conditions', 'done', 'forward', 'index', 'keys', 'logical_key', 'model', "
        f"'prefix', 'shards', 'starts', 'version'], expected {expected}"
    )
    data = compact()
    del data["starts"]
    assert "expected" in refusal(forged(data))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("model", 5),
        ("index", False),
        ("forward", 1),
        ("conditions", None),
        ("prefix", None),
        ("prefix", 1),
        ("keys", "0-3"),
        ("done", {}),
        ("starts", None),
    ],
)
def test_each_version_three_field_has_its_type_strictly(field: str, value: Any) -> None:
    assert refusal(forged(compact(**{field: value}))) == malformed(f"{field} is {value!r}")


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"keys": [[0]]}, "keys run [0]"),
        ({"keys": [[0, 1, 2]]}, "keys run [0, 1, 2]"),
        ({"keys": [[3, 2]]}, "keys run [3, 2]"),
        ({"keys": [[-1, 2]]}, "keys run [-1, 2]"),
        ({"keys": [[0, True]]}, "keys run [0, True]"),
        ({"keys": [[0, "3"]]}, "keys run [0, '3']"),
        ({"keys": [[0, 1.5]]}, "keys run [0, 1.5]"),
        ({"keys": [None]}, "keys run None"),
        ({"keys": [], "done": [], "starts": []}, "no shards"),
        ({"keys": [[0, 9], [0, 0]]}, "shard key 'k#0'"),
        ({"keys": [[0, 99_999], [100_000, 100_000]]}, "more than 100000 shards"),
        ({"keys": ["1", [0, 1]]}, "shard key 'k#1'"),
        ({"prefix": "", "keys": ["", "a"], "done": [], "starts": []}, "shard key ''"),
        ({"done": [[0, 4]]}, "done run [0, 4]"),
        ({"done": [[2, 3], [1, 1]]}, "done run [1, 1]"),
        ({"done": [[0, 1], [1, 2]]}, "done run [1, 2]"),
        ({"done": [[1]]}, "done run [1]"),
        ({"done": [[False, 1]]}, "done run [False, 1]"),
        ({"starts": [[4, {"pk": {"S": "k#4"}}]]}, "starts entry [4, {'pk': {'S': 'k#4'}}]"),
        ({"starts": [[-1, {"pk": {"S": "k#0"}}]]}, "starts entry [-1, {'pk': {'S': 'k#0'}}]"),
        ({"starts": [[1, {"pk": {"S": "a"}}], [1, {"pk": {"S": "b"}}]]}, "starts entry [1, "),
        ({"starts": [[2, {"pk": {"S": "a"}}], [0, {"pk": {"S": "b"}}]]}, "starts entry [0, "),
        ({"starts": [[True, {"pk": {"S": "a"}}]]}, "starts entry [True, "),
        ({"starts": [[0]]}, "starts entry [0]"),
        ({"starts": ["k#0"]}, "starts entry 'k#0'"),
        ({"starts": [[0, None]]}, "start of shard 0: None is not a key"),
        ({"starts": [[3, {"ts": {"N": "five"}}]]}, "start of shard 3: attribute 'ts' is not a"),
    ],
)
def test_version_three_runs_and_places_are_checked(changes: dict[str, Any], problem: str) -> None:
    """Runs are ``[first, last]`` integers in order, places within the shards, each key
    once and not empty, at most 100,000 shards once expanded (a crafted run is refused
    before it is expanded)."""
    assert refusal(forged(compact(**changes))).startswith(
        f"last_evaluated_key is malformed ({problem}"
    )


def test_the_largest_run_a_cursor_may_hold_is_read() -> None:
    back = decode_cursor(forged(compact(keys=[[0, 99_999]], done=[[5, 99_999]])))
    assert len(back.shards) == 100_000 and back.shards[-1] == ShardPosition("k#99999", None, True)
