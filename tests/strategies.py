"""Hypothesis strategies for shardmodel's tests."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import strategies as st

#: Logical keys: any non-empty text, separators included (they stay in the logical part).
logical_keys = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=60,
)

epoch_seconds = st.integers(min_value=0, max_value=4_102_444_800)  # 1970 .. 2100

aware_datetimes = st.builds(
    lambda naive, minutes: naive.replace(tzinfo=timezone(timedelta(minutes=minutes))),
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2099, 12, 30)),
    st.integers(min_value=-12 * 60, max_value=14 * 60),
)

#: A flag (``scan_index_forward``, ``consistent_read``) that is not a bool: strings,
#: numbers (0 and 1 among them, equal to False and True), bytes, containers.
non_bool_flags = st.one_of(
    st.sampled_from(["no", "yes", "False", "true", "", 0, 1, 0.0, 1.0, b"true", [], [True]]),
    st.text(max_size=6),
    st.integers(),
    st.floats(allow_nan=True),
)

#: A ``limit`` or ``page_size`` as callers pass them: ints of any sign, floats (whole or
#: not, NaN), numeric strings, bools, Decimals, or None.
paging_values = st.one_of(
    st.none(),
    st.integers(-3, 40),
    st.floats(-3, 40),
    st.just(float("nan")),
    st.integers(-3, 40).map(str),
    st.booleans(),
    st.decimals(-3, 40, allow_nan=False, places=1),
)

#: strftime codes glibc knows (with the padding flags), and text between them.
STRFTIME_PIECES = [
    *("%Y", "%y", "%G", "%g", "%C", "%m", "%b", "%B", "%h", "%d", "%e", "%j", "%U", "%W"),
    *("%V", "%u", "%w", "%a", "%A", "%H", "%k", "%I", "%l", "%p", "%M", "%S", "%f", "%T"),
    *("%R", "%X", "%x", "%D", "%F", "%z", "%Z", "%%", "%-m", "%-d", "%-H", "%-j"),
    *("-", "T", ":", " ", "/", "W", ".", "_"),
]

#: Any strftime format made of those pieces: TimeBuckets accepts it or refuses it.
strftime_formats = st.lists(st.sampled_from(STRFTIME_PIECES), min_size=1, max_size=9).map("".join)

#: Edits of a cursor's start key that make it no position of its query, as a forger with
#: the model's secret might: (kind, value); see tests/property/test_edges.py.
start_forgeries = st.one_of(
    st.tuples(st.just("partition"), st.text(min_size=1, max_size=12)),
    st.tuples(st.just("sort type"), st.sampled_from(["S", "B"])),
    st.tuples(st.just("no sort key"), st.none()),
    st.tuples(st.just("extra attribute"), st.text(min_size=1, max_size=8)),
    st.tuples(
        st.just("unstorable number"),
        st.one_of(
            st.integers(126, 2000).map(lambda e: f"1e{e}"),
            st.integers(131, 2000).map(lambda e: f"-1e-{e}"),
            # 39 or more significant digits (a trailing 0 would not count)
            st.integers(10**38, 10**45).filter(lambda n: n % 10 != 0).map(str),
        ),
    ),
    st.tuples(st.just("outside the range"), st.integers(-1000, 3)),
    st.tuples(st.just("conditions"), st.text("0123456789abcdef", min_size=1, max_size=16)),
)
