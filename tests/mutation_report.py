"""The report ``make mutants`` prints after mutmut has run: kill rates and surviving mutants.

Reads mutmut's verdicts through its command line (``mutmut results --all true``, one
``<mutant name>: <status>`` line each), counts them per module, and lists every mutant
that was not killed with the reason kept for it in ``tests/mutants_surviving.txt`` (why
it is equivalent, or why it is left). A survivor with no recorded reason is shown with
its diff (``mutmut show``): kill it with a test, or record why not.

Run from the repository root after ``mutmut run``::

    python -m tests.mutation_report --fail-under 90

Exit status 1 when the overall kill rate is under ``--fail-under``, a survivor has no
recorded reason, or the run stopped before checking every mutant; 0 otherwise.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["Tally", "kill_rate", "module_of", "parse_reasons", "parse_results", "tally"]

#: Mutant name -> why it survives (equivalent, or not worth a test), one per line.
REASONS = Path(__file__).with_name("mutants_surviving.txt")

#: mutmut's statuses that count as caught: a test failed, or the mutant made them hang.
CAUGHT = ("killed", "timeout", "caught by type check")
#: The columns of the table, in mutmut's words ("not checked": the run stopped before it).
COLUMNS = ("killed", "survived", "timeout", "no tests", "not checked", "other")

# "shardmodel.query.xǁMergedQueryǁ__init____mutmut_3" or "shardmodel.keys.x_f__mutmut_1"
_NAME = re.compile(r"^(?P<module>[\w.]+?)\.x[_ǁ].*__mutmut_\d+$")


def module_of(mutant: str) -> str:
    """The dotted module a mutmut mutant name belongs to."""
    found = _NAME.match(mutant)
    if found is None:
        raise ValueError(f"{mutant!r} is not a mutmut mutant name")
    return found["module"]


def parse_results(text: str) -> dict[str, str]:
    """Mutant name -> status, from the output of ``mutmut results --all true``."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        name, colon, status = line.strip().rpartition(": ")
        if colon and _NAME.match(name):
            found[name] = status
    return found


def parse_reasons(text: str) -> dict[str, str]:
    """Mutant name -> reason, from the reasons file (``name: reason``; ``#`` comments)."""
    reasons: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, colon, reason = line.partition(": ")
        if not colon or not reason.strip() or not _NAME.match(name):
            raise ValueError(f"{REASONS.name} line {number}: expected '<mutant name>: <reason>'")
        reasons[name] = reason.strip()
    return reasons


class Tally:
    """Verdict counts of one module (or of all)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def add(self, status: str) -> None:
        self.counts[status if status in COLUMNS[:-1] else "other"] += 1

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def caught(self) -> int:
        return self.counts["killed"] + self.counts["timeout"]

    @property
    def checked(self) -> int:
        return self.total - self.counts["not checked"]


def kill_rate(tally: Tally) -> float:
    """Killed and timed-out mutants over those checked, in percent (100 for none)."""
    return 100.0 * tally.caught / tally.checked if tally.checked else 100.0


def tally(results: dict[str, str]) -> dict[str, Tally]:
    """Per-module tallies of mutmut's verdicts."""
    modules: dict[str, Tally] = {}
    for name, status in results.items():
        modules.setdefault(module_of(name), Tally()).add(status)
    return dict(sorted(modules.items()))


def _table(modules: dict[str, Tally]) -> Iterable[str]:
    overall = Tally()
    width = max([len("module"), *(len(m) for m in modules)])
    head = "".join(f"{c:>12}" for c in ("total", *COLUMNS))
    yield f"{'module':<{width}}{head}{'kill rate':>11}"
    for module, counts in modules.items():
        overall.counts.update(counts.counts)
        cells = "".join(f"{counts.counts[c]:>12}" for c in COLUMNS)
        yield f"{module:<{width}}{counts.total:>12}{cells}{kill_rate(counts):>10.1f}%"
    cells = "".join(f"{overall.counts[c]:>12}" for c in COLUMNS)
    yield f"{'overall':<{width}}{overall.total:>12}{cells}{kill_rate(overall):>10.1f}%"


def _mutmut(*args: str) -> str:
    command = Path(sys.executable).with_name("mutmut")  # the script beside this interpreter
    done = subprocess.run([command, *args], capture_output=True, text=True, check=True)
    return done.stdout


def _changed_lines(mutant: str) -> list[str]:
    """The removed and added lines of a mutant's diff, as ``mutmut show`` prints it."""
    diff = _mutmut("show", mutant).splitlines()
    return [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fail-under", type=float, default=0.0, help="least overall kill rate")
    args = parser.parse_args(argv)

    results = parse_results(_mutmut("results", "--all", "true"))
    if not results:
        print("no mutmut results: run `make mutants` (mutmut run) first")
        return 1
    reasons = parse_reasons(REASONS.read_text(encoding="utf-8"))
    modules = tally(results)
    for line in _table(modules):
        print(line)
    overall = Tally()
    for counts in modules.values():
        overall.counts.update(counts.counts)
    rate = kill_rate(overall)

    left = sorted(
        name for name, status in results.items() if status not in (*CAUGHT, "not checked")
    )
    unexplained = [name for name in left if name not in reasons]
    print(f"\nNot killed: {len(left)} ({len(unexplained)} without a reason in {REASONS.name})")
    for name in left:
        print(f"  {name} [{results[name]}]")
        if name in reasons:
            print(f"      {reasons[name]}")
        else:
            print("      NO REASON RECORDED; the mutation:")
            for line in _changed_lines(name):
                print(f"        {line}")
    stale = sorted(set(reasons) - set(left))
    if stale:
        print(f"\n{len(stale)} reason(s) in {REASONS.name} for mutants now killed or gone:")
        for name in stale:
            print(f"  {name}")
    failed = rate < args.fail_under
    if failed:
        print(f"\noverall kill rate {rate:.1f}% is under {args.fail_under:g}%")
    unchecked = overall.counts["not checked"]
    if unchecked:
        print(f"\n{unchecked} mutants were not checked (the run stopped): rates cover the rest")
    return 1 if failed or unexplained or unchecked else 0


if __name__ == "__main__":
    sys.exit(main())
