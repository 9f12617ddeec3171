"""The pytest plugin: fixtures for in-process moto DynamoDB and model tables."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from pynamodb.models import Model

from shardmodel.testing.backend import mock_dynamodb
from shardmodel.testing.tables import bind_models, create_tables, drop_tables


@pytest.fixture
def moto_dynamodb() -> Iterator[None]:
    """In-process moto DynamoDB with fake credentials and region for one test."""
    with mock_dynamodb():
        yield


@pytest.fixture
def dynamodb_tables(moto_dynamodb: None) -> Iterator[Callable[..., None]]:
    """Call with models to create their tables on moto; they are dropped after the test."""
    created: list[type[Model]] = []

    def make(*models: type[Model]) -> None:
        bind_models(models, host=None)
        create_tables(models)
        created.extend(models)

    yield make
    drop_tables(reversed(created))
    bind_models(created, host=None)
