"""The merged query against the ways people read a sharded key today, same run, same data.

Runs against dynalite (started here on loopback, in memory) with a round trip injected
into every request, for 1, 4, 16 and 64 random shards holding 10,000 items of one
logical key. Compares, per workload (the newest 100; all 10,000):

* ``merged``: ``ShardedModel.query`` of the logical key (its shard requests on the lean
  path, :mod:`shardmodel.lean`);
* ``merged, botocore``: the same at 16 shards with ``Meta.lean_requests = False``;
* ``single partition``: plain PynamoDB ``Model.query`` of one unsharded key holding
  the same items, on botocore (what a user runs unsharded: the ``/plain`` ratios);
* ``single, fast parse``: the same, its client's responses parsed by
  ``shardmodel.lean.fastparse`` as the merged query's are (not a baseline of any target: it
  separates the parser's saving from the rest);
* ``single, lean``: the same query on the merged query's request path: the model's
  table connection is :func:`shardmodel.lean.table_connection`'s, so the request goes
  through :class:`~shardmodel.lean.LeanClient` and is parsed by ``fastparse`` (the
  ``/lean`` ratios: the cost of sharding itself, not of botocore);
* ``sequential + sort``: plain PynamoDB queries of each physical key ``key#i`` one
  after another on botocore, then a sort (the public guides' way);
* ``thread pool + sort``: the same per-shard queries on a thread pool, then a sort;
* ``sequential + sort, lean`` and ``thread pool + sort, lean``: the same two loops on
  the lean request path.

Every variant is timed alike: a warm-up run each, then rounds that run every variant
once in turn (A B C, A B C, ...), the median of each; the thread pools are built once
per layout and reused, as the merged query reuses its shared worker threads.

Also measures, on the same dynalite, the harness floor (``benchmarks/request_floor.py``:
16 bare 13-item queries at once on the lean client against one 100-item query) and the
client CPU of one 13-item shard query, which two of the targets are against. Also
streams 100,000 items of one key from 16 shards and from one partition under
tracemalloc, for the peak Python heap of each. Requests and items read are counted by a
botocore ``after-call`` hook on every client, the same way for every variant. Prints one
table per workload and the merged query's targets with PASS or FAIL; a FAIL does not fail
the run, an error does. Every ratio target is printed twice: against what a user would
run instead (plain PynamoDB on botocore) and against the same request path (plain
PynamoDB on the lean path). Data is loaded once, without the injected latency.
"""

from __future__ import annotations

import gc
import inspect
import os
import random
import statistics
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, NamedTuple, cast

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from benchmarks import request_floor
from shardmodel import RandomShards, ShardedKeyAttribute, ShardedModel
from shardmodel.lean import LeanClient, nonblocking, table_connection
from shardmodel.lean.fastparse import parse_body
from shardmodel.testing import bind_models, create_tables, dynalite_server

ROOT = Path(__file__).resolve().parents[1]
DYNALITE = ROOT / "node_modules" / ".bin" / "dynalite"
CREDENTIALS = {
    "region": "us-east-1",
    "aws_access_key_id": "testing",
    "aws_secret_access_key": "testing",
}

SHARDS = (1, 4, 16, 64)
TARGET_SHARDS = 16
ITEMS = 10_000
STREAM_ITEMS = 100_000
LATEST = 100
REPEATS = 5
MEMORY_REPEATS = 1  # tracemalloc slows a stream ~2x; peaks vary by about 10% run to run
LATENCY = 0.005  # seconds slept before every request: a same-region round trip
DEFAULT_POOL = 10  # PynamoDB's max_pool_connections when a model's Meta sets none
KEY = "hot"
STREAM_KEY = "stream"
EPOCH = 1_700_000_000


# -- models ---------------------------------------------------------------------------


class Single(Model):
    """The unsharded baseline: every item under one partition key."""

    class Meta:
        table_name = "bench-query-single"
        region = "us-east-1"

    pk = UnicodeAttribute(hash_key=True)
    ts = NumberAttribute(range_key=True)
    body = UnicodeAttribute()


class SingleFastParse(Model):
    """The same single partition through its own client, parsed by shardmodel.lean.fastparse.

    Not a target's baseline: it shows how much of the merged query's lower CPU per item
    is the faster parsing and how much is the merge's own cost.
    """

    class Meta:
        table_name = "bench-query-single"
        region = "us-east-1"

    pk = UnicodeAttribute(hash_key=True)
    ts = NumberAttribute(range_key=True)
    body = UnicodeAttribute()


