"""The equivalence properties through the async API, on the servers (moto and dynalite).

Real sockets: every request of the twins goes through the asyncio pool
(:mod:`shardmodel.lean.aio_http`) of the test's event loop.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings

from tests.apis import AsyncApi
from tests.counter_equivalence import check_counter_equivalence
from tests.counter_equivalence import scenarios as counter_scenarios
from tests.equivalence import check_equivalence, check_iso_equivalence, iso_scenarios, scenarios
from tests.tier import sized

SETTINGS = settings(
    max_examples=sized(15, 8), suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(scenario=scenarios)
def test_async_query_equals_unsharded_on_servers(
    backend: str, async_api: AsyncApi, scenario: dict[str, Any]
) -> None:
    """aquery (cursors resumed by either API), acount, abatch_get, aget, ascan agree."""
    check_equivalence(scenario, async_api)


@SETTINGS
@given(scenario=iso_scenarios)
def test_async_iso_time_buckets_equal_unsharded_on_servers(
    backend: str, async_api: AsyncApi, scenario: dict[str, Any]
) -> None:
    """Time-bucketed ISO keys through aquery agree with a plain model on a server."""
    check_iso_equivalence(scenario, async_api)


@SETTINGS
@given(scenario=counter_scenarios)
def test_async_counter_model_equals_plain_totals_on_servers(
    backend: str, async_api: AsyncApi, scenario: dict[str, Any]
) -> None:
    """aadd and the async reads agree with plain totals on a server."""
    check_counter_equivalence(scenario, async_api)
