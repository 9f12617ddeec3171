"""Placement: what each strategy picks for a write, what a read touches, what it refuses."""

from __future__ import annotations

import random
from datetime import datetime, timezone
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import (
    DynamicShards,
    FanOutLimitError,
    HashShards,
    RandomShards,
    ShardConfigurationError,
    ShardKeyError,
    TimeBuckets,
    UnsupportedOperationError,
)
from shardmodel.keyspace.strategies import (
    MAX_QUERY_BUCKETS,
    MAX_SHARDS,
    ONE_SHARD,
    KeyValues,
    ShardCount,
)

UTC = timezone.utc
ATTRIBUTES = {"ts": NumberAttribute(), "path": UnicodeAttribute(), "day": UnicodeAttribute()}


def key(logical: str = "u", shards: ShardCount | None = None, **values: Any) -> KeyValues:
    canonical = {name: str(value) for name, value in values.items()}
    return KeyValues(logical_key=logical, values=values, canonical=canonical, shards=shards)


def refused(build: Any) -> str:
    with pytest.raises(ShardConfigurationError) as caught:
        build()
    return str(caught.value)


# -- numbered strategies ---------------------------------------------------------------


def test_shard_counts_run_from_one_to_a_thousand() -> None:
    """1 and 1,000 are accepted; the messages name the strategy and the fix."""
    assert MAX_SHARDS == 1000
    assert RandomShards(1).n == 1
    assert RandomShards(1000).n == 1000
    assert refused(lambda: RandomShards(1001)) == (
        "RandomShards(n=1001): the shard count must be between 1 and 1000; pick the count "
        "from your peak load (peak WCU / 1,000 per partition)"
    )
    assert refused(lambda: HashShards(0, on=["ts"])).startswith(
        "HashShards(n=0): the shard count must be between 1 and 1000"
    )
    assert refused(lambda: RandomShards("4")) == (
        "RandomShards(n='4'): the shard count must be an int; write RandomShards(10) for 10 shards"
    )
    assert refused(lambda: RandomShards(True)).startswith("RandomShards(n=True): ")


@pytest.mark.parametrize("strategy", [RandomShards(3), HashShards(3, on=["ts"]), DynamicShards()])
def test_numbered_strategies_refuse_a_separator_with_a_digit(strategy: Any) -> None:
    """Shard numbers are digits: a separator holding one could not be split off again."""
    name = type(strategy).__name__
    with pytest.raises(ShardConfigurationError) as caught:
        strategy.check("Events", ATTRIBUTES, "_1_")
    assert str(caught.value) == (
        f"Events: separator '_1_' contains a digit, and {name} writes shard numbers, so "
        "stored keys could not be split back into logical key and shard; use a separator "
        "without digits, such as '#' or '_'"
    )
    strategy.check("Events", ATTRIBUTES, "#_")


def test_segment_bytes_are_the_widest_shard_number() -> None:
    """Shard numbers' widest text, with the first shard added: 0..9 is 1 byte, 1..10 is 2."""
    assert RandomShards(10).segment_bytes(0) == 1
    assert RandomShards(10).segment_bytes(1) == 2
    assert RandomShards(11).segment_bytes(0) == 2
    assert RandomShards(1).segment_bytes(0) == 1
    assert HashShards(100, on=["ts"]).segment_bytes(0) == 2
    assert HashShards(100, on=["ts"]).segment_bytes(1) == 3
    assert DynamicShards(max_shards=100).segment_bytes(0) == 2
    assert DynamicShards(max_shards=8).segment_bytes(3) == 2


def test_random_shards_write_anywhere_and_read_everywhere() -> None:
    """A write picks one of n uniformly; a read by key or a query reads all n, in order."""
    strategy = RandomShards(4)
    assert strategy.attributes == ()
    assert strategy.deterministic is False
    assert strategy.ordered is False
    picks = {strategy.pick(key(), random.Random(seed)) for seed in range(60)}
    assert picks == {0, 1, 2, 3}
    assert list(strategy.candidates(key())) == [0, 1, 2, 3]
    assert strategy.query_candidates(key(), {}) == [0, 1, 2, 3]


