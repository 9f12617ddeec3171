"""Hypothesis: for random data and queries, sharded results equal unsharded ones (moto)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings

from tests.equivalence import (
    CLOSE,
    check_equivalence,
    check_iso_equivalence,
    iso_scenarios,
    scenarios,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("tables")]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios)
@example(scenario=CLOSE)
def test_sharded_query_equals_unsharded(scenario: dict[str, Any]) -> None:
    """Same items, same order, for conditions, filters, directions, limits, pages, resumes.

    Over 1 to 64 shards, any text as the logical key, 38-digit numbers in every form
    DynamoDB treats as one, and cursors under a secret, none, or another one.
    """
    check_equivalence(scenario)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=iso_scenarios)
def test_iso_time_buckets_equal_unsharded(scenario: dict[str, Any]) -> None:
    """ISO string keys in daily buckets, bounds at any offset: what a plain model returns."""
    check_iso_equivalence(scenario)
