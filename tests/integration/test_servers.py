"""dynalite_server takes the executable or the directory that holds node_modules."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from shardmodel.testing import dynalite_server
from tests.integration.conftest import CREDENTIALS, DYNALITE, ROOT


@pytest.mark.parametrize("path", [DYNALITE, ROOT, DYNALITE.parent], ids=["bin", "project", "dir"])
def test_dynalite_server_starts_from_the_executable_or_a_directory(path: Path) -> None:
    with dynalite_server(path, timeout=120) as url:
        client = boto3.client(
            "dynamodb",
            endpoint_url=url,
            region_name=CREDENTIALS["region"],
            aws_access_key_id=CREDENTIALS["aws_access_key_id"],
            aws_secret_access_key=CREDENTIALS["aws_secret_access_key"],
        )
        assert client.list_tables()["TableNames"] == []


def test_a_directory_without_dynalite_is_named_in_the_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"dynalite is not installed at .*node_modules"):
        with dynalite_server(tmp_path):
            pass
