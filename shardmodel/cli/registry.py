"""The command registry and runner: :func:`command`, :func:`add_command` and :func:`main`.

A command module registers a function with :func:`command`; that function adds the
command's parser with :func:`add_command`, whose ``run`` function returns the exit code.
:func:`main` builds the parser from every registered command and runs one, with one
convention for every command: a usage error (argparse's, or a :class:`UsageError` a
command raises after parsing) is one line on stderr and exit code 2, a failure
(:class:`CommandError` or any other error) one line and exit code 1, an interrupt exit
code 130. ``--debug`` prints the traceback too and lets boto3's and botocore's logs
through; without it they are silent (botocore logs "Found credentials in ..." at INFO).
A missing-credentials error says how to give a local endpoint credentials.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn

from shardmodel import __version__

__all__ = [
    "COMMANDS",
    "CommandError",
    "Register",
    "Subparsers",
    "UsageError",
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


class UsageError(CommandError):
    """A bad combination of arguments the parser cannot check, in one line (exit code 2)."""


#: Loggers of the AWS SDK: silent below WARNING unless ``--debug``.
SDK_LOGGERS = ("botocore", "boto3", "urllib3", "s3transfer")


class _Parser(argparse.ArgumentParser):
    """argparse that says a usage error in one line and exits with 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Help that shows every option's default (none for flags and options without one)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        # a flag's default is its absence: "--no-header ... (default: True)" says the
        # opposite of what the flag does
        flag = action.nargs == 0 and isinstance(action.const, bool)  # store_true/false
        if action.default is None or action.default is False or flag:
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
    text = text if isinstance(error, CommandError) else f"{type(error).__name__}: {text}"
    if _lacks_credentials(error):
        text += (
            "; a local endpoint (moto, dynalite, DynamoDB Local) accepts any credentials: "
            "export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local"
        )
    return text


def _lacks_credentials(error: BaseException) -> bool:
    """True when botocore found no credentials, anywhere in the error's causes."""
    from botocore.exceptions import NoCredentialsError

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, NoCredentialsError):
            return True
        seen.add(id(current))
        cause = getattr(current, "cause", None)  # PynamoDB's wrapped botocore error
        current = cause if isinstance(cause, BaseException) else current.__cause__
    return False


@contextlib.contextmanager
def _quiet_sdk(debug: bool) -> Iterator[None]:
    """Keep the SDK's INFO lines off the operator's terminal unless ``--debug``.

    The loggers' levels are put back afterwards, for a caller that runs :func:`main`
    in its own process (tests, a wrapper script).
    """
    loggers = [logging.getLogger(name) for name in SDK_LOGGERS]
    before = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.INFO if debug else logging.WARNING)
    try:
        yield
    finally:
        for logger, level in zip(loggers, before, strict=True):
            logger.setLevel(level)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as done:  # --help, --version, a usage error: already printed
        return done.code if isinstance(done.code, int) else 1
    debug = bool(getattr(args, "debug", False))
    try:
        with _quiet_sdk(debug):
            code: int = args.run(args)
    except KeyboardInterrupt:
        print(f"shardmodel {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if debug:
            traceback.print_exc()
        usage = isinstance(error, UsageError)
        hint = f" (see shardmodel {args.command} --help)" if usage else ""
        print(f"shardmodel {args.command}: error: {one_line(error)}{hint}", file=sys.stderr)
        return 2 if usage else 1
    return code