class SingleLean(Model):
    """The same single partition on the merged query's request path (see ``_lean_path``).

    The same-path baseline: what reading one unsharded key costs on the client the merged
    query's shard requests use, so a ratio against it is the cost of sharding itself.
    """

    class Meta:
        table_name = "bench-query-single"
        region = "us-east-1"

    pk = UnicodeAttribute(hash_key=True)
    ts = NumberAttribute(range_key=True)
    body = UnicodeAttribute()


def _lean_path(model: type[Model]) -> None:
    """Send a plain PynamoDB model's reads down shardmodel's lean request path.

    PynamoDB hands every call the ``TableConnection`` it caches in ``_connection``; the
    lean copy of it (:func:`shardmodel.lean.table_connection`, what the merged query
    sends its shard requests through) runs PynamoDB's own ``query`` over
    :class:`~shardmodel.lean.LeanClient`, which parses with ``shardmodel.lean.fastparse``.
    Call after binding the model and attaching the wire to its botocore client.
    """
    lean = table_connection(model)
    client = lean.connection.client
    if not isinstance(client, LeanClient):
        raise RuntimeError(f"{model.__name__}: the lean path refused this client ({client!r})")
    model._connection = lean


def _meta(table: str, **settings: Any) -> type:
    return type("Meta", (), {"table_name": table, "region": "us-east-1", **settings})


def _sharded_model(shards: int, lean: bool = True) -> type[ShardedModel]:
    """A model of ``shards`` random shards, on its own table, with a seeded shard picker.

    ``lean=False``: the same table read through botocore (``Meta.lean_requests = False``).
    """
    strategy = RandomShards(shards)
    settings = {} if lean else {"lean_requests": False}
    namespace = {
        "Meta": _meta(f"bench-query-shards-{shards}", **settings),
        "pk": ShardedKeyAttribute(hash_key=True, strategy=strategy, rng=random.Random(shards)),
        "ts": NumberAttribute(range_key=True),
        "body": UnicodeAttribute(),
    }
    name = f"Sharded{shards}" if lean else f"Sharded{shards}Botocore"
    return cast(type[ShardedModel], type(name, (ShardedModel,), namespace))


def _pool(model: type[Model]) -> int:
    """The model's connection pool size: the most threads that never wait for a socket."""
    return int(getattr(model.Meta, "max_pool_connections", DEFAULT_POOL) or DEFAULT_POOL)


def _plain_model(sharded: type[ShardedModel], lean: bool = False) -> type[Model]:
    """A plain PynamoDB model over a sharded model's table (physical keys), same pool size.

    ``lean=True``: its own class (so its own client), to be put on the lean path.
    """
    namespace = {
        "Meta": _meta(sharded.Meta.table_name, max_pool_connections=_pool(sharded)),
        "pk": UnicodeAttribute(hash_key=True),
        "ts": NumberAttribute(range_key=True),
        "body": UnicodeAttribute(),
    }
    name = f"Plain{'Lean' if lean else ''}{sharded.__name__}"
    return cast(type[Model], type(name, (Model,), namespace))


class _Layout(NamedTuple):
    shards: int
    sharded: type[ShardedModel]
    plain: type[Model]  # plain PynamoDB on botocore: the guides' loops
    plain_lean: type[Model]  # plain PynamoDB on the lean path: the same loops, same path
    threads: int  # for the merged query (when it takes parallelism) and the thread pools
    pool: ThreadPoolExecutor  # the botocore thread pool's, built once and reused
    lean_pool: ThreadPoolExecutor  # the lean thread pool's, likewise
    botocore: type[ShardedModel] | None = None  # the same reads on botocore's path


# -- the wire: injected latency and uniform counting ----------------------------------


