"""The time-series equivalence property on the servers (moto and dynalite)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings

from tests.series_equivalence import SPREAD, SPREAD_CHANGED, check_series_equivalence, scenarios
from tests.tier import sized


@settings(max_examples=sized(40, 20), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios)
@example(scenario=SPREAD)
@example(scenario=SPREAD_CHANGED)
def test_series_query_equals_a_plain_model_on_servers(
    backend: str, scenario: dict[str, Any]
) -> None:
    """query_series over buckets and shards returns what one partition per sensor returns."""
    check_series_equivalence(scenario)
