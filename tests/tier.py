"""Which tier a run is: ``make test`` (the default) or ``make stress``.

``make test`` is what CI runs: every test that guards behaviour, at sizes that fit the
suite in minutes. ``make stress`` (``SHARDMODEL_STRESS=1``) adds the long scenarios: the
tests marked ``stress``, the full-size migrations under load, every phase interleaving,
and the property tests at the deep profile. A test that scales with the tier reads
:data:`STRESS`; one that only runs there is marked with :data:`stress_only`.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest

#: True under ``make stress``.
STRESS = os.environ.get("SHARDMODEL_STRESS") == "1"
#: Scenarios at full size: under ``make stress``, or with ``SHARDMODEL_FULL_SIZES=1`` on
#: any selection (``make mutants`` measured with the sizes before the tiers).
FULL_SIZES = STRESS or os.environ.get("SHARDMODEL_FULL_SIZES") == "1"


def stress_only(reason: str) -> pytest.MarkDecorator:
    """Mark a test (or a parameter) that runs under ``make stress`` alone, saying why."""
    return pytest.mark.stress(reason=reason)


def run_seed() -> int:
    """The seed of this run's drawn cases: ``SHARDMODEL_SEED`` to replay one, else new.

    Every pytest-xdist worker must draw the same cases (they collect separately), so the
    controller's seed is handed to the workers through the environment (tests/conftest.py).
    """
    value = os.environ.get("SHARDMODEL_SEED")
    if value is None:
        value = str(random.SystemRandom().randrange(10**6))
        os.environ["SHARDMODEL_SEED"] = value
    return int(value)


def sized(full: int, small: int) -> int:
    """A scenario's size: ``full`` under ``make stress``, ``small`` under ``make test``.

    ``small`` still crosses every rule the scenario checks (items on every shard a change
    moves, a writer in every phase); ``full`` is the size the scenario was written at.
    """
    return full if FULL_SIZES else small


def examples(full: int | None = None, small: int = 10) -> Any:
    """Hypothesis settings for a scenario property whose every example runs a migration:
    ``small`` examples under ``make test`` (its explicit ``@example`` cases always run),
    the profile's count (or ``full``) under ``make stress``."""
    from hypothesis import settings

    if FULL_SIZES:
        return settings() if full is None else settings(max_examples=full)
    return settings(max_examples=small)
