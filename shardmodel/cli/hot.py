"""``shardmodel hot module:Model``: a table's throttles and capacity, and its hottest keys.

The throttle report comes from CloudWatch (:func:`shardmodel.ops.throttle_report`); the
most throttled and most accessed keys from Contributor Insights where the table has it
enabled (:func:`shardmodel.ops.contributor_insights`), folded to logical keys; the hot
keys from the table's stream (:class:`shardmodel.ops.HotKeyTracker`), with each key's
average and its peak second, a time-series model's hot entities and buckets, and every
physical key at ``--threshold`` of the partition limit (or ``--writes-per-second``) with
the logical key it folds to. ``--grow`` grows the hot keys of a DynamicShards model to
what they need. A source that is unavailable (CloudWatch, a table without a stream) is
said in one line at the end, and the exit code is 1; Contributor Insights, an opt-in of
the table, is said in one line where it is off and fails nothing.
"""

from __future__ import annotations

import argparse
from typing import Any

from shardmodel.capacity import PARTITION_WCU
from shardmodel.cli.arguments import endpoint, load_model, number, whole
from shardmodel.cli.registry import (
    CommandError,
    Subparsers,
    UsageError,
    add_command,
    command,
    one_line,
)
from shardmodel.core.terminal import progress, table
from shardmodel.engine import sharding_of
from shardmodel.errors import ShardModelError


@command
def _hot_command(commands: Subparsers) -> None:
    hot = add_command(
        commands,
        "hot",
        "a table's throttles and capacity (CloudWatch) and its hottest keys (its stream)",
        _hot,
    )
    hot.add_argument("model", help="the model class as module:Class, e.g. app.models:Orders")
    hot.add_argument(
        "--minutes",
        type=whole(1, 24 * 60, "a stream keeps 24 hours of records"),
        default=15,
        help="the window",
    )
    hot.add_argument(
        "--top", type=whole(1, 1000, "a screenful of keys"), default=10, help="hot keys to list"
    )
    hot.add_argument(
        "--partition-wcu",
        type=number(0, PARTITION_WCU, "a partition's 1,000 WCU", above_low=True),
        help="write units a second one partition accepts (default: 1,000 on-demand; a "
        "provisioned table's WCU over its initial partition count)",
    )
    rule = hot.add_mutually_exclusive_group()
    rule.add_argument(
        "--threshold",
        type=number(0, 1, "a partition's whole limit", above_low=True),
        help="a physical key is hot at this share of the partition limit, the window's "
        "average; also the headroom --grow sizes to (default: 0.8)",
    )
    rule.add_argument(
        "--writes-per-second",
        type=number(0, PARTITION_WCU, "a partition's 1,000 writes a second", above_low=True),
        help="instead of a share: a physical key is hot at this many writes a second "
        "(the time-series guide's 100)",
    )
    hot.add_argument(
        "--grow", action="store_true", help="grow hot DynamicShards keys to what they need"
    )
    hot.add_argument(
        "--max-calls",
        type=whole(1, 100_000, "requests a stream read may send"),
        default=100,
        help="most stream requests to send",
    )
    hot.add_argument(
        "--host", type=endpoint, help="the endpoint of every service (default: AWS, Meta.host)"
    )


def _clients(model: Any, host: str | None) -> tuple[Any, Any, Any]:
    """CloudWatch, DynamoDB Streams and DynamoDB clients in the model's region."""
    import boto3

    region = getattr(model.Meta, "region", None) or boto3.session.Session().region_name
    host = host or getattr(model.Meta, "host", None)
    # the regional streams endpoint: newer botocore routes by the ARN's account otherwise
    streams_url = host or f"https://streams.dynamodb.{region}.amazonaws.com"
    keys = {  # the model's own credentials, when its Meta sets them
        option: getattr(model.Meta, option)
        for option in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token")
        if getattr(model.Meta, option, None)
    }
    cloudwatch = boto3.client("cloudwatch", region_name=region, endpoint_url=host, **keys)
    streams = boto3.client("dynamodbstreams", region_name=region, endpoint_url=streams_url, **keys)
    dynamodb = boto3.client("dynamodb", region_name=region, endpoint_url=host, **keys)
    return cloudwatch, streams, dynamodb


def _partition_share(description: dict[str, Any], given: float | None) -> tuple[float, str]:
    """One partition's write limit: given, a provisioned table's share, or DynamoDB's."""
    from shardmodel.capacity import PARTITION_WCU, initial_partitions, per_partition
    from shardmodel.ops.report import provisioned_units

    if given is not None:
        return given, "--partition-wcu"
    units = provisioned_units(description, None)
    if units is None:
        return float(PARTITION_WCU), "on-demand"
    count = initial_partitions(units["read"], units["write"])
    share = min(float(PARTITION_WCU), per_partition(units["read"], units["write"], count).wcu)
    return share, f"{units['write']:,g} WCU over {count} initial partition(s)"


