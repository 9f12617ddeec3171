"""Hypothesis: for random data and queries, sharded results equal unsharded ones (moto)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.equivalence import check_equivalence, scenarios

pytestmark = pytest.mark.usefixtures("tables")


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios)
def test_sharded_query_equals_unsharded(scenario: dict[str, Any]) -> None:
    """Same items, same order, for conditions, filters, directions, limits, pages, resumes."""
    check_equivalence(scenario)
