"""Hypothesis: a counter model reads exactly like a plain model holding its totals (moto)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.counter_equivalence import check_counter_equivalence, scenarios

pytestmark = pytest.mark.usefixtures("tables")


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios)
def test_counter_model_equals_plain_totals(scenario: dict[str, Any]) -> None:
    """get, batch_get, query, count and scan (segments too), filtered or not, agree."""
    check_counter_equivalence(scenario)
