"""``shardmodel boundaries`` on a generated 1,000,000-row TSV: seconds and peak memory.

Targets (issue 12): at most 15 s and 1 GiB peak on the 2-core machine. The command runs
in a child process, so its peak resident memory is its own (``os.wait4``'s rusage).
The baseline, measured in the same run, is a child that only reads the column and sorts
it (no normalization, no cuts): the ratio shows what the command adds to that floor.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shardmodel.testing.titles import generate_titles

ROWS = 1_000_000
TARGET_SECONDS = 15.0
TARGET_BYTES = 1 << 30

_BASELINE = """
import csv, sys
with open(sys.argv[1], encoding="utf-8", newline="") as handle:
    rows = csv.reader(handle, delimiter="\\t")
    next(rows)
    values = [row[1] for row in rows]
values.sort()
print(len(values))
"""


def _write_sample(path: Path, rows: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        handle.write("id\ttitle\n")
        handle.writelines(f"{n}\t{title}\n" for n, title in enumerate(generate_titles(rows)))


def _run(argv: list[str]) -> tuple[float, int, str]:
    """Wall seconds, peak resident bytes and stdout of one child process."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert child.stdout is not None
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{argv[:4]} failed with exit code {child.returncode}")
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, else KiB
    return seconds, usage.ru_maxrss * scale, output


def main(rows: int = ROWS) -> None:
    """Generate the sample, time the command and the baseline, print both."""
    with tempfile.TemporaryDirectory() as folder:
        sample = Path(folder) / "titles.tsv"
        _write_sample(sample, rows)
        print(f"sample: {rows:,} rows, {sample.stat().st_size / 2**20:.1f} MiB")
        base_s, base_peak, _ = _run([sys.executable, "-c", _BASELINE, str(sample)])
        command = [sys.executable, "-m", "shardmodel", "boundaries", str(sample)]
        seconds, peak, output = _run([*command, "--shards", "21", "--column", "title"])
    summary = [line for line in output.splitlines() if line.startswith("#")]
    print("\n".join(summary))
    print(
        f"baseline (read + sort): {base_s:6.2f} s, peak {base_peak / 2**20:7.1f} MiB\n"
        f"shardmodel boundaries:  {seconds:6.2f} s, peak {peak / 2**20:7.1f} MiB "
        f"({seconds / base_s:.2f}x the baseline's time)\n"
        f"targets: <= {TARGET_SECONDS:.0f} s ({'met' if seconds <= TARGET_SECONDS else 'MISSED'}),"
        f" <= 1 GiB ({'met' if peak <= TARGET_BYTES else 'MISSED'}); "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else ROWS)
