"""mock_dynamodb: a block (``with``) or a session (``start``/``stop``), credentials restored."""

from __future__ import annotations

import os

import boto3
import pytest

from shardmodel.testing import FAKE_CREDENTIALS, mock_dynamodb


def test_start_and_stop_answer_in_between_and_restore_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "mine")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    dynamodb = mock_dynamodb()
    dynamodb.start()
    try:
        assert os.environ["AWS_ACCESS_KEY_ID"] != "mine"  # fake keys: never the real ones
        assert os.environ["AWS_DEFAULT_REGION"] == FAKE_CREDENTIALS["AWS_DEFAULT_REGION"]
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        assert client.list_tables()["TableNames"] == ["t"]
        with pytest.raises(RuntimeError, match="already started"):
            dynamodb.start()
    finally:
        dynamodb.stop()
    assert os.environ["AWS_ACCESS_KEY_ID"] == "mine"
    assert "AWS_SESSION_TOKEN" not in os.environ
    with mock_dynamodb():  # a new one starts empty
        assert boto3.client("dynamodb", region_name="us-east-1").list_tables()["TableNames"] == []


def test_without_moto_the_error_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """The quickstart's first line, on an install without the testing extra."""
    import sys

    from shardmodel.testing import mock_dynamodb

    monkeypatch.setitem(sys.modules, "moto", None)  # an import of it fails, as if absent
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'shardmodel\[testing\]'"):
        mock_dynamodb().start()
