"""The suite's own order: what pytest-xdist hands out first."""

from __future__ import annotations

import pytest


def test_the_slow_tests_are_collected_before_every_other(request: pytest.FixtureRequest) -> None:
    """A slow test left to the end runs alone while the other workers sit idle."""
    slow = [item.get_closest_marker("slow") is not None for item in request.session.items]
    assert any(slow) or len(slow) < 100  # a full run has slow tests; -k may select none
    assert slow == sorted(slow, reverse=True)