def test_hash_shards_read_one_shard_when_the_values_are_known() -> None:
    """The hashed values known: one shard; unknown: all n. Writes need them."""
    strategy = HashShards(8, on="ts")
    assert strategy.on == ("ts",)
    assert strategy.attributes == ("ts",)
    assert strategy.deterministic is True
    assert strategy.ordered is False
    known = key(ts=42)
    assert strategy.pick(known, random.Random(0)) == 6
    assert list(strategy.candidates(known)) == [6]
    assert strategy.query_candidates(known, {}) == [6]
    assert list(strategy.candidates(key())) == list(range(8))
    assert strategy.query_candidates(key(), {}) == list(range(8))


def test_hash_shards_hash_the_values_joined_in_order() -> None:
    """The values are joined by ``joiner`` in the order of ``on``, then hashed."""
    plain = HashShards(1000, on=["a", "b"])
    assert plain.shard_of(["x", "y"]) == HashShards(1000, on=["ab"]).shard_of(["xy"])
    joined = HashShards(1000, on=["a", "b"], joiner="|")
    assert joined.shard_of(["x", "y"]) == plain.shard_of(["x|y"])
    assert joined.pick(key(a="x", b="y"), random.Random(0)) == joined.shard_of(["x", "y"])
    assert joined.pick(key(a="y", b="x"), random.Random(0)) == joined.shard_of(["y", "x"])
    sha = HashShards(1000, on=["a"], algorithm="sha256")
    assert sha.shard_of(["x"]) != HashShards(1000, on=["a"]).shard_of(["x"])


def test_a_shard_function_gets_the_values_and_its_int_is_taken_modulo_n() -> None:
    """``algorithm`` may be a function of the canonical values (a tuple, in ``on`` order)
    to an int; the shard is that int % n (Python's modulo: never negative)."""
    seen: list[tuple[str, ...]] = []

    def sample(values: tuple[str, ...]) -> int:
        seen.append(values)
        return int(values[0]) * 10 + len(values[1])

    strategy = HashShards(7, on=["ts", "path"], algorithm=sample)
    assert strategy.pick(key(ts=4, path="/ab"), random.Random(0)) == (40 + 3) % 7
    assert seen == [("4", "/ab")]
    assert list(strategy.candidates(key(ts=4, path="/ab"))) == [43 % 7]
    assert list(strategy.candidates(key(ts=4))) == list(range(7))  # path unknown: every shard
    assert HashShards(7, on="ts", algorithm=lambda v: -1).shard_of(["1"]) == 6
    assert HashShards(3, on="ts", algorithm=lambda v: int(v[0])).deterministic is True


def test_a_shard_function_that_fails_or_returns_no_int_is_named() -> None:
    """A function raising, or returning a float, a bool or a string, is a ShardKeyError
    naming the function and the values, never a raw error or a shard of a non-int."""

    def by_id(values: tuple[str, ...]) -> int:
        return int(values[0])

    with pytest.raises(ShardKeyError) as caught:
        HashShards(10, on="ts", algorithm=by_id).shard_of(["abc"])
    assert str(caught.value) == (
        "HashShards(algorithm=test_a_shard_function_that_fails_or_returns_no_int_is_named."
        "<locals>.by_id) raised ValueError: invalid literal for int() with base 10: 'abc' for "
        "the values ('abc',) of ['ts']; fix the value or the function"
    )
    for result in (2.0, True, "3", None):
        with pytest.raises(ShardKeyError, match=r"returned .*; a shard function returns an int"):
            HashShards(10, on="ts", algorithm=lambda v, r=result: r).shard_of(["1"])


def test_a_shard_function_takes_no_joiner() -> None:
    """The values reach a function unjoined: a joiner beside one is refused."""
    assert refused(lambda: HashShards(2, on=["a", "b"], algorithm=lambda v: 0, joiner="|")) == (
        "HashShards(joiner='|'): a shard function is given the values themselves, not joined; "
        "leave joiner out (or join them in the function)"
    )


def test_hash_shards_need_every_hashed_value_to_write() -> None:
    """A write without one of the ``on`` values is refused, naming the first missing one."""
    strategy = HashShards(4, on=["path", "ts"])
    with pytest.raises(ShardKeyError) as caught:
        strategy.pick(key(path="/a"), random.Random(0))
    assert str(caught.value) == (
        "HashShards(on=['path', 'ts']): attribute 'ts' has no value; set ts before saving, "
        "the shard is computed from it (to delete an item built from its key, pass "
        "delete(shard_by={'ts': ...}))"
    )
    assert list(strategy.candidates(key(path="/a"))) == [0, 1, 2, 3]


