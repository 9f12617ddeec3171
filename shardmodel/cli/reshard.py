"""``shardmodel reshard module:Model --to N``: the resharding runbook on the command line."""

from __future__ import annotations

from shardmodel.cli.registry import Subparsers, command


@command
def _reshard_command(commands: Subparsers) -> None:
    from shardmodel.migration.cli import add_reshard_parser

    add_reshard_parser(commands)
