"""``shardmodel prewarm module:Model``: set a table's warm throughput before a known event.

The event's traffic is given as ``plan`` takes it (item size, reads and writes a second,
headroom); :func:`shardmodel.ops.prewarm.prewarm` turns it into warm throughput for the
table and its indexes, refuses targets over the on-demand maximum or the per-table quota,
and sends one UpdateTable (``--dry-run``: none).
"""

from __future__ import annotations

import argparse

from shardmodel.cli.arguments import add_load_arguments, endpoint, load_model, number, whole
from shardmodel.cli.registry import Subparsers, UsageError, add_command, command
from shardmodel.core.terminal import progress

#: The largest per-table quota ``--max-units`` takes (DynamoDB raises quotas on request).
MAX_QUOTA = 10_000_000


@command
def _prewarm_command(commands: Subparsers) -> None:
    from shardmodel.ops.prewarm import TABLE_QUOTA

    prewarm = add_command(
        commands,
        "prewarm",
        "set a table's (and its indexes') warm throughput for a known event's traffic",
        _prewarm,
    )
    prewarm.add_argument("model", help="the model class as module:Class, e.g. app.models:Orders")
    quota = number(0, MAX_QUOTA, "the largest quota --max-units takes")
    add_load_arguments(
        prewarm,
        reads=quota,
        writes=quota,
        helps=(
            "Queries a second the table will see",
            "items written a second to the table",
            "capacity kept over the event's rate (1: none)",
        ),
    )
    prewarm.add_argument(
        "--no-indexes",
        dest="indexes",
        action="store_false",
        help="warm the table only, not its global secondary indexes",
    )
    prewarm.add_argument(
        "--max-units",
        type=whole(1, MAX_QUOTA, "the largest quota taken here"),
        default=TABLE_QUOTA,
        help="your account's per-table quota of each side, units a second",
    )
    prewarm.add_argument(
        "--reads-fix-shard",
        action="store_true",
        help="the Queries fix a HashShards key's `on` attributes: each reads one shard "
        "(else a Query of a whole key reads every shard, and is counted so)",
    )
    prewarm.add_argument("--dry-run", action="store_true", help="print the change, send nothing")
    prewarm.add_argument(
        "--host", type=endpoint, help="the DynamoDB endpoint (default: the model's Meta.host)"
    )


def _prewarm(args: argparse.Namespace) -> int:
    from shardmodel.ops.prewarm import fan_out_of, prewarm, warm_units

    if args.reads_per_second == 0 and args.writes_per_second == 0:
        raise UsageError("give --reads-per-second and/or --writes-per-second: the event's rate")
    traffic = {
        "item_bytes": args.item_bytes,
        "reads_per_second": args.reads_per_second,
        "items_per_read": args.items_per_read,
        "writes_per_second": args.writes_per_second,
        "consistent": args.consistent,
        "headroom": args.headroom,
    }
    try:  # every number is checked before the model is even imported
        read, write = warm_units(**traffic)
    except ValueError as error:
        raise UsageError(str(error)) from error
    for side, units in (("read", read), ("write", write)):
        if units > args.max_units:
            raise UsageError(
                f"{units:,} {side} units a second is over the per-table quota of "
                f"{args.max_units:,}; lower the rate or --headroom, or give --max-units your "
                "account's quota"
            )
    model = load_model(args.model, args.host)
    fan_out = fan_out_of(model, args.reads_fix_shard)
    if fan_out > 1:
        read, _ = warm_units(**traffic, fan_out=fan_out)
        if read > args.max_units:
            raise UsageError(
                f"{read:,} read units a second is over the per-table quota of "
                f"{args.max_units:,}: each Query of a whole key of {args.model} reads "
                f"{fan_out} shards; lower the rate, give --reads-fix-shard if the Queries fix "
                "the HashShards attributes, or give --max-units your account's quota"
            )
    with progress(f"reading {model.Meta.table_name}"):
        plan = prewarm(
            model,
            **traffic,
            indexes=args.indexes,
            max_units=args.max_units,
            dry_run=args.dry_run,
            reads_fix_shard=args.reads_fix_shard,
        )
    print(plan.render())
    return 0