def test_hash_shards_check_their_settings_and_attributes() -> None:
    """Empty ``on``, unknown algorithms and attributes the model lacks are refused."""
    assert refused(lambda: HashShards(2, on=[])) == (
        "HashShards(on=[]): name at least one attribute to hash, e.g. on=['timestamp']"
    )
    assert refused(lambda: HashShards(2, on=["ts"], algorithm="sha1")) == (
        "HashShards(algorithm='sha1'): use one of ('md5', 'sha256'), or a function of the "
        "values to an int, e.g. algorithm=lambda values: int(values[0])"
    )
    with pytest.raises(ShardConfigurationError) as caught:
        HashShards(2, on=["ts", "nope"]).check("Events", ATTRIBUTES, "#")
    assert str(caught.value) == (
        "Events: HashShards(on=...) reads attribute 'nope', which the model does not define; "
        "use one of: day, path, ts"
    )
    HashShards(2, on=["ts", "path"]).check("Events", ATTRIBUTES, "#")


# -- dynamic shards --------------------------------------------------------------------


def test_dynamic_shards_defaults() -> None:
    """The documented defaults: 60 s cooldown, doubling plus one, up to 100, 0.5 s jitter."""
    strategy = DynamicShards()
    assert (strategy.cooldown, strategy.growth_factor, strategy.growth_step) == (60.0, 2.0, 1)
    assert (strategy.max_shards, strategy.jitter, strategy.writer_cache_seconds) == (100, 0.5, 5.0)
    assert (strategy.reader_cache_seconds, strategy.clock_margin_seconds) == (2.0, 1.0)
    assert strategy.settle_seconds == 3.0  # a growth takes effect once every cache expired
    assert DynamicShards(reader_cache_seconds=0).settle_seconds == 0  # at once: no cache
    assert strategy.table_name is None
    assert strategy.attributes == ()
    assert strategy.deterministic is False
    assert strategy.ordered is False
    assert ShardCount(live=1, readable=1) == ONE_SHARD


def test_dynamic_growth_multiplies_then_adds_at_least_the_step() -> None:
    """grown(n) = max(ceil(n x factor), n + step), at most max_shards."""
    assert [DynamicShards().grown(n) for n in (1, 2, 3, 50, 99, 100)] == [2, 4, 6, 100, 100, 100]
    assert DynamicShards(growth_factor=1.5).grown(3) == 5  # ceil(4.5)
    assert DynamicShards(growth_factor=1.5, growth_step=3).grown(3) == 6
    assert DynamicShards(growth_factor=1, growth_step=2).grown(5) == 7
    assert DynamicShards(growth_factor=1.1).grown(10) == 11
    assert DynamicShards(max_shards=7).grown(4) == 7


