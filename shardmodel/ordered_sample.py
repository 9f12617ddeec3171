"""OrderedShards boundaries from a sample file: reading the sample and cutting it.

Reads one value per line (a text file) or one column of a CSV/TSV file
(:func:`read_values`, :func:`read_chunks`), then normalizes, sorts and cuts the values
(:func:`boundary_report`) into the boundaries to paste into ``OrderedShards(...)``, each
shard's share, and the values that fill more than a shard on their own (give them
``overflow=`` sub-shards). The standard library suffices: a million titles take about
two seconds. With polars installed (an optional extra, ``shardmodel[polars]``), a
CSV/TSV column is read, normalized and sorted by polars (:func:`read_series`,
:func:`boundary_report` of a polars Series): the same report in less time and memory
on samples of millions. The command ``shardmodel boundaries FILE`` prints the report.
"""

from __future__ import annotations

import bisect
import csv
import itertools
import math
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from attrs import frozen

from shardmodel.errors import ShardModelError
from shardmodel.keyspace.normalization import default_normalize, normalized_all
from shardmodel.keyspace.ordered import sample_cuts

__all__ = [
    "BoundaryReport",
    "SampleColumnError",
    "boundary_report",
    "polars_module",
    "read_chunks",
    "read_series",
    "read_values",
]

#: Without a terminal, a progress line every this many rows.
PROGRESS_ROWS = 1_000_000
#: On a terminal, the progress line is redrawn every this many rows.
TERMINAL_ROWS = 100_000


class SampleColumnError(ShardModelError, ValueError):
    """A CSV/TSV sample has no column of the name asked for; the message lists its header."""


@frozen
class BoundaryReport:
    """What a sample says about ordered shards.

    Attributes:
        boundaries: the boundaries, first ``''``.
        sizes: sample values per shard.
        overflow: values that fill more than a shard, with the sub-shards they need.
        values: the sample size.
        shards: the shard count asked for.
    """

    boundaries: tuple[str, ...]
    sizes: tuple[int, ...]
    overflow: tuple[tuple[str, int], ...]
    values: int
    shards: int

    @property
    def largest_ratio(self) -> float:
        """The largest shard's values over the mean per shard (1.0: perfectly even)."""
        if not self.values:
            return 0.0
        return max(self.sizes) / (self.values / len(self.sizes))


def polars_module() -> Any | None:
    """The polars module when it is installed, else None."""
    try:
        import polars
    except ImportError:
        return None
    return polars


def _is_columnar(values: object) -> bool:
    """A polars Series or a pyarrow array (both hold a whole column, typed)."""
    kind = type(values).__module__.split(".", 1)[0]
    return kind in ("polars", "pyarrow")


def _sorted_series(values: Any) -> Any:
    """A polars Series or pyarrow array, normalized as the default does and sorted.

    ASCII values are lower-cased by polars; the rest (rare in most samples) go through
    :func:`~shardmodel.keyspace.normalization.normalized` one by one, so the result equals
    the standard library path's.
    """
    import polars as pl

    series = values if isinstance(values, pl.Series) else pl.Series(values)
    series = series.cast(pl.String).drop_nulls()
    series = series.filter(series.str.len_bytes() > 0)
    other = series.str.contains(r"[^\x00-\x7F]")
    lowered = series.filter(~other).str.to_lowercase()
    if other.any():
        rest = normalized_all(default_normalize, series.filter(other).to_list())
        lowered = pl.concat([lowered, pl.Series(rest, dtype=pl.String)])
    return lowered.sort()


def boundary_report(values: Iterable[str], shards: int, prefix: int = 20) -> BoundaryReport:
    """Normalize, sort and cut a sample as :meth:`OrderedShards.from_sample` does.

    ``values`` may be a polars Series or a pyarrow array (with polars installed): then
    polars normalizes and sorts it, and only the cut points become Python strings.
    """
    ordered: Any
    if _is_columnar(values):
        ordered = _sorted_series(values)
    else:
        ordered = normalized_all(default_normalize, values)
        ordered.sort()
    cuts = sample_cuts(ordered, shards, prefix, default_normalize)
    step = max(1, math.ceil(len(ordered) / shards))
    overflow = []
    # a run of more than ``step`` equal values covers a multiple of step: look only there
    for value in dict.fromkeys(ordered[position] for position in range(0, len(ordered), step)):
        count = bisect.bisect_right(ordered, value) - bisect.bisect_left(ordered, value)
        if count > step:
            overflow.append((value, max(2, math.ceil(count / step))))
    return BoundaryReport(cuts.boundaries, cuts.sizes, tuple(overflow), len(ordered), shards)


