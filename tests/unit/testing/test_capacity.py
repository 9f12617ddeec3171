"""The capacity ledger and the item size rules, without any server."""

from __future__ import annotations

import base64

import pytest

from shardmodel.testing import (
    CapacityLimits,
    PartitionId,
    attribute_value_size,
    item_size,
    read_units,
    write_units,
)
from shardmodel.testing.capacity import CapacityLedger, Charge

HOT = PartitionId("t", None, "hot")


def _admitted(ledger: CapacityLedger, charges: list[Charge], now: float) -> int:
    return sum(1 for charge in charges if not ledger.admit_all([charge], "write", now))


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ({"S": "héllo"}, 6),  # UTF-8 bytes
        ({"N": "123"}, 3),  # 3 significant digits: 2 bytes, plus 1
        ({"N": "-0.00120"}, 2),  # leading and trailing zeros trimmed: "12"
        ({"B": base64.b64encode(b"\x00" * 10).decode()}, 10),  # raw bytes, not base64
        ({"B": b"\x00" * 10}, 10),
        ({"BOOL": True}, 1),
        ({"NULL": True}, 1),
        ({"SS": ["ab", "c"]}, 3),
        ({"L": [{"S": "ab"}, {"N": "1"}]}, 3 + (1 + 2) + (1 + 2)),
        ({"M": {"k": {"S": "ab"}}}, 3 + 1 + 1 + 2),
        ({"L": []}, 3),
    ],
)
def test_attribute_sizes_follow_dynamodb_rules(value: dict[str, object], size: int) -> None:
    """Each type is sized as DynamoDB's item size guide says."""
    assert attribute_value_size(value) == size


def test_item_size_counts_attribute_names() -> None:
    """An item is its names' UTF-8 bytes plus its values."""
    assert item_size({"pk": {"S": "a"}, "long_name": {"BOOL": False}}) == 2 + 1 + 9 + 1


def test_units_round_up_per_started_unit() -> None:
    """1 WCU per started KB, 1 RCU per started 4 KB, half when eventually consistent."""
    assert [write_units(s) for s in (0, 1024, 1025)] == [1, 1, 2]
    assert [read_units(s, True) for s in (0, 4096, 4097)] == [1, 1, 2]
    assert [read_units(s, False) for s in (0, 4096, 4097)] == [0.5, 0.5, 1]


def test_a_partition_admits_its_limit_each_second() -> None:
    """1,000 WCU/s: 1,500 one-unit writes in one second admit 1,000; the next second, again."""
    ledger = CapacityLedger(CapacityLimits())
    charges = [Charge(HOT, 1)] * 1500
    assert _admitted(ledger, charges, 0.5) == 1000
    assert _admitted(ledger, charges, 1.5) == 1000
    usage = ledger.usage()[HOT]
    assert (usage.write_units, usage.write_throttles) == (2000, 1000)


def test_reads_and_writes_share_a_partition_linearly() -> None:
    """3,000 RCU or 1,000 WCU, or a mix: 2,000 RCU leave 333 WCU, not 1,000 (nor 600)."""
    ledger = CapacityLedger(CapacityLimits())
    reads = [Charge(HOT, 1.0) for _ in range(2_000)]
    assert sum(1 for c in reads if not ledger.admit_all([c], "read", 5.2)) == 2_000
    writes = [Charge(HOT, 1.0) for _ in range(600)]
    assert _admitted(ledger, writes, 5.5) == 333
    # the writes left a ninth of the second: reads fill it and no more
    assert sum(1 for c in reads if not ledger.admit_all([c], "read", 5.9)) == 1
    assert _admitted(ledger, writes, 6.0) == 600  # a new second, nothing read yet
    usage = ledger.usage()[HOT]
    assert (usage.write_throttles, usage.read_throttles) == (267, 1_999)
    # 600 WCU leave 1,200 RCU: a read of 1,201 is refused, one of 1,200 fills the second
    assert ledger.admit_all([Charge(HOT, 1_201.0)], "read", 6.5)
    assert not ledger.admit_all([Charge(HOT, 1_200.0)], "read", 6.5)
    assert ledger.admit_all([Charge(HOT, 0.5)], "read", 6.6)
    # a provisioned share (100 WCU) is each side's own bucket: full writes leave reads
    share = CapacityLedger(CapacityLimits(partition_wcu=100))
    assert _admitted(share, writes, 1.0) == 100
    assert not share.admit_all([Charge(HOT, 2_000.0)], "read", 1.5)  # 0.1 + 0.67 of it


