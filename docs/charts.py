"""Draw the docs' pictures from the code they describe, so they cannot drift from it.

``python docs/charts.py [outdir]`` (the Sphinx build runs it into ``docs/_generated``):

* ``flash_sale.png``: the flash sale of ``examples/hot_key_growth.py`` on the capacity
  simulator, its shard count and throttled requests over simulated time;
* ``key_format.png``: physical keys that shardmodel itself writes for five layouts,
  drawn as the items of a table;
* ``burst.png``: ``make demo``'s burst (:mod:`shardmodel.hot_key_burst`), throttled
  attempts and lost writes of one hot key unsharded, sharded and dynamic;
* ``ordered.png``: ``examples/ordered_albums.py``'s titles per ordered shard and per
  overflow sub-shard;
* ``herd.png``: ``examples/herd.py``'s top-of-the-hour burst, all at once and spread;
* ``timeseries.png``: the hybrid time-series layout as ``examples/timeseries.py``'s model
  stores it;
* ``migration_phases.png``: the phases of an online layout change, what writes, reads
  and the jobs do in each (from the library's phase rules);
* ``query_latest_100.png`` and ``query_read_all.png``: wall time, requests and items read
  against shard count, parsed from ``benchmarks/last_run.txt``, the output of the last
  ``make bench`` (which rewrites that file);
* ``async_cost_curve.png``: requests, wall and client CPU of the latest 100 against shard
  count, sync and async, over one partition's, parsed from ``benchmarks/aio_last_run.txt``
  (``benchmarks/aio_bench.py`` rewrites it; ``make bench`` runs that).

matplotlib comes with the ``docs`` and ``dev`` extras; shardmodel never needs it to run.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: The docs' content column at a 1280 px window (px), and the body text's size (px): a
#: figure is shown at the column's width, so one drawn ``WIDTH_IN`` inches wide needs
#: text of ``TEXT_PT`` points or more to read at least as large as the text around it.
COLUMN_PX = 736
BODY_PX = 16
WIDTH_IN = 7.2
TEXT_PT = 11.5
TITLE_PT = 13.0


def _save(fig: Any, path: Path) -> None:
    """Lay out and write a figure, refusing one whose text would read smaller than the
    page's body text at the content column's width (a figure is drawn for that width)."""
    from matplotlib.text import Text

    fig.tight_layout()
    width = fig.get_figwidth()
    smallest = BODY_PX * 72 / COLUMN_PX * width
    for text in fig.findobj(Text):
        if text.get_visible() and text.get_text().strip() and text.get_fontsize() < smallest:
            raise ValueError(
                f"{path.name}: {text.get_text()!r} at {text.get_fontsize():.1f} pt would read "
                f"below the body text in a figure {width:.1f} in wide (at least "
                f"{smallest:.1f} pt)"
            )
    fig.savefig(path)


def _example(name: str) -> ModuleType:
    """Import a script of examples/ as a module (its models and clock, not its main)."""
    spec = importlib.util.spec_from_file_location(f"_example_{name}", ROOT / "examples" / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def flash_sale_timeline(step: float = 0.25) -> dict[str, list[float]]:
    """Run the example's flash sale as it runs; count throttles per ``step`` seconds.

    The load is the example's own (250 orders a second for 4 s, 8 writer threads); each
    throttle is counted at the simulated time of the attempt it refused. The shard count
    over time is the key's ``shard_history``, the times the example prints.
    """
    from shardmodel import sharding_of
    from shardmodel.testing import (
        CapacityLimits,
        CapacitySimulator,
        create_tables,
        mock_dynamodb,
        run_load,
    )

    example = _example("hot_key_growth.py")
    orders, clock = example.Orders, example.CLOCK
    start = clock.now()
    rate, seconds = 250, 4.0
    refused: list[float] = []
    with mock_dynamodb():
        create_tables([orders])
        simulator = CapacitySimulator(
            clock=clock, limits=CapacityLimits(partition_wcu=50), buffer_writes=True
        )
        count_throttles = simulator._count_throttles

        def counted(throttles: Any) -> None:
            throttles = list(throttles)
            refused.extend([clock.now() - start] * len(throttles))
            count_throttles(throttles)

        simulator._count_throttles = counted  # type: ignore[method-assign]
        directory = sharding_of(orders).directory
        assert directory is not None
        simulator.attach(orders, directory.table())

        def save(n: int) -> None:
            orders("flash-shop", n, item="t-shirt").save()

        with contextlib.redirect_stdout(io.StringIO()):  # the example prints changes
            run_load(clock, rate, seconds, save, threads=8)
        simulator.detach()
        metadata = orders.shard_metadata("flash-shop")
        assert metadata is not None
    slices = round(seconds / step)
    throttles = [0.0] * slices
    for at in refused:
        throttles[min(slices - 1, int(at / step))] += 1 / step
    changes = [(entry.epoch - start, entry.count) for entry in metadata.history]
    return {
        "t": [step * (n + 1) for n in range(slices)],
        "throttles": throttles,
        "change_t": [at for at, _ in changes],
        "change_shards": [float(count) for _, count in changes],
    }


def draw_flash_sale(path: Path) -> None:
    import matplotlib.pyplot as plt

    data = flash_sale_timeline()
    fig, shards_axis = plt.subplots(figsize=(WIDTH_IN, 4.4), dpi=120)
    throttle_axis = shards_axis.twinx()
    step = data["t"][1] - data["t"][0]
    throttle_axis.bar(
        [t - step / 2 for t in data["t"]],
        data["throttles"],
        width=step * 0.9,
        color="#f4a261",
        label="throttled attempts / s",
    )
    shards_axis.step(
        [*data["change_t"], data["t"][-1]],
        [*data["change_shards"], data["change_shards"][-1]],
        where="post",
        color="#264653",
        linewidth=2.5,
        label="shards of flash-shop (its shard_history)",
    )
    shards_axis.set_zorder(throttle_axis.get_zorder() + 1)
    shards_axis.patch.set_visible(False)
    shards_axis.set_xlabel("simulated seconds (250 orders/s offered,\n50 WCU/s per partition)")
    shards_axis.set_ylabel("shards", color="#264653")
    throttle_axis.set_ylabel("throttled attempts / s", color="#e76f51")
    shards_axis.set_ylim(0, max(data["change_shards"]) * 1.7)  # room for the legend
    throttle_axis.set_ylim(0, max(data["throttles"]) * 1.7)
    handles = [h for ax in (shards_axis, throttle_axis) for h in ax.get_legend_handles_labels()[0]]
    shards_axis.legend(handles=handles, loc="upper left", frameon=False)
    shards_axis.set_title(
        "DynamicShards grows a hot key\nuntil its throttles stop", fontsize=TITLE_PT
    )
    _save(fig, path)
    plt.close(fig)


def key_format_rows() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(layout, declaration, [(partition key, sort key)]) as shardmodel writes them."""
    import random
    from datetime import datetime, timezone

    from pynamodb.attributes import NumberAttribute, UnicodeAttribute, UTCDateTimeAttribute

    from shardmodel import (
        DynamicShards,
        HashShards,
        OrderedShards,
        RandomShards,
        ShardedKeyAttribute,
        ShardedModel,
        TimeBuckets,
    )
    from shardmodel.testing import create_tables, mock_dynamodb

    class Random(ShardedModel):
        class Meta:
            table_name = "chart-random"
            region = "us-east-1"

        user_id = ShardedKeyAttribute(
            hash_key=True, strategy=RandomShards(10), rng=random.Random(7)
        )
        timestamp = NumberAttribute(range_key=True)

    class Hashed(ShardedModel):
        class Meta:
            table_name = "chart-hashed"
            region = "us-east-1"

        path = ShardedKeyAttribute(
            hash_key=True,
            strategy=HashShards(10, on=["path", "timestamp"]),
            separator="_",
            first_shard=1,
        )
        timestamp = NumberAttribute(range_key=True)

    class Daily(ShardedModel):
        class Meta:
            table_name = "chart-daily"
            region = "us-east-1"

        tenant_id = ShardedKeyAttribute(
            hash_key=True,
            strategy=[TimeBuckets("created", "day"), RandomShards(5)],
            rng=random.Random(3),
        )
        created = UTCDateTimeAttribute(range_key=True)

    class Grown(ShardedModel):
        class Meta:
            table_name = "chart-dynamic"
            region = "us-east-1"

        shop = ShardedKeyAttribute(  # no reader cache: a growth takes effect at once
            hash_key=True,
            strategy=DynamicShards(jitter=0, reader_cache_seconds=0),
            rng=random.Random(5),
        )
        order_id = NumberAttribute(range_key=True)

    class Listed(ShardedModel):
        class Meta:
            table_name = "chart-ordered"
            region = "us-east-1"

        listing = ShardedKeyAttribute(
            hash_key=True, strategy=OrderedShards(["", "g", "p"], on="title")
        )
        title = UnicodeAttribute(range_key=True)

    rows: list[tuple[str, str, list[tuple[str, str]]]] = []
    hashed = 'HashShards(10,\n  on=["path", "timestamp"]),\nseparator="_", first_shard=1'
    daily = '[TimeBuckets("created", "day"),\n RandomShards(5)]'
    day = datetime(2024, 1, 15, 9, tzinfo=timezone.utc)
    with mock_dynamodb():
        create_tables([Random, Hashed, Daily])
        items: list[Any] = [
            Random(user_id="user-12345", timestamp=1700000000 + n) for n in (0, 1, 2)
        ]
        rows.append(("random suffix", "RandomShards(10)", _saved(items, "timestamp")))
        items = [Hashed(path="/shared/firetvGen2.txt", timestamp=1700000000 + n) for n in (0, 1, 2)]
        rows.append(("calculated suffix", hashed, _saved(items, "timestamp")))
        items = [Daily(tenant_id="tenant-456", created=day.replace(hour=9 + n)) for n in (0, 1, 2)]
        rows.append(("time bucket + suffix", daily, _saved(items, "created")))
        create_tables([Grown, Listed])
        Grown.grow_shards("shop-7", 4)  # as a growth on throttling would
        items = [Grown(shop="shop-7", order_id=n) for n in (1, 2, 3)]
        rows.append(("dynamic, grown to 4", "DynamicShards()", _saved(items, "order_id")))
        items = [Listed(listing="all", title=t) for t in ("abbey road", "kind of blue", "the wall")]
        ordered = 'OrderedShards(["", "g", "p"],\n  on="title")'
        rows.append(("ordered ranges", ordered, _saved(items, "title")))
    return rows


