"""The OrderedShards equivalence property, smaller, on the servers (moto and dynalite)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings

from tests.ordered_equivalence import check_ordered_equivalence, scenarios
from tests.tier import sized


@settings(max_examples=sized(40, 20), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios)
def test_ordered_query_equals_unsharded_on_servers(backend: str, scenario: dict[str, Any]) -> None:
    """Ordered shards and one partition agree on a real server too."""
    check_ordered_equivalence(scenario)