def test_dynamic_shards_write_among_live_and_read_every_readable_shard() -> None:
    """Writes spread over the live count; reads cover the readable (retired included)."""
    strategy = DynamicShards()
    counts = key(shards=ShardCount(live=2, readable=5))
    assert {strategy.pick(counts, random.Random(seed)) for seed in range(40)} == {0, 1}
    assert list(strategy.candidates(counts)) == [0, 1, 2, 3, 4]
    assert strategy.query_candidates(counts, {}) == [0, 1, 2, 3, 4]
    with pytest.raises(ShardConfigurationError) as caught:
        strategy.candidates(key("k-1"))
    assert str(caught.value) == (
        "DynamicShards: no shard count for key 'k-1'; a dynamic key is read through its "
        "model (ShardedModel), which looks the count up"
    )
    for call in (strategy.pick, lambda k, _: strategy.query_candidates(k, {})):
        with pytest.raises(ShardConfigurationError, match="no shard count"):
            call(key(), random.Random(0))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"table_name": ""}, "DynamicShards(table_name=''): give a table name, or leave it "
         "out for '<main table>-shards'"),
        ({"table_name": 5}, "DynamicShards(table_name=5): give a table name"),
        ({"cooldown": -1}, "DynamicShards(cooldown=-1): give a number of seconds, 0 or more"),
        ({"cooldown": "1"}, "DynamicShards(cooldown='1'): give a number of seconds"),
        ({"cooldown": True}, "DynamicShards(cooldown=True): give a number of seconds"),
        ({"jitter": -0.1}, "DynamicShards(jitter=-0.1): give a number of seconds, 0 or more"),
        ({"writer_cache_seconds": -1}, "DynamicShards(writer_cache_seconds=-1): "),
        ({"reader_cache_seconds": -1}, "DynamicShards(reader_cache_seconds=-1): "),
        ({"reader_cache_seconds": float("nan")}, "DynamicShards(reader_cache_seconds=nan): "
         "give a number of seconds, 0 or more"),
        ({"reader_cache_seconds": float("inf")}, "DynamicShards(reader_cache_seconds=inf): "),
        ({"clock_margin_seconds": -1}, "DynamicShards(clock_margin_seconds=-1): give a "
         "number of seconds, 0 or more"),
        ({"clock_margin_seconds": "1"}, "DynamicShards(clock_margin_seconds='1'): "),
        ({"growth_factor": 0.5}, "DynamicShards(growth_factor=0.5): give a number of at least "
         "1 (2 doubles the count on each growth)"),
        ({"growth_factor": "2"}, "DynamicShards(growth_factor='2'): "),
        ({"growth_step": 1.0}, "DynamicShards(growth_step=1.0): give an int, e.g. 1"),
        ({"growth_step": True}, "DynamicShards(growth_step=True): give an int"),
        ({"growth_step": -1}, "DynamicShards(growth_factor=2.0, growth_step=-1): a growth "
         "must add shards; use growth_step >= 1 or growth_factor > 1"),
        ({"growth_factor": 1, "growth_step": 0}, "DynamicShards(growth_factor=1, growth_step=0): "
         "a growth must add shards"),
        ({"max_shards": 0}, "DynamicShards(max_shards=0): give an int between 1 and 1000: "
         "the most shards a hot key may grow to"),
        ({"max_shards": 1001}, "DynamicShards(max_shards=1001): "),
        ({"max_shards": True}, "DynamicShards(max_shards=True): "),
        ({"max_shards": 5.0}, "DynamicShards(max_shards=5.0): "),
    ],
)  # fmt: skip
def test_dynamic_settings_are_checked(kwargs: dict[str, Any], message: str) -> None:
    """Every setting is validated when declared, naming it and the fix."""
    assert refused(lambda: DynamicShards(**kwargs)).startswith(message)


def test_dynamic_settings_at_their_edges_are_accepted() -> None:
    """Zero seconds, a factor of 1 with a step, one shard and a thousand are all valid."""
    DynamicShards(cooldown=0, jitter=0, writer_cache_seconds=0, reader_cache_seconds=0)
    DynamicShards(growth_factor=1, growth_step=1, max_shards=1)
    DynamicShards(growth_factor=2, growth_step=0, max_shards=1000, table_name="meta")


# -- time buckets ----------------------------------------------------------------------


def test_time_buckets_read_their_attribute_and_keep_time_order() -> None:
    """One attribute, deterministic, ordered; the granularity names a strftime format."""
    strategy = TimeBuckets("ts", "hour")
    assert strategy.attributes == ("ts",)
    assert strategy.deterministic is True
    assert strategy.ordered is True
    assert strategy.format == "%Y-%m-%dT%H"
    assert TimeBuckets("ts").granularity == "day"
    assert TimeBuckets("ts", "%Y/%j").format == "%Y/%j"


def test_a_granularity_is_a_name_or_a_strftime_format() -> None:
    """An unknown granularity is refused, naming it and listing the choices."""
    assert refused(lambda: TimeBuckets("ts", "days")) == (
        "TimeBuckets(granularity='days'): not a granularity; use one of minute, hour, day, "
        "week, month, year or a strftime format such as '%Y-%m-%d-%H'"
    )


def test_string_bounds_cover_their_wall_time_and_their_instant() -> None:
    """An ISO bound with an offset reads the buckets of both its wall time and its UTC time."""
    strategy = TimeBuckets("ts", "day")
    lower, upper = "2024-01-15T23:00:00-05:00", "2024-01-17T02:00:00+05:00"
    # lower: wall time the 15th, UTC the 16th; upper: wall time the 17th, UTC the 16th
    assert strategy.buckets_between(lower, upper) == ["2024-01-15", "2024-01-16", "2024-01-17"]
    with pytest.raises(ShardKeyError, match=r"^ts: 'yesterday' is not an ISO 8601 time"):
        strategy.buckets_between("yesterday", upper)
    with pytest.raises(ShardKeyError, match=r"^ts: 'tomorrow' is not an ISO 8601 time"):
        strategy.buckets_between(lower, "tomorrow")


