"""Instances built from stored items equal PynamoDB's own, attribute for attribute."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pynamodb.attributes import (
    BinaryAttribute,
    BooleanAttribute,
    DiscriminatorAttribute,
    ListAttribute,
    MapAttribute,
    NumberAttribute,
    NumberSetAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
    VersionAttribute,
)
from pynamodb.exceptions import AttributeDeserializationError
from pynamodb.models import Model

from shardmodel import HashShards, ShardedKeyAttribute, ShardedModel
from shardmodel.engine.building import build_plan, number
from shardmodel.engine.codec import logical_raw
from tests.models import HashedEvent


class Address(MapAttribute[str, Any]):
    city = UnicodeAttribute()
    zip = NumberAttribute(null=True)


class Wide(ShardedModel):
    """One attribute of every kind, with defaults plain and callable."""

    class Meta:
        table_name = "building-wide"
        region = "us-east-1"

    pk = ShardedKeyAttribute(hash_key=True, strategy=HashShards(4, on=["sk"]))
    sk = NumberAttribute(range_key=True)
    name = UnicodeAttribute(null=True, default="anonymous")
    tags = ListAttribute(of=UnicodeAttribute, null=True, default=list)
    flag = BooleanAttribute(null=True)
    blob = BinaryAttribute(null=True, legacy_encoding=False)
    scores = NumberSetAttribute(null=True)
    address = Address(null=True)
    anything = MapAttribute[str, Any](null=True)
    when = UTCDateTimeAttribute(null=True)
    expires = TTLAttribute(null=True)
    version = VersionAttribute(null=True)
    renamed = UnicodeAttribute(null=True, attr_name="stored_as")


def pynamodb_built(model: type[ShardedModel], item: dict[str, Any]) -> Model:
    """What PynamoDB's own ``_instantiate`` builds of the item with its logical key."""
    logical = logical_raw(model, item)[0]
    return Model._instantiate.__func__(model, logical)  # type: ignore[attr-defined, no-any-return]


def stored(**values: Any) -> dict[str, Any]:
    """A stored Wide item: the physical key and ``values`` serialized as DynamoDB holds them."""
    instance = Wide("a", 1, **values)
    item: dict[str, Any] = instance.serialize()
    return item


def test_every_attribute_kind_is_built_as_pynamodb_builds_it() -> None:
    item = stored(
        name="n",
        tags=["x", "y"],
        flag=False,
        blob=b"\x00\xff",
        scores={1, 2.5},
        address=Address(city="Oslo", zip=150),
        anything={"k": [1, "v", None]},
        when=datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
        expires=datetime(2030, 1, 1, tzinfo=timezone.utc),
        version=3,
        renamed="r",
    )
    ours, theirs = Wide.from_raw_data(item), pynamodb_built(Wide, item)
    assert ours.attribute_values.keys() == theirs.attribute_values.keys()
    for name in theirs.attribute_values:
        mine, pynamodbs = getattr(ours, name), getattr(theirs, name)
        assert type(mine) is type(pynamodbs), name
        if isinstance(mine, MapAttribute):  # compared by value: its == builds a condition
            mine, pynamodbs = mine.as_dict(), pynamodbs.as_dict()
        assert mine == pynamodbs, name
    assert ours.serialize() == theirs.serialize()
    assert ours.renamed == "r"
    assert type(ours.address) is Address


def test_defaults_and_nulls_are_those_pynamodb_sets() -> None:
    item = {"pk": {"S": "a#0"}, "sk": {"N": "1"}, "flag": {"NULL": True}, "name": {"NULL": True}}
    ours, theirs = Wide.from_raw_data(item), pynamodb_built(Wide, item)
    assert ours.name == theirs.name == "anonymous"  # NULL keeps the default, as in PynamoDB
    assert ours.tags == theirs.tags == []
    assert ours.flag is None and theirs.flag is None


def test_a_value_of_the_wrong_type_raises_pynamodbs_error() -> None:
    item = {"pk": {"S": "a#0"}, "sk": {"S": "1"}}
    with pytest.raises(AttributeDeserializationError):
        pynamodb_built(Wide, item)
    with pytest.raises(AttributeDeserializationError):
        Wide.from_raw_data(item)


class Initialized(HashedEvent):
    """A constructor of its own: it runs for every instance a read builds, as in PynamoDB."""

    class Meta:
        table_name = "building-initialized"
        region = "us-east-1"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen = True


def test_an_instance_built_without_init_is_the_one_pynamodb_builds() -> None:
    """HashedEvent: no defaults, PynamoDB's constructor: built without running it."""
    item = {"user_id": {"S": "a#1"}, "timestamp": {"N": "7"}, "event_type": {"S": "hi"}}
    plan = build_plan(HashedEvent)
    assert plan is not None and plan.blank
    ours, theirs = HashedEvent.from_raw_data(item), pynamodb_built(HashedEvent, item)
    assert type(ours) is HashedEvent
    assert {**vars(ours), "_physical_key": None} == {**vars(theirs), "_physical_key": None}
    assert ours.event_type == "hi" and ours.timestamp == 7 and ours.user_id == "a"
    assert not build_plan(Wide).blank  # defaults: __init__ sets them


def test_a_constructor_of_the_models_own_still_runs() -> None:
    plan = build_plan(Initialized)
    assert plan is not None and not plan.blank
    built = Initialized.from_raw_data({"user_id": {"S": "a#1"}, "timestamp": {"N": "7"}})
    assert built.seen and built.timestamp == 7


class Animal(ShardedModel):
    class Meta:
        table_name = "building-animals"
        region = "us-east-1"

    pk = ShardedKeyAttribute(hash_key=True, strategy=HashShards(2, on=["sk"]))
    sk = NumberAttribute(range_key=True)
    kind = DiscriminatorAttribute()


class Cat(Animal, discriminator="cat"):
    pass


def test_a_model_with_a_discriminator_keeps_pynamodbs_path() -> None:
    assert build_plan(Animal) is None
    item = Cat("a", 1).serialize()
    assert type(Animal.from_raw_data(item)) is Cat


@given(
    st.one_of(
        st.integers(-(10**38) + 1, 10**38 - 1).map(str),
        st.decimals(allow_nan=False, allow_infinity=False, places=6).map(str),
        st.sampled_from(["0", "-0", "1", "1.0", "1e0", "1E+2", "0.5", "10", "007"]),
    )
)
def test_numbers_are_what_json_loads_gives(text: str) -> None:
    try:
        expected = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            number(text)
        return
    found = number(text)
    assert found == expected and type(found) is type(expected)