class _Wire:
    """botocore hooks on each model's client: injected latency and uniform counting.

    While ``delayed``, every request sleeps ``latency`` seconds before it is sent (in its
    own thread, like a round trip). Every Query response adds one request and its
    ``Count`` items read, whichever code sent it.
    """

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.delaying = False
        self.requests = 0
        self.items_read = 0
        self._lock = threading.Lock()
        self._clients: set[int] = set()

    def attach(self, model: type[Model], sleeps: bool = True) -> None:
        """Count the model's requests; ``sleeps``: also sleep them while ``delayed``."""
        # building the client here, once: a cold model hit by many threads builds one each
        client = model._get_connection().connection.client
        if id(client) in self._clients:
            return
        self._clients.add(id(client))
        if sleeps:
            client.meta.events.register("before-send.dynamodb.*", self._delay)
        client.meta.events.register("after-call.dynamodb.Query", self._count)

    def reset(self) -> None:
        with self._lock:
            self.requests = 0
            self.items_read = 0

    def _delay(self, **kwargs: Any) -> None:
        if self.delaying:
            time.sleep(self.latency)
        # returning None lets botocore send the request

    @nonblocking  # a lock and a sum: a sync read's shard requests may share a loop
    def _count(self, parsed: dict[str, Any], **kwargs: Any) -> None:
        with self._lock:
            self.requests += 1
            self.items_read += int(parsed.get("Count", 0))

    @contextmanager
    def delayed(self) -> Iterator[None]:
        self.delaying = True
        try:
            yield
        finally:
            self.delaying = False


# -- loading --------------------------------------------------------------------------


def _body(n: int) -> str:
    return f"event-{n:07d}-" + "x" * 48  # with the keys, about 100 bytes an item


def _load(model: type[Model], key: str, count: int) -> None:
    """Write ``count`` items of one (logical) key, 25 per BatchWriteItem."""
    with model.batch_write() as batch:
        for n in range(count):
            batch.save(model(key, EPOCH + n, body=_body(n)))


def _load_all(jobs: Sequence[tuple[type[Model], str, int]]) -> None:
    """Load on two threads: one serializes while the other waits for dynalite."""
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="bench-load") as pool:
        for future in [pool.submit(_load, *job) for job in jobs]:
            future.result()
    for model, key, count in jobs:
        found = model.count(key)
        if found != count:
            raise RuntimeError(f"{model.__name__}: loaded {found} items of {key!r}, not {count}")


# -- the variants ---------------------------------------------------------------------

Run = Callable[[], list[int]]


def _merged_kwargs(model: type[Model], threads: int) -> dict[str, Any]:
    """``parallelism=threads`` when this version of ``query`` takes it, else nothing."""
    if "parallelism" in inspect.signature(model.query).parameters:
        return {"parallelism": threads}
    return {}


def _merged(
    layout: _Layout, limit: int | None, forward: bool, model: type[Model] | None = None
) -> Run:
    model = model or layout.sharded
    extra = _merged_kwargs(model, layout.threads)

    def run() -> list[int]:
        items = model.query(KEY, scan_index_forward=forward, limit=limit, **extra)
        return [_ts(item) for item in items]

    return run


def _single(limit: int | None, forward: bool, model: type[Model] = Single) -> Run:
    def run() -> list[int]:
        query = model.query(KEY, scan_index_forward=forward, limit=limit)
        return [_ts(item) for item in query]

    return run


def _parse_fast(client: Any) -> None:
    """Parse this (the benchmark's own) client's 2xx Query responses with the lean path's
    parser: a ``before-parse`` hook hands botocore the result and an empty body."""

    def before_parse(
        operation_model: Any,
        response_dict: dict[str, Any],
        customized_response_dict: dict[str, Any],
        **kwargs: Any,
    ) -> None:
        body = response_dict.get("body")
        if not 200 <= response_dict.get("status_code", 0) < 300 or not body:
            return
        parsed = parse_body(operation_model.output_shape, body)
        if parsed is not None:
            customized_response_dict.update(parsed)
            response_dict["body"] = b""

    client.meta.events.register("before-parse.dynamodb.Query", before_parse)


def _ts(item: Model) -> int:
    """The sort key of any bench model's item (the models are built at run time)."""
    return int(item.attribute_values["ts"])


def _one_shard(plain: type[Model], key: str, limit: int | None, forward: bool) -> list[Model]:
    return list(plain.query(key, scan_index_forward=forward, limit=limit))


def _sorted_cut(items: Iterable[Model], limit: int | None, forward: bool) -> list[int]:
    ordered = sorted(items, key=_ts, reverse=not forward)
    return [_ts(item) for item in ordered[:limit]]


def _sequential(shards: int, plain: type[Model], limit: int | None, forward: bool) -> Run:
    keys = [f"{KEY}#{i}" for i in range(shards)]

    def run() -> list[int]:
        items: list[Model] = []
        for key in keys:
            items.extend(_one_shard(plain, key, limit, forward))
        return _sorted_cut(items, limit, forward)

    return run


