"""The demo: one burst of writes to a hot key, unsharded, sharded and dynamic, throttled.

The burst runs on the capacity simulator over in-process moto
(:mod:`shardmodel.hot_key_burst`); this module prints it and times it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from shardmodel.hot_key_burst import HOT_KEY, BurstRun, print_burst, run_hot_key_burst

__all__ = ["HOT_KEY", "run_demo"]


def run_demo(
    writes: int = 5000, shards: int = 10, seed: int = 7, out: Callable[[str], None] = print
) -> list[BurstRun]:
    """Run the burst three ways and print throttles, lost writes and the merged read-back.

    Returns the runs (used by the tests).
    """
    started = time.perf_counter()
    runs = run_hot_key_burst(writes=writes, shards=shards, seed=seed)
    print_burst(runs, out)
    out(f"\nDone in {time.perf_counter() - started:.1f} s (the burst runs on a simulated clock).")
    return runs
