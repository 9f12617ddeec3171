"""The ``shardmodel`` command line.

Every subcommand is one small function that adds its parser with :func:`add_command`,
registered with :func:`command`; its ``run`` function returns the exit code. Errors reach
the operator as one line on stderr and a non-zero exit code (``--debug`` shows the
traceback); argument errors exit with 2, failures with 1.

The package holds the registry and the runner (``registry``), the argument types and the
model loading the commands share (``arguments``), and one module per command: ``demo``,
``shards``, ``plan``, ``prewarm``, ``hot``, ``boundaries`` and ``reshard``.
"""

from shardmodel.cli.arguments import load_model
from shardmodel.cli.registry import COMMANDS, CommandError, add_command, command, main

# Each command module registers its command when imported, and ``--help`` lists the
# commands in the order they were registered: keep this order.
# isort: off
from shardmodel.cli import demo, shards, plan, prewarm, hot, boundaries, reshard  # noqa: F401
# isort: on

__all__ = ["COMMANDS", "CommandError", "add_command", "command", "load_model", "main"]