def _thread_pool(
    shards: int, plain: type[Model], pool: ThreadPoolExecutor, limit: int | None, forward: bool
) -> Run:
    """The per-shard queries on ``pool``: built once per layout, its threads kept warm."""
    keys = [f"{KEY}#{i}" for i in range(shards)]

    def one(key: str) -> list[Model]:
        return _one_shard(plain, key, limit, forward)

    def run() -> list[int]:
        items = [item for page in pool.map(one, keys) for item in page]
        return _sorted_cut(items, limit, forward)

    return run


# -- measuring ------------------------------------------------------------------------


class Sample(NamedTuple):
    wall: float  # seconds
    cpu: float  # process CPU seconds, all threads
    requests: int
    items_read: int
    returned: int


class Row(NamedTuple):
    shards: int | None  # None: the single-partition baseline
    variant: str
    sample: Sample


def _once(wire: _Wire, run: Run, expected: list[int]) -> Sample:
    gc.collect()  # the previous variant's garbage is not this one's cost
    wire.reset()
    wall, cpu = time.perf_counter(), time.process_time()
    got = run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if got != expected:
        raise RuntimeError(
            f"wrong result: {len(got)} items {got[:3]}..., expected {len(expected)} "
            f"items {expected[:3]}..."
        )
    return Sample(wall, cpu, wire.requests, wire.items_read, len(got))


def _median(samples: Sequence[Sample]) -> Sample:
    return Sample(
        wall=statistics.median(s.wall for s in samples),
        cpu=statistics.median(s.cpu for s in samples),
        requests=round(statistics.median(s.requests for s in samples)),
        items_read=round(statistics.median(s.items_read for s in samples)),
        returned=samples[0].returned,
    )


def _measure(
    wire: _Wire, variants: Sequence[tuple[int | None, str, Run]], expected: list[int]
) -> list[Row]:
    """Median of REPEATS runs of each variant, repeats interleaved so drift hits all alike."""
    samples: list[list[Sample]] = [[] for _ in variants]
    with wire.delayed():
        for _, _, run in variants:
            _once(wire, run, expected)  # warm: connections, caches, dynalite's JIT
        for _ in range(REPEATS):
            for found, (_, _, run) in zip(samples, variants, strict=True):
                found.append(_once(wire, run, expected))
    return [
        Row(shards, name, _median(found))
        for found, (shards, name, _) in zip(samples, variants, strict=True)
    ]


def _variants(
    layouts: Sequence[_Layout], limit: int | None, forward: bool
) -> list[tuple[int | None, str, Run]]:
    found: list[tuple[int | None, str, Run]] = [
        (None, "single partition", _single(limit, forward)),
        (None, "single, fast parse", _single(limit, forward, SingleFastParse)),
        (None, "single, lean", _single(limit, forward, SingleLean)),
    ]
    for layout in layouts:
        n = layout.shards
        found.append((n, "merged", _merged(layout, limit, forward)))
        if layout.botocore is not None:
            botocore = _merged(layout, limit, forward, layout.botocore)
            found.append((n, "merged, botocore", botocore))
        found += [
            (n, "sequential + sort", _sequential(n, layout.plain, limit, forward)),
            (n, "thread pool + sort", _thread_pool(n, layout.plain, layout.pool, limit, forward)),
            (n, "sequential + sort, lean", _sequential(n, layout.plain_lean, limit, forward)),
            (
                n,
                "thread pool + sort, lean",
                _thread_pool(n, layout.plain_lean, layout.lean_pool, limit, forward),
            ),
        ]
    return found


def _stream_once(wire: _Wire, model: type[Model], extra: dict[str, Any]) -> tuple[int, Sample]:
    """The tracemalloc peak (bytes, all threads) while streaming STREAM_KEY, and a sample."""
    gc.collect()
    wire.reset()
    tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    count, previous = 0, -1
    for item in model.query(STREAM_KEY, **extra):
        ts = _ts(item)
        if ts <= previous:
            raise RuntimeError(f"{model.__name__}: out of order at item {count}")
        previous = ts
        count += 1
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    if count != STREAM_ITEMS:
        raise RuntimeError(f"{model.__name__}: streamed {count}, not {STREAM_ITEMS}")
    return peak, Sample(wall, cpu, wire.requests, wire.items_read, count)


