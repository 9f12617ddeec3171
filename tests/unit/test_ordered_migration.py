"""OrderedShards boundaries changed online: new ranges from a drifted sample.

Every read (get, batch_get, query ascending and descending, a range of titles, count,
scan, cursors) sees exactly the reference in every phase while items are saved, updated
and deleted; --finish wants the new boundaries declared; what cannot change is refused.
"""

from __future__ import annotations

import asyncio
import random
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pynamodb.attributes import UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex, KeysOnlyProjection

from shardmodel import (
    NormalizedAttribute,
    OrderedShards,
    RandomShards,
    ShardedKeyAttribute,
    ShardedModel,
)
from shardmodel.cli import main
from shardmodel.cli.boundaries import format_report
from shardmodel.errors import ShardConfigurationError
from shardmodel.migration import MigrationConflictError, Phase, Reshard, follow, unfollow
from shardmodel.ordered_sample import BoundaryReport
from shardmodel.testing import SimulatedClock, bind_models, create_tables, drop_tables
from tests.migration_models import DRIFTED, Title, TitleDrifted, redeployed
from tests.support import paged
from tests.tier import sized
from tests.unit.test_migration import migration_tables, run_phases

__all__ = ["migration_tables"]  # a fixture used by name

SHELF = "shelf"
OLD = ("", "g", "p")


def _titles(rng: random.Random, count: int, letters: str) -> list[str]:
    return sorted(
        {
            rng.choice(letters) + "".join(rng.choices(string.ascii_lowercase, k=5))
            for _ in range(count)
        }
    )


def _drifted() -> OrderedShards:
    """Boundaries for titles that drifted towards the end of the alphabet."""
    rng = random.Random(7)
    sample = _titles(rng, 400, "rstuvwxyz") + _titles(rng, 100, "abcdefgh")
    return OrderedShards.from_sample(sample, shards=5, on="title")


def expect_titles(reference: dict[str, str]) -> None:
    """Every read of the shelf sees exactly ``reference`` (title -> value)."""
    ordered = sorted(reference.items())
    assert [(i.title, i.value) for i in Title.query(SHELF)] == ordered
    backwards = Title.query(SHELF, scan_index_forward=False)
    assert [(i.title, i.value) for i in backwards] == ordered[::-1]
    ranged = Title.query(SHELF, Title.title.between("c", "t"))
    assert [(i.title, i.value) for i in ranged] == [(t, v) for t, v in ordered if "c" <= t <= "t"]
    assert Title.count(SHELF) == len(reference)
    assert sorted((i.title, i.value) for i in Title.scan()) == ordered
    listed = paged(lambda token: Title.query(SHELF, limit=3, last_evaluated_key=token))
    assert [(i.title, i.value) for i in listed] == ordered  # a cursor every 3 items
    for title, value in list(reference.items())[:5]:
        assert Title.get(SHELF, title).value == value
    got = {i.title: i.value for i in Title.batch_get([(SHELF, t) for t in reference])}
    assert got == reference


@pytest.fixture
def shelf(migration_tables: SimulatedClock) -> Iterator[tuple[SimulatedClock, dict[str, str]]]:
    """Titles over the whole alphabet on the old boundaries, followed."""
    reference = {t: "v0" for t in _titles(random.Random(1), 40, string.ascii_lowercase)}
    for title in reference:
        Title(SHELF, title, value="v0").save()
    follow(Title, cache_seconds=0, clock=migration_tables)
    yield migration_tables, reference


