"""``shardmodel boundaries FILE``: OrderedShards boundaries from a sample file.

Reads the sample with :mod:`shardmodel.ordered_sample` (one value a line, or one column
of a CSV/TSV file, with progress on stderr) and prints the boundaries as a Python list to
paste into ``OrderedShards(...)``, how much the largest shard holds relative to the
mean, and the values that fill more than a shard on their own (give them ``overflow=``
sub-shards). With polars installed, a CSV/TSV column is read and sorted by polars
(``--engine polars``, the default then); ``--engine python`` keeps the standard library.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import sys

from shardmodel.cli.arguments import whole
from shardmodel.cli.registry import CommandError, Subparsers, UsageError, add_command, command
from shardmodel.keyspace.strategies import MAX_SHARDS
from shardmodel.ordered_sample import (
    BoundaryReport,
    SampleColumnError,
    boundary_report,
    polars_module,
    read_chunks,
    read_series,
)

__all__ = ["add_boundaries_parser", "format_report", "run_boundaries"]


def format_report(report: BoundaryReport) -> str:
    """The report as text: the boundaries to paste, the balance, the overflow values."""
    lines = ["boundaries = ["]
    lines += [f"    {boundary!r}," for boundary in report.boundaries]
    lines.append("]")
    mean = report.values / len(report.sizes) if report.sizes else 0
    lines.append(
        f"# {len(report.boundaries)} shards over {report.values:,} values "
        f"({mean:,.0f} a shard on average); the largest holds "
        f"{report.largest_ratio:.2f}x the mean"
    )
    if len(report.boundaries) < report.shards:
        lines.append(
            f"# {report.shards - len(report.boundaries)} boundaries repeated and were "
            "dropped: a value fills more than a shard"
        )
    if report.overflow:
        pairs = ", ".join(f"{value!r}: {count}" for value, count in report.overflow)
        lines.append("# values that fill more than a shard on their own: spread them with")
        lines.append(f"overflow = {{{pairs}}}")
    else:
        lines.append("# no value fills more than a shard: no overflow needed")
    return "\n".join(lines)


def run_boundaries(args: argparse.Namespace) -> int:
    """The ``boundaries`` command."""
    polars = polars_module()
    if args.engine == "polars" and polars is None:
        raise UsageError("--engine polars: polars is not installed (pip install polars)")
    columnar = args.column is not None or args.file.lower().endswith((".csv", ".tsv", ".tab"))
    use_polars = polars is not None and args.engine != "python" and columnar
    failures: tuple[type[BaseException], ...] = (OSError, UnicodeDecodeError, csv.Error)
    if polars is not None:
        failures += (polars.exceptions.PolarsError,)
    try:
        if use_polars:
            values = read_series(args.file, args.column, args.delimiter, args.header)
        else:
            chunks = read_chunks(
                args.file, args.column, args.delimiter, progress=sys.stderr, header=args.header
            )
            values = itertools.chain.from_iterable(chunks)
        report = boundary_report(values, args.shards, args.prefix)
    except failures as error:
        raise CommandError(f"cannot read {args.file}: {' '.join(str(error).split())}") from None
    except SampleColumnError as error:
        raise UsageError(f"--column: {error}") from error
    if not report.values:
        raise CommandError(f"{args.file} holds no values")
    print(format_report(report))
    return 0


@command
def add_boundaries_parser(commands: Subparsers) -> None:
    """Register ``boundaries`` on the command line's subparsers."""
    parser = add_command(
        commands,
        "boundaries",
        "compute OrderedShards boundaries from a sample file",
        run_boundaries,
    )
    parser.add_argument("file", help="a text file (one value a line) or a CSV/TSV file")
    parser.add_argument(
        "--shards",
        type=whole(1, MAX_SHARDS, "the most shards OrderedShards takes"),
        required=True,
        help="the number of shards",
    )
    parser.add_argument("--column", help="the CSV/TSV column: 0-based index or header name")
    parser.add_argument(
        "--prefix",
        type=whole(1, 1024, "DynamoDB's 1,024-byte sort key"),
        default=20,
        help="boundary length in characters",
    )
    parser.add_argument(
        "--delimiter",
        help="the column delimiter, e.g. TAB or ','; by the file's extension when left out",
    )
    parser.add_argument(
        "--engine",
        choices=("auto", "polars", "python"),
        default="auto",
        help="what reads and sorts a CSV/TSV column: polars when installed (auto), or not",
    )
    parser.add_argument(
        "--no-header",
        dest="header",
        action="store_false",
        help="the CSV/TSV file has no header row (by default its first row names the columns)",
    )
