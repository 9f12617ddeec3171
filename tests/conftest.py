"""Fixtures and Hypothesis profiles shared by every suite."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from shardmodel.testing import bind_models, create_tables, mock_dynamodb
from tests.apis import AsyncApi
from tests.models import ALL_MODELS
from tests.support import shard_directory

# "fast" for every run, CI's included, so that a run here times the suite CI runs: with CI
# set, the property tests drew 150 examples each (21.5 min on two cores against 8) in a
# run limited to 90 minutes. "deep" (make deep) draws 150. No deadlines: server round
# trips vary with machine load, and correctness, not speed, is what these tests check.
settings.register_profile(
    "fast", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "deep", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fast"))


@pytest.fixture
def tables() -> Iterator[None]:
    """In-process moto with every test model's table created, gone after the test.

    Stopping the mock drops every table at once; dropping them one by one first cost a
    third of this fixture's time. Dynamic keys' cached counts are forgotten with them.
    """
    with mock_dynamodb():
        bind_models(ALL_MODELS, host=None)
        create_tables(ALL_MODELS)
        yield
        bind_models(ALL_MODELS, host=None)
    for model in ALL_MODELS:
        directory = shard_directory(model)
        if directory is not None:
            directory.clear_cache()


@pytest.fixture
def async_api() -> Iterator[AsyncApi]:
    """The coroutine twins, run on one event loop for the test (its sockets closed after)."""
    with asyncio.Runner() as runner:
        yield AsyncApi(runner)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked slow run first (in their collection order), the rest after.

    pytest-xdist hands tests out in this order, so both workers start on the minutes-long
    tests and the run ends on short ones: a slow test collected last ran alone for its
    whole length while the other worker sat idle.
    """
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
