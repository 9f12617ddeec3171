"""Fixtures shared by every suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shardmodel.testing import bind_models, create_tables, drop_tables, mock_dynamodb
from tests.models import ALL_MODELS


@pytest.fixture
def tables() -> Iterator[None]:
    """In-process moto with every test model's table created, dropped after the test."""
    with mock_dynamodb():
        bind_models(ALL_MODELS, host=None)
        create_tables(ALL_MODELS)
        yield
        drop_tables(ALL_MODELS)
        bind_models(ALL_MODELS, host=None)
