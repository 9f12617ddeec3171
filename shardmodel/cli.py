"""The ``shardmodel`` command line.

Every subcommand is one small function that adds its parser with :func:`add_command`,
registered with :func:`command`; its ``run`` function returns the exit code. Errors reach
the operator as one line on stderr and a non-zero exit code (``--debug`` shows the
traceback); argument errors exit with 2, failures with 1.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from shardmodel import __version__
from shardmodel.core.terminal import progress, table
from shardmodel.engine import sharding_of

__all__ = ["COMMANDS", "CommandError", "add_command", "command", "load_model", "main"]

Subparsers = Any  # argparse's _SubParsersAction, private in typeshed
Register = Callable[[Subparsers], None]

#: Functions that add one subcommand each, in the order ``--help`` lists them.
COMMANDS: list[Register] = []


class CommandError(Exception):
    """A failure the operator can fix, said in one line (exit code 1)."""


class _Parser(argparse.ArgumentParser):
    """argparse that says a usage error in one line and exits with 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Help that shows every option's default (none for flags and options without one)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


def command(register: Register) -> Register:
    """Register a function that adds one subcommand (use as a decorator)."""
    COMMANDS.append(register)
    return register


def add_command(
    commands: Subparsers, name: str, help: str, run: Callable[[argparse.Namespace], int]
) -> argparse.ArgumentParser:
    """Add subcommand ``name`` running ``run(args)``, with ``--debug`` and defaults in help."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=help, description=help, formatter_class=_Help
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the full traceback of an error (default: one line)",
    )
    parser.set_defaults(run=run)
    return parser


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="shardmodel",
        description="Shard hot DynamoDB partition keys on PynamoDB models.",
        formatter_class=_Help,
    )
    parser.add_argument("--version", action="version", version=f"shardmodel {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for register in COMMANDS:
        register(commands)
    return parser


# -- argument types ----------------------------------------------------------------------


def positive_int(text: str) -> int:
    """An argparse type: an int of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"give a whole number of at least 1, not {text!r}")
    return value


