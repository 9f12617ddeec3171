"""The schedule explorer of tests/interleavings.py covers every order that matters.

Scripted processes (lists of reads and writes of named items, no server) are run by a
stand-in for the scheduler. Brute force lists every interleaving and the final state and
read results each gives, and the order of conflicting requests (the trace) each is; the
explorer, which skips orders that only swap commuting requests, must finish exactly one
run of every trace, and so reach every outcome.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.interleavings import Chooser, Plan, Run, Step, every_schedule

Script = Sequence[tuple[str, str]]  # (operation, item)


def _step(process: int, request: tuple[str, str]) -> Step:
    operation, item = request
    return Step(process, operation, "t", frozenset({item}))


def _simulate(scripts: Sequence[Script], plan: Plan) -> tuple[Run, tuple[object, ...]]:
    """Run the scripts as the scheduler would; the run and its outcome (state and reads)."""
    position = [0] * len(scripts)
    state: dict[str, tuple[int, int]] = {}
    seen: list[list[tuple[int, int] | None]] = [[] for _ in scripts]
    chooser = Chooser(plan)
    while True:
        ready = {
            p: _step(p, script[position[p]])
            for p, script in enumerate(scripts)
            if position[p] < len(script)
        }
        if not ready:
            break
        choice = chooser.choose(ready)
        operation, item = scripts[choice][position[choice]]
        if operation == "GetItem":
            seen[choice].append(state.get(item))
        else:
            state[item] = (choice, position[choice])  # each write leaves its own mark
        position[choice] += 1
    outcome = (tuple(sorted(state.items())), tuple(tuple(s) for s in seen))
    return chooser.run(), outcome


def _trace(run: Run) -> tuple[object, ...]:
    """What makes two runs the same order: each process's requests, and which of two
    conflicting requests of different processes came first."""
    index: list[tuple[int, int]] = []
    count: dict[int, int] = {}
    for step in run.steps:
        index.append((step.process, count.get(step.process, 0)))
        count[step.process] = count.get(step.process, 0) + 1
    first = frozenset(
        (index[a], index[b])
        for a, b in itertools.combinations(range(len(run.steps)), 2)
        if run.steps[a].process != run.steps[b].process and not run.steps[a].commutes(run.steps[b])
    )
    return tuple(sorted(run.steps, key=lambda step: step.process)), first


def _every_interleaving(scripts: Sequence[Script]) -> tuple[set[tuple[object, ...]], set[object]]:
    """Brute force: the outcome and the trace of every order of the two scripts' requests."""
    first, second = scripts
    outcomes, traces = set(), set()
    for places in itertools.combinations(range(len(first) + len(second)), len(first)):
        prefix = tuple(0 if i in places else 1 for i in range(len(first) + len(second)))
        run, outcome = _simulate(scripts, Plan(prefix))
        outcomes.add(outcome)
        traces.add(_trace(run))
    return outcomes, traces


def _explore_each_trace_once(scripts: Sequence[Script]) -> int:
    """Check that the explorer finishes one run of every trace brute force finds, each
    once, and reaches every outcome; how many runs it started."""
    outcomes: set[tuple[object, ...]] = set()
    ran = 0

    def run(plan: Plan) -> Run:
        nonlocal ran
        ran += 1
        done, outcome = _simulate(scripts, plan)
        outcomes.add(outcome)
        return done

    traces = [_trace(done) for done in every_schedule(run)]
    every_outcome, every_trace = _every_interleaving(scripts)
    assert outcomes == every_outcome
    assert sorted(map(repr, traces)) == sorted(map(repr, every_trace))  # each once
    return ran


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
def test_the_explorer_runs_each_order_of_conflicting_requests_once(name: str) -> None:
    """Every state and read result some interleaving gives is reached; each order of the
    conflicting requests is finished exactly once."""
    scripts = SCRIPTS[name]
    ran = _explore_each_trace_once(scripts)
    total = len(list(itertools.combinations(range(sum(map(len, scripts))), len(scripts[0]))))
    assert ran <= total
    if name == "disjoint items":
        assert ran == 1  # every order of commuting requests is one


_requests = st.tuples(st.sampled_from(["GetItem", "PutItem", "DeleteItem"]), st.sampled_from("abc"))


@given(
    first=st.lists(_requests, min_size=1, max_size=5),
    second=st.lists(_requests, min_size=1, max_size=5),
)
def test_the_explorer_runs_each_order_of_any_scripts_once(
    first: list[tuple[str, str]], second: list[tuple[str, str]]
) -> None:
    """For any two scripts, the finished runs are the orders of the conflicting requests,
    each once, and every outcome brute force finds is reached."""
    _explore_each_trace_once((first, second))
