"""``shardmodel demo``: a hot key's burst, unsharded, sharded and dynamic, on the simulator.

The command parses its options; :func:`shardmodel.demo.run_demo` writes and prints.
"""

from __future__ import annotations

import argparse

from shardmodel.cli.arguments import whole
from shardmodel.cli.registry import Subparsers, add_command, command
from shardmodel.keyspace.strategies import MAX_SHARDS

#: The largest burst the demo writes.
DEMO_WRITES = 100_000


@command
def _demo_command(commands: Subparsers) -> None:
    demo = add_command(
        commands,
        "demo",
        "throttle a hot key's burst unsharded, sharded and dynamic, on the capacity simulator",
        _demo,
    )
    demo.add_argument(
        "--writes",
        type=whole(1, DEMO_WRITES, "a burst in-process moto writes in seconds"),
        default=5000,
        help="writes in the burst (5,000 a second)",
    )
    demo.add_argument(
        "--shards",
        type=whole(1, MAX_SHARDS, "the most shards a strategy takes"),
        default=10,
        help="RandomShards(n) of the sharded table",
    )
    demo.add_argument(
        "--seed",
        type=whole(0, 2**32 - 1, "a 32-bit seed"),
        default=7,
        help="seed of the shard picker",
    )


def _demo(args: argparse.Namespace) -> int:
    from shardmodel.demo import run_demo

    run_demo(writes=args.writes, shards=args.shards, seed=args.seed)
    return 0