def _saved(items: list[Any], sort_key: str) -> list[tuple[str, str]]:
    out = []
    for item in items:
        item.save()
        value = getattr(item, sort_key)
        out.append(
            (
                item.get_physical_key(),
                value.strftime("%Y-%m-%dT%H:%M") if hasattr(value, "strftime") else str(value),
            )
        )
    return out


def draw_key_format(path: Path) -> None:
    import matplotlib.pyplot as plt

    rows = key_format_rows()
    fig, axes = plt.subplots(len(rows), 1, figsize=(WIDTH_IN, 2.3 * len(rows) + 0.6), dpi=120)
    for axis, (title, declaration, items) in zip(axes, rows, strict=True):
        axis.axis("off")
        table = axis.table(
            cellText=[[pk, sk] for pk, sk in items],
            colLabels=["partition key (stored)", "sort key"],
            colWidths=[0.6, 0.4],
            cellLoc="left",
            bbox=[0.0, 0.0, 1.0, 0.58],
        )
        table.auto_set_font_size(False)
        table.set_fontsize(TEXT_PT)
        for (row, _), cell in table.get_celld().items():
            cell.set_edgecolor("#bbbbbb")
            if row == 0:
                cell.set_facecolor("#e9f1f7")
                cell.set_text_props(weight="bold")
        one_line = " ".join(line.strip() for line in declaration.splitlines())
        axis.text(0.0, 0.97, title, weight="bold", fontsize=TEXT_PT, va="top",
                  transform=axis.transAxes)  # fmt: skip
        axis.text(0.0, 0.8, textwrap.fill(one_line, 62), family="monospace", fontsize=TEXT_PT,
                  va="top", transform=axis.transAxes)  # fmt: skip
    fig.suptitle("What shardmodel stores:\none logical key, several physical keys",
                 fontsize=TITLE_PT)  # fmt: skip
    _save(fig, path)
    plt.close(fig)