def _peak_memory(
    wire: _Wire, streams: Sequence[tuple[type[Model], dict[str, Any]]], runs: int
) -> list[tuple[int, Sample]]:
    """Per stream, the median tracemalloc peak and sample of ``runs`` interleaved runs.

    Every model streamed here has already run its latency rounds: clients, sockets and
    parsers are warm, so no peak holds a first request's set-up.
    """
    found: list[list[tuple[int, Sample]]] = [[] for _ in streams]
    with wire.delayed():
        for _ in range(runs):
            for runs_of, (model, extra) in zip(found, streams, strict=True):
                runs_of.append(_stream_once(wire, model, extra))
    return [
        (round(statistics.median(peak for peak, _ in runs_of)), _median([s for _, s in runs_of]))
        for runs_of in found
    ]


# -- printing -------------------------------------------------------------------------

PLAIN = "single partition"  # plain PynamoDB on botocore: what a user runs unsharded
LEAN = "single, lean"  # the same on the merged query's request path


def _print_table(title: str, rows: Sequence[Row]) -> None:
    plain, lean = _find(rows, None, PLAIN), _find(rows, None, LEAN)
    print()
    print(title)
    header = (
        f"{'shards':>6}  {'variant':<26}{'wall ms':>9}{'/plain':>7}{'/lean':>7}{'CPU ms':>9}"
        f"{'/plain':>7}{'/lean':>7}{'CPU µs/item':>12}{'requests':>9}{'items read':>11}"
        f"{'returned':>9}{'read/ret':>9}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        s = row.sample
        shards = "-" if row.shards is None else str(row.shards)
        print(
            f"{shards:>6}  {row.variant:<26}{s.wall * 1e3:>9.1f}{s.wall / plain.wall:>7.2f}"
            f"{s.wall / lean.wall:>7.2f}{s.cpu * 1e3:>9.1f}{s.cpu / plain.cpu:>7.2f}"
            f"{s.cpu / lean.cpu:>7.2f}{s.cpu / s.returned * 1e6:>12.1f}{s.requests:>9}"
            f"{s.items_read:>11}{s.returned:>9}{s.items_read / s.returned:>9.2f}"
        )


def _find(rows: Sequence[Row], shards: int | None, variant: str) -> Sample:
    for row in rows:
        if row.shards == shards and row.variant == variant:
            return row.sample
    raise LookupError(f"no row for {variant} at {shards} shards")


class Target(NamedTuple):
    text: str  # names what is measured and the baseline it is measured against
    measured: float
    limit: float
    at_most: bool  # True: measured <= limit passes; False: measured >= limit passes

    @property
    def passed(self) -> bool:
        return self.measured <= self.limit if self.at_most else self.measured >= self.limit


#: How the two baselines of every ratio target are named in its line.
USER = "plain PynamoDB single partition (botocore)"
SAME = "lean single partition (same path)"


def _targets(
    latest: Sequence[Row],
    full: Sequence[Row],
    memory: dict[str, int],
    floor: float,
    shard_cpu: float,
) -> list[Target]:
    """Each ratio target against what a user runs instead, then against the same path."""
    n = TARGET_SHARDS
    l_merged = _find(latest, n, "merged")
    l_plain, l_lean = _find(latest, None, PLAIN), _find(latest, None, LEAN)
    l_seq, l_seq_lean = (
        _find(latest, n, "sequential + sort"),
        _find(latest, n, "sequential + sort, lean"),
    )
    f_merged = _find(full, n, "merged")
    f_plain, f_lean = _find(full, None, PLAIN), _find(full, None, LEAN)

    def per_item(s: Sample) -> float:
        return s.cpu / s.returned

    return [
        Target(
            f"latest 100: merged / {USER}, over the floor",
            (l_merged.wall / l_plain.wall) / floor,
            1.2,
            True,
        ),
        Target(
            f"latest 100: merged / {SAME}, over the floor",
            (l_merged.wall / l_lean.wall) / floor,
            1.2,
            True,
        ),
        Target(
            "latest 100: plain PynamoDB sequential loop (botocore) / merged wall",
            l_seq.wall / l_merged.wall,
            8,
            False,
        ),
        Target(
            "latest 100: lean sequential loop (same path) / merged wall",
            l_seq_lean.wall / l_merged.wall,
            6,
            False,
        ),
        Target(f"latest 100: merged CPU / {USER}", l_merged.cpu / l_plain.cpu, 2, True),
        Target(f"latest 100: merged CPU / {SAME}", l_merged.cpu / l_lean.cpu, 3, True),
        Target(
            "latest 100: items read / items returned (no baseline)",
            l_merged.items_read / l_merged.returned,
            2,
            True,
        ),
        Target(f"read all: merged wall / {USER}", f_merged.wall / f_plain.wall, 1.25, True),
        Target(f"read all: merged wall / {SAME}", f_merged.wall / f_lean.wall, 1.25, True),
        Target(
            f"read all: merged CPU per item / {USER}",
            per_item(f_merged) / per_item(f_plain),
            1.15,
            True,
        ),
        Target(
            f"read all: merged CPU per item / {SAME}",
            per_item(f_merged) / per_item(f_lean),
            1.15,
            True,
        ),
        Target(
            f"stream {STREAM_ITEMS:,}: merged peak memory / {USER}",
            memory["merged"] / memory[PLAIN],
            2,
            True,
        ),
        Target(
            f"stream {STREAM_ITEMS:,}: merged peak memory / {SAME}",
            memory["merged"] / memory[LEAN],
            2,
            True,
        ),
        Target(
            "one 13-item shard query: client CPU, ms (absolute, no baseline)",
            shard_cpu * 1e3,
            0.25,
            True,
        ),
    ]


def _print_memory(rows: Sequence[tuple[int | None, str, tuple[int, Sample]]]) -> None:
    print()
    print(
        f"stream {STREAM_ITEMS:,} items (no limit, ascending), tracemalloc peak of the Python "
        f"heap (all threads), median of {MEMORY_REPEATS} run(s), variants in turn"
    )
    header = (
        f"{'shards':>6}  {'variant':<26}{'peak MiB':>9}{'/plain':>7}{'/lean':>7}{'wall ms':>9}"
        f"{'requests':>9}{'items read':>11}"
    )
    print(header)
    print("-" * len(header))
    peaks = {name: peak for _, name, (peak, _) in rows}
    for shards, name, (peak, s) in rows:
        where = "-" if shards is None else str(shards)
        print(
            f"{where:>6}  {name:<26}{peak / 2**20:>9.1f}{peak / peaks[PLAIN]:>7.2f}"
            f"{peak / peaks[LEAN]:>7.2f}{s.wall * 1e3:>9.0f}{s.requests:>9}{s.items_read:>11}"
        )
    print("(wall times under tracemalloc are slowed by it; compare them only with each other)")


def _print_floor(latest: Sequence[Row], ratios: dict[str, tuple[float, float]]) -> float:
    """Print the harness floor (lean path, no mapper) and the merged read against it."""
    print()
    request_floor.print_floor(ratios)
    one, many = ratios["lean"]
    floor = many / one
    merged = _find(latest, TARGET_SHARDS, "merged").wall
    plain, lean = _find(latest, None, PLAIN).wall, _find(latest, None, LEAN).wall
    print(
        f"harness floor (lean, 16 x 13 vs 1 x 100): {floor:.2f}x; latest 100 merged / "
        f"{USER}: {merged / plain:.2f}x, / {SAME}: {merged / lean:.2f}x; "
        f"merged / 16 bare lean queries: {merged / many:.2f}x"
    )
    return floor


def _print_targets(targets: Sequence[Target]) -> None:
    print()
    print(
        f"targets at {TARGET_SHARDS} shards (for humans: a FAIL does not fail `make bench`); "
        "each ratio against what a user runs instead, then against the same request path"
    )
    width = max(len(t.text) for t in targets)
    for t in targets:
        bound = f"{'≤' if t.at_most else '≥'} {t.limit:g}"
        verdict = "PASS" if t.passed else "FAIL"
        print(f"  {t.text:<{width}} {t.measured:>7.2f}  (target {bound:<6}) {verdict}")


# -- main -----------------------------------------------------------------------------


def main() -> None:
    """Start dynalite, load every layout once, measure, print, stop dynalite."""
    started = time.perf_counter()
    load = os.getloadavg()[0]
    with ExitStack() as pools, dynalite_server(DYNALITE) as url:
        layouts = []
        for shards in SHARDS:
            sharded = _sharded_model(shards)
            workers = min(shards, _pool(sharded))
            pool, lean_pool = (
                pools.enter_context(ThreadPoolExecutor(workers, thread_name_prefix=f"bench-{name}"))
                for name in ("pool", "lean-pool")
            )
            botocore = _sharded_model(shards, lean=False) if shards == TARGET_SHARDS else None
            plain, plain_lean = _plain_model(sharded), _plain_model(sharded, lean=True)
            layouts.append(
                _Layout(shards, sharded, plain, plain_lean, workers, pool, lean_pool, botocore)
            )
        stream = next(layout for layout in layouts if layout.shards == TARGET_SHARDS)
        stream_model = stream.sharded
        stream_kwargs = _merged_kwargs(stream_model, stream.threads)
        models: list[type[Model]] = [Single, SingleFastParse, SingleLean]
        for layout in layouts:
            models += [layout.sharded, layout.plain, layout.plain_lean]
            if layout.botocore is not None:
                models.append(layout.botocore)
        wire = _Wire(LATENCY)
        bind_models(models, host=url, **CREDENTIALS)
        create_tables([Single, *(layout.sharded for layout in layouts)])
        for model in models:
            wire.attach(model)
        _parse_fast(SingleFastParse._get_connection().connection.client)
        lean_models: list[type[Model]] = [SingleLean, *(layout.plain_lean for layout in layouts)]
        for lean in lean_models:
            _lean_path(lean)
        jobs: list[tuple[type[Model], str, int]] = [
            (Single, STREAM_KEY, STREAM_ITEMS),
            (stream_model, STREAM_KEY, STREAM_ITEMS),
            (Single, KEY, ITEMS),
            *((layout.sharded, KEY, ITEMS) for layout in layouts),
        ]
        _load_all(jobs)
        loaded = time.perf_counter() - started

        newest = [EPOCH + n for n in range(ITEMS - 1, ITEMS - 1 - LATEST, -1)]
        latest = _measure(wire, _variants(layouts, LATEST, forward=False), newest)
        everything = [EPOCH + n for n in range(ITEMS)]
        full = _measure(wire, _variants(layouts, None, forward=True), everything)
        streams: list[tuple[int | None, str, type[Model], dict[str, Any]]] = [
            (None, PLAIN, Single, {}),
            (None, LEAN, SingleLean, {}),
            (TARGET_SHARDS, "merged", stream_model, stream_kwargs),
        ]
        peaks = _peak_memory(wire, [(model, kw) for _, _, model, kw in streams], MEMORY_REPEATS)
        ratios = request_floor.fan_out_ratios(url)  # the harness floor, same server and run
        cpu = request_floor.cpu_per_request(url)

    threads = ", ".join(f"{layout.threads} for {layout.shards}" for layout in layouts)
    merged = (
        "the same, as parallelism=" if stream_kwargs else "its own (query() has no parallelism)"
    )
    print(
        f"merged query on dynalite, {LATENCY * 1e3:g} ms slept before every request, "
        f"{ITEMS:,} items of one key, median of {REPEATS} interleaved rounds after a warm-up "
        f"round\nthread pool threads (the smaller of shards and the sharded model's "
        f"max_pool_connections; one pool per layout and path, reused): {threads} shards; "
        f"merged query's threads: {merged}\n"
        f"/plain: against plain PynamoDB's single partition on botocore (what a user runs "
        f"unsharded); /lean: against the same on the lean request path (the cost of sharding)"
    )
    _print_table(f"latest {LATEST} (limit={LATEST}, scan_index_forward=False): ratios", latest)
    _print_table(f"read all {ITEMS:,} (ascending): ratios", full)
    memory_rows = [
        (shards, name, peak) for (shards, name, _, _), peak in zip(streams, peaks, strict=True)
    ]
    _print_memory(memory_rows)
    floor = _print_floor(latest, ratios)
    request_floor.print_cpu(cpu)
    shard_cpu = cpu["merged query's shard path"]
    memory = {name: peak for _, name, (peak, _) in memory_rows}
    _print_targets(_targets(latest, full, memory, floor, shard_cpu))
    total = time.perf_counter() - started
    print(
        f"\nquery bench: {total:.0f} s ({loaded:.0f} s starting dynalite and loading data); "
        f"1-minute load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end "
        f"on {os.cpu_count()} CPUs (other processes make the times noisier)"
    )


if __name__ == "__main__":
    main()