@pytest.mark.parametrize("on", ["", None, 5])
def test_time_buckets_name_their_attribute(on: Any) -> None:
    """``on`` is the time attribute's name."""
    assert refused(lambda: TimeBuckets(on)) == (
        f"TimeBuckets(on={on!r}): name the time attribute, e.g. on='timestamp'"
    )


def test_a_time_bucket_write_needs_the_time() -> None:
    """No value: refused; an ISO string with a non-UTC offset: refused; else its bucket."""
    strategy = TimeBuckets("ts", "day")
    with pytest.raises(ShardKeyError) as caught:
        strategy.pick(key(), random.Random(0))
    assert str(caught.value) == (
        "TimeBuckets(on='ts'): attribute 'ts' has no value; set ts before saving, the bucket "
        "is computed from it"
    )
    with pytest.raises(ShardKeyError) as caught:
        strategy.pick(key(ts="2024-01-15T22:00:00-05:00"), random.Random(0))
    assert str(caught.value).startswith(
        "TimeBuckets(on='ts'): '2024-01-15T22:00:00-05:00' has the UTC offset -0500; "
    )
    assert strategy.pick(key(ts="2024-01-15T22:00:00Z"), random.Random(0)) == "2024-01-15"
    assert strategy.pick(key(ts=1705363200), random.Random(0)) == "2024-01-16"


def test_a_time_bucket_read_by_key_needs_the_time() -> None:
    """A read by full key reads the one bucket of its time; without it, it says what to do."""
    strategy = TimeBuckets("ts", "day")
    assert list(strategy.candidates(key(ts=1705363200))) == ["2024-01-16"]
    with pytest.raises(ShardKeyError) as caught:
        strategy.candidates(key())
    assert str(caught.value) == (
        "TimeBuckets(on='ts'): a read by key needs the value of 'ts' to find its bucket; "
        "make ts the range key, or use query() with a condition on ts"
    )


def test_a_query_reads_the_buckets_its_range_covers_in_time_order() -> None:
    """Both bounds: every bucket from the lower to the upper; a fixed value: its bucket."""
    strategy = TimeBuckets("ts", "day")
    start = datetime(2024, 1, 30, 12, tzinfo=UTC)
    end = datetime(2024, 2, 2, 1, tzinfo=UTC)
    assert strategy.query_candidates(key(), {"ts": (start, end)}) == [
        "2024-01-30",
        "2024-01-31",
        "2024-02-01",
        "2024-02-02",
    ]
    assert strategy.query_candidates(key(ts=start), {"ts": (start, end)}) == ["2024-01-30"]
    assert strategy.buckets_between(end, start) == []
    assert strategy.buckets_between(start, start) == ["2024-01-30"]


def test_a_query_without_both_bounds_says_how_to_bound_it() -> None:
    """An open range has unknown buckets: the error gives both ways to close it."""
    strategy = TimeBuckets("ts", "day")
    moment = datetime(2024, 1, 1, tzinfo=UTC)
    for bounds in ({}, {"ts": (moment, None)}, {"ts": (None, moment)}):
        with pytest.raises(UnsupportedOperationError) as caught:
            strategy.query_candidates(key(), bounds)
        assert str(caught.value) == (
            "TimeBuckets(on='ts'): the query does not bound 'ts' on both ends, so the buckets "
            "to read are unknown; add the range condition Model.ts.between(start, end) "
            "(DynamoDB takes one condition per key, so not '&' of two comparisons), or keep a "
            "one-sided condition such as Model.ts >= start and pass time_range=(start, end) to "
            "query() or count(); for 'since start', use end = now"
        )


@pytest.mark.parametrize(
    ("granularity", "end", "count"),
    [
        ("minute", datetime(2024, 1, 1, 0, 59, 59, tzinfo=UTC), 60),
        ("hour", datetime(2024, 1, 1, 23, 59, tzinfo=UTC), 24),
        ("%Y-%m-%d %p%H", datetime(2024, 1, 1, 23, 59, tzinfo=UTC), 24),
        ("%Y-%m-%d %H:%M:%S", datetime(2024, 1, 1, 0, 0, 9, tzinfo=UTC), 10),
        ("%Y-%m-%d %R", datetime(2024, 1, 1, 0, 9, tzinfo=UTC), 10),
        ("week", datetime(2024, 1, 31, tzinfo=UTC), 5),
        ("month", datetime(2024, 12, 31, tzinfo=UTC), 12),
    ],
)
def test_every_label_between_the_bounds_is_visited(
    granularity: str, end: datetime, count: int
) -> None:
    """Stepping by the format's smallest unit misses no label and repeats none."""
    labels = TimeBuckets("ts", granularity).buckets_between(datetime(2024, 1, 1, tzinfo=UTC), end)
    assert len(labels) == count
    assert len(set(labels)) == count