def draw_burst(path: Path) -> None:
    """``make demo``'s burst (:mod:`shardmodel.hot_key_burst`): throttles and lost writes."""
    import matplotlib.pyplot as plt

    from shardmodel.hot_key_burst import RATE, run_hot_key_burst

    runs = run_hot_key_burst()
    fig, axis = plt.subplots(figsize=(WIDTH_IN, 4.4), dpi=120)
    names = [f"{run.layout}\n{run.strategy}" for run in runs]
    places = range(len(runs))
    width = 0.38
    throttled = axis.bar(
        [p - width / 2 for p in places], [r.throttles for r in runs], width, color="#f4a261",
        label="throttled attempts",
    )  # fmt: skip
    lost = axis.bar(
        [p + width / 2 for p in places], [r.lost for r in runs], width, color="#e63946",
        label="lost writes",
    )  # fmt: skip
    axis.bar_label(throttled, fmt="{:,.0f}")
    axis.bar_label(lost, fmt="{:,.0f}")
    axis.set_xticks(list(places), names)
    axis.set_ylabel("count")
    axis.set_ylim(0, max(max(r.throttles, r.lost) for r in runs) * 1.15)
    axis.legend(frameon=False)
    axis.set_title(
        f"{runs[0].writes:,} writes to one key at {RATE:,}/s\non the capacity simulator",
        fontsize=TITLE_PT,
    )
    _save(fig, path)
    plt.close(fig)


