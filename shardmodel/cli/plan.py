"""``shardmodel plan``: how many shards one hot key needs, with DynamoDB's unit rounding.

The arithmetic is :mod:`shardmodel.capacity`'s; the command prints the units of both
sides, the binding side and the strategy line to declare.
"""

from __future__ import annotations

import argparse

from shardmodel.cli.arguments import non_negative, positive_int
from shardmodel.cli.registry import CommandError, Subparsers, add_command, command
from shardmodel.core.terminal import table


@command
def _plan_command(commands: Subparsers) -> None:
    plan = add_command(
        commands,
        "plan",
        "how many shards one hot key needs, with DynamoDB's unit rounding",
        _plan,
    )
    plan.add_argument(
        "--item-bytes", type=positive_int, required=True, help="size of one item, names included"
    )
    plan.add_argument(
        "--reads-per-second", type=non_negative, default=0.0, help="Queries a second of the key"
    )
    plan.add_argument(
        "--items-per-read", type=positive_int, default=1, help="items one Query reads"
    )
    plan.add_argument(
        "--writes-per-second", type=non_negative, default=0.0, help="items written a second"
    )
    plan.add_argument(
        "--consistent", action="store_true", help="the Queries are strongly consistent"
    )


def _plan(args: argparse.Namespace) -> int:
    from shardmodel.capacity import (
        PARTITION_RCU,
        PARTITION_WCU,
        query_units,
        shards_for,
        write_units,
    )

    try:
        plan = shards_for(
            args.item_bytes,
            reads_per_second=args.reads_per_second,
            items_per_read=args.items_per_read,
            writes_per_second=args.writes_per_second,
            consistent=args.consistent,
        )
    except ValueError as error:
        raise CommandError(str(error)) from error
    per_query = query_units(args.item_bytes, args.items_per_read, args.consistent)
    kind = "strong" if args.consistent else "eventual"
    rows: list[list[object]] = [
        [
            "reads",
            f"{per_query:g} RCU a Query ({args.items_per_read} x {args.item_bytes:,} B, {kind})",
            plan.read_units,
            PARTITION_RCU,
            plan.read_shards,
        ],
        [
            "writes",
            f"{write_units(args.item_bytes)} WCU a write ({args.item_bytes:,} B)",
            plan.write_units,
            PARTITION_WCU,
            plan.write_shards,
        ],
    ]
    print(table(("side", "cost", "units/s", "per shard", "shards"), rows))
    print(f"\nbinding: {plan.binding}, {plan.shards} shard{'s' if plan.shards > 1 else ''}")
    if plan.shards == 1:
        print("strategy: none needed; one partition serves this key")
    elif plan.binding == "writes":
        print(f"strategy: ShardedKeyAttribute(hash_key=True, strategy=RandomShards({plan.shards}))")
    else:
        print(
            "strategy: ShardedKeyAttribute(hash_key=True, "
            f'strategy=HashShards({plan.shards}, on=["<attribute your reads fix>"]))'
        )
        print(
            "  (a Query that fixes the `on` attributes reads one shard; one that does not "
            "reads every shard)"
        )
    return 0
