"""Counter models read as one logical item, on the servers (moto and dynalite).

The same cases as tests/unit/test_counter_reads.py (in-process moto), each run against
a moto server and dynalite: count, scan (segments, resume, no home shard item),
filters on summed totals, token fingerprints, and bad input refused before sending.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal

import pytest

from shardmodel.testing import bind_models
from tests.integration.conftest import CREDENTIALS, unbind
from tests.unit import test_counter_reads as cases

CASES: list[Callable[[], None]] = [
    cases.test_count_counts_logical_items_not_shard_items,
    cases.test_keyless_count_of_a_counter_model_is_refused,
    cases.test_filter_on_a_counter_sees_summed_totals,
    cases.test_filter_on_another_attribute_keeps_full_totals,
    cases.test_scan_yields_each_logical_item_once_summed,
    cases.test_scan_without_a_home_shard_item_still_returns_the_item,
    cases.test_parallel_scan_segments_return_each_item_once,
    cases.test_scan_resumes_from_its_cursor_without_loss_or_repeat,
    cases.test_dynamic_counters_count_scan_and_filter_logical_items,
    cases.test_token_reused_with_other_amounts_is_refused_and_applies_nothing,
    cases.test_update_with_a_counter_action_is_unsupported,
    cases.test_changing_a_counter_on_the_instance_then_saving_is_refused,
    lambda: cases.test_token_with_the_same_amount_in_any_form_counts_once(Decimal("1E+0")),
    lambda: cases.test_token_with_the_same_amount_in_any_form_counts_once(1.0),
    lambda: cases.test_amounts_dynamodb_cannot_store_are_refused_before_sending(math.nan),
    lambda: cases.test_amounts_dynamodb_cannot_store_are_refused_before_sending(-math.inf),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.removeprefix("test_"))
def test_counter_reads_on_servers(backend: str, case: Callable[[], None]) -> None:
    case()


def test_index_reads_never_show_partial_counters_on_servers(
    backend: str, request: pytest.FixtureRequest
) -> None:
    bind_models([cases.TitledViews], host=request.getfixturevalue(f"{backend}_url"), **CREDENTIALS)
    try:
        cases.test_index_reads_of_a_counter_model_never_show_partial_counters()
    finally:
        unbind([cases.TitledViews])
