"""Servers for the integration suite, started on loopback by the test session.

Every integration test runs once against a moto server and once against dynalite
(an independent DynamoDB implementation from the npm registry). Under pytest-xdist
(``make test`` runs ``-n auto``) each worker process starts its own pair on free ports:
session fixtures are per worker, so workers never share a table.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from pynamodb.models import Model

from shardmodel.testing import (
    bind_models,
    create_tables,
    drop_tables,
    dynalite_server,
    free_port,
    wait_for_port,
)
from tests.models import ALL_MODELS
from tests.support import reset_tables

ROOT = Path(__file__).resolve().parents[2]
DYNALITE = ROOT / "node_modules" / ".bin" / "dynalite"
CREDENTIALS = {
    "region": "us-east-1",
    "aws_access_key_id": "testing",
    "aws_secret_access_key": "testing",
}


@pytest.fixture(scope="session")
def dynalite_url() -> Iterator[str]:
    """A dynalite server on loopback, in memory, tables active at once."""
    with dynalite_server(DYNALITE, timeout=120) as url:  # node starts slowly under load
        yield url


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    """A moto server on loopback, in a thread of this process.

    moto finds each request's service under one lock, listing its own package directory
    (some 150 stat calls) every time; the answer for a host never changes, so it is kept.
    """
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication
    from moto.server import ThreadedMotoServer

    lookup = DomainDispatcherApplication.get_backend_for_host
    backends: dict[str | None, Any] = {}

    def kept(self: DomainDispatcherApplication, host: str | None) -> Any:
        if host not in backends:
            backends[host] = lookup(self, host)
        return backends[host]

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DomainDispatcherApplication, "get_backend_for_host", kept)
        server.start()
        try:
            wait_for_port(port, None, timeout=120)
            yield f"http://127.0.0.1:{port}"
        finally:
            server.stop()


@pytest.fixture(params=["moto", "dynalite"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test model bound to one server, its tables empty; yields the server's name.

    The tables are made once per server (each xdist worker has its own servers) and
    emptied before every test: dropping and recreating some 25 tables per test cost more
    than most tests. A test that drops one of them gets it back for the next test.
    """
    url = request.getfixturevalue(f"{request.param}_url")
    bind_models(ALL_MODELS, host=url, **CREDENTIALS)
    empty_tables(ALL_MODELS, url)
    try:
        yield str(request.param)
    finally:
        unbind(ALL_MODELS)


def unbind(models: Iterable[type[Model]], **meta: Any) -> None:
    """Point models back at AWS (or moto in-process) without the servers' keys.

    A later test on the same worker that relies on no credentials then finds none.
    ``meta``: other ``Meta`` fields to set back, e.g. ``region``.
    """
    bind_models(models, host=None, aws_access_key_id=None, aws_secret_access_key=None, **meta)


def empty_tables(models: Iterable[type[Model]], url: str) -> None:
    """The models' tables on the server at ``url``, empty: made the first time this
    worker asks for them there, emptied every later time (a dropped one made again)."""
    models = tuple(models)
    made = _MADE.setdefault(url, set())
    if models in made:
        reset_tables(models, client_of(url))
        return
    drop_tables(models)
    create_tables(models)
    made.add(models)


def client_of(url: str) -> Any:
    """A botocore DynamoDB client of the server at ``url``, made once per worker."""
    if url not in _CLIENTS:
        _CLIENTS[url] = botocore.session.get_session().create_client(
            "dynamodb",
            endpoint_url=url,
            region_name=CREDENTIALS["region"],
            aws_access_key_id=CREDENTIALS["aws_access_key_id"],
            aws_secret_access_key=CREDENTIALS["aws_secret_access_key"],
        )
    return _CLIENTS[url]


#: A client of each server (by URL).
_CLIENTS: dict[str, Any] = {}
#: The sets of models whose tables this worker has made on each server (by URL).
_MADE: dict[str, set[tuple[type[Model], ...]]] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/integration is marked integration."""
    for item in items:
        if "tests/integration" in str(item.path):
            item.add_marker(pytest.mark.integration)