def test_charges_in_any_time_order_land_in_their_own_second() -> None:
    """A retry charged in a later second does not take an earlier second's capacity."""
    ledger = CapacityLedger(CapacityLimits(partition_wcu=10))
    assert _admitted(ledger, [Charge(HOT, 1)] * 10, 5.2) == 10
    assert _admitted(ledger, [Charge(HOT, 1)] * 12, 0.1) == 10


def test_a_refused_multi_partition_request_takes_nothing() -> None:
    """A transaction with one hot partition is refused whole, and the cold one keeps its room."""
    ledger = CapacityLedger(CapacityLimits(partition_wcu=2))
    cold = PartitionId("t", None, "cold")
    ledger.admit_all([Charge(HOT, 2)], "write", 0)
    throttles = ledger.admit_all([Charge(cold, 2), Charge(HOT, 2)], "write", 0)
    assert [t.partition for t in throttles] == [HOT]
    assert not ledger.admit_all([Charge(cold, 2)], "write", 0)


def test_a_table_limit_throttles_with_a_table_reason() -> None:
    """Cold keys under a 100 WCU/s table limit: the refusals name the table, not a key range."""
    ledger = CapacityLedger(CapacityLimits(table_wcu=100))
    refused = [
        throttle
        for n in range(150)
        for throttle in ledger.admit_all([Charge(PartitionId("t", None, f"k{n}"), 1)], "write", 0)
    ]
    assert len(refused) == 50
    assert {t.reason for t in refused} == {"TableWriteProvisionedThroughputExceeded"}
    assert not any(t.is_partition for t in refused)


def test_burst_credit_spends_unused_seconds_of_the_table() -> None:
    """With burst credit, a quiet second's unused table capacity serves a later spike."""
    charges = [Charge(PartitionId("t", None, f"k{n}"), 1) for n in range(150)]
    without = CapacityLedger(CapacityLimits(table_wcu=100))
    with_burst = CapacityLedger(CapacityLimits(table_wcu=100, burst_seconds=300))
    for ledger in (without, with_burst):
        ledger.admit_all([charges[0]], "write", 0.0)  # second 0: 99 units unused
    assert _admitted(without, charges, 1.0) == 100
    assert _admitted(with_burst, charges, 1.0) == 150


def test_a_partition_count_groups_keys_into_shared_partitions() -> None:
    """With one physical partition every key shares its 1,000 WCU/s; by default none do."""
    keys = [f"key-{n}" for n in range(1500)]
    shared = CapacityLedger(CapacityLimits(partitions=1))
    per_key = CapacityLedger(CapacityLimits())
    for ledger, admitted in ((shared, 1000), (per_key, 1500)):
        charges = [Charge(ledger.partition("t", None, key), 1) for key in keys]
        assert _admitted(ledger, charges, 0) == admitted
    spread = CapacityLedger(CapacityLimits(partitions=4))
    assert len({spread.partition("t", None, key) for key in keys}) == 4


def test_limits_are_checked_when_built() -> None:
    """A zero limit or partition count is refused with the field named."""
    with pytest.raises(ValueError, match="positive"):
        CapacityLimits(partition_wcu=0)
    with pytest.raises(ValueError, match="partitions"):
        CapacityLimits(partitions=0)
