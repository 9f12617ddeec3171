"""Run every benchmark: `python -m benchmarks` (write path, merged query and floor, rounds)."""

from __future__ import annotations

from benchmarks import query_bench, rounds, write_path


def main() -> None:
    """Each benchmark under its own heading; an error stops the run with a non-zero exit."""
    print("== benchmarks/write_path.py")
    write_path.main()
    print("\n== benchmarks/query_bench.py")
    query_bench.main()
    print("\n== benchmarks/rounds.py")
    rounds.main()


if __name__ == "__main__":
    main()
