"""Hypothesis: a time series over buckets reads like one partition per sensor (moto)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings

from tests.series_equivalence import SPREAD, SPREAD_CHANGED, check_series_equivalence, scenarios

pytestmark = pytest.mark.usefixtures("tables")


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios)
@example(scenario=SPREAD)
@example(scenario=SPREAD_CHANGED)
def test_series_query_equals_a_plain_model(scenario: dict[str, Any]) -> None:
    """Same readings, same window, direction, limit, page size and resume: same results."""
    check_series_equivalence(scenario)
