"""``shardmodel plan``: how many shards one hot key needs, with DynamoDB's unit rounding.

The arithmetic is :mod:`shardmodel.capacity`'s; the command prints the units of both
sides, the headroom kept (2x by default, as the capacity guides advise), the binding side
and the strategy line to declare. ``--verify`` runs the suggested layout on the capacity
simulator at the planned rate (:func:`shardmodel.testing.verify.verify_plan`) and prints
its throttles; a layout that throttles there exits with 1.
"""

from __future__ import annotations

import argparse

from shardmodel.capacity import (
    PARTITION_RCU,
    PARTITION_WCU,
    ShardPlan,
)
from shardmodel.cli.arguments import add_load_arguments, number
from shardmodel.cli.registry import CommandError, Subparsers, UsageError, add_command, command
from shardmodel.core.terminal import progress, table
from shardmodel.keyspace.strategies import MAX_SHARDS

#: The most writes (reads) a second ``plan`` takes: what MAX_SHARDS partitions accept.
MAX_WRITES = MAX_SHARDS * PARTITION_WCU
MAX_READS = MAX_SHARDS * PARTITION_RCU * 2  # eventually consistent reads cost half


@command
def _plan_command(commands: Subparsers) -> None:
    plan = add_command(
        commands,
        "plan",
        "how many shards one hot key needs, with DynamoDB's unit rounding",
        _plan,
    )
    add_load_arguments(
        plan,
        reads=number(0, MAX_READS, f"what {MAX_SHARDS:,} partitions serve"),
        writes=number(0, MAX_WRITES, f"what {MAX_SHARDS:,} partitions accept"),
        helps=(
            "Queries a second of the key",
            "items written a second",
            "capacity kept over the mean load (1: none)",
        ),
    )
    plan.add_argument(
        "--verify",
        action="store_true",
        help="run the suggested layout on the capacity simulator at the planned rate",
    )
    plan.add_argument(
        "--seconds",
        type=number(1, 60, "a verification runs on in-process moto"),
        default=2.0,
        help="simulated seconds --verify drives each side for",
    )


def _strategy_lines(plan: ShardPlan) -> list[str]:
    """The strategy to declare, and why when it is not the obvious one."""
    if plan.suggestion == "none":
        return ["strategy: none needed; one partition serves this key"]
    if plan.suggestion == "random":
        return [
            f"strategy: ShardedKeyAttribute(hash_key=True, strategy=RandomShards({plan.shards}))",
            f"  (for items written once; items overwritten by key: HashShards({plan.shards}, "
            'on=["<sort key>"]);',
            '   a rate you cannot plan: DynamicShards(); see "Which strategy", docs/choosing.rst)',
        ]
    lines = [
        "strategy: ShardedKeyAttribute(hash_key=True, "
        f'strategy=HashShards({plan.shards}, on=["<attribute your reads fix>"]))',
        "  (a Query that fixes the `on` attributes reads one shard; one that does not "
        "reads every shard)",
        '  (see the docs\' "Which strategy" page, docs/choosing.rst)',
    ]
    if plan.binding == "writes":
        lines.append(
            f"  (RandomShards({plan.shards}) would take the writes, but a Query of the whole "
            f"key reads every shard: {plan.fan_out_units:,g} RCU/s on each, over "
            f"{PARTITION_RCU:,} / {plan.headroom:g})"
        )
    return lines


def _plan(args: argparse.Namespace) -> int:
    from shardmodel.capacity import query_units, shards_for, write_units

    try:
        plan = shards_for(
            args.item_bytes,
            reads_per_second=args.reads_per_second,
            items_per_read=args.items_per_read,
            writes_per_second=args.writes_per_second,
            consistent=args.consistent,
            headroom=args.headroom,
        )
    except ValueError as error:
        raise UsageError(str(error)) from error
    if plan.shards > MAX_SHARDS:
        raise UsageError(
            f"this traffic needs {plan.shards:,} shards with {plan.headroom:g}x headroom, "
            f"over the {MAX_SHARDS:,} a strategy takes; lower --headroom, or split the key "
            "(e.g. by tenant or time bucket) before sharding it"
        )
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
    print(
        f"\nheadroom: {plan.headroom:g}x (each shard planned at "
        f"{1 / plan.headroom:.0%} of its partition's limit)"
    )
    print(f"binding: {plan.binding}, {plan.shards} shard{'s' if plan.shards > 1 else ''}")
    for line in _strategy_lines(plan):
        print(line)
    if args.verify:
        return _verify(args)
    return 0


def _verify(args: argparse.Namespace) -> int:
    from shardmodel.testing.verify import verify_plan

    try:
        with progress("running the layout on the capacity simulator"):
            run = verify_plan(
                args.item_bytes,
                reads_per_second=args.reads_per_second,
                items_per_read=args.items_per_read,
                writes_per_second=args.writes_per_second,
                consistent=args.consistent,
                headroom=args.headroom,
                seconds=args.seconds,
            )
    except ValueError as error:
        raise UsageError(str(error)) from error
    print(
        f"\nverify: {run.strategy} on the capacity simulator, {run.seconds:g} s: "
        f"{run.writes:,} writes, {run.reads:,} shard reads, "
        f"{run.write_throttles:,} write / {run.read_throttles:,} read throttles"
    )
    if not run.passed:
        raise CommandError(
            f"the suggested layout throttled {run.throttles:,} times on the capacity "
            "simulator; raise --headroom"
        )
    print("verify: passed, 0 throttles")
    return 0
