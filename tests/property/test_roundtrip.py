"""For any item and every strategy: get() finds it, logically keyed, on a shard reads touch."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardmodel import HashShards
from shardmodel.engine.reads import candidate_keys
from tests.models import DailyEvent, HashedEvent, RandomEvent
from tests.strategies import aware_datetimes, epoch_seconds, logical_keys

pytestmark = pytest.mark.usefixtures("tables")
fixture_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
unique = itertools.count()


def check_round_trip(model: type, logical: str, range_key: object, **extra: object) -> None:
    item = model(logical, range_key, **extra)
    item.save()
    physical = item.get_physical_key()
    candidates = candidate_keys(model, logical, range_key)
    assert physical in candidates
    loaded = model.get(logical, range_key)
    assert loaded._hash_key_attribute().__get__(loaded, model) == logical
    assert loaded.get_physical_key() == physical
    loaded.delete()


@fixture_ok
@given(logical=logical_keys, timestamp=epoch_seconds)
def test_random_shards_round_trip(logical: str, timestamp: int) -> None:
    """RandomShards: every saved item is found by get() among the n shards."""
    check_round_trip(RandomEvent, f"{next(unique)}{logical}", timestamp, event_type="e")


@fixture_ok
@given(logical=logical_keys, timestamp=epoch_seconds)
def test_hash_shards_round_trip(logical: str, timestamp: int) -> None:
    """HashShards: the one shard a get() reads is the one the write picked."""
    key = f"{next(unique)}{logical}"
    check_round_trip(HashedEvent, key, timestamp)
    assert len(candidate_keys(HashedEvent, key, timestamp)) == 1


@fixture_ok
@given(logical=logical_keys, created=aware_datetimes)
def test_time_buckets_round_trip(logical: str, created: datetime) -> None:
    """TimeBuckets + RandomShards: the item lands in its UTC day bucket and is found."""
    key = f"{next(unique)}{logical}"
    check_round_trip(DailyEvent, key, created)
    day = created.astimezone(timezone.utc).strftime("%Y-%m-%d")
    assert all(f"#{day}#" in c for c in candidate_keys(DailyEvent, key, created))


@settings(max_examples=8)
@given(values=st.lists(st.text(max_size=20), min_size=1, max_size=3), n=st.integers(1, 1000))
def test_hash_is_stable_across_processes(values: list[str], n: int) -> None:
    """A fresh interpreter (new hash seed) computes the same shard."""
    strategy = HashShards(n, on=[f"a{i}" for i in range(len(values))])
    code = (
        "import sys, json; from shardmodel import HashShards;"
        "v=json.loads(sys.argv[1]); n=int(sys.argv[2]);"
        "print(HashShards(n, on=[f'a{i}' for i in range(len(v))]).shard_of(v))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(values), str(n)],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONHASHSEED": "random"},
    )
    assert int(out.stdout) == strategy.shard_of(values)
