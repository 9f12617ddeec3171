"""Fixtures and Hypothesis profiles shared by every suite."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from shardmodel.testing import bind_models, mock_dynamodb
from tests import moto_speed, tier
from tests.apis import AsyncApi
from tests.models import ALL_MODELS
from tests.support import restore_tables, shard_directory
from tests.tier import STRESS, run_seed

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
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deep" if STRESS else "fast"))
moto_speed.install()


@pytest.fixture
def tables() -> Iterator[None]:
    """In-process moto with every test model's table created, gone after the test.

    Each test gets a fresh moto (stopping it drops every table at once); the tables are
    created once per process and copied into each test's moto from a snapshot of moto's
    own table objects: creating the 23 tables through the API cost about 0.3 s a test
    (over 1,100 tests), the copy about 10 ms. Dynamic keys' cached counts are forgotten
    with them.
    """
    with mock_dynamodb():
        bind_models(ALL_MODELS, host=None)
        restore_tables(ALL_MODELS)
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


def pytest_configure(config: pytest.Config) -> None:
    """Fix this run's seed before pytest-xdist starts its workers (they inherit it)."""
    run_seed()


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The tier and the seed, so a failing draw can be replayed."""
    tier = "make stress (SHARDMODEL_STRESS=1)" if STRESS else "make test"
    return [
        f"shardmodel tier: {tier}; drawn cases: SHARDMODEL_SEED={run_seed()} "
        "(set it to replay this run's draw)"
    ]


def _scales(item: pytest.Item) -> bool:
    """The test's module sizes itself by the tier (it imports from tests/tier.py): make
    stress runs it whole, at full size, with its moto server runs."""
    names = vars(getattr(item, "module", None) or object())
    return any(
        name in names and names[name] is getattr(tier, name)
        for name in ("STRESS", "sized", "examples", "stress_only")
    )


def _long(item: pytest.Item) -> bool:
    return (
        item.get_closest_marker("stress") is not None
        or item.get_closest_marker("slow") is not None
        or "tests/property" in str(item.path)
        or _scales(item)
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tier's tests, the slow ones first (in their collection order).

    ``make test`` leaves out the tests marked ``stress``; ``make stress`` runs only the
    long ones (marked ``stress`` or ``slow``, the property tests, and every test of a
    module that sizes itself by the tier): ``make test`` runs the rest. pytest-xdist
    hands tests out in this order, so both workers start on the minutes-long tests and
    the run ends on short ones: a slow test collected last ran alone for its whole
    length while the other worker sat idle.
    """
    kept = [
        item
        for item in items
        if (_long(item) if STRESS else item.get_closest_marker("stress") is None)
    ]
    if len(kept) != len(items):
        chosen = {id(item) for item in kept}
        config.hook.pytest_deselected(items=[item for item in items if id(item) not in chosen])
        items[:] = kept
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
