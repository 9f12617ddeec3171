"""Run every benchmark: `python -m benchmarks` (write path, merged query and its floor,
rounds per read, ordered-shard boundaries, the request-path candidates)."""

from __future__ import annotations

from benchmarks import boundaries_bench, candidates, query_bench, rounds, write_path


def main() -> None:
    """Each benchmark under its own heading; an error stops the run with a non-zero exit."""
    print("== benchmarks/write_path.py")
    write_path.main()
    print("\n== benchmarks/query_bench.py")
    query_bench.main()
    print("\n== benchmarks/rounds.py")
    rounds.main()
    print("\n== benchmarks/boundaries_bench.py")
    boundaries_bench.main()
    print("\n== benchmarks/candidates.py")
    candidates.main()


if __name__ == "__main__":
    main()
