"""What the commands take: argparse types for numbers and endpoints, and models by name.

A model is given on the command line as ``module:Class`` and imported with the current
directory on the import path (:func:`load_model`), as ``python -m`` would.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from shardmodel.cli.registry import CommandError

__all__ = ["endpoint", "load_model", "non_negative", "positive_int"]


# -- argument types ----------------------------------------------------------------------


def positive_int(text: str) -> int:
    """An argparse type: an int of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"give a whole number of at least 1, not {text!r}")
    return value


def non_negative(text: str) -> float:
    """An argparse type: a number of at least 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"give a number of at least 0, not {text!r}")
    return value


def endpoint(text: str) -> str:
    """An argparse type: an http(s) endpoint URL."""
    if not text.startswith(("http://", "https://")) or len(text.split("://", 1)[1]) == 0:
        raise argparse.ArgumentTypeError(
            f"give the endpoint as a URL, e.g. http://localhost:8000, not {text!r}"
        )
    return text


# -- loading models ----------------------------------------------------------------------


def load_model(path: str, host: str | None = None) -> Any:
    """The model class at ``module:Class``, imported with the current directory on the path.

    With ``host``, the model (and so its metadata table) is bound to that endpoint.
    """
    module_name, _, class_name = path.partition(":")
    if not module_name or not class_name:
        raise CommandError(f"give the model as module:Class (e.g. app.models:Orders), not {path!r}")
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)  # the console script runs with its own bin/ on the path
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise CommandError(f"cannot import {module_name!r} (from {here}): {error}") from error
    model = getattr(module, class_name, None)
    if model is None:
        raise CommandError(f"module {module_name!r} has no class {class_name!r}")
    if not isinstance(model, type) or not hasattr(model, "_get_connection"):
        raise CommandError(f"{path} is not a PynamoDB model class")
    bound: Any = model
    if host is not None:
        bound.Meta.host = host
        bound._connection = None
    return bound
