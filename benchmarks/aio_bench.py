"""The async API against the sync one and against one partition, same run, same data.

Runs against dynalite (started here on loopback) behind a relay that holds every request
5 ms on the wire (``benchmarks/wire_delay.py``, a process of its own): a round trip every
path waits for the same way, sending and then waiting for its response, with none of the
delay's work in the client. ``benchmarks/query_bench.py`` sleeps its round trip in a
botocore ``before-send`` hook instead, as this bench did before; in an async call that
sleep is a loop timer, a future and two greenlet switches a request (~0.5 ms of a
16-shard read's CPU here, against one ``time.sleep`` a request on a thread), work no
network asks of the client. The 16-shard rows are measured that way too, for
comparison. Measures:

* **the cost curve**: the newest 100 items of one key over 1, 4, 16, 64 and 256 random
  shards holding 10,000 items, three ways: plain PynamoDB's ``Model.query`` of one
  unsharded key on botocore (the baseline every ratio is against), ``ShardedModel.query``
  (sync, its shard requests on the calling thread's kept loop; at 16 and 64 shards also
  ``sync on threads``, the shared worker threads, as before that) and ``ShardedModel.aquery`` on
  one event loop (``asyncio.Runner``, kept for the run, as a server keeps its loop),
  each async read timed inside the running loop, as a served request runs. Requests,
  wall and process CPU; a sample is the mean of 5 reads back to back, the median of 5
  interleaved rounds after a warm-up. At 16 shards also the sync read called from a
  coroutine through ``asyncio.to_thread`` (how PynamoDB users reach DynamoDB from async
  code today), and the async read timed around ``runner.run`` (``loop per read``: the
  loop started and stopped for every read, how this bench timed it before).
* **concurrency**: 1,000 logical reads (latest 100 of a 16-shard key) at once in one
  event loop, the model's pool bounded at ``max_pool_connections`` (10) sockets:
  throughput, peak open sockets, CPU; against the same 1,000 sync reads on 10 threads.
* **the bridge**: CPU per call (an idle greenlet reused), per new greenlet, per switch
  out to the loop and back, and per ``asyncio.to_thread`` hand-off (the measured reason
  for the ``greenlet`` dependency);
* **fresh runs**: the sync 16-shard latest-100 wall and CPU ratios against one partition,
  in 5 fresh processes (``benchmarks/aio_fresh.py``) each for this tree and for a base
  tree, interleaved, the order turned round each round: the median and the worst of
  each, and how far this tree's sync numbers moved from the base's. The base is the tree
  a branch started from (``git merge-base HEAD main``); on main itself, main as it was
  before the async API landed (:data:`BEFORE_ASYNC`), so the sync path's numbers are
  compared with the ones it had without async; ``SHARDMODEL_BENCH_BASE`` names another.

* **the async/sync target, paired**: the 16-shard async read's CPU over the sync read's
  in 21 rounds, each a ratio of two samples taken one after the other (the order turned
  each round), so a ratio's two sides see the same moment's machine: the median, the
  quartiles and the range. The curve's medians of 5 rounds moved this ratio by ±4% from
  one run to the next; the target reads the paired median.

Prints the targets with PASS or FAIL (a FAIL does not fail the run), and keeps the
output in ``benchmarks/aio_last_run.txt``, which the performance page quotes and draws
its async figure from: commit it with the numbers the page quotes.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any, NamedTuple, cast

from pynamodb.models import Model

from benchmarks.query_bench import (
    CREDENTIALS,
    DYNALITE,
    EPOCH,
    ITEMS,
    KEY,
    LATENCY,
    LATEST,
    REPEATS,
    Sample,
    Single,
    _load_all,
    _median,
    _meta,
    _sharded_model,
    _ts,
    _Wire,
)
from benchmarks.wire_delay import delayed_endpoint
from shardmodel import ShardedModel
from shardmodel.core.bridge import await_, call, sleep
from shardmodel.lean import nonblocking
from shardmodel.lean.aio import async_client
from shardmodel.testing import bind_models, create_tables, dynalite_server

ROOT = Path(__file__).resolve().parents[1]
#: the last run's output: docs/charts.py draws the async cost curve from it
OUTPUT = ROOT / "benchmarks" / "aio_last_run.txt"
SHARDS = (1, 4, 16, 64, 256)
TARGET_SHARDS = 16
CONCURRENT = 1_000
FRESH_RUNS = 5
#: rounds of the paired async/sync measure the first target reads (~4 s)
PAIRED_ROUNDS = 21


class _LoopWire(_Wire):
    """The query bench's wire, its round trip slept without blocking an event loop."""

    @nonblocking  # inside an async call (or on a sync read's loop) a sleep of that call
    def _delay(self, **kwargs: Any) -> None:
        if self.delaying:
            sleep(self.latency)


