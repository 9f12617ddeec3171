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
