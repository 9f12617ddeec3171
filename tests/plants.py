"""Planted bugs: each must still be caught by the ``make test`` tier (``make plants``).

A green suite proves only what a planted bug would break. ``tests/plants.toml`` keeps the
bugs the closing notes of earlier changes planted, by hand, to show their tests guard them
(a merge comparing numbers as floats, a cursor signed without its secret, a move's copy
written unconditionally, ...): the text in a module, what it becomes, and the ``make test``
tests that must fail. This runs each plant in a copy of the checkout (the working tree is
never touched), at ``make test``'s sizes, and prints a table; it fails when a plant is
caught by nothing, or when its text is no longer in the module exactly once (the code moved:
move the plant with it, so the guard stays checked).

Run from the repository root::

    python -m tests.plants              # every plant
    python -m tests.plants merge-float  # some, by name
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import attrs
import cattrs
import tomllib

__all__ = ["Outcome", "Plant", "apply", "load", "main"]

ROOT = Path(__file__).resolve().parent.parent
PLANTS = Path(__file__).with_name("plants.toml")

#: Environment that would change the tier (the plants are checked at make test's sizes).
_TIER_VARIABLES = ("SHARDMODEL_STRESS", "SHARDMODEL_FULL_SIZES", "HYPOTHESIS_PROFILE")


@attrs.frozen
class Plant:
    """One planted bug: ``find`` in ``file`` becomes ``replace``; ``tests`` must fail."""

    name: str
    what: str
    file: str
    find: str
    replace: str
    tests: tuple[str, ...]
    source: str = ""


@attrs.frozen
class Outcome:
    """What the tests did with one plant: ``caught`` (pytest failed), ``missed`` (passed)
    or ``broken`` (the plant no longer applies, or pytest could not run)."""

    plant: Plant
    verdict: str
    seconds: float
    detail: str = ""


def load(path: Path = PLANTS) -> list[Plant]:
    """The plants of ``path`` (a ``[[plant]]`` table each), names unique."""
    data = tomllib.loads(path.read_text())
    plants = cattrs.structure(data.get("plant", []), list[Plant])
    names = [p.name for p in plants]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"{path.name}: plant names must be unique; repeated: {duplicated}")
    return plants


def apply(plant: Plant, tree: Path) -> None:
    """Plant the bug in the copy at ``tree``; ValueError unless ``find`` occurs once."""
    module = tree / plant.file
    text = module.read_text()
    count = text.count(plant.find)
    if count != 1:
        raise ValueError(
            f"{plant.name}: its text occurs {count} times in {plant.file} (must be once); "
            "the code moved: update the plant in tests/plants.toml"
        )
    module.write_text(text.replace(plant.find, plant.replace))


def _copy(tree: Path) -> None:
    """The checkout's tracked and new files (as ``git ls-files`` lists them) into ``tree``."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = ROOT / os.fsdecode(name)
        if source.is_file():
            target = tree / os.fsdecode(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    if (ROOT / "node_modules").is_dir():  # dynalite, for a plant whose tests use servers
        (tree / "node_modules").symlink_to(ROOT / "node_modules")


def _environment(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _TIER_VARIABLES}
    env["PYTHONPATH"] = str(tree)  # the copy's package, ahead of the editable install
    env["SHARDMODEL_NO_DOCS_BUILD"] = "1"
    return env


def run(plant: Plant, workers: int) -> Outcome:
    """Plant the bug in a fresh copy and run its tests there."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"plant-{plant.name}-") as scratch:
        tree = Path(scratch)
        _copy(tree)
        try:
            apply(plant, tree)
        except ValueError as error:
            return Outcome(plant, "broken", 0.0, str(error))
        env = _environment(tree)
        where = subprocess.run(
            [sys.executable, "-c", "import shardmodel; print(shardmodel.__file__)"],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
        ).stdout.strip()
        if not where.startswith(str(tree)):
            return Outcome(plant, "broken", 0.0, f"shardmodel imported from {where!r}")
        parallel = ["-n", str(workers)] if workers > 1 else ["-p", "no:xdist"]
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", *parallel, *plant.tests],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
        )
    seconds = time.monotonic() - started
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    last = lines[-1] if lines else done.stderr.strip()[-200:]
    if done.returncode == 1:
        failed = next((line for line in lines if line.startswith("FAILED ")), last)
        return Outcome(plant, "caught", seconds, failed)
    if done.returncode == 0:
        return Outcome(plant, "missed", seconds, last)
    return Outcome(plant, "broken", seconds, f"pytest exit {done.returncode}: {last}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="plants to run (default: all)")
    parser.add_argument("-n", "--workers", type=int, default=1, help="pytest-xdist workers")
    options = parser.parse_args(argv)
    plants = load()
    unknown = sorted(set(options.names) - {p.name for p in plants})
    if unknown:
        parser.error(f"no plant named {', '.join(unknown)}; tests/plants.toml lists them")
    chosen = [p for p in plants if not options.names or p.name in options.names]
    outcomes = []
    for plant in chosen:
        outcome = run(plant, options.workers)
        outcomes.append(outcome)
        print(f"{outcome.verdict:7} {outcome.seconds:6.0f} s  {plant.name}: {outcome.detail}")
        sys.stdout.flush()
    caught = sum(o.verdict == "caught" for o in outcomes)
    print(f"\n{caught} of {len(outcomes)} planted bugs caught by the make test tier")
    for outcome in outcomes:
        if outcome.verdict != "caught":
            print(f"  {outcome.verdict}: {outcome.plant.name} ({outcome.plant.what})")
    return 0 if caught == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