def test_boundaries_from_a_drifted_sample_change_online_with_every_read_exact(
    shelf: tuple[SimulatedClock, dict[str, str]],
) -> None:
    clock, reference = shelf
    new = _drifted()
    assert new.boundaries != OLD
    operator = Reshard(Title, clock=clock)
    state = operator.start(new, settle_seconds=1)
    assert (state.old_boundaries, state.new_boundaries) == (OLD, new.boundaries)
    assert "3 -> 5 ordered ranges" in operator.plan(new)
    rng = random.Random(3)
    seen: list[Phase] = []

    def each(phase: Phase) -> None:
        seen.append(phase)
        for title in _titles(rng, 3, string.ascii_lowercase):  # saves, in any range
            Title(SHELF, title, value=f"new in {phase.value}").save()
            reference[title] = f"new in {phase.value}"
        victim = rng.choice(sorted(reference))
        Title.get(SHELF, victim).update(actions=[Title.value.set(f"updated in {phase.value}")])
        reference[victim] = f"updated in {phase.value}"
        gone = rng.choice(sorted(reference))
        Title.get(SHELF, gone).delete()
        del reference[gone]
        expect_titles(reference)

    run_phases(operator, clock, each)
    assert seen == list(Phase)
    expect_titles(reference)
    with pytest.raises(MigrationConflictError, match="still declares its old OrderedShards"):
        operator.finish()
    deployed = redeployed(Title, new.boundaries)
    Reshard(deployed, clock=clock).finish()
    assert Reshard(deployed).status() is None
    client = Title._get_connection().connection.client
    raw = client.scan(TableName=Title.Meta.table_name, ConsistentRead=True)["Items"]
    assert sorted(r["title"]["S"] for r in raw) == sorted(reference)  # no tombstone left
    for row in raw:  # each on the range the new boundaries give its title
        shard = int(row["shelf"]["S"].rsplit("#", 1)[1])
        assert new.shard_of(row["title"]["S"]) == shard, row
    assert [(i.title, i.value) for i in deployed.query(SHELF)] == sorted(reference.items())


def test_a_cursor_taken_before_the_change_resumes_after_it(
    shelf: tuple[SimulatedClock, dict[str, str]],
) -> None:
    """A listing's cursor from before the change, resumed in each phase, through done."""
    clock, reference = shelf
    new = _drifted()
    operator = Reshard(Title, clock=clock)
    operator.start(new, settle_seconds=1)
    first = Title.query(SHELF, limit=4)
    head = [i.title for i in first]
    cursors = {}

    def each(phase: Phase) -> None:
        page = Title.query(SHELF, limit=4)
        cursors[phase] = ([i.title for i in page], page.last_evaluated_key)
        rest = [i.title for i in Title.query(SHELF, last_evaluated_key=first.last_evaluated_key)]
        assert head + rest == sorted(reference), phase
        for earlier, (taken, token) in cursors.items():
            rest = [i.title for i in Title.query(SHELF, last_evaluated_key=token)]
            assert taken + rest == sorted(reference), (earlier, phase)

    run_phases(operator, clock, each)


def test_what_cannot_change_is_refused_before_anything_is_written(
    migration_tables: SimulatedClock,
) -> None:
    operator = Reshard(Title, clock=migration_tables)
    with pytest.raises(ShardConfigurationError, match="already declares these 3 boundaries"):
        operator.start(list(OLD))
    with pytest.raises(ShardConfigurationError, match="overflow sub-shards"):
        operator.start(OrderedShards(["", "m"], on="title", overflow={"madonna": 2}))
    with pytest.raises(ShardConfigurationError, match="give the new boundaries"):
        operator.start(8)
    with pytest.raises(ShardConfigurationError, match="sorted"):
        operator.start(["", "z", "a"])
    assert operator.status() is None
    assert not operator.store.items().exists()  # no state table either


def test_a_process_declaring_other_boundaries_is_refused(
    shelf: tuple[SimulatedClock, dict[str, str]],
) -> None:
    clock, _ = shelf
    Reshard(Title, clock=clock).start(_drifted(), settle_seconds=1)
    other: Any = redeployed(Title, ["", "b", "c"])
    follow(other, cache_seconds=0, clock=clock)
    with pytest.raises(ShardConfigurationError, match="neither the old nor the new"):
        other.count(SHELF)


