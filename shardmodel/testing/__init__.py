"""shardmodel.testing: prove sharding in your own tests on in-process moto.

Importing this package has no side effects; the pytest plugin (registered under the
``pytest11`` entry point as ``shardmodel``) provides the fixtures.
"""

from shardmodel.testing.backend import FAKE_CREDENTIALS, mock_dynamodb
from shardmodel.testing.tables import bind_models, create_tables, drop_tables

__all__ = [
    "FAKE_CREDENTIALS",
    "bind_models",
    "create_tables",
    "drop_tables",
    "mock_dynamodb",
]
