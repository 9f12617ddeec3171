"""The equivalence property, smaller, on the servers (moto and dynalite): half the
examples under make test (the in-process property draws 40), all under make stress."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings

from tests.equivalence import (
    CLOSE,
    check_equivalence,
    check_iso_equivalence,
    iso_scenarios,
    scenarios,
)
from tests.tier import sized


@settings(max_examples=sized(25, 12), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios)
@example(scenario=CLOSE)
def test_sharded_query_equals_unsharded_on_servers(backend: str, scenario: dict[str, Any]) -> None:
    """Sharded and unsharded models agree on a real server too (38-digit keys, 1-64 shards)."""
    check_equivalence(scenario)


@settings(max_examples=sized(20, 10), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=iso_scenarios)
def test_iso_time_buckets_equal_unsharded_on_servers(
    backend: str, scenario: dict[str, Any]
) -> None:
    """ISO string keys with offset bounds agree with a plain model on a real server too."""
    check_iso_equivalence(scenario)
