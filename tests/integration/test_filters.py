"""The client-side filter selects what each server's own filter selects (moto and dynalite)."""

from __future__ import annotations

import pytest

from shardmodel.testing import bind_models
from tests.filter_cases import Doc, check_filters
from tests.integration.conftest import CREDENTIALS, unbind


def test_filters_match_the_servers(backend: str, request: pytest.FixtureRequest) -> None:
    bind_models([Doc], host=request.getfixturevalue(f"{backend}_url"), **CREDENTIALS)
    try:
        check_filters()
    finally:
        unbind([Doc])
