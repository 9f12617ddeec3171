"""``shardmodel boundaries FILE``: OrderedShards boundaries from a sample file."""

from __future__ import annotations

from shardmodel.cli.registry import Subparsers, command


@command
def _boundaries_command(commands: Subparsers) -> None:
    from shardmodel.ordered_sample import add_command as add_boundaries

    add_boundaries(commands)
