"""``shardmodel reshard module:Model --to N``: the resharding runbook on the command line.

The phases, the state and the scans are :class:`shardmodel.migration.Reshard`'s; the
command starts, steps, shows and finishes a migration and prints one status line a step.
"""

from __future__ import annotations

import argparse
import ast
import logging
import sys
from pathlib import Path

from shardmodel.cli.arguments import endpoint, load_model, number, whole
from shardmodel.cli.registry import CommandError, Subparsers, UsageError, add_command, command
from shardmodel.errors import ShardModelError
from shardmodel.keyspace.strategies import MAX_SHARDS, HashShards
from shardmodel.migration.backfill import Progress
from shardmodel.migration.reshard import Reshard
from shardmodel.migration.state import ChangePausedError, MigrationState, Phase
from shardmodel.migration.status import next_step, reshard_status, status_json

__all__ = ["HOLD", "add_reshard_parser", "next_step", "run_reshard"]

#: DynamoDB's limit on the segments of a parallel scan.
_SEGMENTS = 1_000_000


#: The exit code of a step that must wait (a settle time): not an error, try again later
#: (sysexits' EX_TEMPFAIL), so a script tells it from a failure (1).
HOLD = 75


@command
def add_reshard_parser(commands: Subparsers) -> None:
    """Register the ``reshard`` subcommand on the CLI's subparsers."""
    reshard = add_command(
        commands,
        "reshard",
        "change a HashShards/RandomShards count, OrderedShards boundaries, or swap the strategy "
        "for HashShards online (fenced moves, backfill, sweep)",
        run_reshard,
    )
    reshard.add_argument("model", help="the model class as module:Class, e.g. app.models:Orders")
    reshard.add_argument(
        "--to",
        type=whole(1, MAX_SHARDS, "the most shards a strategy takes"),
        help="the new shard count",
    )
    reshard.add_argument(
        "--boundaries",
        metavar="FILE",
        help="an OrderedShards key's new boundaries: the output of shardmodel boundaries "
        "(or a Python list of strings) in FILE",
    )
    reshard.add_argument(
        "--hash-on",
        metavar="ATTR[,ATTR]",
        help="swap the strategy for HashShards(--to N, on=ATTRS): the partition key or the "
        "sort key's attribute names",
    )
    reshard.add_argument(
        "--algorithm",
        choices=["md5", "sha256"],
        help="the swapped-in HashShards' hash (default md5); with --hash-on",
    )
    reshard.add_argument("--dry-run", action="store_true", help="print the plan and its cost")
    reshard.add_argument(
        "--step",
        action="store_true",
        help="do only the next step (start, a scan, or a phase); exit 75 when a settle time "
        "must pass first (try again later), 1 on an error",
    )
    reshard.add_argument("--status", action="store_true", help="print the migration's state")
    reshard.add_argument(
        "--pause",
        action="store_true",
        help="pause the change: jobs stop at their next page, the phase waits",
    )
    reshard.add_argument(
        "--resume", action="store_true", help="let a paused change go on (then run it again)"
    )
    reshard.add_argument(
        "--json",
        action="store_true",
        help="with --status: one JSON object (phase, segments, wait, next command)",
    )
    reshard.add_argument(
        "--finish",
        action="store_true",
        help="remove the state of a done migration and record the table's layout",
    )
    reshard.add_argument(
        "--record",
        action="store_true",
        help="record the declared layout as the table's (a table no change has recorded), "
        "after checking a sample of its items",
    )
    reshard.add_argument(
        "--abort",
        action="store_true",
        help=(
            "go back to the declared layout: before backfill the state is removed; from "
            "backfill on the change goes to done and returns (then run it again without --to, "
            "or --step by step, and --finish)"
        ),
    )
    reshard.add_argument(
        "--segments",
        type=whole(1, _SEGMENTS, "DynamoDB's parallel scan limit"),
        default=1,
        help="parallel scan segments (set at the start)",
    )
    reshard.add_argument(
        "--segment",
        type=whole(0, _SEGMENTS - 1, "DynamoDB's parallel scan limit"),
        help="run only this scan segment of the phase's job (backfill, cleanup, sweep)",
    )
    reshard.add_argument(
        "--settle",
        type=number(0, 86_400, "a day"),
        default=30.0,
        help="seconds every phase lasts at least",
    )
    reshard.add_argument(
        "--page-size",
        type=whole(1, 10_000, "items a scan page holds at most here"),
        default=100,
        help="items per scan page",
    )
    reshard.add_argument(
        "--host", type=endpoint, help="the DynamoDB endpoint (default: the model's Meta.host)"
    )


