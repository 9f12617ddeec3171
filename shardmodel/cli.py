"""The ``shardmodel`` command line."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from typing import Any

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shardmodel", description="Shard hot DynamoDB partition keys on PynamoDB models."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo", help="show a hot key's writes unsharded vs sharded, on in-process moto"
    )
    demo.add_argument("--writes", type=int, default=2000, help="writes in the burst")
    demo.add_argument("--shards", type=int, default=10, help="RandomShards(n) of the sharded table")
    demo.add_argument("--seed", type=int, default=7, help="seed of the shard picker")
    shards = commands.add_parser(
        "shards",
        help="list a DynamicShards model's grown keys, or shrink and compact one key",
    )
    shards.add_argument("model", help="the model class as module:Class, e.g. app.models:Orders")
    shards.add_argument("--key", help="one logical key: show it (and --shrink-to / --compact)")
    shards.add_argument("--min", type=int, default=2, help="list keys with at least N shards")
    shards.add_argument("--shrink-to", type=int, help="lower the key's live count to N")
    shards.add_argument("--compact", action="store_true", help="move retired shards' items")
    shards.add_argument(
        "--grace", type=float, default=5.0, help="seconds between copying and deleting"
    )
    shards.add_argument("--host", help="the DynamoDB endpoint (default: the model's Meta.host)")
    from shardmodel.migration.cli import add_reshard_parser

    add_reshard_parser(commands)
    return parser


def _load_model(path: str) -> Any:
    module_name, _, class_name = path.partition(":")
    if not module_name or not class_name:
        raise SystemExit(f"shardmodel shards: give the model as module:Class, not {path!r}")
    try:
        model = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as error:
        raise SystemExit(f"shardmodel shards: cannot load {path!r}: {error}") from None
    if getattr(model, "_shard_directory", None) is None:
        raise SystemExit(
            f"shardmodel shards: {path} has no DynamicShards partition key; its count is fixed"
        )
    return model


def _describe(metadata: Any) -> str:
    history = ", ".join(str(e) for e in metadata.history)
    return (
        f"{metadata.logical_key:<30} live {metadata.number_of_shards:>4}  "
        f"readable {metadata.readable:>4}  history {history}"
    )


def _shards(args: argparse.Namespace) -> int:
    model = _load_model(args.model)
    if args.host:
        model.Meta.host = args.host
        model._connection = None
    if args.key is None:
        if args.shrink_to is not None or args.compact:
            raise SystemExit("shardmodel shards: --shrink-to and --compact need --key")
        for metadata in model.grown_keys(min_shards=args.min):
            print(_describe(metadata))
        return 0
    if args.shrink_to is not None:
        model.shrink_shards(args.key, args.shrink_to)
    if args.compact:
        moved = model.compact_shards(args.key, grace=args.grace)
        print(f"moved {moved} items into the live shards")
    metadata = model.shard_metadata(args.key)
    print(_describe(metadata) if metadata is not None else f"{args.key}: no metadata (1 shard)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    if args.command == "demo":
        from shardmodel.demo import run_demo

        if args.writes < 1:
            _parser().error("--writes must be at least 1")
        run_demo(writes=args.writes, shards=args.shards, seed=args.seed)
    if args.command == "shards":
        return _shards(args)
    if args.command == "reshard":
        from shardmodel.migration.cli import run_reshard

        return run_reshard(args)
    return 0
