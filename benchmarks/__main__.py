"""Run every benchmark: `python -m benchmarks`."""

from __future__ import annotations

from benchmarks.write_path import main

if __name__ == "__main__":
    main()
