"""What the commands take: argparse types for numbers and endpoints, and models by name.

Every number a command takes is bounded: :func:`whole` and :func:`number` build argparse
types that refuse a value outside ``[low, high]`` with a message naming the limit, so a
wild value is a usage error (exit code 2) before anything is read or written.

A model is given on the command line as ``module:Class`` and imported with the current
directory on the import path (:func:`load_model`), as ``python -m`` would.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from shardmodel.cli.registry import CommandError, UsageError

__all__ = ["add_load_arguments", "endpoint", "load_model", "number", "whole"]


# -- argument types ----------------------------------------------------------------------


def _show(value: float) -> str:
    """A limit as an operator reads it: ``1,000,000``, ``0.5``."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,g}"


def _range_text(low: float, high: float) -> str:
    return f"from {_show(low)} to {_show(high)}"


def whole(low: int, high: int, limit: str) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high``.

    ``limit`` says where ``high`` comes from, e.g. ``"the most shards a strategy takes"``.
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"give a whole number {_range_text(low, high)}, not {text!r}"
            ) from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{value:,} is outside {low:,}..{high:,} ({limit}); give a whole number "
                f"{_range_text(low, high)}"
            )
        return value

    parse.__name__ = "whole number"  # argparse names the type in its messages
    return parse


def number(low: float, high: float, limit: str, above_low: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number from ``low`` (excluded if ``above_low``) to ``high``."""
    least = f"above {_show(low)}" if above_low else f"of at least {_show(low)}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if value != value:  # NaN, or not a number at all
            raise argparse.ArgumentTypeError(
                f"give a number {least}, up to {_show(high)}, not {text!r}"
            )
        if value < low or (above_low and value == low) or value > high:
            raise argparse.ArgumentTypeError(
                f"{text} is outside the range: give a number {least} and at most "
                f"{_show(high)} ({limit})"
            )
        return value

    parse.__name__ = "number"
    return parse


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
        raise UsageError(f"give the model as module:Class (e.g. app.models:Orders), not {path!r}")
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
        raise UsageError(f"{path} is not a PynamoDB model class")
    bound: Any = model
    if host is not None:
        bound.Meta.host = host
        bound._connection = None
    return bound


def add_load_arguments(
    parser: argparse.ArgumentParser,
    *,
    reads: Callable[[str], float],
    writes: Callable[[str], float],
    helps: tuple[str, str, str],
) -> None:
    """The load a capacity command sizes for: item size, reads, writes, headroom.

    ``reads``, ``writes``: the bounded types of the two rates; ``helps``: the help of the
    read rate, the write rate and the headroom, which say what the rates are of.
    """
    from shardmodel.capacity import DEFAULT_HEADROOM, MAX_HEADROOM, MAX_ITEM_BYTES

    reads_help, writes_help, headroom_help = helps
    parser.add_argument(
        "--item-bytes",
        type=whole(1, MAX_ITEM_BYTES, "DynamoDB's 400 KB item limit"),
        required=True,
        help="size of one item, names included",
    )
    parser.add_argument("--reads-per-second", type=reads, default=0.0, help=reads_help)
    parser.add_argument(
        "--items-per-read",
        type=whole(1, 100_000, "items one Query reads, in 1 MB pages"),
        default=1,
        help="items one Query reads",
    )
    parser.add_argument("--writes-per-second", type=writes, default=0.0, help=writes_help)
    parser.add_argument(
        "--consistent", action="store_true", help="the Queries are strongly consistent"
    )
    parser.add_argument(
        "--headroom",
        type=number(1, MAX_HEADROOM, "more is waste, not safety"),
        default=DEFAULT_HEADROOM,
        help=headroom_help,
    )