def _hot(args: argparse.Namespace) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    from shardmodel.ops import throttle_report
    from shardmodel.ops.hotkeys import series_keys

    model = load_model(args.model, args.host)
    try:
        sharding = sharding_of(model)
    except ShardModelError as error:
        raise UsageError(f"{args.model} is not a ShardedModel: {error}") from error
    series = series_keys(model) is not None
    if sharding.spec.table_key() is None and not series:
        raise UsageError(f"{args.model} is not a ShardedModel with a sharded partition key")
    if args.grow and sharding.directory is None:
        raise UsageError(f"--grow: {args.model} has no DynamicShards key to grow")
    cloudwatch, streams, dynamodb = _clients(model, args.host)
    unavailable: list[str] = []
    try:
        with progress("reading CloudWatch"):
            report = throttle_report(model, minutes=args.minutes, cloudwatch=cloudwatch)
    except (ClientError, BotoCoreError) as error:  # an emulator without it, no permission
        unavailable.append(f"CloudWatch unavailable: {one_line(error)}")
        print("throttles: CloudWatch unavailable (see the error below)")
    else:
        print(report.render())
    print()
    _insights(args, model, dynamodb, cloudwatch)
    print()
    description = model._get_connection().describe_table()
    stream_arn = description.get("LatestStreamArn")
    if not stream_arn:
        unavailable.append(
            f"{model.Meta.table_name} has no stream; enable one (NEW_IMAGE) to count writes per key"
        )
    else:
        _hot_keys(args, model, series, description, stream_arn, streams)
    if unavailable:
        raise CommandError("; ".join(unavailable))
    return 0


def _insights(args: argparse.Namespace, model: Any, dynamodb: Any, cloudwatch: Any) -> None:
    """Contributor Insights' rankings, or one line saying why there are none."""
    from botocore.exceptions import BotoCoreError, ClientError

    from shardmodel.ops import contributor_insights

    try:
        with progress("reading Contributor Insights"):
            found = contributor_insights(
                model,
                minutes=args.minutes,
                top=min(args.top, 100),  # CloudWatch reports at most 100 contributors
                dynamodb=dynamodb,
                cloudwatch=cloudwatch,
            )
    except (ClientError, BotoCoreError, NotImplementedError) as error:  # no permission, emulator
        print(f"contributor insights: unavailable ({one_line(error)}); the stream below")
    else:
        print(found.render(args.top))


def _hot_keys(
    args: argparse.Namespace,
    model: Any,
    series: bool,
    description: dict[str, Any],
    stream_arn: str,
    streams: Any,
) -> None:
    """The stream's hot keys (a series' entities), the busiest partitions, and growth."""
    from shardmodel.ops import HotKeyTracker, read_stream

    share, basis = _partition_share(description, args.partition_wcu)
    tracker = HotKeyTracker(
        model,
        window=args.minutes * 60,
        partition_wcu=share,
        grow=args.grow,
        **({} if args.threshold is None else {"threshold": args.threshold}),
    )
    with progress("reading the stream"):
        counted = read_stream(tracker, stream_arn, streams, max_calls=args.max_calls)
    top = tracker.top(args.top)
    print(
        f"hot {'entities' if series else 'keys'}: {counted:,} writes read from the stream, "
        f"last {args.minutes} min, {share:,g} WCU/s a partition ({basis})"
    )
    if top:
        rows = [
            [
                k.logical_key,
                k.writes,
                round(k.per_second, 2),
                round(k.peak_per_second, 2),
                k.shards,
                f"{k.load:.0%}",
                f"{k.peak_load:.0%}",
            ]
            for k in top
        ]
        head = ("key", "writes", "WCU/s", "peak WCU/s", "shards", "load/shard", "peak load")
        print(table(head, rows))
        print(
            "(WCU/s: the window's average; peak: its busiest second; peak load: the busiest "
            "second of the busiest partition)"
        )
    partitions = tracker.partitions(args.top)
    if series and partitions:
        rows = [[p.key, round(p.write_units), p.peak_per_second, f"{p.peak_load:.0%}"]
                for p in partitions]  # fmt: skip
        print(table(("bucket", "WCU", "peak WCU/s", "peak load"), rows))
    _hot_shards(tracker, args.writes_per_second)
    if args.grow:
        for key, count in tracker.grow_hot().items():
            print(f"grew {key!r} to {count} shards")


def _hot_shards(tracker: Any, writes_per_second: float | None) -> None:
    """Every physical key at the threshold, with the logical key it folds to."""
    if writes_per_second is None:
        rule = f"{tracker.threshold:.0%} of {tracker.partition_wcu:,g} WCU/s"
    else:
        rule = f"{writes_per_second:,g} writes/s"
    shards = [s for key in tracker.hot(writes_per_second=writes_per_second) for s in key.hot_shards]
    if not shards:
        print(f"no physical key at {rule} or more (the window's average)")
        return
    print(f"hot physical keys: {rule} or more (the window's average)")
    rows = [
        [
            s.key,
            s.logical_key,
            round(s.writes_per_second, 2),
            round(s.per_second, 2),
            f"{s.load:.0%}",
        ]
        for s in sorted(shards, key=lambda s: (-s.load, -s.writes, s.key))
    ]
    print(table(("physical key", "logical key", "writes/s", "WCU/s", "load"), rows))
