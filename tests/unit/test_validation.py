"""Bad input raises a clear error naming the field and the fix, before anything is written."""

from __future__ import annotations

from datetime import datetime

import pytest
from pynamodb.attributes import MapAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.transactions import TransactWrite

from shardmodel import (
    HashShards,
    RandomShards,
    ShardConfigurationError,
    ShardedKeyAttribute,
    ShardedModel,
    ShardKeyError,
    ShardModelError,
    TimeBuckets,
)
from tests.models import DailyEvent, FileLog, HashedEvent, RandomEvent
from tests.support import raw_items


def test_every_error_derives_from_the_root_and_a_builtin() -> None:
    """One root for shardmodel errors; key errors stay ValueErrors."""
    assert issubclass(ShardKeyError, ShardModelError)
    assert issubclass(ShardKeyError, ValueError)
    assert issubclass(ShardConfigurationError, TypeError)


def test_on_naming_a_missing_attribute_fails_at_class_definition() -> None:
    """A strategy reading an attribute the model lacks is refused when the class is made."""
    with pytest.raises(ShardConfigurationError, match=r"'tenant'.*use one of: pk, ts"):

        class Broken(ShardedModel):
            class Meta:
                table_name = "broken"

            pk = ShardedKeyAttribute(hash_key=True, strategy=HashShards(4, on=["tenant"]))
            ts = NumberAttribute(range_key=True)


def test_shard_count_out_of_range_fails_at_class_definition() -> None:
    """An impossible shard count never reaches a table."""
    with pytest.raises(ShardConfigurationError, match="between 1 and 1000"):

        class Broken(ShardedModel):
            class Meta:
                table_name = "broken"

            pk = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(0))


def test_time_format_containing_the_separator_is_refused() -> None:
    """A bucket label holding the separator could not be split back: refused at definition."""
    with pytest.raises(ShardConfigurationError, match="contain the key separator '-'"):

        class Broken(ShardedModel):
            class Meta:
                table_name = "broken"

            pk = ShardedKeyAttribute(
                hash_key=True, strategy=TimeBuckets("ts", "day"), separator="-"
            )
            ts = NumberAttribute(range_key=True)


def test_sharding_a_non_string_attribute_is_refused() -> None:
    """Only string partition keys are sharded, and strategies read only scalar attributes."""
    with pytest.raises(ShardConfigurationError, match="hash_key=True"):
        ShardedKeyAttribute(range_key=True, strategy=RandomShards(2))
    with pytest.raises(ShardConfigurationError, match="string or number attribute"):

        class Broken(ShardedModel):
            class Meta:
                table_name = "broken"

            pk = ShardedKeyAttribute(hash_key=True, strategy=HashShards(2, on=["blob"]))
            blob = MapAttribute[str, str]()


@pytest.mark.usefixtures("tables")
def test_non_string_logical_key_is_refused_before_writing() -> None:
    """A number given as a sharded key is refused with the str() fix."""
    with pytest.raises(ShardKeyError, match=r"RandomEvent.user_id: .*pass str\(12345\)"):
        RandomEvent(user_id=12345, timestamp=1).save()  # type: ignore[arg-type]
    with pytest.raises(ShardKeyError, match="empty"):
        RandomEvent(user_id="", timestamp=1).save()
    assert raw_items(RandomEvent) == []


@pytest.mark.usefixtures("tables")
def test_missing_on_value_is_refused_before_writing() -> None:
    """HashShards needs its on values: a missing one is named."""

    class Sized(ShardedModel):
        class Meta:
            table_name = "file-log"
            region = "us-east-1"

        path = ShardedKeyAttribute(
            hash_key=True, strategy=HashShards(10, on=["path", "size"]), separator="_"
        )
        timestamp = NumberAttribute(range_key=True)
        size = NumberAttribute(null=True)

    with pytest.raises(ShardKeyError, match="'size' has no value; set size"):
        Sized(path="/a", timestamp=1).save()
    assert raw_items(FileLog) == []


@pytest.mark.usefixtures("tables")
def test_naive_datetime_is_refused_before_writing() -> None:
    """A naive datetime has no UTC bucket, even though PynamoDB would store it as UTC."""
    with pytest.raises(ShardKeyError, match="created: naive datetime"):
        DailyEvent(tenant_id="t", created=datetime(2024, 1, 15)).save()
    assert raw_items(DailyEvent) == []


@pytest.mark.usefixtures("tables")
def test_oversized_physical_key_is_refused_before_writing() -> None:
    """A physical key over 2,048 bytes is refused, not sent."""
    with pytest.raises(ShardKeyError, match="2048-byte"):
        HashedEvent(user_id="x" * 2047, timestamp=1).save()
    assert raw_items(HashedEvent) == []


@pytest.mark.usefixtures("tables")
def test_bad_item_in_a_batch_is_refused_when_added() -> None:
    """batch_write checks each item as it is added, so a bad one never reaches a batch."""
    with pytest.raises(ShardKeyError), RandomEvent.batch_write() as batch:
        batch.save(RandomEvent(user_id="ok", timestamp=1))
        batch.save(RandomEvent(user_id=7, timestamp=2))  # type: ignore[arg-type]
    assert raw_items(RandomEvent) == []


@pytest.mark.usefixtures("tables")
def test_bad_item_in_a_transaction_is_refused_when_added() -> None:
    """TransactWrite prepares each item when added: the bad one raises before commit."""
    from pynamodb.connection import Connection

    with pytest.raises(ShardKeyError):
        with TransactWrite(connection=Connection(region="us-east-1")) as tx:
            tx.save(HashedEvent(user_id="ok", timestamp=1))
            tx.save(DailyEvent(tenant_id="t", created=datetime(2024, 1, 15)))
    assert raw_items(HashedEvent) == []


def test_a_plain_attribute_named_like_a_strategy_input_is_fine() -> None:
    """A valid declaration defines without error (guards the checks above from overreach)."""

    class Fine(ShardedModel):
        class Meta:
            table_name = "fine"

        pk = ShardedKeyAttribute(hash_key=True, strategy=HashShards(3, on=["pk", "name"]))
        name = UnicodeAttribute()

    assert (
        Fine(pk="a", name="b").get_physical_key()
        == f"a#{HashShards(3, on=['x']).shard_of(['a', 'b'])}"
    )


def test_a_sharded_key_on_a_plain_model_is_refused_by_name_at_definition() -> None:
    """Raised as is when the class is made: not as the cause of Python 3.11's
    ``RuntimeError: Error calling __set_name__``, where a reader sees it last."""
    from pynamodb.models import Model

    from shardmodel import RandomShards, ShardConfigurationError, ShardedKeyAttribute

    with pytest.raises(ShardConfigurationError) as caught:

        class Plain(Model):
            class Meta:
                table_name = "plain-sharded"

            user_id = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(4))

    assert str(caught.value).startswith("Plain.user_id: a ShardedKeyAttribute shards only")
    assert "class Plain(ShardedModel)" in str(caught.value)
    assert caught.value.__cause__ is None
