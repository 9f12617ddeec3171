"""Reads and writes are charged as DynamoDB charges them, checked against hand-computed units.

The item layout makes sizes easy to count: ``pk`` "a" is 2 + 1 bytes, ``sk`` (a one-digit
number) is 2 + 2 bytes, ``blob`` is 4 bytes of name plus its characters: 11 + len(blob).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.connection import Connection
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model
from pynamodb.transactions import TransactGet

from shardmodel.testing import CapacitySimulator, PartitionId, item_size

OVERHEAD = 11  # bytes of pk, sk and the name "blob" (see the module docstring)


class Doc(Model):
    """A plain PynamoDB model with a string blob."""

    class Meta:
        table_name = "sim-docs"
        region = "us-east-1"

    pk = UnicodeAttribute(hash_key=True)
    sk = NumberAttribute(range_key=True)
    blob = UnicodeAttribute()


PART = PartitionId("sim-docs", None, "a")


def _doc(sk: int, size: int) -> Doc:
    """A document of exactly ``size`` bytes."""
    return Doc(pk="a", sk=sk, blob="x" * (size - OVERHEAD))


@pytest.fixture
def sim(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
) -> CapacitySimulator:
    """A simulator on the Doc table, holding a 4,097-byte and two 100-byte documents."""
    dynamodb_tables(Doc)
    simulator = capacity_simulator(Doc)
    for sk, size in ((1, 4097), (2, 100), (3, 100)):
        _doc(sk, size).save()
    return simulator


def _read_units(sim: CapacitySimulator, action: Callable[[], object]) -> float:
    before = sim.usage()[PART].read_units
    action()
    return sim.usage()[PART].read_units - before


def test_the_layout_has_the_sizes_the_tests_count_on() -> None:
    """The hand counts below rest on these sizes."""
    assert item_size(_doc(1, 4097).serialize()) == 4097
    assert item_size(_doc(2, 100).serialize()) == 100


def test_writes_cost_one_unit_per_started_kilobyte(sim: CapacitySimulator) -> None:
    """1,024 bytes cost 1 WCU, 1,025 bytes 2, 4,097 bytes 5 (the fixture's writes: 5+1+1)."""
    assert sim.usage()[PART].write_units == 5 + 1 + 1
    for size, units in ((1024, 1), (1025, 2), (4097, 5)):
        before = sim.usage()[PART].write_units
        _doc(9, size).save()
        assert sim.usage()[PART].write_units - before == units


@pytest.mark.parametrize(
    ("sk", "consistent", "units"),
    [
        (1, True, 2.0),  # 4,097 bytes: two started 4 KB units
        (1, False, 1.0),  # eventually consistent: half
        (2, True, 1.0),  # 100 bytes: one unit
        (2, False, 0.5),
        (404, True, 1.0),  # an absent item still costs one unit
        (404, False, 0.5),
    ],
)
def test_get_item_costs_started_4kb_units_halved_when_eventual(
    sim: CapacitySimulator, sk: int, consistent: bool, units: float
) -> None:
    """GetItem: one RCU per started 4 KB strongly consistent, half eventually consistent."""

    def read() -> None:
        with contextlib.suppress(Doc.DoesNotExist):
            Doc.get("a", sk, consistent_read=consistent)

    assert _read_units(sim, read) == units


@pytest.mark.parametrize(("consistent", "units"), [(True, 2.0), (False, 1.0)])
def test_a_query_is_charged_by_the_bytes_it_read_not_per_item(
    sim: CapacitySimulator, consistent: bool, units: float
) -> None:
    """A query of 4,097 + 100 + 100 = 4,297 bytes costs ceil(4,297 / 4,096) = 2 RCU (1 eventual).

    Per item it would have been 2 + 1 + 1 = 4.
    """
    assert _read_units(sim, lambda: list(Doc.query("a", consistent_read=consistent))) == units


def test_batch_get_rounds_each_item_on_its_own(sim: CapacitySimulator) -> None:
    """BatchGetItem, eventually consistent: 1 + 0.5 + 0.5 = 2 RCU for the three documents."""
    keys = [("a", 1), ("a", 2), ("a", 3)]
    assert _read_units(sim, lambda: list(Doc.batch_get(keys))) == 2.0
    keys_strong = [("a", 1), ("a", 2)]
    strong = _read_units(sim, lambda: list(Doc.batch_get(keys_strong, consistent_read=True)))
    assert strong == 2.0 + 1.0


def test_transactional_reads_cost_double(sim: CapacitySimulator) -> None:
    """TransactGetItems costs twice a strongly consistent read: 2 x (2 + 1) = 6 RCU."""
    connection = Connection(region="us-east-1")
    sim.attach_client(connection.client)  # transactions run on their own connection

    def read() -> None:
        with TransactGet(connection=connection) as transaction:
            transaction.get(Doc, "a", 1)
            transaction.get(Doc, "a", 2)

    assert _read_units(sim, read) == 6.0


class ByOwner(GlobalSecondaryIndex["Tagged"]):
    """Documents by owner."""

    class Meta:
        index_name = "by-owner"
        projection = AllProjection()

    owner = UnicodeAttribute(hash_key=True)


class Tagged(Model):
    """A plain model with a global secondary index."""

    class Meta:
        table_name = "sim-tagged"
        region = "us-east-1"

    pk = UnicodeAttribute(hash_key=True)
    owner = UnicodeAttribute()
    by_owner = ByOwner()


def test_an_index_query_is_charged_to_the_index_partition(
    dynamodb_tables: Callable[..., None],
    capacity_simulator: Callable[..., CapacitySimulator],
) -> None:
    """A query on a global index reads the index's partition of the owner, not the table's."""
    dynamodb_tables(Tagged)
    sim = capacity_simulator(Tagged)
    for n in range(3):
        Tagged(pk=f"doc-{n}", owner="ann").save()

    assert len(list(Tagged.by_owner.query("ann"))) == 3

    index_part = PartitionId("sim-tagged", "by-owner", "ann")
    assert sim.usage()[index_part].read_units == 0.5  # 3 small items, eventually consistent
    assert sim.table_usage("sim-tagged").read_units == 0
