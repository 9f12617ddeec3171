"""The public API is exactly what shardmodel/__init__.py lists in __all__, all documented."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

import shardmodel
import shardmodel.testing


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


API_RST = Path(__file__).resolve().parents[2] / "docs" / "api.rst"
DIRECTIVE = re.compile(r"^\.\. (?:auto)?(\w+):: ([\w.]+)\n((?:   :.*\n)*)", re.MULTILINE)
# PynamoDB's hooks that ShardedModel overrides to keep keys logical: not for callers
HOOKS = {
    "DoesNotExist",
    "get_delete_kwargs_from_instance",
    "get_operation_kwargs_from_class",
    "get_save_kwargs_from_instance",
    "get_update_kwargs_from_instance",
}


def _documented() -> dict[str, set[str]]:
    """Every object docs/api.rst documents, by dotted name, with the members it lists."""
    documented: dict[str, set[str]] = {}
    for kind, name, options in DIRECTIVE.findall(API_RST.read_text(encoding="utf-8")):
        members = re.search(r":members:(.*)", options)
        listed = {m.strip() for m in members.group(1).split(",") if m.strip()} if members else set()
        documented[name] = listed
        if kind == "module" and members and not listed:  # automodule with every member
            module = importlib.import_module(name)
            for public, obj in vars(module).items():
                if not public.startswith("_") and getattr(obj, "__module__", "") == name:
                    documented.setdefault(f"{name}.{public}", set())
    return documented


@pytest.mark.parametrize("package", [shardmodel, shardmodel.testing], ids=lambda p: p.__name__)
def test_the_api_reference_lists_every_exported_name(package: ModuleType) -> None:
    """docs/api.rst documents every name in __all__, directly or as its module's member."""
    documented = _documented()
    missing = []
    for name in package.__all__:
        obj = getattr(package, name)
        home = f"{getattr(obj, '__module__', '')}.{name}"
        if f"{package.__name__}.{name}" not in documented and home not in documented:
            missing.append(name)
    assert missing == [], f"add these to docs/api.rst: {missing}"


def test_the_api_reference_lists_every_sharded_model_method() -> None:
    """Every public method shardmodel gives ShardedModel is in its :members: list."""
    own = {
        name
        for cls in shardmodel.ShardedModel.__mro__
        if cls.__module__.startswith("shardmodel")
        for name in vars(cls)
        if not name.startswith("_")
    }
    listed = _documented()["shardmodel.ShardedModel"]
    assert sorted(own - HOOKS - listed) == [], "add these to ShardedModel's :members: in api.rst"