def _writes(rules: Any) -> str:
    """Where a phase's writes go, in the words of the resharding page's table."""
    if rules.writes == "old":
        return "old key, unless fenced" if rules.fenced else "old key"
    return "new key, old fenced first" if rules.fence else "new key"


def migration_phases() -> list[tuple[str, str, str, str]]:
    """The phases of a layout change and what each does, for the migration figure:
    (phase, writes go to, reads cover, the job that runs in it), from the rules the
    library follows (:data:`shardmodel.keyspace.phases.RULES`) and its jobs."""
    from shardmodel.keyspace.phases import PHASES, RULES
    from shardmodel.migration.reshard import JOBS

    jobs = {
        "backfill": "move every item",
        "cleanup": "move what is left",
        "sweep": "sweep tombstones",
    }
    found = []
    for phase in PHASES:
        rules = RULES[phase]
        reads = "old + new" if len(rules.reads) > 1 else f"{rules.reads[0]} only"
        job = JOBS.get(phase)
        found.append((phase.value, _writes(rules), reads, jobs.get(job or "", job or "")))
    return found


def draw_migration(path: Path) -> None:
    """The phases of an online layout change, left to right: writes, reads and jobs."""
    import matplotlib.pyplot as plt

    colors = {"old": "#8ab17d", "new": "#2a9d8f", "both": "#e9c46a"}
    phases = migration_phases()
    # one phase a row, top to bottom in time: the text reads at the body size
    fig, axis = plt.subplots(figsize=(WIDTH_IN, 0.7 * len(phases) + 1.4), dpi=120)
    columns = (("writes go to", 1.55), ("reads cover", 1.2), ("job", 1.6))
    for number, (phase, writes, reads, job) in enumerate(phases):
        row = len(phases) - 1 - number
        cells = (
            (writes, colors["old"] if writes.startswith("old") else colors["new"]),
            (reads, colors["both"] if "+" in reads else colors["new"]),
            (job, "#f4a261" if job else "#f1f1f1"),
        )
        axis.text(-0.08, row + 0.45, phase, ha="right", va="center", fontsize=TEXT_PT,
                  weight="bold")  # fmt: skip
        left = 0.0
        for (text, color), (_, width) in zip(cells, columns, strict=True):
            axis.add_patch(plt.Rectangle((left, row), width - 0.04, 0.9, color=color))
            axis.text(left + (width - 0.04) / 2, row + 0.45, textwrap.fill(text, 16),
                      ha="center", va="center", fontsize=TEXT_PT)  # fmt: skip
            left += width
    left = 0.0
    for label, width in columns:
        axis.text(left + (width - 0.04) / 2, len(phases) + 0.15, label, ha="center",
                  va="bottom", fontsize=TEXT_PT, weight="bold")  # fmt: skip
        left += width
    axis.annotate("", xy=(left + 0.12, 0), xytext=(left + 0.12, len(phases)),
                  arrowprops={"arrowstyle": "->", "color": "#555555"})  # fmt: skip
    axis.text(left + 0.2, len(phases) / 2, "time: each phase after\nthe last has settled",
              rotation=270, ha="left", va="center", fontsize=TEXT_PT)  # fmt: skip
    axis.set_xlim(-1.35, left + 0.55)
    axis.set_ylim(-0.2, len(phases) + 0.8)
    axis.axis("off")
    axis.set_title("Changing a layout online: what writes,\nreads and jobs do in each phase",
                   fontsize=TITLE_PT)  # fmt: skip
    _save(fig, path)
    plt.close(fig)


