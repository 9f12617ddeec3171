"""Hypothesis: a cursor is signed with its model's ``Meta.cursor_secret`` and checked with it.

Classes of one query (same name, table and shards) that differ only in their secret
stand for one model deployed with another secret, or none: each refuses the others'
cursors, and a class with the same secret, given as text or as its UTF-8 bytes,
resumes them (moto).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from shardmodel import CursorError
from tests.models import CursorSecret, event_model

pytestmark = pytest.mark.usefixtures("tables")

_keys = itertools.count()
ITEMS = 12

#: None, text, the same text as bytes, other text, bytes that are not text.
SECRETS: list[CursorSecret] = [None, "s3cret", b"s3cret", "clé ü 🔑", b"\x00\xffbinary"]


def _as_bytes(secret: CursorSecret) -> bytes | None:
    return secret.encode("utf-8") if isinstance(secret, str) else secret


def _read(results: Any) -> list[int]:
    return [int(item.timestamp) for item in results]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    secrets=st.tuples(st.sampled_from(SECRETS), st.sampled_from(SECRETS)),
    stop=st.integers(0, ITEMS - 1),
    forward=st.booleans(),
    page_size=st.none() | st.integers(1, 5),
)
@example(secrets=(None, "s3cret"), stop=3, forward=True, page_size=None)
@example(secrets=("s3cret", None), stop=3, forward=True, page_size=None)
@example(secrets=("s3cret", "clé ü 🔑"), stop=7, forward=False, page_size=4)
@example(secrets=("s3cret", b"s3cret"), stop=7, forward=False, page_size=4)
def test_a_cursor_resumes_only_under_its_own_secret(
    secrets: tuple[CursorSecret, CursorSecret], stop: int, forward: bool, page_size: int | None
) -> None:
    """Same secret (text or bytes): the rest, nothing lost or repeated; else CursorError.

    Refused both ways: a cursor signed with a secret given to a class with another
    secret or none, and one signed without a secret given to a class with one.
    """
    mine, theirs = secrets
    model, other = (event_model("random", 7, secret) for secret in secrets)
    key = f"cursor-{next(_keys)}"
    with model.batch_write() as batch:
        for ts in range(ITEMS):
            batch.save(model(user_id=key, timestamp=ts, event_type="e"))
    everything = list(range(ITEMS)) if forward else list(range(ITEMS - 1, -1, -1))
    options: dict[str, Any] = {"scan_index_forward": forward, "page_size": page_size}
    cursors = []
    for cls in (model, other):
        first = cls.query(key, **options)
        seen = _read(itertools.islice(first, stop))
        cursor = first.last_evaluated_key
        first.close()
        assert seen == everything[:stop] and cursor is not None  # items are left
        cursors.append(cursor)
    ours, foreign = cursors
    rest = _read(model.query(key, last_evaluated_key=ours, **options))
    assert everything[:stop] + rest == everything
    if _as_bytes(mine) == _as_bytes(theirs):
        rest = _read(other.query(key, last_evaluated_key=ours, **options))
        assert everything[:stop] + rest == everything
        rest = _read(model.query(key, last_evaluated_key=foreign, **options))
        assert everything[:stop] + rest == everything
    else:
        with pytest.raises(CursorError):
            list(other.query(key, last_evaluated_key=ours, **options))
        with pytest.raises(CursorError):
            list(model.query(key, last_evaluated_key=foreign, **options))