def non_negative(text: str) -> float:
    """An argparse type: a number of at least 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"give a number of at least 0, not {text!r}")
    return value


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
        raise CommandError(f"give the model as module:Class (e.g. app.models:Orders), not {path!r}")
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
        raise CommandError(f"{path} is not a PynamoDB model class")
    bound: Any = model
    if host is not None:
        bound.Meta.host = host
        bound._connection = None
    return bound


def _dynamic_model(path: str, host: str | None) -> Any:
    model = load_model(path, host)
    if sharding_of(model).directory is None:
        raise CommandError(f"{path} has no DynamicShards partition key; its count is fixed")
    return model


# -- demo ----------------------------------------------------------------------------------


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


# -- shards --------------------------------------------------------------------------------


@command
def _shards_command(commands: Subparsers) -> None:
    shards = add_command(
        commands,
        "shards",
        "list a DynamicShards model's grown keys, or grow, shrink and compact one key",
        _shards,
    )
    shards.add_argument("model", help="the model class as module:Class, e.g. app.models:Orders")
    shards.add_argument(
        "--key", help="one logical key: show it (and --grow-to / --shrink-to / --compact)"
    )
    shards.add_argument(
        "--min", type=positive_int, default=2, help="list keys with at least N shards"
    )
    change = shards.add_mutually_exclusive_group()
    change.add_argument(
        "--grow-to", type=positive_int, metavar="N", help="raise the key's live count to N"
    )
    change.add_argument(
        "--shrink-to", type=positive_int, metavar="N", help="lower the key's live count to N"
    )
    shards.add_argument("--compact", action="store_true", help="move retired shards' items")
    shards.add_argument(
        "--grace", type=non_negative, default=5.0, help="seconds between copying and deleting"
    )
    shards.add_argument(
        "--host", type=endpoint, help="the DynamoDB endpoint (default: the model's Meta.host)"
    )


def _describe(metadata: Any) -> list[object]:
    history = ", ".join(str(e) for e in metadata.history)
    return [metadata.logical_key, metadata.number_of_shards, metadata.readable, history]


_SHARD_HEADERS = ("key", "live", "readable", "history (epoch:count)")


def _shards(args: argparse.Namespace) -> int:
    if args.key is None and (
        args.shrink_to is not None or args.grow_to is not None or args.compact
    ):
        raise CommandError("--grow-to, --shrink-to and --compact need --key")
    model = _dynamic_model(args.model, args.host)
    if args.key is None:
        with progress(f"scanning {model.__name__}'s shard counts"):
            rows = [_describe(m) for m in model.grown_keys(min_shards=args.min)]
        if not rows:
            print(f"no key has {args.min} or more shards")
            return 0
        print(table(_SHARD_HEADERS, rows))
        return 0
    if args.grow_to is not None:
        model.grow_shards(args.key, to=args.grow_to)
    if args.shrink_to is not None:
        model.shrink_shards(args.key, args.shrink_to)
    if args.compact:
        with progress(f"compacting {args.key!r}"):
            moved = model.compact_shards(args.key, grace=args.grace)
        print(f"moved {moved:,} items into the live shards")
    metadata = model.shard_metadata(args.key)
    if metadata is None:
        print(f"{args.key}: no metadata item (1 shard)")
    else:
        print(table(_SHARD_HEADERS, [_describe(metadata)]))
    return 0


# -- plan --------------------------------------------------------------------------------


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


# -- hot ---------------------------------------------------------------------------------


@command
def _hot_command(commands: Subparsers) -> None:
    hot = add_command(
        commands,
        "hot",
        "a table's throttles and capacity (CloudWatch) and its hottest keys (its stream)",
        _hot,
    )
    hot.add_argument("model", help="the model class as module:Class, e.g. app.models:Orders")
    hot.add_argument("--minutes", type=positive_int, default=15, help="the window")
    hot.add_argument("--top", type=positive_int, default=10, help="hot keys to list")
    hot.add_argument(
        "--partition-wcu",
        type=non_negative,
        help="write units a second one partition accepts (default: 1,000 on-demand; a "
        "provisioned table's WCU over its initial partition count)",
    )
    hot.add_argument(
        "--grow", action="store_true", help="grow hot DynamicShards keys to what they need"
    )
    hot.add_argument(
        "--max-calls", type=positive_int, default=100, help="most stream requests to send"
    )
    hot.add_argument(
        "--host", type=endpoint, help="the endpoint of every service (default: AWS, Meta.host)"
    )


def _clients(model: Any, host: str | None) -> tuple[Any, Any]:
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
    return cloudwatch, streams


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
    from botocore.exceptions import ClientError

    from shardmodel.ops import HotKeyTracker, read_stream, throttle_report

    if args.partition_wcu is not None and args.partition_wcu <= 0:
        raise CommandError("--partition-wcu: give a number above 0")
    model = load_model(args.model, args.host)
    if sharding_of(model).spec.table_key() is None:
        raise CommandError(f"{args.model} is not a ShardedModel with a sharded partition key")
    if args.grow and sharding_of(model).directory is None:
        raise CommandError(f"--grow: {args.model} has no DynamicShards key to grow")
    cloudwatch, streams = _clients(model, args.host)
    try:
        with progress("reading CloudWatch"):
            report = throttle_report(model, minutes=args.minutes, cloudwatch=cloudwatch)
    except ClientError as error:  # an emulator without CloudWatch, or no permission
        print(f"CloudWatch report unavailable: {_one_line(error)}")
    else:
        print(report.render())
    print()
    description = model._get_connection().describe_table()
    stream_arn = description.get("LatestStreamArn")
    if not stream_arn:
        print(
            f"hot keys: {model.Meta.table_name} has no stream; enable one (NEW_IMAGE) to "
            "count writes per key"
        )
        return 0
    share, basis = _partition_share(description, args.partition_wcu)
    tracker = HotKeyTracker(model, window=args.minutes * 60, partition_wcu=share, grow=args.grow)
    with progress("reading the stream"):
        counted = read_stream(tracker, stream_arn, streams, max_calls=args.max_calls)
    top = tracker.top(args.top)
    print(
        f"hot keys: {counted:,} writes read from the stream, last {args.minutes} min, "
        f"{share:,g} WCU/s a partition ({basis})"
    )
    if top:
        rows = [
            [k.logical_key, k.writes, round(k.per_second, 2), k.shards, f"{k.load:.0%}"]
            for k in top
        ]
        print(table(("key", "writes", "WCU/s", "shards", "load/shard"), rows))
    if args.grow:
        for key, count in tracker.grow_hot().items():
            print(f"grew {key!r} to {count} shards")
    return 0


@command
def _boundaries_command(commands: Subparsers) -> None:
    from shardmodel.ordered_sample import add_command as add_boundaries

    add_boundaries(commands)


@command
def _reshard_command(commands: Subparsers) -> None:
    from shardmodel.migration.cli import add_reshard_parser

    add_reshard_parser(commands)


# -- running -----------------------------------------------------------------------------


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if isinstance(error, CommandError) else f"{type(error).__name__}: {text}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as done:  # --help, --version, a usage error: already printed
        return done.code if isinstance(done.code, int) else 1
    try:
        code: int = args.run(args)
    except KeyboardInterrupt:
        print(f"shardmodel {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if getattr(args, "debug", False):
            traceback.print_exc()
        print(f"shardmodel {args.command}: error: {_one_line(error)}", file=sys.stderr)
        return 1
    return code
