"""The schedule explorer of tests/interleavings.py covers every order that matters.

Scripted processes (lists of reads and writes of named items, no server) are run by a
stand-in for the scheduler. Brute force lists every interleaving and the final state and
read results each gives; the explorer, which skips orders that only swap commuting
requests, must reach every one of those outcomes, and run fewer schedules.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.interleavings import Run, Step, every_schedule

Script = Sequence[tuple[str, str]]  # (operation, item)


def _step(process: int, request: tuple[str, str]) -> Step:
    operation, item = request
    return Step(process, operation, "t", frozenset({item}))


def _simulate(scripts: Sequence[Script], prefix: Sequence[int]) -> tuple[Run, tuple[object, ...]]:
    """Run the scripts as the scheduler would; the run and its outcome (state and reads)."""
    position = [0] * len(scripts)
    state: dict[str, tuple[int, int]] = {}
    seen: list[list[tuple[int, int] | None]] = [[] for _ in scripts]
    steps: list[Step] = []
    waiting: list[dict[int, Step]] = []
    while True:
        ready = {
            p: _step(p, script[position[p]])
            for p, script in enumerate(scripts)
            if position[p] < len(script)
        }
        if not ready:
            break
        at = len(steps)
        choice = prefix[at] if at < len(prefix) else min(ready)
        steps.append(ready[choice])
        waiting.append(ready)
        operation, item = scripts[choice][position[choice]]
        if operation == "GetItem":
            seen[choice].append(state.get(item))
        else:
            state[item] = (choice, position[choice])  # each write leaves its own mark
        position[choice] += 1
    outcome = (tuple(sorted(state.items())), tuple(tuple(s) for s in seen))
    return Run(tuple(steps), tuple(waiting)), outcome


def _every_interleaving(scripts: Sequence[Script]) -> set[tuple[object, ...]]:
    """Brute force: the outcome of every order of the two scripts' requests."""
    first, second = scripts
    outcomes = set()
    for places in itertools.combinations(range(len(first) + len(second)), len(first)):
        prefix = tuple(0 if i in places else 1 for i in range(len(first) + len(second)))
        outcomes.add(_simulate(scripts, prefix)[1])
    return outcomes


SCRIPTS = {
    "two writes of one item": (
        [("PutItem", "a"), ("PutItem", "b")],
        [("PutItem", "a"), ("PutItem", "b")],
    ),
    "read then write against write": (
        [("GetItem", "a"), ("PutItem", "a"), ("PutItem", "b")],
        [("GetItem", "b"), ("DeleteItem", "a"), ("DeleteItem", "b")],
    ),
    "disjoint items": (
        [("PutItem", "a"), ("PutItem", "b")],
        [("PutItem", "c"), ("PutItem", "d")],
    ),
    "reads only": ([("GetItem", "a"), ("GetItem", "b")], [("GetItem", "a")]),
    "mixed": (
        [("PutItem", "a"), ("GetItem", "c"), ("PutItem", "b"), ("PutItem", "c")],
        [("PutItem", "c"), ("GetItem", "a"), ("DeleteItem", "b")],
    ),
}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_the_explorer_reaches_every_outcome_with_fewer_runs(name: str) -> None:
    """Every state and read result some interleaving gives is reached by an explored run."""
    scripts = SCRIPTS[name]
    runs: list[tuple[object, ...]] = []

    def run(prefix: Sequence[int]) -> Run:
        done, outcome = _simulate(scripts, prefix)
        runs.append(outcome)
        return done

    explored = list(every_schedule(run))
    total = len(list(itertools.combinations(range(sum(map(len, scripts))), len(scripts[0]))))
    assert set(runs) == _every_interleaving(scripts)
    assert len(explored) <= total
    if name == "disjoint items":
        assert len(explored) == 1  # every order of commuting requests is one


_requests = st.tuples(st.sampled_from(["GetItem", "PutItem", "DeleteItem"]), st.sampled_from("abc"))


@given(
    first=st.lists(_requests, min_size=1, max_size=4),
    second=st.lists(_requests, min_size=1, max_size=4),
)
def test_the_explorer_reaches_every_outcome_of_any_scripts(
    first: list[tuple[str, str]], second: list[tuple[str, str]]
) -> None:
    """For any two scripts, the explored runs give every outcome brute force finds."""
    scripts = (first, second)
    outcomes: set[tuple[object, ...]] = set()

    def run(prefix: Sequence[int]) -> Run:
        done, outcome = _simulate(scripts, prefix)
        outcomes.add(outcome)
        return done

    for _ in every_schedule(run):
        pass
    assert outcomes == _every_interleaving(scripts)
