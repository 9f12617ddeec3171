"""Hypothesis: the async API returns what the unsharded reference returns (in-process moto).

The same checks as the sync equivalence suites (``tests/equivalence.py``,
``tests/counter_equivalence.py``), with the sharded models written and read through
their coroutine twins (``tests/apis.py``): get, batch_get, query with cursors (resumed
by the other API too), count, scan and counters.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.apis import AsyncApi
from tests.counter_equivalence import ONE_SHARE_TOTAL, check_counter_equivalence
from tests.counter_equivalence import scenarios as counter_scenarios
from tests.equivalence import (
    check_dynamic_equivalence,
    check_equivalence,
    check_iso_equivalence,
    iso_scenarios,
    scenarios,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("tables")]

#: fewer than the sync suites: each example runs the same checks through the loop
MAX_EXAMPLES = min(40, settings.default.max_examples)
SETTINGS = settings(
    max_examples=MAX_EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(scenario=scenarios)
def test_async_query_equals_unsharded(async_api: AsyncApi, scenario: dict[str, Any]) -> None:
    """aquery (cursors resumed by either API), acount, abatch_get, aget, ascan agree."""
    check_equivalence(scenario, async_api)


@SETTINGS
@given(scenario=iso_scenarios)
def test_async_iso_time_buckets_equal_unsharded(
    async_api: AsyncApi, scenario: dict[str, Any]
) -> None:
    """Time-bucketed ISO keys read through aquery agree with a plain model."""
    check_iso_equivalence(scenario, async_api)


@SETTINGS
@given(scenario=counter_scenarios)
@example(scenario=ONE_SHARE_TOTAL)
def test_async_counter_model_equals_plain_totals(
    async_api: AsyncApi, scenario: dict[str, Any]
) -> None:
    """aadd, then aget, abatch_get, aquery, acount and ascan agree with plain totals."""
    check_counter_equivalence(scenario, async_api)


@settings(
    max_examples=min(20, settings.default.max_examples),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    scenario=scenarios,
    growths=st.lists(st.integers(0, 64), max_size=3),
    shrink=st.sampled_from([1, 3, None]),
    compact=st.booleans(),
)
def test_async_dynamic_key_reads_like_unsharded(
    async_api: AsyncApi,
    scenario: dict[str, Any],
    growths: list[int],
    shrink: int | None,
    compact: bool,
) -> None:
    """A DynamicShards key saved and read through the twins, through growths, a shrink
    and a compaction, agrees with the unsharded reference."""
    check_dynamic_equivalence(scenario, growths, shrink, compact, async_api)