def read_series(
    path: str, column: str | None = None, delimiter: str | None = None, header: bool = True
) -> Any:
    """A CSV/TSV file's column as a polars Series of strings (polars must be installed).

    The same column :func:`read_values` reads (a 0-based index or a header name; the
    first row is the header unless ``header=False``); empty values are left to
    :func:`boundary_report`, which skips them.

    Raises:
        SampleColumnError: ``column`` names no column of the header.
        ValueError: the file is not a CSV/TSV file (no delimiter, no column).
    """
    import polars as pl

    separator = _delimiter(path, delimiter)
    if separator is None and column is None:
        raise ValueError(f"{path}: read_series reads a CSV/TSV column; use read_values")
    separator = separator or "\t"
    with open(path, encoding="utf-8", newline="") as handle:
        first = next(csv.reader(handle, delimiter=separator, strict=False), [])
    position, _ = _column(iter([first]), column, path, header)
    frame = pl.read_csv(
        path,
        separator=separator,
        has_header=header,
        columns=[position],
        infer_schema=False,
        truncate_ragged_lines=True,
    )
    return frame.to_series(0)


class _Progress:
    """Rows read so far, on stderr: redrawn on a terminal, a line per million otherwise."""

    def __init__(self, stream: TextIO, path: str) -> None:
        self.stream = stream
        self.path = path
        self.terminal = stream.isatty()
        self.every = TERMINAL_ROWS if self.terminal else PROGRESS_ROWS
        self.started = time.monotonic()

    def show(self, rows: int, final: bool = False) -> None:
        seconds = time.monotonic() - self.started
        text = f"{self.path}: {rows:,} rows read ({seconds:.1f} s)"
        if self.terminal:
            self.stream.write("\r" + text + ("\n" if final else ""))
        elif not final:
            self.stream.write(text + "\n")
        self.stream.flush()


def _delimiter(path: str, delimiter: str | None) -> str | None:
    if delimiter is not None:
        return {"TAB": "\t", "\\t": "\t", "COMMA": ","}.get(delimiter.upper(), delimiter)
    suffix = Path(path).suffix.lower()
    return {".tsv": "\t", ".tab": "\t", ".csv": ","}.get(suffix)


def read_values(
    path: str,
    column: str | None = None,
    delimiter: str | None = None,
    progress: TextIO | None = None,
    header: bool = True,
) -> Iterator[str]:
    """The values of a sample file: lines of a text file, or a column of a CSV/TSV file.

    ``column`` is a 0-based index or a header name; the delimiter follows the extension
    (``.csv``: comma, ``.tsv``: tab) unless given. A CSV/TSV file's first row is its
    header and never a value (``header=False`` for a file without one), so ``column="1"``
    and the second column's name give the same values. Empty values are skipped.

    Raises:
        SampleColumnError: ``column`` names no column of the header, or a name is given
            with ``header=False``.
    """
    for chunk in read_chunks(path, column, delimiter, progress, header):
        yield from chunk


#: Rows read and filtered at a time: list comprehensions over a chunk, not a generator.
CHUNK_ROWS = 50_000


def read_chunks(
    path: str,
    column: str | None = None,
    delimiter: str | None = None,
    progress: TextIO | None = None,
    header: bool = True,
) -> Iterator[list[str]]:
    """:func:`read_values` in lists of up to :data:`CHUNK_ROWS` values (faster)."""
    separator = _delimiter(path, delimiter)
    meter = _Progress(progress, path) if progress is not None else None
    count = 0
    with open(path, encoding="utf-8", newline="") as handle:
        if separator is None and column is None:
            lines = (line.rstrip("\r\n") for line in handle)
            while chunk := list(itertools.islice(lines, CHUNK_ROWS)):
                count = _counted(meter, count, len(chunk))
                yield [value for value in chunk if value]
        else:
            reader = csv.reader(handle, delimiter=separator or "\t", strict=False)
            position, rows = _column(reader, column, path, header)
            while rows_chunk := list(itertools.islice(rows, CHUNK_ROWS)):
                count = _counted(meter, count, len(rows_chunk))
                yield [row[position] for row in rows_chunk if len(row) > position and row[position]]
    if meter is not None:
        meter.show(count, final=True)


def _counted(meter: _Progress | None, count: int, more: int) -> int:
    total = count + more
    if meter is not None and total // meter.every > count // meter.every:
        meter.show(total)
    return total


def _column(
    reader: Iterator[list[str]], column: str | None, path: str, header: bool
) -> tuple[int, Any]:
    """The column's position, and the rows after the header (when the file has one)."""
    if column is not None and not column.isdigit() and not header:
        raise SampleColumnError(
            f"column {column!r} is a name, but the file has no header; give a 0-based index"
        )
    names = next(reader, []) if header else []
    if column is None:
        return 0, reader
    if column.isdigit():
        return int(column), reader
    if column not in names:
        raise SampleColumnError(
            f"{path} has no column {column!r}; its header is "
            f"{names[:10]}; give a header name or a 0-based index"
        )
    return names.index(column), reader
