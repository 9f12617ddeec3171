"""The command registry and runner: :func:`command`, :func:`add_command` and :func:`main`.

A command module registers a function with :func:`command`; that function adds the
command's parser with :func:`add_command`, whose ``run`` function returns the exit code.
:func:`main` builds the parser from every registered command and runs one: a usage error
is one line on stderr and exit code 2, a failure one line and exit code 1 (``--debug``
prints the traceback too), an interrupt exit code 130.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from shardmodel import __version__

__all__ = [
    "COMMANDS",
    "CommandError",
    "Register",
    "Subparsers",
    "add_command",
    "command",
    "main",
    "one_line",
]

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


# -- running -----------------------------------------------------------------------------


def one_line(error: BaseException) -> str:
    """An error as one line: a :class:`CommandError`'s text, any other's type and text."""
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
        print(f"shardmodel {args.command}: error: {one_line(error)}", file=sys.stderr)
        return 1
    return code
