"""``shardmodel plan``: how many shards one hot key needs, with DynamoDB's unit rounding.

The arithmetic is :mod:`shardmodel.capacity`'s; the command prints the units of both
sides and of the two together (a partition takes 3,000 RCU or 1,000 WCU or a linear
mix), the headroom kept (2x by default, as the capacity guides advise), the binding side,
the strategy line to declare, and what one read of the key then costs in each layout
beside it. ``--verify`` runs the suggested layout on the capacity simulator at the
planned rate (:func:`shardmodel.testing.verify.verify_plan`), a line a simulated second,
and prints its throttles; a layout that throttles there exits with 1.
"""

from __future__ import annotations

import argparse
import sys
import time

from shardmodel.capacity import (
    PARTITION_RCU,
    PARTITION_WCU,
    ShardPlan,
    query_units,
)
from shardmodel.cli.arguments import add_load_arguments, number
from shardmodel.cli.registry import CommandError, Subparsers, UsageError, add_command, command
from shardmodel.core.terminal import progress, table
from shardmodel.keyspace.strategies import MAX_SHARDS

#: The most writes (reads) a second ``plan`` takes: what MAX_SHARDS partitions accept.
MAX_WRITES = MAX_SHARDS * PARTITION_WCU
MAX_READS = MAX_SHARDS * PARTITION_RCU * 2  # eventually consistent reads cost half

#: Wall time of a merged read of the newest 100 items against one partition's Query, by
#: shard count: ``benchmarks/query_bench.py`` on dynalite with 5 ms slept before every
#: request, median of 5 interleaved rounds (``benchmarks/last_run.txt``). dynalite serves
#: one request at a time, so the larger counts are an upper bound for DynamoDB.
MEASURED_LATENCY: tuple[tuple[int, float], ...] = ((1, 1.25), (4, 1.76), (16, 2.82), (64, 14.56))


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
    if plan.binding != "reads":
        lines.append(
            f"  (RandomShards({plan.shards}) would take the writes, but a Query of the whole "
            f"key reads every shard: {plan.fan_out_units:,g} RCU/s on each, over "
            f"{PARTITION_RCU:,} / {plan.headroom:g})"
        )
    return lines


def _plan(args: argparse.Namespace) -> int:
    from shardmodel.capacity import shards_for, write_units

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
        wcu = write_units(args.item_bytes)
        fix = "lower --headroom, or split the key"
        if plan.write_shards * PARTITION_WCU > plan.write_units * plan.headroom + PARTITION_WCU:
            fix = (
                f"a partition takes {PARTITION_WCU // wcu} writes of {wcu} WCU a second and "
                "shards picked at random draw one more in some second unless they are many; "
                "store smaller items (e.g. the large part in S3), or split the key"
            )
        raise UsageError(
            f"this traffic needs {plan.shards:,} shards with {plan.headroom:g}x headroom, "
            f"over the {MAX_SHARDS:,} a strategy takes; {fix} "
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
        [
            "both",
            "partitions' worth: 3,000 RCU or 1,000 WCU each, or a mix",
            round(plan.read_units / PARTITION_RCU + plan.write_units / PARTITION_WCU, 2),
            1,
            plan.mixed_shards,
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
    print()
    print(_read_costs(plan, args.item_bytes, args.items_per_read, args.consistent))
    if args.verify:
        return _verify(args)
    return 0


def _latency(shards: int) -> str:
    """The measured wall-time factor of a merged read over ``shards`` shards."""
    below = (1, 1.0)
    for count, factor in MEASURED_LATENCY:
        if shards == count:
            return f"{factor:g}x"
        if shards < count:
            return f"{below[1]:g}x-{factor:g}x (measured at {below[0]} and {count})"
        below = (count, factor)
    count, factor = MEASURED_LATENCY[-1]
    return f"over {factor:g}x (measured at {count})"


def _read_costs(plan: ShardPlan, item_bytes: int, items: int, consistent: bool) -> str:
    """What one read of the key's newest ``items`` costs unsharded and in each layout."""
    from shardmodel.engine.merge import first_page_size

    def fan_out(shards: int) -> list[object]:
        page = first_page_size(items, shards)
        return [
            shards,
            f"up to {shards * page:,}",
            shards * query_units(item_bytes, page, consistent),
            _latency(shards),
        ]

    one = [1, f"{items:,}", query_units(item_bytes, items, consistent), "1x"]
    rows: list[list[object]] = [["unsharded (one partition)", *one]]
    if plan.shards > 1:
        rows.append([f"RandomShards({plan.shards})", *fan_out(plan.shards)])
        rows.append([f"HashShards({plan.shards}), a read fixing on=", *one])
        rows.append([f"HashShards({plan.shards}), any other read", *fan_out(plan.shards)])
    heading = (
        f"one read of the key's newest {items:,} (a Query, {item_bytes:,} B items), by layout; "
        "latency against one partition's Query, measured on dynalite:"
    )
    columns = ("layout", "requests", "items read", "RCU", "latency")
    return heading + "\n" + table(columns, rows)


def _verify(args: argparse.Namespace) -> int:
    from shardmodel.testing.verify import verify_plan

    started = time.monotonic()

    def tick(done: int, total: int) -> None:
        print(
            f"verify: simulated second {done} of {total} ({time.monotonic() - started:.1f} s)",
            file=sys.stderr,
            flush=True,
        )

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
                on_second=tick,
            )
    except ValueError as error:
        raise UsageError(str(error)) from error
    sampled = ""
    if run.sampled < run.plan.shards:  # the command verifies the planned count
        sampled = f" (followed {run.sampled:,} shards, throttles scaled to all)"
    print(
        f"\nverify: {run.strategy} on the capacity simulator, {run.seconds:g} s: "
        f"{run.writes:,} writes, {run.reads:,} shard reads, "
        f"{run.write_throttles:,} write / {run.read_throttles:,} read throttles{sampled}"
    )
    if not run.passed:
        raise CommandError(
            f"the suggested layout throttled {run.throttles:,} times on the capacity "
            "simulator; raise --headroom"
        )
    print("verify: passed, 0 throttles")
    return 0