def draw_ordered(path: Path) -> None:
    """``examples/ordered_albums.py``'s shards: ordered ranges, and the overflow's sub-shards."""
    import itertools
    from collections import Counter

    import matplotlib.pyplot as plt

    from shardmodel.keyspace.ordered import default_normalize
    from shardmodel.testing.titles import generate_titles

    example = _example("ordered_albums.py")
    strategy = example.STRATEGY
    titles = [default_normalize(t) for t in itertools.islice(generate_titles(5_000, seed=2), 5_000)]
    counts: Counter[int] = Counter()
    for title in titles:
        subs = strategy.sub_shards(title)
        if subs:  # an overflow value: spread over its sub-shards (counted evenly here)
            for sub in subs:
                counts[sub] += 1 / len(subs)
        else:
            counts[strategy.shard_of(title)] += 1
    shards = strategy.shard_count
    fig, axis = plt.subplots(figsize=(WIDTH_IN, 4.6), dpi=120)
    axis.bar(range(shards), [counts[n] for n in range(shards)], color="#2a9d8f",
             label="a range of titles (concatenated in order)")  # fmt: skip
    subs = list(range(shards, strategy.total_shards))
    axis.bar(subs, [counts[n] for n in subs], color="#e76f51",
             label='"greatest hits": overflow sub-shards (merged)')  # fmt: skip
    ticks = list(range(0, shards, 6))
    labels = [f"#{n}\n{strategy.boundaries[n][:4] or '(start)'!s}" for n in ticks]
    axis.set_xticks([*ticks, subs[0]], [*labels, f"#{subs[0]}-"])
    axis.set_ylim(0, max(counts.values()) * 1.6)
    axis.set_xlabel("physical shard (and the first title it holds)")
    axis.set_ylabel("albums")
    axis.legend(frameon=False, loc="upper left")
    axis.set_title(
        f"OrderedShards: {len(titles):,} titles over {shards} ordered\n"
        f"ranges + {len(subs)} overflow sub-shards",
        fontsize=TITLE_PT,
    )
    _save(fig, path)
    plt.close(fig)


