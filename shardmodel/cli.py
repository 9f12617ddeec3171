"""The ``shardmodel`` command line."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    if args.command == "demo":
        from shardmodel.demo import run_demo

        if args.writes < 1:
            _parser().error("--writes must be at least 1")
        run_demo(writes=args.writes, shards=args.shards, seed=args.seed)
    return 0
