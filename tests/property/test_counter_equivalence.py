"""Hypothesis: a counter model reads exactly like a plain model holding its totals (moto)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings

from tests.counter_equivalence import (
    EXACT_TOTALS,
    ONE_SHARE_TOTAL,
    check_counter_equivalence,
    scenarios,
)

pytestmark = pytest.mark.usefixtures("tables")


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios)
@example(scenario=EXACT_TOTALS)
@example(scenario=ONE_SHARE_TOTAL)
def test_counter_model_equals_plain_totals(scenario: dict[str, Any]) -> None:
    """get, batch_get, query, count and scan (segments too), filtered or not, agree.

    Over 1 to 64 shards and any text as the key; amounts such as 0.1 and totals past
    2**53 and to 38 digits are exact, and whole totals read as ints.
    """
    check_counter_equivalence(scenario)