def draw_herd(path: Path) -> None:
    """``examples/herd.py``: the top-of-the-hour burst, all at once and with ``herd_offset``."""
    import matplotlib.pyplot as plt

    example = _example("herd.py")
    outcomes = []
    for name, limits in (("provisioned", example.PROVISIONED), ("on-demand", example.ON_DEMAND)):
        outcomes.append(example.measure(f"{name},\nall at 16:00:00", example.SENSORS, 0, limits))
        outcomes.append(
            example.measure(
                f"{name},\nherd_offset {example.WINDOW:.0f}s",
                example.SENSORS,
                example.WINDOW,
                limits,
            )
        )
    fig, axis = plt.subplots(figsize=(WIDTH_IN, 5.0), dpi=120)
    width = 0.27
    series = (
        (
            "throttled attempts",
            [o.table_throttles + o.partition_throttles for o in outcomes],
            "#f4a261",
        ),
        ("writes late > 1 s", [o.late for o in outcomes], "#8d99ae"),
        ("lost writes", [o.lost for o in outcomes], "#e63946"),
    )
    for offset, (label, values, color) in zip((-width, 0.0, width), series, strict=True):
        bars = axis.bar([n + offset for n in range(len(outcomes))], values, width,
                        color=color, label=label)  # fmt: skip
        axis.bar_label(bars, fmt="{:,.0f}", rotation=90, padding=3)
    axis.set_xticks(range(len(outcomes)), [o.name.replace(",", "") for o in outcomes])
    top = max(max(values) for _, values, _ in series)
    axis.set_ylim(0, top * 1.45)
    axis.legend(frameon=False, loc="upper right")
    axis.set_title(f"{example.SENSORS:,} sensors report at the top of\nthe hour (examples/herd.py)",
                   fontsize=TITLE_PT)  # fmt: skip
    _save(fig, path)
    plt.close(fig)


def timeseries_items() -> list[tuple[str, str]]:
    """(PK, SK) as ``examples/timeseries.py``'s model stores them, read back raw."""
    from datetime import timedelta

    from shardmodel.testing import create_tables, mock_dynamodb

    example = _example("timeseries.py")
    reading = example.Reading
    with mock_dynamodb():
        create_tables([reading])
        for sensor in example.SENSORS[:3]:
            for minutes in (4, 65):
                at = example.START + timedelta(minutes=minutes, seconds=5)
                reading(sensor_id=sensor, timestamp=at, value=1).save()
        raw = reading._get_connection().scan()["Items"]
    return sorted((item["PK"]["S"], item["SK"]["S"]) for item in raw)


def draw_timeseries(path: Path) -> None:
    """The hybrid layout: the shard and the hour in PK, the sensor and the time in SK."""
    import matplotlib.pyplot as plt

    rows = timeseries_items()
    fig, axis = plt.subplots(figsize=(WIDTH_IN, 0.42 * len(rows) + 1.5), dpi=120)
    axis.axis("off")
    table = axis.table(
        cellText=[list(row) for row in rows],
        colLabels=["PK: md5(sensor) % 10 # UTC hour", "SK: sensor # UTC time"],
        colWidths=[0.42, 0.58],
        cellLoc="left",
        bbox=[0.0, 0.0, 1.0, 1.0],
    )
    table.auto_set_font_size(False)
    table.set_fontsize(TEXT_PT)
    for (row, _), cell in table.get_celld().items():
        cell.set_edgecolor("#bbbbbb")
        if row == 0:
            cell.set_facecolor("#e9f1f7")
            cell.set_text_props(weight="bold")
    axis.set_title(
        "TimeSeriesModel (examples/timeseries.py):\n3 sensors, 2 hours, as stored",
        fontsize=TITLE_PT,
    )
    _save(fig, path)
    plt.close(fig)


BENCH_OUTPUT = ROOT / "benchmarks" / "last_run.txt"
#: the merged query and the guides' loops on botocore: drawn, and required in the output
VARIANTS = ("merged", "sequential + sort", "thread pool + sort")
#: the same loops on the merged query's request path: drawn when the output has them
LEAN_VARIANTS = ("sequential + sort, lean", "thread pool + sort, lean")
#: single-partition baselines drawn as horizontal lines, when the output has them
BASELINES = ("single partition", "single, lean")
#: every numeric column label the bench has printed (the ratios' labels have changed)
COLUMNS = (
    "wall ms",
    "/base",
    "/plain",
    "/lean",
    "CPU ms",
    "CPU µs/item",
    "requests",
    "items read",
    "returned",
    "read/ret",
    "peak MiB",
)


