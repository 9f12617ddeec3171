"""A layout change's status as data: what ``shardmodel reshard --status --json`` prints.

One frozen value a script can read (phase, each segment's progress, the wait before the
next phase, the next command), unstructured by cattrs, so a deployment pipeline or a
dashboard never parses the text status line.
"""

from __future__ import annotations

import json
from typing import Any

import cattrs
from attrs import frozen

from shardmodel.keyspace.phases import MigrationState, Phase

__all__ = ["ReshardStatus", "SegmentStatus", "next_step", "reshard_status", "status_json"]


@frozen
class SegmentStatus:
    """One scan segment of the current phase's job."""

    segment: int
    done: bool
    scanned: int
    changed: int


@frozen
class ReshardStatus:
    """Where a change stands and what to run next.

    Attributes:
        model: the model class's name.
        table: the table (None: no change in progress).
        change: the change in words (``16 -> 32 shards``).
        phase: the current phase (None: no change in progress).
        aborted: ``--abort`` was asked: the change goes on to done, then back.
        returning: this change is the return of an aborted one.
        paused: ``--pause`` was asked: jobs stop at their next page, the phase waits.
        wait_seconds: seconds before the next phase may start (0: now).
        job: the scan job of this phase (``backfill``, ``cleanup``, ``sweep``) or None.
        segments: each segment's progress of that job (empty without a job).
        scanned: items the job has scanned, over every segment.
        changed: items it has copied, moved or deleted.
        next: what to run next, in words; ``command`` the command itself (None: nothing
            to run, the change is done and its state removed).
    """

    model: str
    table: str | None
    change: str | None
    phase: str | None
    aborted: bool
    returning: bool
    paused: bool
    wait_seconds: float
    job: str | None
    segments: tuple[SegmentStatus, ...]
    scanned: int
    changed: int
    next: str
    command: str | None


_converter = cattrs.Converter()


def reshard_status(operator: Any, state: MigrationState | None, path: str) -> ReshardStatus:
    """The status of ``operator``'s change (a :class:`~shardmodel.migration.Reshard`),
    ``path`` the model as the command line names it (``app.models:Orders``)."""
    name = operator.model.__name__
    if state is None:
        return ReshardStatus(
            name, None, None, None, False, False, False, 0.0, None, (), 0, 0,
            f"no change in progress: start one with shardmodel reshard {path} --to N",
            None,
        )  # fmt: skip
    progress = operator.job_progress(state)
    segments = tuple(
        SegmentStatus(number, p.done, p.scanned, p.changed) for number, p in enumerate(progress)
    )
    wait = round(operator.settle_left(state), 1)
    job = operator.job_of(state)
    step = f"shardmodel reshard {path} --step"
    unfinished = any(not s.done for s in segments)
    if state.paused:
        words = "paused: jobs stop at a page boundary; resume the change, then run it again"
        command = f"shardmodel reshard {path} --resume"
    elif state.phase == Phase.DONE and not state.aborted and not unfinished:
        words, command = next_step(state), f"shardmodel reshard {path} --finish"
    elif unfinished and (state.phase != Phase.DONE or wait == 0):
        words, command = f"run the {job} (or every remaining step without --step)", step
    elif wait > 0:
        words, command = f"wait {wait:.0f}s, then take the next step", step
    else:
        words, command = "take the next step (or every remaining step without --step)", step
    return ReshardStatus(
        model=name,
        table=state.table,
        change=state.change,
        phase=state.phase.value,
        aborted=state.aborted,
        returning=state.returning,
        paused=state.paused,
        wait_seconds=wait,
        job=job,
        segments=segments,
        scanned=sum(s.scanned for s in segments),
        changed=sum(s.changed for s in segments),
        next=words,
        command=command,
    )


def next_step(state: MigrationState) -> str:
    """What the operator does once a change (or its return) is swept."""
    declares = (
        f"HashShards({state.new_count}, ...) as before the change"
        if state.series and state.returning
        else f"HashShards({state.new_count}, ...) with counts_before="
        f"{{{state.cutover!r}: {state.old_count}}}"
        if state.series
        else state.new_strategy.describe(state.new_count)
        if state.new_strategy is not None
        else f"{state.new_count} shards"
        if state.new_boundaries is None
        else f"the {state.new_count} new boundaries"
    )
    if state.returning:
        return (
            f"swept: every item is back under {declares}; run reshard --finish with the "
            "model that declares it"
        )
    return (
        f"swept: deploy the code that declares {declares}, then run reshard --finish with its model"
    )


def status_json(status: ReshardStatus) -> str:
    """The status as one JSON object (keys in declaration order)."""
    return json.dumps(_converter.unstructure(status))
