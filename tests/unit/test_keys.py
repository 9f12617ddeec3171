"""The physical key format is a compatibility promise: these keys are fixed literals."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from shardmodel import (
    HashShards,
    KeyLayout,
    PhysicalKey,
    RandomShards,
    ShardConfigurationError,
    ShardKeyError,
    TimeBuckets,
)
from shardmodel.keyspace.strategies import KeyValues

UTC = timezone.utc


def values(logical: str, **canonical: str) -> KeyValues:
    return KeyValues(logical_key=logical, values=dict(canonical), canonical=dict(canonical))


def test_guide_calculated_suffix_keys_are_fixed() -> None:
    """md5(path + str(timestamp)) % 10 + 1 with '_' gives the guides' keys, forever."""
    layout = KeyLayout(HashShards(10, on=["path", "timestamp"]), separator="_", first_shard=1)
    rng = random.Random(0)
    path = "/shared/firetvGen2.txt"
    picked = [
        layout.pick(values(path, path=path, timestamp=str(ts)), rng)
        for ts in (1700000000, 1700000001, 1700000002)
    ]
    assert picked == [
        "/shared/firetvGen2.txt_1",
        "/shared/firetvGen2.txt_7",
        "/shared/firetvGen2.txt_5",
    ]


def test_hash_shards_are_fixed_for_md5_and_sha256() -> None:
    """Hashes are md5/sha256 of the joined values, never Python's salted hash()."""
    assert HashShards(8, on=["t"]).shard_of(["1700000000"]) == 1
    assert HashShards(8, on=["t"]).shard_of(["42"]) == 6
    assert HashShards(16, on=["t"], algorithm="sha256").shard_of(["abc"]) == 13


def test_time_bucket_then_random_composes_left_to_right() -> None:
    """[TimeBuckets(day), RandomShards(5)] writes tenant-456#2024-01-15#<0..4>."""
    layout = KeyLayout([TimeBuckets("created", "day"), RandomShards(5)])
    moment = datetime(2024, 1, 15, 23, 30, tzinfo=UTC)
    key = KeyValues("tenant-456", {"created": moment}, {})
    seen = {layout.pick(key, random.Random(seed)) for seed in range(50)}
    assert seen == {f"tenant-456#2024-01-15#{n}" for n in range(5)}
    assert layout.candidates(key) == [f"tenant-456#2024-01-15#{n}" for n in range(5)]


@pytest.mark.parametrize(
    ("granularity", "label"),
    [
        ("minute", "2024-01-15T23:30"),
        ("hour", "2024-01-15T23"),
        ("day", "2024-01-15"),
        ("week", "2024-W03"),
        ("month", "2024-01"),
        ("year", "2024"),
        ("%Y-%m-%d-%H", "2024-01-15-23"),
    ],
)
def test_time_bucket_labels_are_fixed(granularity: str, label: str) -> None:
    """Each granularity's label format is part of the key format."""
    moment = datetime(2024, 1, 15, 23, 30, 59, tzinfo=UTC)
    assert TimeBuckets("t", granularity).bucket(moment) == label


def test_time_buckets_convert_every_input_to_utc() -> None:
    """Epoch numbers, aware datetimes in any zone and ISO strings land in the UTC bucket."""
    buckets = TimeBuckets("t", "day")
    plus_two = timezone(timedelta(hours=2))
    assert buckets.bucket(1705363200) == "2024-01-16"  # 2024-01-16T00:00:00Z
    assert buckets.bucket(datetime(2024, 1, 16, 1, 0, tzinfo=plus_two)) == "2024-01-15"
    assert buckets.bucket("2024-01-16T01:00:00+02:00") == "2024-01-15"
    assert buckets.bucket("2024-01-15T10:00:00Z") == "2024-01-15"


def test_naive_times_are_refused() -> None:
    """A naive datetime or offset-less ISO string has no UTC bucket: the error says so."""
    buckets = TimeBuckets("created", "day")
    with pytest.raises(ShardKeyError, match="created: naive datetime"):
        buckets.bucket(datetime(2024, 1, 15))
    with pytest.raises(ShardKeyError, match="append 'Z'"):
        buckets.bucket("2024-01-15T10:00:00")


def test_first_shard_and_prefix_placement() -> None:
    """first_shard shifts numbers; prefix placement puts segments before the logical key."""
    key = values("2023-10-27-15", sk="sensor-alpha-001#2023-10-27T15:04:05Z")
    prefix = KeyLayout(HashShards(10, on=["sk"]), placement="prefix")
    assert prefix.pick(key, random.Random(0)) == "3#2023-10-27-15"
    assert prefix.split("3#2023-10-27-15") == ("2023-10-27-15", ("3",))
    one_based = KeyLayout(RandomShards(10), separator="_", first_shard=1)
    assert one_based.candidates(values("f")) == [f"f_{n}" for n in range(1, 11)]


def test_split_keeps_separators_inside_the_logical_key() -> None:
    """Only the layout's own segments are split off; the logical key may hold the separator."""
    layout = KeyLayout(RandomShards(10))
    assert layout.logical_key("order#2024#7") == "order#2024"
    with pytest.raises(ShardKeyError, match="was it written by this model's layout"):
        layout.split("no-separator")


def test_pick_returns_a_physical_key() -> None:
    """What a write picks is marked as a physical key, so it can be passed back to reads."""
    assert isinstance(KeyLayout(RandomShards(3)).pick(values("u"), random.Random(1)), PhysicalKey)


@pytest.mark.parametrize("n", [0, -1, 1001, 2.5, True, "10"])
def test_shard_count_out_of_range_is_refused(n: object) -> None:
    """Shard counts are ints from 1 to 1,000; the message says how to choose."""
    with pytest.raises(ShardConfigurationError, match="shard count"):
        RandomShards(n)  # type: ignore[arg-type]
    with pytest.raises(ShardConfigurationError, match="shard count"):
        HashShards(n, on=["x"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"separator": ""}, "separator"),
        ({"first_shard": -1}, "first_shard"),
        ({"first_shard": 1.0}, "first_shard"),
        ({"placement": "middle"}, "placement"),
    ],
)
def test_layout_settings_are_checked(kwargs: dict[str, object], message: str) -> None:
    """Every layout setting is validated when declared, naming the setting."""
    with pytest.raises(ShardConfigurationError, match=message):
        KeyLayout(RandomShards(2), **kwargs)  # type: ignore[arg-type]


def test_bad_strategies_and_formats_are_refused() -> None:
    """Non-strategies, empty lists, unknown granularities and hash settings are refused."""
    with pytest.raises(ShardConfigurationError, match="not a sharding strategy"):
        KeyLayout(["nope"])  # type: ignore[list-item]
    with pytest.raises(ShardConfigurationError, match="at least one strategy"):
        KeyLayout([])
    with pytest.raises(ShardConfigurationError, match="not a granularity"):
        TimeBuckets("t", "days")
    with pytest.raises(ShardConfigurationError, match="same label"):
        TimeBuckets("t", "%%")
    with pytest.raises(ShardConfigurationError, match="algorithm"):
        HashShards(2, on=["x"], algorithm="crc32")
    with pytest.raises(ShardConfigurationError, match="at least one attribute"):
        HashShards(2, on=[])


def test_physical_key_over_2048_bytes_is_refused() -> None:
    """DynamoDB's partition key limit is checked before any request."""
    layout = KeyLayout(RandomShards(2))
    with pytest.raises(ShardKeyError, match="2048-byte"):
        layout.pick(values("é" * 1024), random.Random(0))
    assert len(layout.pick(values("e" * 2046), random.Random(0)).encode()) == 2048