def _columns(header: str) -> list[str]:
    """The numeric column labels of a table's header, in order (labels hold spaces)."""
    found, rest = [], header.split("variant", 1)[1]
    while rest.strip():
        rest = rest.lstrip()
        label = next((c for c in COLUMNS if rest.startswith(c)), None)
        if label is None:
            raise ValueError(f"{BENCH_OUTPUT.name}: unknown column at {rest!r}; see COLUMNS")
        found.append(label)
        rest = rest[len(label) :]
    return found


def bench_tables(text: str) -> dict[str, list[dict[str, Any]]]:
    """The merged-query tables of ``make bench`` output: title -> rows of named columns."""
    tables: dict[str, list[dict[str, Any]]] = {}
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if not line.startswith("shards  variant") or number == 0:
            continue
        columns = _columns(line)
        if "CPU µs/item" not in columns:
            continue  # the streaming table: no per-workload rows to draw
        title = lines[number - 1].split(":")[0].split(" (")[0].strip()
        rows = tables.setdefault(title, [])
        for row in lines[number + 2 :]:
            cells = row.split()
            if len(cells) < len(columns) + 2 or not (cells[0].isdigit() or cells[0] == "-"):
                break
            variant = " ".join(cells[1 : -len(columns)])
            numbers = dict(zip(columns, map(float, cells[-len(columns) :]), strict=True))
            rows.append(
                {
                    "shards": None if cells[0] == "-" else int(cells[0]),
                    "variant": variant,
                    "wall ms": numbers["wall ms"],
                    "requests": numbers["requests"],
                    "items read": numbers["items read"],
                }
            )
    return tables


