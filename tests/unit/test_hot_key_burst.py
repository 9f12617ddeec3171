"""The demo's burst: every number it prints is a count the capacity simulator kept."""

from __future__ import annotations

import re
from typing import Any

import pytest

from shardmodel import hot_key_burst
from shardmodel.demo import HOT_KEY, run_demo
from shardmodel.testing import CapacitySimulator, LoadResult


def _row(lines: list[str], layout: str) -> list[int]:
    """The numbers of one layout's row of the printed table: writes, throttled, lost, ..."""
    row = next(line for line in lines if re.match(rf"  {layout} +(one key|\w+Shards)", line))
    return [int(cell.replace(",", "")) for cell in row.split()[-5:]]


def test_the_printed_throttles_and_losses_are_the_simulators(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Throttled is the simulator's refused attempts, lost is what failed after every retry.

    The simulators and loads the burst uses are recorded as they run; the printed table,
    bar chart and conclusion must show exactly their counts.
    """
    simulators: list[CapacitySimulator] = []
    loads: list[LoadResult] = []
    real_load = hot_key_burst.run_load

    class Recorded(CapacitySimulator):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            simulators.append(self)

    def recorded_load(*args: Any, **kwargs: Any) -> LoadResult:
        loads.append(real_load(*args, **kwargs))
        return loads[-1]

    monkeypatch.setattr(hot_key_burst, "CapacitySimulator", Recorded)
    monkeypatch.setattr(hot_key_burst, "run_load", recorded_load)
    lines: list[str] = []
    run_demo(writes=1500, shards=4, seed=3, out=lines.append)

    assert len(simulators) == len(loads) == 3
    tables = ("burst-unsharded", "burst-sharded", "burst-dynamic")
    for layout, sim, load, table in zip(
        hot_key_burst.LAYOUTS, simulators, loads, tables, strict=True
    ):
        writes, throttled, lost, stored, keys = _row(lines, layout)
        usage = sim.table_usage(table)
        assert writes == load.calls == 1500
        assert throttled == usage.write_throttles
        assert lost == load.failures
        assert stored == writes - lost  # every write not lost is stored, once
        written = {p.partition for p, u in sim.usage().items() if p.table == table}
        assert keys == len(written)
        bars = [line for line in lines if "|" in line]
        assert any(
            line.startswith(f"  {layout}") and line.endswith(f"{throttled:>6,}") for line in bars
        )
    unsharded, sharded, dynamic = (_row(lines, layout) for layout in hot_key_burst.LAYOUTS)
    assert unsharded[2] > 0 and sharded[1:3] == [0, 0] and dynamic[2] == 0
    assert unsharded[4] == 1 and sharded[4] == 4 and dynamic[4] > 1
    conclusion = next(line for line in lines if line.startswith("One key takes"))
    assert f"unsharded lost {unsharded[2]:,} of 1,500" in conclusion
    assert any(f"{HOT_KEY}  seq=1499" in line for line in lines)  # merged, newest first


def test_a_burst_is_the_same_on_every_run() -> None:
    """The simulated clock and the seeds make the counts repeat exactly.

    The dynamic layout's back-off and growth wait on the simulated clock, never the
    wall clock, so its throttles and shard picks repeat too.
    """
    first = hot_key_burst.run_hot_key_burst(writes=1200, layouts=("unsharded", "dynamic"))
    again = hot_key_burst.run_hot_key_burst(writes=1200, layouts=("unsharded", "dynamic"))
    assert first == again and first[0].lost > 0 and first[1].throttles > 0


def test_a_burst_refuses_an_unknown_layout() -> None:
    with pytest.raises(ValueError, match="choose from"):
        hot_key_burst.run_hot_key_burst(layouts=("sideways",))