def test_the_command_line_takes_the_boundaries_the_boundaries_command_prints(
    shelf: tuple[SimulatedClock, dict[str, str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--boundaries FILE`` (shardmodel boundaries' output) through every step;
    --finish refused until the code declares them."""
    _, reference = shelf
    unfollow(Title)  # the command line follows by itself
    model = "tests.migration_models:Title"
    report = BoundaryReport(boundaries=DRIFTED, sizes=(1,) * 5, values=5, shards=5, overflow=())
    path = tmp_path / "boundaries.py"
    path.write_text(format_report(report), encoding="utf-8")
    assert main(["reshard", model, "--boundaries", str(path), "--dry-run"]) == 0
    assert "3 -> 5 ordered ranges" in capsys.readouterr().out
    assert main(["reshard", model, "--boundaries", str(path), "--to", "8"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["reshard", model, "--to", "8", "--dry-run"]) == 1
    assert "give the new boundaries" in capsys.readouterr().err
    (tmp_path / "broken.py").write_text("boundaries = [", encoding="utf-8")
    assert main(["reshard", model, "--boundaries", str(tmp_path / "broken.py")]) == 2
    assert "line 1" in capsys.readouterr().err
    start = ["reshard", model, "--boundaries", str(path), "--step", "--settle", "0"]
    assert main(start) == 0
    assert "3 -> 5 ordered ranges, phase prepare" in capsys.readouterr().out
    for _ in range(20):
        assert main(["reshard", model, "--step"]) == 0
        if "swept" in capsys.readouterr().out:
            break
    assert main(["reshard", model, "--finish"]) == 1
    assert "still declares its old OrderedShards boundaries" in capsys.readouterr().err
    assert main(["reshard", "tests.migration_models:TitleDrifted", "--finish"]) == 0
    listed = [(i.title, i.value) for i in TitleDrifted.query(SHELF)]
    assert listed == sorted(reference.items())


class _ByColor(GlobalSecondaryIndex[Any]):
    """Titles of one color: a plain index key."""

    class Meta:
        index_name = "by-color"
        projection = KeysOnlyProjection()

    color = UnicodeAttribute(hash_key=True)
    title = NormalizedAttribute(range_key=True)


class _ByTeam(GlobalSecondaryIndex[Any]):
    """Titles of one team: a sharded index key (4 random shards)."""

    class Meta:
        index_name = "by-team"
        projection = AllProjection()

    team = UnicodeAttribute(hash_key=True)
    title = NormalizedAttribute(range_key=True)


class TaggedTitle(ShardedModel):
    """Title with a plain and a sharded global secondary index."""

    class Meta:
        table_name = "reshard-tagged-titles"
        region = "us-east-1"

    shelf = ShardedKeyAttribute(hash_key=True, strategy=OrderedShards(list(OLD), on="title"))
    title = NormalizedAttribute(range_key=True)
    value = UnicodeAttribute(null=True)
    color = UnicodeAttribute(null=True)
    team = ShardedKeyAttribute(strategy=RandomShards(4), null=True)
    by_color = _ByColor()
    by_team = _ByTeam()


@pytest.mark.slow
def test_index_reads_stay_exact_while_the_boundaries_change(
    migration_tables: SimulatedClock,
) -> None:
    """A plain and a sharded index: each live item once, in order, in every phase."""
    clock = migration_tables
    bind_models([TaggedTitle], host=None)
    create_tables([TaggedTitle])
    reference: dict[str, str] = {}
    rng = random.Random(11)

    def color(title: str) -> str:
        return "red" if ord(title[0]) % 2 else "blue"

    def save(title: str, value: str) -> None:
        TaggedTitle(SHELF, title, value=value, color=color(title), team="t").save()
        reference[title] = value

    for title in _titles(rng, 30, string.ascii_lowercase):
        save(title, "v0")
    follow(TaggedTitle, cache_seconds=0, clock=clock)
    operator = Reshard(TaggedTitle, clock=clock)
    operator.start(_drifted(), settle_seconds=1)

    def indexed(phase: Phase) -> None:
        red = sorted(t for t in reference if color(t) == "red")
        assert [i.title for i in TaggedTitle.by_color.query("red")] == red, phase
        assert TaggedTitle.count("red", index_name="by-color") == len(red), phase
        team = [(i.title, i.value) for i in TaggedTitle.by_team.query("t")]
        assert team == sorted(reference.items()), phase
        backwards = TaggedTitle.by_team.query("t", scan_index_forward=False)
        assert [i.title for i in backwards] == sorted(reference, reverse=True), phase
        by_team = TaggedTitle.by_team
        listed = paged(lambda token: by_team.query("t", limit=4, last_evaluated_key=token))
        assert [i.title for i in listed] == sorted(reference), phase

    checked = {"fenced": 0, "copied": 0}

    def mid_move(point: str) -> None:
        """Between a move's steps the item has two rows, both in the indexes (every move
        takes the same steps: make test reads the indexes at the first few of them)."""
        if point in checked and checked[point] < sized(10**6, 3):
            checked[point] += 1
            indexed(Phase.BACKFILL)

    def each(phase: Phase) -> None:
        if phase == Phase.BACKFILL:
            operator.run_job(page_size=3, fault=mid_move)
        for title in _titles(rng, 2, string.ascii_lowercase):
            save(title, f"new in {phase.value}")
        victim = rng.choice(sorted(reference))
        TaggedTitle.get(SHELF, victim).update(actions=[TaggedTitle.value.set(phase.value)])
        reference[victim] = phase.value
        gone = rng.choice(sorted(reference))
        TaggedTitle.get(SHELF, gone).delete()
        del reference[gone]
        indexed(phase)

    try:
        run_phases(operator, clock, each)
    finally:
        unfollow(TaggedTitle)
        drop_tables([TaggedTitle])


def test_the_async_api_follows_a_boundaries_change(
    shelf: tuple[SimulatedClock, dict[str, str]],
) -> None:
    """asave, aupdate, adelete in every phase; aquery both ways, a title range, acount,
    ascan, abatch_get and an async cursor resumed by the sync query: exact."""
    clock, reference = shelf
    operator = Reshard(Title, clock=clock)
    operator.start(_drifted(), settle_seconds=1)
    rng = random.Random(9)

    async def step(phase: Phase) -> None:
        for title in _titles(rng, 2, string.ascii_lowercase):
            await Title(SHELF, title, value=f"new in {phase.value}").asave()
            reference[title] = f"new in {phase.value}"
        item = await Title.aget(SHELF, rng.choice(sorted(reference)))
        await item.aupdate(actions=[Title.value.set(f"updated in {phase.value}")])
        reference[item.title] = f"updated in {phase.value}"
        gone = await Title.aget(SHELF, rng.choice(sorted(reference)))
        await gone.adelete()
        del reference[gone.title]
        ordered = sorted(reference.items())
        assert [(i.title, i.value) for i in await Title.aquery(SHELF).to_list()] == ordered
        backwards = await Title.aquery(SHELF, scan_index_forward=False).to_list()
        assert [i.title for i in backwards] == sorted(reference, reverse=True)
        ranged = await Title.aquery(SHELF, Title.title.between("c", "t")).to_list()
        assert [i.title for i in ranged] == [t for t, _ in ordered if "c" <= t <= "t"]
        assert await Title.acount(SHELF) == len(reference)
        assert sorted((i.title, i.value) for i in await Title.ascan().to_list()) == ordered
        batch = await Title.abatch_get([(SHELF, t) for t in reference]).to_list()
        assert {i.title: i.value for i in batch} == reference
        first = Title.aquery(SHELF, limit=5)
        head = [i.title for i in await first.to_list()]
        rest = Title.query(SHELF, last_evaluated_key=first.last_evaluated_key)
        assert head + [i.title for i in rest] == sorted(reference)

    run_phases(operator, clock, lambda phase: asyncio.run(step(phase)))
