"""In-process moto DynamoDB with fake credentials and region."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

from shardmodel.testing._wire import ANSWERED_URL

__all__ = ["FAKE_CREDENTIALS", "mock_dynamodb"]

#: Environment that keeps botocore away from real credentials and regions.
FAKE_CREDENTIALS: dict[str, str] = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@contextmanager
def mock_dynamodb() -> Iterator[None]:
    """Run the block against in-process moto, with fake credentials set and then restored."""
    from moto import mock_aws
    from moto.core.config import DefaultConfig

    # the capacity simulator points the requests it answers itself at this address;
    # listing it lets moto's handler skip them at once instead of matching every service
    config: DefaultConfig = {
        "core": {
            "mock_credentials": True,
            "passthrough": {"urls": [re.escape(ANSWERED_URL) + ".*"], "services": []},
            "reset_boto3_session": True,
            "service_whitelist": None,
        }
    }
    saved = {name: os.environ.get(name) for name in FAKE_CREDENTIALS}
    os.environ.update(FAKE_CREDENTIALS)
    try:
        with mock_aws(config=config):
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
