"""In-process moto DynamoDB with fake credentials and region."""

from __future__ import annotations

import os
import re
from typing import Any

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


class mock_dynamodb:  # lower case: called like moto's mock_aws
    """In-process moto DynamoDB, with fake credentials set and then restored.

    Use it as ``with mock_dynamodb(): ...`` around a script's or test's code, or, in a
    session that has no one block (a REPL, a notebook, a docs page), as
    ``dynamodb = mock_dynamodb(); dynamodb.start()`` and ``dynamodb.stop()`` at the end.
    Nothing leaves the process: no AWS account, endpoint or network is needed.
    """

    def __init__(self) -> None:
        self._saved: dict[str, str | None] | None = None
        self._mock: Any = None

    def start(self) -> None:
        """Set fake credentials and answer every DynamoDB call in this process."""
        try:
            from moto import mock_aws
            from moto.core.config import DefaultConfig
        except ModuleNotFoundError as error:
            if error.name is None or error.name.partition(".")[0] != "moto":
                raise
            raise ModuleNotFoundError(
                "mock_dynamodb() runs DynamoDB in-process on moto, which is not installed: "
                "pip install 'shardmodel[testing]' (moto and pytest, for tests and the demo)",
                name="moto",
            ) from None

        if self._mock is not None:
            raise RuntimeError("mock_dynamodb() is already started: stop() it first")
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
        self._saved = {name: os.environ.get(name) for name in FAKE_CREDENTIALS}
        os.environ.update(FAKE_CREDENTIALS)
        try:
            mock = mock_aws(config=config)
            mock.start()
        except BaseException:
            self._restore()
            raise
        self._mock = mock

    def stop(self) -> None:
        """Stop answering (every table is gone) and restore the credentials it replaced."""
        mock, self._mock = self._mock, None
        try:
            if mock is not None:
                mock.stop()
        finally:
            self._restore()

    def _restore(self) -> None:
        saved, self._saved = self._saved, None
        for name, value in (saved or {}).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def __enter__(self) -> None:
        self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