def describe(operator: Reshard, state: MigrationState | None) -> str:
    """One status line, plus the running job's summed progress."""
    if state is None:
        return f"{operator.model.__name__}: no migration in progress"
    text = (
        f"{state.table}: {state.change}, phase "
        f"{state.phase.value}, next phase possible in {operator.settle_left(state):.0f}s"
    )
    if state.paused:
        text += ", PAUSED (reshard --resume lets it go on)"
    segments = operator.job_progress(state)
    if segments:
        done = sum(p.done for p in segments)
        scanned = sum(p.scanned for p in segments)
        changed = sum(p.changed for p in segments)
        text += (
            f"; {operator.job_of(state)}: {done}/{len(segments)} segments done, "
            f"{scanned:,} items scanned, {changed:,} changed"
        )
    return text


def _progress(operator: Reshard, state: MigrationState) -> Progress:
    total = operator.estimate().items // max(state.segments, 1) or None
    return Progress(operator.job_of(state) or "scan", total)


def _step(operator: Reshard, args: argparse.Namespace) -> int:
    state = operator.status()
    if state is not None and state.paused:
        print(describe(operator, state))
        print("hold: the change is paused; run reshard --resume first")
        return HOLD
    if state is None:
        if args.to is None:
            raise UsageError("--step: give --to N (or --boundaries FILE) to start")
        state = operator.start(args.to, args.settle, args.segments)
    elif operator.job_of(state) and any(not p.done for p in operator.job_progress(state)):
        if state.phase == Phase.DONE and operator.settle_left(state) > 0:
            print(describe(operator, state))
            print(f"hold: the sweep waits {operator.settle_left(state):.0f}s more")
            return HOLD
        operator.run_job(page_size=args.page_size, progress=_progress(operator, state))
    elif state.phase == Phase.DONE and not state.aborted:
        print(describe(operator, state))
        print(next_step(state))
        return 0
    elif operator.settle_left(state) > 0:
        print(describe(operator, state))
        print(f"hold: wait {operator.settle_left(state):.0f}s before the next phase")
        return HOLD
    else:
        state = operator.advance()
    print(describe(operator, operator.status()))
    return 0


def run_reshard(args: argparse.Namespace) -> int:
    """Run the ``reshard`` subcommand; returns the exit code."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.json and not args.status:
        raise UsageError("--json goes with --status: shardmodel reshard MODEL --status --json")
    if args.pause and args.resume:
        raise UsageError("give --pause or --resume, not both")
    model = load_model(args.model)  # the current directory on the import path
    if args.host:
        model.Meta.host = args.host
        model._connection = None
    if args.boundaries is not None:
        if args.to is not None:
            raise UsageError("give --to N (a count) or --boundaries FILE, not both")
        if args.hash_on is not None:
            raise UsageError("--hash-on swaps a HashShards/RandomShards strategy, not boundaries")
        args.to = read_boundaries(args.boundaries)
    if args.hash_on is not None or args.algorithm is not None:
        args.to = swapped_strategy(args)
    try:
        operator = Reshard(model)
    except ShardModelError as error:
        raise CommandError(f"{error}") from None
    try:
        return _run(operator, args)
    except KeyboardInterrupt:
        sys.stderr.write(interrupted(operator, args) + "\n")
        return 130


def swapped_strategy(args: argparse.Namespace) -> HashShards:
    """The HashShards that ``--to N --hash-on ATTRS [--algorithm A]`` swaps in."""
    if args.hash_on is None:
        raise UsageError("--algorithm: give --hash-on ATTR too (the attributes to hash)")
    if args.to is None:
        raise UsageError("--hash-on: give --to N too (the new HashShards' shard count)")
    on = [name.strip() for name in args.hash_on.split(",") if name.strip()]
    try:
        return HashShards(args.to, on=on, algorithm=args.algorithm or "md5")
    except ShardModelError as error:
        raise UsageError(f"--hash-on {args.hash_on!r}: {error}") from None


def interrupted(operator: Reshard, args: argparse.Namespace) -> str:
    """What an operator needs after Ctrl-C: where the migration stands, how to resume."""
    state = operator.status()
    host = f" --host {args.host}" if args.host else ""
    base = f"shardmodel reshard {args.model}{host}"
    if state is None:
        return f"interrupted before the migration started; nothing was written. Run: {base} ..."
    lines = [f"interrupted: {describe(operator, state)}"]
    for progress in operator.job_progress(state):
        if not progress.done:
            where = "its start" if progress.checkpoint is None else f"{progress.checkpoint}"
            lines.append(
                f"  segment {progress.segment}: {progress.scanned:,} items scanned, resumes "
                f"after {where}"
            )
    if state.aborted or state.returning:
        lines.append(f"resume with: {base}   (every step of the return; or --step, one at a time)")
        return "\n".join(lines)
    to = (
        f"--to {state.new_count}"
        if state.new_boundaries is None
        else f"--boundaries {args.boundaries or 'FILE'}"
    )
    if state.new_strategy is not None:
        to += f" --hash-on {','.join(state.new_strategy.on)}"
        to += f" --algorithm {state.new_strategy.algorithm}"
    lines.append(
        f"resume with: {base} {to} --segments {state.segments} "
        f"--settle {state.settle_seconds:g}   (or --step, one step at a time)"
    )
    return "\n".join(lines)


def read_boundaries(path: str) -> list[str]:
    """The boundaries in ``path``: ``boundaries = [...]`` as ``shardmodel boundaries``
    prints it (comments and ``overflow`` lines allowed), or a bare list of strings."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"--boundaries {path}: {error.strerror}") from None
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        raise UsageError(
            f"--boundaries {path}: line {error.lineno}: {error.msg}; give the output of "
            "shardmodel boundaries, or a Python list of strings"
        ) from None
    for node in tree.body:
        named = isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "boundaries" for t in node.targets
        )
        if named or isinstance(node, ast.Expr):
            try:
                found = ast.literal_eval(node.value)  # type: ignore[attr-defined]
            except ValueError:
                continue
            if isinstance(found, list) and all(isinstance(b, str) for b in found):
                return found
    raise UsageError(
        f"--boundaries {path}: no list of strings found; give the output of shardmodel "
        "boundaries (boundaries = [...]), or a Python list of strings"
    )