# -- measuring ------------------------------------------------------------------------

Run = Callable[[], list[int]]
#: one read timed where it runs: its items, wall seconds, process CPU seconds
Timed = Callable[[], tuple[list[int], float, float]]
#: reads per sample, back to back: a sample is their mean (one read is ~100 µs of CPU
#: on a loaded machine's noise)
READS = 5


class Row(NamedTuple):
    shards: int | None
    variant: str
    sample: Sample


def _once(wire: _Wire, timed: Timed, expected: list[int]) -> Sample:
    import gc

    gc.collect()
    wire.reset()
    wall = cpu = 0.0
    for _ in range(READS):
        got, spent, used = timed()
        if got != expected:
            raise RuntimeError(
                f"wrong result: {len(got)} items {got[:3]}..., expected {expected[:3]}"
            )
        wall, cpu = wall + spent, cpu + used
    return Sample(
        wall / READS, cpu / READS, wire.requests // READS, wire.items_read // READS, len(got)
    )


def _expected() -> list[int]:
    return [EPOCH + n for n in range(ITEMS - 1, ITEMS - 1 - LATEST, -1)]


def _measure(wire: _Wire, variants: Sequence[tuple[int | None, str, Timed]]) -> list[Row]:
    """Median of REPEATS rounds, every variant once per round, after a warm-up each."""
    expected = _expected()
    samples: list[list[Sample]] = [[] for _ in variants]
    for _, _, timed in variants:
        _once(wire, timed, expected)
    for _ in range(REPEATS):
        for found, (_, _, timed) in zip(samples, variants, strict=True):
            found.append(_once(wire, timed, expected))
    return [Row(n, name, _median(s)) for s, (n, name, _) in zip(samples, variants, strict=True)]


def _paired(wire: _Wire, sync: Timed, aread: Timed) -> list[float]:
    """Async CPU over sync CPU, one ratio a round of PAIRED_ROUNDS, the order turned each
    round: both samples of a ratio see the same moment's machine."""
    expected = _expected()
    ratios = []
    for n in range(PAIRED_ROUNDS):
        if n % 2:
            x, s = _once(wire, aread, expected), _once(wire, sync, expected)
        else:
            s, x = _once(wire, sync, expected), _once(wire, aread, expected)
        ratios.append(x.cpu / s.cpu)
    return ratios


