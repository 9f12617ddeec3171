"""Hypothesis: a DynamicShards key reads exactly like an unsharded one (in-process moto).

Through growths between writes, a shrink that leaves retired shards readable, and a
compaction that empties them, every query (conditions, filters, directions, limits, page
sizes, stop-and-resume), count and batch_get of DynamicEvent equals PlainEvent's.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.equivalence import check_dynamic_equivalence, scenarios

pytestmark = pytest.mark.usefixtures("tables")

#: Zero to three growths (1 -> 2 -> 4 -> 8 shards), each count about as likely.
growth_points = st.sampled_from([0, 1, 2, 3]).flatmap(
    lambda n: st.lists(st.integers(0, 64), min_size=n, max_size=n)
)

#: The live count after a shrink (clamped below the grown count), or no shrink.
shrink_counts = st.sampled_from([1, 2, 3, 7, None])

#: Sixty items (timestamps 0, 2, .., 118), read all at once and forward.
SIXTY_EVEN = {
    "timestamps": list(range(0, 120, 2)),
    "range": "none",
    "bounds": [0, 500],
    "filter": None,
    "forward": True,
    "limit": None,
    "page_size": None,
    "resume_after": None,
}


#: Each example writes up to 120 items and may compact: at most 60 examples, even on CI.
MAX_EXAMPLES = min(60, settings.default.max_examples)


@settings(max_examples=MAX_EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    scenario=scenarios,
    growths=growth_points,
    shrink=shrink_counts,
    compact=st.booleans(),
)
@example(scenario=SIXTY_EVEN, growths=[0, 20], shrink=None, compact=False)
@example(scenario={**SIXTY_EVEN, "resume_after": 25}, growths=[0, 0, 40], shrink=1, compact=False)
@example(
    scenario={**SIXTY_EVEN, "forward": False, "page_size": 7, "resume_after": 11},
    growths=[5, 10, 15],
    shrink=3,
    compact=True,
)
def test_dynamic_key_reads_like_unsharded(
    scenario: dict[str, Any], growths: list[int], shrink: int | None, compact: bool
) -> None:
    """Same items, same order, same count, through growths, a shrink and a compaction."""
    check_dynamic_equivalence(scenario, growths, shrink, compact)