def draw_bench(title: str, rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib.pyplot as plt

    measures = ("wall ms", "requests", "items read")
    fig, grid = plt.subplots(2, 2, figsize=(WIDTH_IN, 7.4), dpi=120)
    axes, key = [grid[0][0], grid[0][1], grid[1][0]], grid[1][1]
    present = {r["variant"] for r in rows}
    drawn = [
        *zip(VARIANTS, ("o-", "s--", "^:"), ("C0", "C1", "C2"), strict=True),
        *zip(LEAN_VARIANTS, ("s--", "^:"), ("C1", "C2"), strict=True),
    ]
    for axis, measure in zip(axes, measures, strict=True):
        for variant, style, color in drawn:
            if variant not in present:
                continue
            points = [(r["shards"], r[measure]) for r in rows if r["variant"] == variant]
            lean = variant in LEAN_VARIANTS
            axis.plot(
                *zip(*points, strict=True),
                style,
                color=color,
                alpha=0.45 if lean else 1.0,
                markerfacecolor="none" if lean else color,
                label=variant,
            )
        for variant, shade in zip(BASELINES, ("#888888", "#bbbbbb"), strict=True):
            base = next((r for r in rows if r["variant"] == variant), None)
            if base is not None:
                axis.axhline(base[measure], color=shade, linewidth=1, label=variant)
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xticks([1, 4, 16, 64], ["1", "4", "16", "64"])
        axis.set_xlabel("shards")
        axis.set_title(measure, fontsize=TEXT_PT)
    key.axis("off")  # the fourth cell holds the legend
    key.legend(*axes[0].get_legend_handles_labels(), frameon=False, loc="center")
    fig.suptitle(f"{title} (from make bench)", fontsize=TITLE_PT)
    _save(fig, path)
    plt.close(fig)


#: the aio bench's last output (benchmarks/aio_bench.py keeps it; make bench runs it)
ASYNC_OUTPUT = ROOT / "benchmarks" / "aio_last_run.txt"
#: the aio bench's cost-curve table, by the start of its title
ASYNC_CURVE = "latest 100 (limit=100, newest first)"


def async_curve(text: str) -> list[dict[str, Any]]:
    """The aio bench's cost curve: per shard count and way, requests and the two ratios."""
    lines = text.splitlines()
    start = next((n for n, line in enumerate(lines) if line.startswith(ASYNC_CURVE)), None)
    if start is None:
        raise ValueError(f"{ASYNC_OUTPUT.name}: no table starting {ASYNC_CURVE!r}")
    rows = []
    for line in lines[start + 3 :]:
        cells = line.split()
        if not cells or not (cells[0].isdigit() or cells[0] == "-"):
            break
        numeric = [c for c in cells[1:] if c.replace(".", "", 1).isdigit()]
        way = " ".join(c for c in cells[1:] if c not in numeric)
        requests, _items, _wall, wall_ratio, _cpu, cpu_ratio = map(float, numeric[:6])
        rows.append(
            {
                "shards": None if cells[0] == "-" else int(cells[0]),
                "way": way,
                "requests": requests,
                "x wall": wall_ratio,
                "x CPU": cpu_ratio,
            }
        )
    return rows


def draw_async_curve(rows: list[dict[str, Any]], path: Path) -> None:
    """Requests, wall and client CPU of the latest 100 against shards, sync and async."""
    import matplotlib.pyplot as plt

    measures = ("requests", "x wall", "x CPU")
    fig, grid = plt.subplots(2, 2, figsize=(WIDTH_IN, 7.4), dpi=120)
    axes, key = [grid[0][0], grid[0][1], grid[1][0]], grid[1][1]
    shards = sorted({r["shards"] for r in rows if r["shards"] is not None})
    for axis, measure in zip(axes, measures, strict=True):
        for way, style, color in (("sync", "s--", "C1"), ("async", "o-", "C0")):
            points = [(r["shards"], r[measure]) for r in rows if r["way"] == way]
            axis.plot(*zip(*points, strict=True), style, color=color, label=way)
        axis.axhline(1.0, color="#888888", linewidth=1, label="one partition")
        if measure == "x CPU":
            axis.axhline(3.0, color="#cc4444", linewidth=1, linestyle=":", label="target at 64")
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xticks(shards, [str(n) for n in shards])
        axis.set_xlabel("shards")
        axis.set_title(measure if measure == "requests" else f"{measure} of one partition",
                       fontsize=TEXT_PT)  # fmt: skip
    key.axis("off")  # the fourth cell holds the legend
    handles, labels = axes[2].get_legend_handles_labels()
    key.legend(handles, labels, frameon=False, loc="center")
    fig.suptitle("latest 100: the cost curve,\nsync and async (from make bench)", fontsize=TITLE_PT)
    _save(fig, path)
    plt.close(fig)


def build(outdir: Path) -> list[Path]:
    """Draw every chart into ``outdir``; return the files written."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update({"font.size": TEXT_PT, "legend.fontsize": TEXT_PT})
    outdir.mkdir(parents=True, exist_ok=True)
    made = []
    drawn = (
        ("flash_sale.png", draw_flash_sale),
        ("key_format.png", draw_key_format),
        ("burst.png", draw_burst),
        ("migration_phases.png", draw_migration),
        ("ordered.png", draw_ordered),
        ("herd.png", draw_herd),
        ("timeseries.png", draw_timeseries),
    )
    for name, draw in drawn:
        draw(outdir / name)
        made.append(outdir / name)
    tables = bench_tables(BENCH_OUTPUT.read_text(encoding="utf-8"))
    for title, name in (
        ("latest 100", "query_latest_100.png"),
        ("read all 10,000", "query_read_all.png"),
    ):
        draw_bench(title, tables[title], outdir / name)
        made.append(outdir / name)
    curve = async_curve(ASYNC_OUTPUT.read_text(encoding="utf-8"))
    draw_async_curve(curve, outdir / "async_cost_curve.png")
    made.append(outdir / "async_cost_curve.png")
    return made


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    for made in build(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "_generated"):
        print(made)