@pytest.mark.parametrize(
    ("granularity", "seconds", "count"),
    [
        ("%Y-%j %T", 5, 6),
        ("%Y-%j %X", 5, 6),
        ("%Y-%j %H:%M", 5 * 60, 6),
        ("%Y-%j %R", 5 * 60, 6),
        ("%Y-%j %H", 5 * 3600, 6),
        ("%Y-%j %p", 36 * 3600, 4),
    ],
)
def test_each_time_code_steps_by_its_own_unit(granularity: str, seconds: int, count: int) -> None:
    """A format showing seconds steps by seconds, minutes by minutes, hours (or AM/PM) by hours."""
    start = datetime(2024, 1, 1, tzinfo=UTC)
    end = datetime.fromtimestamp(start.timestamp() + seconds, tz=UTC)
    labels = TimeBuckets("ts", granularity).buckets_between(start, end)
    assert len(labels) == count


def test_the_last_bucket_is_reached_when_the_step_overshoots() -> None:
    """The upper bound's bucket is read even when it is less than a step past the last."""
    strategy = TimeBuckets("ts", "day")
    start = datetime(2024, 1, 1, 23, tzinfo=UTC)
    end = datetime(2024, 1, 2, 1, tzinfo=UTC)
    assert strategy.buckets_between(start, end) == ["2024-01-01", "2024-01-02"]


def test_a_range_of_too_many_buckets_is_refused() -> None:
    """Over 100,000 buckets is refused before any request, naming the range."""
    assert MAX_QUERY_BUCKETS == 100_000
    strategy = TimeBuckets("ts", "minute")
    start = datetime(2024, 1, 1, tzinfo=UTC)
    end = datetime(2024, 12, 31, tzinfo=UTC)
    with pytest.raises(FanOutLimitError) as caught:
        strategy.buckets_between(start, end)
    assert caught.value.bound == 100_000
    assert caught.value.planned == 100_001
    assert str(caught.value) == (
        "TimeBuckets(on='ts'): the range 2024-01-01T00:00:00+00:00 .. "
        "2024-12-31T00:00:00+00:00 spans over 100,000 buckets, more than any read may "
        "touch; narrow the time range or use a coarser granularity"
    )
    almost = datetime(2024, 3, 10, 10, 39, tzinfo=UTC)  # 100,000 minutes after start
    assert len(strategy.buckets_between(start, almost)) == 100_000


@pytest.mark.parametrize(
    "granularity",
    [
        "%Y-%m-%dT%I",  # the 12-hour clock, a typo for %H
        "%Y-%m-%d %I%p",  # 12AM sorts after 01AM
        "%H",  # the hour without its day
        "%Y %T",  # the time without the day
        "%y-%m-%d",  # two-digit years come back each century
        "%Y-W%V",  # the ISO week without its ISO year
        "%G-%m-%d",  # the ISO year beside the calendar month
        "%Y-%b",  # month names sort alphabetically
        "%Y-%-m-%d",  # unpadded months: '2024-9' sorts after '2024-10'
        "%d-%m-%Y",  # the day first
    ],
)
def test_formats_whose_labels_come_back_or_fall_are_refused(granularity: str) -> None:
    """A label that repeats, or sorts before an earlier one, is refused when declared:
    reading its partition for two time ranges returned items twice and out of order."""
    message = refused(lambda: TimeBuckets("ts", granularity))
    assert message.startswith(
        f"TimeBuckets(granularity={granularity!r}): bucket labels must be unique and "
        "increase with time, but the label "
    )


