"""Run every benchmark: `python -m benchmarks` (write path, merged query and its floor,
the async API against the sync one, what tracing costs, rounds per read, ordered-shard
boundaries, the request-path candidates, a 20,000-item shard count change, straight and
aborted, and a 20,000-reading time series' count change).

Each runs in a fresh interpreter. In one process the write path's in-process moto
left its ``before-send`` stub in botocore's built-in handlers (so on every client the
query bench made) and its tables in memory; one such run read the merged query's CPU
at 12.1 ms where the query bench alone read 7.2 ms, as an earlier session's 14.9 ms
outlier against 5.8 ms alone.
"""

from __future__ import annotations

import subprocess
import sys

BENCHMARKS = (
    ("write_path",),
    ("query_bench",),
    ("aio_bench",),
    ("tracing_bench",),
    ("rounds",),
    ("boundaries_bench",),
    ("candidates",),
    # then the same change aborted in read_new and taken back; 100,000 (not aborted) by
    # hand: benchmarks/reshard_last_run.txt
    ("reshard_bench", "20000", "--abort-in", "read_new"),
    # 100,000 by hand: benchmarks/series_reshard_last_run.txt
    ("series_reshard_bench", "20000"),
    # DynamicShards' defaults against a spike (300 simulated seconds, about 15 minutes
    # of CPU) by hand: benchmarks/dynamic_spike_last_run.txt
)


def main() -> None:
    """Each benchmark under its own heading; an error stops the run with a non-zero exit."""
    for number, (name, *arguments) in enumerate(BENCHMARKS):
        print(
            f"{chr(10) if number else ''}== benchmarks/{name}.py {' '.join(arguments)}", flush=True
        )
        done = subprocess.run([sys.executable, "-m", f"benchmarks.{name}", *arguments], check=False)
        if done.returncode != 0:
            sys.exit(done.returncode)


if __name__ == "__main__":
    main()
