"""Hypothesis: OrderedShards listings equal unsharded ones with normalized sort keys (moto)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.ordered_equivalence import check_ordered_equivalence, scenarios

pytestmark = pytest.mark.usefixtures("tables")


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios)
def test_ordered_query_equals_unsharded(scenario: dict[str, Any]) -> None:
    """Same items, same order: boundaries, titles, conditions, directions, limits, resumes."""
    check_ordered_equivalence(scenario)