def test_the_twelve_hour_clock_is_refused_with_both_labels_and_the_fix() -> None:
    """The refusal names the labels and times where the order breaks, and what to write."""
    assert refused(lambda: TimeBuckets("ts", "%Y-%m-%dT%I")) == (
        "TimeBuckets(granularity='%Y-%m-%dT%I'): bucket labels must be unique and increase "
        "with time, but the label '2001-02-03T12' of 2001-02-03T00:59:59.999999+00:00 is "
        "followed by '2001-02-03T01' at 2001-02-03T01:00:00+00:00, which sorts before it: a "
        "label that comes back names one partition for two time ranges; %I is the 12-hour "
        "clock: use %H; write the fields from the year down, zero-padded, e.g. '%Y-%m-%dT%H'"
    )


def test_epoch_seconds_of_the_local_zone_are_refused() -> None:
    """``%s`` formats the process's local time: two processes could disagree on a bucket."""
    assert refused(lambda: TimeBuckets("ts", "%Y %s")) == (
        "TimeBuckets(granularity='%Y %s'): %s writes epoch seconds of the process's local "
        "time zone, so two processes could put one time in different buckets; write "
        "'%Y-%m-%dT%H:%M:%S' instead"
    )
    TimeBuckets("ts", "%Y-%m-%d %%s")  # a literal '%s' is text


@pytest.mark.parametrize(
    "granularity",
    [
        "minute",
        "hour",
        "day",
        "week",
        "month",
        "year",
        "%Y-%m-%d-%H",
        "%Y/%j",
        "%G-W%V",
        "%Y-W%W",
        "%Y-W%U",
        "%Y%m%d",
        "%C%y-%m",
        "%Y-%m-%d %p%H",
        "%Y-%m-%d %H:%M:%S.%f",
        "%Y-%m %B",
    ],
)
def test_formats_whose_labels_increase_are_accepted(granularity: str) -> None:
    """Every named granularity, and formats whose fields run from the year down."""
    assert TimeBuckets("ts", granularity).format


def test_buckets_reach_the_last_moment_datetime_holds() -> None:
    """A range ending in the last bucket of the year 9999 reads it (no step past it)."""
    strategy = TimeBuckets("ts", "hour")
    start = datetime(9999, 12, 31, 21, 30, tzinfo=UTC)
    end = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    assert strategy.buckets_between(start, end) == [
        "9999-12-31T21",
        "9999-12-31T22",
        "9999-12-31T23",
    ]
    assert TimeBuckets("ts", "year").buckets_between(start, end) == ["9999"]


def test_a_microsecond_format_steps_by_the_microsecond() -> None:
    """A label showing %f changes every microsecond: stepping by less would skip labels."""
    strategy = TimeBuckets("ts", "%Y-%m-%d %H:%M:%S.%f")
    start = datetime(2024, 1, 1, tzinfo=UTC)
    end = start.replace(microsecond=4)
    assert len(strategy.buckets_between(start, end)) == 5


def test_time_buckets_check_their_attribute_and_separator() -> None:
    """The attribute must exist; a separator character a label can hold is refused."""
    with pytest.raises(ShardConfigurationError) as caught:
        TimeBuckets("when").check("Events", ATTRIBUTES, "#")
    assert str(caught.value) == (
        "Events: TimeBuckets(on=...) reads attribute 'when', which the model does not define; "
        "use one of: day, path, ts"
    )
    with pytest.raises(ShardConfigurationError) as caught:
        TimeBuckets("ts", "day").check("Events", ATTRIBUTES, "-")
    assert str(caught.value) == (
        "Events: TimeBuckets(granularity='day') makes labels like '2024-12-31' that contain "
        "the key separator '-' (characters '-'); choose a separator without them on "
        "ShardedKeyAttribute (such as '#') or a format without them"
    )
    with pytest.raises(ShardConfigurationError, match=r"\(characters 'Ja'\)"):
        TimeBuckets("ts", "%Y-%m %b").check("Events", ATTRIBUTES, "aJx")
    TimeBuckets("ts", "day").check("Events", ATTRIBUTES, "#")


def test_time_bucket_labels_are_sized_by_their_widest_sample() -> None:
    """Month and day names vary in width: the widest label over a year of samples counts."""
    assert TimeBuckets("ts", "day").segment_bytes(0) == 10
    assert TimeBuckets("ts", "%Y-%m %B").segment_bytes(0) == len("2001-09 September")
    assert TimeBuckets("ts", "%Y-%m-%d %A").segment_bytes(0) == len("2001-01-03 Wednesday")
    assert TimeBuckets("ts", "%Y-%m-%dT%H").segment_bytes(0) == 13