def _timed(run: Run) -> Timed:
    """A sync read, timed around the call."""

    def timed() -> tuple[list[int], float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        got = run()
        return got, time.perf_counter() - wall, time.process_time() - cpu

    return timed


def _in_loop(runner: asyncio.Runner, read: Callable[[], Awaitable[list[int]]]) -> Timed:
    """A read awaited on the runner's loop, timed inside the running loop.

    A server's loop runs on between requests; ``runner.run`` starts and stops it (its
    signal handler, its async-generator hooks) on every call, a cost of this harness
    that no served read pays. The ``loop per read`` row keeps it, for comparison.
    """

    async def timed() -> tuple[list[int], float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        got = await read()
        return got, time.perf_counter() - wall, time.process_time() - cpu

    return lambda: runner.run(timed())


def _sync(model: type[Model]) -> Run:
    def run() -> list[int]:
        return [_ts(i) for i in model.query(KEY, scan_index_forward=False, limit=LATEST)]

    return run


def _sync_threads(model: type[Model]) -> Run:
    """The sync read with its shard requests on the shared worker threads (as before the
    thread's kept loop; ``SHARDMODEL_SYNC_FANOUT=threads``)."""
    read = _sync(model)

    def run() -> list[int]:
        os.environ["SHARDMODEL_SYNC_FANOUT"] = "threads"
        try:
            return read()
        finally:
            del os.environ["SHARDMODEL_SYNC_FANOUT"]

    return run


def _to_thread(runner: asyncio.Runner, model: type[Model]) -> Timed:
    """The sync read from a coroutine on the loop's thread pool: what users do today."""
    sync = _sync(model)

    async def read() -> list[int]:
        return await asyncio.to_thread(sync)

    return _in_loop(runner, read)


def _aread(model: type[ShardedModel]) -> Callable[[], Awaitable[list[int]]]:
    async def read() -> list[int]:
        return [_ts(i) async for i in model.aquery(KEY, scan_index_forward=False, limit=LATEST)]

    return read


def _async(runner: asyncio.Runner, model: type[ShardedModel]) -> Timed:
    return _in_loop(runner, _aread(model))


def _loop_per_read(runner: asyncio.Runner, model: type[ShardedModel]) -> Timed:
    """The async read timed around ``runner.run``: the loop started and stopped per read."""
    read = _aread(model)
    return _timed(lambda: runner.run(read()))


def _slept_rows(url: str, runner: asyncio.Runner) -> list[Row]:
    """The 16-shard rows with the round trip slept in ``before-send`` (no relay).

    The same tables through models of their own, pointed at dynalite itself.
    """
    single = cast(
        type[Model], type("SingleSlept", (Single,), {"Meta": _meta(Single.Meta.table_name)})
    )
    sharded = _sharded_model(TARGET_SHARDS)
    bind_models([single, sharded], host=url, **CREDENTIALS)
    wire = _LoopWire(LATENCY)
    wire.attach(single)
    wire.attach(sharded)
    with wire.delayed():
        return _measure(
            wire,
            [
                (None, "single partition", _timed(_sync(single))),
                (TARGET_SHARDS, "sync", _timed(_sync(sharded))),
                (TARGET_SHARDS, "async", _async(runner, sharded)),
            ],
        )


def _concurrency(
    wire: _Wire, runner: asyncio.Runner, model: type[ShardedModel]
) -> tuple[Sample, Sample, int, int]:
    """CONCURRENT latest-100 reads at once: async on the loop, then sync on 10 threads.

    Returns each way's sample (requests and items summed over the reads), the async
    pool's peak open sockets and its bound.
    """
    expected = [EPOCH + n for n in range(ITEMS - 1, ITEMS - 1 - LATEST, -1)]

    one = _aread(model)

    async def many() -> list[list[int]]:
        return list(await asyncio.gather(*(one() for _ in range(CONCURRENT))))

    def check(results: Sequence[list[int]]) -> None:
        if len(results) != CONCURRENT or any(r != expected for r in results):
            raise RuntimeError("a concurrent read returned the wrong items")

    def timed(run: Callable[[], Sequence[list[int]]]) -> Sample:
        wire.reset()
        wall, cpu = time.perf_counter(), time.process_time()
        check(run())
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return Sample(wall, cpu, wire.requests, wire.items_read, CONCURRENT)

    client = async_client(model._get_connection().connection.client)
    for pool in client.pools():
        pool.peak_open = pool.open
    on_loop = timed(lambda: runner.run(many()))
    loop = runner.get_loop()
    (pool,) = [p for p in client.pools() if p.loop is loop]  # the model's, on that loop
    peak, bound = pool.peak_open, pool.max_connections
    sync = _sync(model)
    with ThreadPoolExecutor(10, thread_name_prefix="bench-sync-readers") as threads:
        list(threads.map(lambda _: sync(), range(10)))  # warm the threads
        on_threads = timed(lambda: list(threads.map(lambda _: sync(), range(CONCURRENT))))
    return on_loop, on_threads, peak, bound


def _bridge(runner: asyncio.Runner) -> dict[str, float]:
    """CPU µs per hand-off: a call, a new greenlet, a switch out and back, a thread.

    The greenlet bridge's own cost, against running the same call on the loop's thread
    pool (``asyncio.to_thread``), the way to call sync code from a coroutine without it.
    """
    rounds, each = 7, 2_000

    def nothing() -> None:
        return None

    def waits() -> None:
        await_(_ready())

    async def via_call() -> None:
        for _ in range(each):
            await call(nothing)

    async def via_new() -> None:
        import greenlet

        for _ in range(each):
            greenlet.greenlet(nothing).switch()

    async def via_switch() -> None:
        await call(lambda: [waits() for _ in range(each)])

    async def via_thread() -> None:
        for _ in range(each):
            await asyncio.to_thread(nothing)

    async def baseline() -> None:
        for _ in range(each):
            await _ready()

    found: dict[str, list[float]] = {}
    ways = {
        "await call(f): an idle greenlet of the thread's, reused": via_call,
        "a new greenlet started and finished (each call's before)": via_new,
        "await_() inside a call: switch out and back": via_switch,
        "await asyncio.to_thread(f): the loop's thread pool": via_thread,
        "a plain await of a coroutine (the floor)": baseline,
    }
    for name, way in ways.items():
        runner.run(way())  # warm
        found[name] = []
    for _ in range(rounds):
        for name, way in ways.items():
            cpu = time.process_time()
            runner.run(way())
            found[name].append((time.process_time() - cpu) / each * 1e6)
    return {name: statistics.median(values) for name, values in found.items()}


async def _ready() -> None:
    return None


# -- fresh processes ------------------------------------------------------------------


#: main just before the async API was merged (its first parent): the sync path without
#: the async executor, the bridge or the asyncio transport.
BEFORE_ASYNC = "69418545b6fe6f15c56aa81c1498c88ae41de043"


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


def _base_tree(stack: ExitStack) -> tuple[str, Path] | None:
    """The base tree, extracted (see the module's docstring); None without git history."""
    try:
        base = os.environ.get("SHARDMODEL_BENCH_BASE") or _git("merge-base", "HEAD", "main")
        if _git("rev-parse", base) == _git("rev-parse", "HEAD"):
            base = BEFORE_ASYNC
        base = _git("rev-parse", "--verify", f"{base}^{{commit}}")
    except (OSError, subprocess.CalledProcessError):
        return None
    where = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="aio-bench-base-")))
    archive = subprocess.run(
        ["git", "archive", base, "shardmodel"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return base[:7], where


def _fresh(url: str, tree: Path) -> dict[str, float]:
    """One fresh process on ``tree``'s shardmodel: its sync 16-shard ratios."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "aio_fresh.py"), url, str(tree)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    values = {}
    for line in done.stdout.splitlines():
        name, _, value = line.partition("=")
        values[name] = float(value)
    return values


def _fresh_runs(url: str, trees: Sequence[tuple[str, Path]]) -> dict[str, list[dict[str, float]]]:
    """FRESH_RUNS fresh processes per tree, the order turned round each round (A B, B A,
    ...) so neither tree always runs just after the heavy load before it."""
    found: dict[str, list[dict[str, float]]] = {name: [] for name, _ in trees}
    for number in range(FRESH_RUNS):
        for name, tree in trees if number % 2 == 0 else list(reversed(trees)):
            found[name].append(_fresh(url, tree))
    return found


# -- printing -------------------------------------------------------------------------


CURVE_TITLE = (
    f"latest {LATEST} (limit={LATEST}, newest first) of {ITEMS:,} items: sync and async "
    "against plain PynamoDB's single partition (botocore)"
)
SLEPT_TITLE = (
    f"the same {TARGET_SHARDS}-shard read with the round trip slept in botocore's before-send "
    "instead (the query bench's harness; this bench's until the relay)"
)


def _print_curve(rows: Sequence[Row], title: str) -> dict[tuple[int | None, str], Sample]:
    by = {(r.shards, r.variant): r.sample for r in rows}
    single = by[(None, "single partition")]
    print()
    print(title)
    header = (
        f"{'shards':>6}  {'way':<18}{'requests':>9}{'items read':>11}{'wall ms':>9}"
        f"{'x wall':>8}{'CPU ms':>8}{'x CPU':>7}{'async/sync CPU':>16}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        s = r.sample
        where = "-" if r.shards is None else str(r.shards)
        versus = ""
        if r.variant in ("async", "loop per read", "sync on threads"):
            versus = f"{s.cpu / by[(r.shards, 'sync')].cpu:>16.2f}"
        print(
            f"{where:>6}  {r.variant:<18}{s.requests:>9}{s.items_read:>11}{s.wall * 1e3:>9.1f}"
            f"{s.wall / single.wall:>8.2f}{s.cpu * 1e3:>8.2f}{s.cpu / single.cpu:>7.2f}{versus}"
        )
    return by


def _print_bridge(costs: dict[str, float]) -> None:
    print()
    print("the bridge: process CPU per hand-off, µs (median of 7 rounds of 2,000)")
    width = max(len(name) for name in costs)
    for name, micros in costs.items():
        print(f"  {name:<{width}} {micros:>7.1f}")


def _print_concurrency(a: Sample, s: Sample, peak: int, bound: int) -> None:
    print()
    print(
        f"{CONCURRENT:,} concurrent latest-{LATEST} reads of a {TARGET_SHARDS}-shard key: "
        f"async in one event loop (pool bound {bound} sockets) vs sync on 10 threads"
    )
    header = (
        f"{'way':<28}{'wall s':>8}{'reads/s':>9}{'requests/s':>11}{'CPU s':>7}"
        f"{'CPU ms/read':>12}{'peak sockets':>13}"
    )
    print(header)
    print("-" * len(header))
    for name, x, sockets in (("async, one loop", a, str(peak)), ("sync, 10 threads", s, "-")):
        print(
            f"{name:<28}{x.wall:>8.2f}{CONCURRENT / x.wall:>9.0f}{x.requests / x.wall:>11.0f}"
            f"{x.cpu:>7.2f}{x.cpu / CONCURRENT * 1e3:>12.2f}{sockets:>13}"
        )


def _spread(values: Sequence[float]) -> str:
    median, worst = statistics.median(values), max(values)
    return f"median {median:.2f}, worst {worst:.2f} ({(worst / median - 1) * 100:+.0f}%)"


def _print_fresh(found: dict[str, list[dict[str, float]]], here: str) -> None:
    print()
    print(
        f"sync latest {LATEST}, {TARGET_SHARDS} shards / single partition, {FRESH_RUNS} fresh "
        "processes per tree (interleaved, A B then B A), each the median of 5 rounds (a "
        "sample the mean of 5 reads) after a warm-up"
    )
    for name, runs in found.items():
        walls = [r["wall_ratio"] for r in runs]
        print(f"  {name:<26} wall ratio {_spread(walls)}")
        print(f"  {'':<26} each run   {', '.join(f'{w:.2f}' for w in walls)}")
        print(f"  {'':<26} CPU ratio  {_spread([r['cpu_ratio'] for r in runs])}")
        cpu = [r["merged_cpu_ms"] for r in runs]
        wall = [r["merged_wall_ms"] for r in runs]
        print(
            f"  {'':<26} sync merged CPU ms median {statistics.median(cpu):.2f}, "
            f"wall ms median {statistics.median(wall):.1f}"
        )
    others = [name for name in found if name != here]
    for other in others:
        moved_cpu = statistics.median(r["merged_cpu_ms"] for r in found[here]) / statistics.median(
            r["merged_cpu_ms"] for r in found[other]
        )
        moved_wall = statistics.median(
            r["merged_wall_ms"] for r in found[here]
        ) / statistics.median(r["merged_wall_ms"] for r in found[other])
        print(
            f"  sync merged, {here} / {other}: CPU {moved_cpu:.3f}, wall {moved_wall:.3f} "
            "(the sync path's move; target within 5%)"
        )


def _print_paired(ratios: Sequence[float]) -> None:
    ordered = sorted(ratios)
    quartiles = statistics.quantiles(ordered, n=4)
    print()
    print(
        f"latest {LATEST}, {TARGET_SHARDS} shards: async CPU / sync merged CPU, {len(ratios)} "
        "paired rounds (a ratio of two samples of 5 reads taken one after the other, the "
        "order turned each round)"
    )
    print(
        f"  median {statistics.median(ordered):.3f}, quartiles {quartiles[0]:.3f}-"
        f"{quartiles[2]:.3f}, range {ordered[0]:.3f}-{ordered[-1]:.3f}"
    )


def _print_targets(by: dict[tuple[int | None, str], Sample], paired: Sequence[float]) -> None:
    single = by[(None, "single partition")]
    n = TARGET_SHARDS
    targets = [
        (f"latest 100, {n} shards: async CPU / sync merged CPU (paired median)",
         statistics.median(paired), 1.0),
        (f"latest 100, {n} shards: async CPU / plain PynamoDB single partition", by[(n, "async")]
         .cpu / single.cpu, 1.3),
        ("latest 100, 64 shards: async CPU / plain PynamoDB single partition", by[(64, "async")]
         .cpu / single.cpu, 3.0),
        ("latest 100, 64 shards: sync CPU / plain PynamoDB single partition", by[(64, "sync")]
         .cpu / single.cpu, 3.0),
    ]  # fmt: skip
    print()
    print("targets (for humans: a FAIL does not fail `make bench`)")
    width = max(len(t[0]) for t in targets)
    for text, measured, limit in targets:
        verdict = "PASS" if measured <= limit else "FAIL"
        print(f"  {text:<{width}} {measured:>6.2f}  (target ≤ {limit:g}) {verdict}")


# -- main -----------------------------------------------------------------------------


def main() -> None:
    """Run, print, and keep the output in ``OUTPUT`` (the performance page's async rows)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        _run()
    text = printed.getvalue()
    sys.stdout.write(text)
    OUTPUT.write_text(text, encoding="utf-8")


def _run() -> None:
    """Start dynalite, load each layout once, measure, print, stop dynalite."""
    started = time.perf_counter()
    load = os.getloadavg()[0]
    with ExitStack() as stack:
        url = stack.enter_context(dynalite_server(DYNALITE))
        relayed = stack.enter_context(delayed_endpoint(url, LATENCY))
        runner = stack.enter_context(asyncio.Runner())
        layouts = {n: _sharded_model(n) for n in SHARDS}
        models: list[type[Model]] = [Single, *layouts.values()]
        bind_models(models, host=url, **CREDENTIALS)
        create_tables(models)
        _load_all([(Single, KEY, ITEMS), *((m, KEY, ITEMS) for m in layouts.values())])
        loaded = time.perf_counter() - started
        bind_models(models, host=relayed, **CREDENTIALS)  # every read measured crosses it
        wire = _Wire(LATENCY)  # counts only: the relay holds the requests
        for model in models:
            wire.attach(model, sleeps=False)

        variants: list[tuple[int | None, str, Timed]] = [
            (None, "single partition", _timed(_sync(Single)))
        ]
        for n, model in layouts.items():
            variants += [(n, "sync", _timed(_sync(model))), (n, "async", _async(runner, model))]
            if n in (TARGET_SHARDS, 64):
                variants.append((n, "sync on threads", _timed(_sync_threads(model))))
            if n == TARGET_SHARDS:
                variants.append((n, "sync in to_thread", _to_thread(runner, model)))
                variants.append((n, "loop per read", _loop_per_read(runner, model)))
        rows = _measure(wire, variants)
        target = layouts[TARGET_SHARDS]
        paired = _paired(wire, _timed(_sync(target)), _async(runner, target))
        slept = _slept_rows(url, runner)
        concurrency = _concurrency(wire, runner, layouts[TARGET_SHARDS])
        bridge = _bridge(runner)

        here = "this tree"
        trees: list[tuple[str, Path]] = [(here, ROOT)]
        base = _base_tree(stack)
        if base is not None:
            trees.append((f"base {base[0]}", base[1]))
        fresh = _fresh_runs(url, trees)

    print(
        f"async vs sync on dynalite, a {LATENCY * 1e3:g} ms round trip on the wire (a relay "
        f"holds every request), {ITEMS:,} items of one key per layout, "
        f"a sample the mean of {READS} reads, the median of {REPEATS} interleaved rounds after "
        "a warm-up round; the async reads on one event loop kept for the run, timed inside "
        "the running loop (loop per read: around runner.run, the loop started and stopped)"
    )
    by = _print_curve(rows, CURVE_TITLE)
    _print_curve(slept, SLEPT_TITLE)
    _print_concurrency(*concurrency)
    _print_bridge(bridge)
    _print_fresh(fresh, here)
    _print_paired(paired)
    _print_targets(by, paired)
    total = time.perf_counter() - started
    print(
        f"\naio bench: {total:.0f} s ({loaded:.0f} s starting dynalite and loading data); "
        f"1-minute load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end "
        f"on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
