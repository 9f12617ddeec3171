"""A physical key passed as a logical one: a read that finds nothing says so.

``Notification.query("celebrity#3")`` is a valid query of the logical key ``celebrity#3``
(logical keys may hold ``#``), so nothing is refused; but when it finds nothing and the
key reads as a physical key of the layout, the miss names the likely mistake.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute, UTCDateTimeAttribute

from shardmodel import (
    HashShards,
    PhysicalKeyWarning,
    RandomShards,
    ShardedKeyAttribute,
    ShardedModel,
    TimeBuckets,
)
from shardmodel.engine.queries import _HINTED
from shardmodel.errors import ShardConfigurationError
from shardmodel.testing import bind_models, create_tables, mock_dynamodb


class Note(ShardedModel):
    class Meta:
        table_name = "hint-notes"
        region = "us-east-1"

    user_id = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(4), rng=random.Random(1))
    seq = NumberAttribute(range_key=True)


class Numbered(ShardedModel):
    """Shards numbered 1 to 4 (``_1`` ... ``_4``)."""

    class Meta:
        table_name = "hint-numbered"
        region = "us-east-1"

    user_id = ShardedKeyAttribute(
        hash_key=True, strategy=HashShards(4, on=["seq"]), separator="_", first_shard=1
    )
    seq = NumberAttribute(range_key=True)


class Daily(ShardedModel):
    class Meta:
        table_name = "hint-daily"
        region = "us-east-1"

    user_id = ShardedKeyAttribute(hash_key=True, strategy=TimeBuckets("at", "day"))
    at = UTCDateTimeAttribute(range_key=True)


class Quiet(ShardedModel):
    """Logical keys that look physical on purpose: hints off."""

    class Meta:
        table_name = "hint-quiet"
        region = "us-east-1"
        physical_key_hints = False

    org = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(4))
    seq = NumberAttribute(range_key=True)


MODELS = (Note, Numbered, Daily, Quiet)


@pytest.fixture(autouse=True)
def tables() -> Iterator[None]:
    _HINTED.clear()  # each test sees its own first warning
    with mock_dynamodb():
        bind_models(MODELS, host=None)
        create_tables(MODELS)
        yield


def _read(model: Any, key: str, range_key: Any) -> tuple[str, list[str]]:
    """The get's error message and the query's warnings, for ``key``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bounded = model.at.between(range_key, range_key) if model is Daily else None
        assert list(model.query(key, bounded)) == []
    with pytest.raises(model.DoesNotExist) as missed:
        model.get(key, range_key)
    return str(missed.value), [str(w.message) for w in caught if w.category is PhysicalKeyWarning]


def test_a_physical_key_read_as_logical_names_the_logical_key() -> None:
    Note(user_id="celebrity", seq=1).save()
    message, warned = _read(Note, "celebrity#3", 1)
    assert "Note: nothing under the logical key 'celebrity#3', which reads as a physical key" in (
        message
    )
    assert "Note.logical_key_of('celebrity#3') gives 'celebrity'" in message
    assert warned == [message]
    numbered, _ = _read(Numbered, "user-7_4", 1)
    assert "(logical key 'user-7')" in numbered


@pytest.mark.parametrize(
    ("model", "key", "range_key"),
    [
        (Note, "celebrity", 1),  # a logical key with nothing stored
        (Note, "org#4", 1),  # shard 4 of 4 shards numbered from 0: not a shard
        (Note, "org#x", 1),
        (Numbered, "user-7_0", 1),  # numbered from 1
        (Daily, "user-7#2024-01-01", datetime(2024, 1, 1, tzinfo=timezone.utc)),  # a day
    ],
    ids=["logical", "beyond-the-count", "not-a-number", "below-the-first", "time-bucket"],
)
def test_a_miss_under_a_key_that_is_not_physical_says_nothing_more(
    model: Any, key: str, range_key: Any
) -> None:
    message, warned = _read(model, key, range_key)
    assert "physical key" not in message and warned == []


def test_a_logical_key_holding_the_separator_reads_its_items_without_a_warning() -> None:
    Note(user_id="org#3", seq=1).save()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [n.seq for n in Note.query("org#3")] == [1]
        assert Note.get("org#3", 1).user_id == "org#3"


def _warned(model: Any, *keys: str) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for key in keys:
            assert list(model.query(key)) == []
    return [str(w.message) for w in caught if w.category is PhysicalKeyWarning]


def test_the_warning_comes_once_per_logical_key_it_reads_as() -> None:
    """Keys copied from the table in a loop: one warning for ``celebrity``, one for
    ``fan``, however many of their shards are read."""
    warned = _warned(Note, "celebrity#3", "celebrity#1", "celebrity#3", "fan#0", "fan#2")
    assert len(warned) == 2
    assert "'celebrity#3'" in warned[0] and "'fan#0'" in warned[1]
    assert _warned(Numbered, "celebrity_1") != []  # another model: its own warning


def test_meta_physical_key_hints_false_turns_the_hints_off() -> None:
    """A model whose logical keys look like ``org#3`` on purpose says nothing more."""
    assert _warned(Quiet, "org#3") == []
    with pytest.raises(Quiet.DoesNotExist) as missed:
        Quiet.get("org#3", 1)
    assert "physical key" not in str(missed.value)


def test_meta_physical_key_hints_takes_a_boolean_only() -> None:
    with pytest.raises(ShardConfigurationError) as refused:

        class Wrong(ShardedModel):
            class Meta:
                table_name = "hint-wrong"
                physical_key_hints = "no"

            org = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(4))

    assert str(refused.value).startswith(
        "Wrong.Meta.physical_key_hints is 'no'; set it to True (the default"
    )
