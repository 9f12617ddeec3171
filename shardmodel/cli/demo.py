"""``shardmodel demo``: a hot key's burst of writes, unsharded vs sharded, on in-process moto.

The command parses its options; :func:`shardmodel.demo.run_demo` writes and prints.
"""

from __future__ import annotations

import argparse

from shardmodel.cli.arguments import positive_int
from shardmodel.cli.registry import Subparsers, add_command, command


@command
def _demo_command(commands: Subparsers) -> None:
    demo = add_command(
        commands,
        "demo",
        "show a hot key's writes unsharded vs sharded, on in-process moto",
        _demo,
    )
    demo.add_argument("--writes", type=positive_int, default=2000, help="writes in the burst")
    demo.add_argument(
        "--shards", type=positive_int, default=10, help="RandomShards(n) of the sharded table"
    )
    demo.add_argument("--seed", type=int, default=7, help="seed of the shard picker")


def _demo(args: argparse.Namespace) -> int:
    from shardmodel.demo import run_demo

    run_demo(writes=args.writes, shards=args.shards, seed=args.seed)
    return 0
