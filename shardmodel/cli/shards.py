"""``shardmodel shards module:Model``: a DynamicShards model's grown keys; grow, shrink, compact.

Without ``--key`` the command lists the keys with at least ``--min`` shards; with it, it
changes that key's live count (``--grow-to``, ``--shrink-to``), moves retired shards'
items (``--compact``) and shows the key's metadata.
"""

from __future__ import annotations

import argparse
from typing import Any

from shardmodel.cli.arguments import endpoint, load_model, number, whole
from shardmodel.cli.registry import Subparsers, UsageError, add_command, command
from shardmodel.core.terminal import progress, table
from shardmodel.engine import sharding_of
from shardmodel.engine.growth import directory_of
from shardmodel.keyspace.strategies import MAX_SHARDS

_COUNT = whole(1, MAX_SHARDS, "the most shards a strategy takes")


def _dynamic_model(path: str, host: str | None) -> Any:
    model = load_model(path, host)
    if sharding_of(model).directory is None:
        raise UsageError(
            f"{path} has no DynamicShards partition key; its count is fixed: change it "
            f"online with shardmodel reshard {path} --to N"
        )
    return model


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
    shards.add_argument("--min", type=_COUNT, default=2, help="list keys with at least N shards")
    change = shards.add_mutually_exclusive_group()
    change.add_argument(
        "--grow-to", type=_COUNT, metavar="N", help="raise the key's live count to N"
    )
    change.add_argument(
        "--shrink-to", type=_COUNT, metavar="N", help="lower the key's live count to N"
    )
    shards.add_argument("--compact", action="store_true", help="move retired shards' items")
    shards.add_argument(
        "--grace",
        type=number(0, 3600, "an hour, far above any write in flight"),
        default=5.0,
        help="seconds between copying and deleting",
    )
    shards.add_argument(
        "--host", type=endpoint, help="the DynamoDB endpoint (default: the model's Meta.host)"
    )


def _describe(metadata: Any, now: float) -> list[object]:
    """A key's row; an announced growth not yet in effect shows as ``1 (8 in 3 s)``."""
    history = ", ".join(str(e) for e in metadata.history)
    live: object = metadata.live_at(now)
    if metadata.pending_at(now):
        live = f"{live} ({metadata.latest} in {metadata.announced.epoch - now:.0f} s)"
    return [metadata.logical_key, live, metadata.readable, history]


_SHARD_HEADERS = ("key", "live", "readable", "history (epoch:count)")


def _shards(args: argparse.Namespace) -> int:
    if args.key is None and (
        args.shrink_to is not None or args.grow_to is not None or args.compact
    ):
        raise UsageError("--grow-to, --shrink-to and --compact need --key")
    model = _dynamic_model(args.model, args.host)
    clock = directory_of(model).settings.clock
    if args.key is None:
        with progress(f"scanning {model.__name__}'s shard counts"):
            rows = [_describe(m, clock.now()) for m in model.grown_keys(min_shards=args.min)]
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
        print(table(_SHARD_HEADERS, [_describe(metadata, clock.now())]))
    return 0
