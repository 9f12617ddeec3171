"""The public API is exactly what shardmodel/__init__.py lists in __all__."""

from __future__ import annotations

import shardmodel


def test_all_lists_every_public_name() -> None:
    """Every public name of the package is in __all__, and every name in __all__ exists."""
    public = {
        name
        for name in vars(shardmodel)
        if not name.startswith("_") and not isinstance(getattr(shardmodel, name), type(shardmodel))
    }
    assert set(shardmodel.__all__) - {"__version__"} == public
    for name in shardmodel.__all__:
        assert hasattr(shardmodel, name)