def _run(operator: Reshard, args: argparse.Namespace) -> int:
    model = operator.model
    try:
        if args.dry_run:
            if args.to is None:
                raise UsageError("--dry-run: give --to N (or --boundaries FILE)")
            print(operator.plan(args.to, args.settle, args.segments))
            return 0
        if args.status:
            state = operator.status()
            if args.json:
                print(status_json(reshard_status(operator, state, args.model)))
            else:
                print(describe(operator, state))
            return 0
        if args.pause or args.resume:
            state = operator.pause() if args.pause else operator.unpause()
            print(describe(operator, state))
            return 0
        if args.finish:
            operator.finish()
            recorded = operator.store.read_layout()
            held = "" if recorded is None else f"; the table records {recorded.describe()}"
            print(f"{model.__name__}: migration state removed{held}")
            return 0
        if args.record:
            recorded = operator.record()
            print(
                f"{model.__name__}: table {recorded.table!r} records {recorded.describe()}; "
                "every process now refuses code that declares another layout"
            )
            return 0
        if args.abort:
            aborted = operator.abort()
            if operator.status() is None:
                print(
                    f"{model.__name__}: the migration ({aborted.change}) was aborted in phase "
                    f"{aborted.phase.value}; every process uses the declared layout again"
                )
                return 0
            if aborted.series:
                print(
                    f"{model.__name__}: the count change ({aborted.change}) is aborted: its "
                    f"buckets return to {aborted.old_count} shards in every process; run "
                    "reshard --step until done (its cleanup moves the readings written with "
                    f"{aborted.new_count} back), then reshard --finish"
                )
                return 0
            print(
                f"{model.__name__}: the migration ({aborted.change}) is aborted in phase "
                f"{aborted.phase.value}: items have moved, so it goes on to done and then "
                f"back to {aborted.old_count} by the same phases; keep the code as it is "
                "(it follows both), run reshard without --to (every step of the return; or "
                "--step by step), then reshard --finish"
            )
            return 0
        if args.segment is not None:
            state = operator.status()
            if state is None:
                raise CommandError("--segment: no migration in progress")
            if args.segments != state.segments:
                raise UsageError(
                    f"the migration scans {state.segments} segments; "
                    f"pass --segments {state.segments}"
                )
            operator.run_job(args.segment, args.page_size, _progress(operator, state))
            print(describe(operator, operator.status()))
            return 0
        if args.step:
            return _step(operator, args)
        if args.to is None:
            if operator.status() is None:
                raise UsageError("give --to N or --boundaries FILE (or --status, --finish)")
            steps = operator.resume(args.page_size)  # the change in progress, to its end
        else:
            steps = operator.steps(args.to, args.settle, args.segments, args.page_size)
        last = None
        for last in steps:
            print(describe(operator, last), flush=True)
        if last is not None:
            print(next_step(last))
        return 0
    except ChangePausedError as error:
        print(f"hold: {error}")
        return HOLD
    except ShardModelError as error:
        raise CommandError(f"{error}") from None
