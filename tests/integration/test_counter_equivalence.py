"""The counter-model equivalence property, smaller, on the servers (moto and dynalite)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings

from tests.counter_equivalence import EXACT_TOTALS, check_counter_equivalence, scenarios
from tests.tier import sized


@settings(max_examples=sized(40, 20), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios)
@example(scenario=EXACT_TOTALS)
def test_counter_model_equals_plain_totals_on_servers(
    backend: str, scenario: dict[str, Any]
) -> None:
    """A counter model and a plain model of its totals agree on a real server too.

    Exact totals (0.1, 2**53 + 1, 38 digits) with their types, over 1 to 64 shards.
    """
    check_counter_equivalence(scenario)
