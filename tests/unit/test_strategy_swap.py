"""A strategy swapped online: RandomShards -> HashShards, and HashShards on other terms.

Every read (get, batch_get, query both ways, a sort key range, count, scan, cursors)
sees exactly the reference in every phase while items are saved, updated and deleted by
a process declaring the old strategy and one declaring the new; --finish wants the new
strategy declared; swaps whose keys cannot be found from the item are refused.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from pynamodb.constants import NUMBER

from shardmodel import HashShards, OrderedShards
from shardmodel.cli import main
from shardmodel.core.canonical import canonical_value
from shardmodel.errors import ShardConfigurationError
from shardmodel.keyspace.phases import StrategySpec
from shardmodel.migration import MigrationConflictError, Phase, Reshard, follow, unfollow
from shardmodel.testing import SimulatedClock
from tests.migration_models import (
    CLICK_HASH,
    Click,
    ClickHashed,
    Reading,
    Tagged,
    Title,
    Views,
    redeployed,
)
from tests.support import paged
from tests.tier import sized
from tests.unit.test_migration import migration_tables, run_phases

pytestmark = pytest.mark.slow

__all__ = ["migration_tables"]  # a fixture used by name

SENSOR = "s"
TO_HASH = CLICK_HASH
#: Reading's HashShards(16, on=seq) swapped for sha256 over 24 shards.
TO_SHA = HashShards(24, on="seq", algorithm="sha256")


def expect(model: Any, reference: dict[int, str]) -> None:
    """Every read of the sensor through ``model`` sees exactly ``reference``."""
    ordered = sorted(reference.items())
    assert [(i.seq, i.value) for i in model.query(SENSOR)] == ordered
    backwards = model.query(SENSOR, scan_index_forward=False)
    assert [(i.seq, i.value) for i in backwards] == ordered[::-1]
    ranged = model.query(SENSOR, model.seq.between(10, 30))
    assert [(i.seq, i.value) for i in ranged] == [(s, v) for s, v in ordered if 10 <= s <= 30]
    assert model.count(SENSOR) == len(reference)
    assert sorted((i.seq, i.value) for i in model.scan()) == ordered
    listed = paged(lambda token: model.query(SENSOR, limit=4, last_evaluated_key=token))
    assert [(i.seq, i.value) for i in listed] == ordered  # a cursor every 4 items
    for seq, value in list(reference.items())[:4]:
        assert model.get(SENSOR, seq).value == value
    got = {i.seq: i.value for i in model.batch_get([(SENSOR, s) for s in reference])}
    assert got == reference


def _started(model: Any, to: HashShards, clock: SimulatedClock) -> tuple[Any, Reshard, Any]:
    """A swap of ``model`` to ``to`` begun, followed by a process declaring each strategy:
    the process declaring ``to``, the operator, and the state."""
    deployed = redeployed(model, to)
    follow(model, cache_seconds=0, clock=clock)
    follow(deployed, cache_seconds=0, clock=clock)
    operator = Reshard(model, clock=clock)
    return deployed, operator, operator.start(to, settle_seconds=1)


def _swap_through_every_phase(
    model: Any, to: HashShards, clock: SimulatedClock, reference: dict[int, str]
) -> Any:
    """Saves, updates and deletes by both declarations in every phase; reads exact."""
    deployed, operator, state = _started(model, to, clock)
    assert state.new_strategy == StrategySpec.of(to) and state.new_count == to.n
    rng = random.Random(5)
    serial = iter(range(100, 1000))
    seen: list[Phase] = []

    def each(phase: Phase) -> None:
        seen.append(phase)
        for writer in (model, deployed):
            seq = next(serial)
            writer(SENSOR, seq, value=f"new in {phase.value}").save()
            reference[seq] = f"new in {phase.value}"
            victim = rng.choice(sorted(reference))
            item = writer.get(SENSOR, victim)
            item.update(actions=[writer.value.set(f"updated in {phase.value}")])
            reference[victim] = f"updated in {phase.value}"
            again = writer.get(SENSOR, rng.choice(sorted(reference)))
            again.value = f"saved again in {phase.value}"
            again.save()
            reference[again.seq] = again.value
            gone = rng.choice(sorted(reference))
            writer.get(SENSOR, gone).delete()
            del reference[gone]
        expect(model, reference)
        expect(deployed, reference)

    run_phases(operator, clock, each)
    assert seen == list(Phase)
    expect(deployed, reference)
    return deployed


def _stored_on_new_keys(model: Any, to: HashShards, reference: dict[int, str]) -> None:
    """No tombstone left; each item once, on the shard the new strategy hashes it to."""
    client = model._get_connection().connection.client
    raw = client.scan(TableName=model.Meta.table_name, ConsistentRead=True)["Items"]
    # moto keeps a number as written (205.0); DynamoDB would store 205
    assert sorted(Decimal(r["seq"]["N"]) for r in raw) == sorted(reference)
    for row in raw:
        shard = int(row["sensor"]["S"].rsplit("#", 1)[1])
        assert to.shard_of([str(canonical_value(NUMBER, row["seq"]["N"]))]) == shard, row


@pytest.fixture
def clicks(migration_tables: SimulatedClock) -> Iterator[tuple[SimulatedClock, dict[int, str]]]:
    """Forty clicks on Click's 16 random shards."""
    reference = {seq: "v0" for seq in range(sized(40, 10))}
    for seq in reference:
        Click(SENSOR, seq, value="v0").save()
    yield migration_tables, reference


def test_random_shards_swapped_for_hash_shards_with_every_read_exact(
    clicks: tuple[SimulatedClock, dict[int, str]],
) -> None:
    clock, reference = clicks
    operator = Reshard(Click, clock=clock)
    plan = operator.plan(TO_HASH)
    assert "RandomShards(16) -> HashShards(8, on=seq)" in plan
    assert "a conditional put on each of the 15 others not fenced yet" in plan
    deployed = _swap_through_every_phase(Click, TO_HASH, clock, reference)
    with pytest.raises(MigrationConflictError, match=r"deploy the code that declares HashShards"):
        operator.finish()
    assert operator.status() is not None  # refused: the state stays
    Reshard(deployed, clock=clock).finish()
    assert Reshard(deployed).status() is None
    _stored_on_new_keys(Click, TO_HASH, reference)
    expect(deployed, reference)


def test_random_shards_swapped_for_more_hash_shards_with_every_read_exact(
    clicks: tuple[SimulatedClock, dict[int, str]],
) -> None:
    """RandomShards(16) -> HashShards(24): items whose new shard is beyond the old ones
    are fenced on all 16 old shards when written at their new key, and a scan returns
    each of them once (at the first old shard)."""
    clock, reference = clicks
    to = HashShards(24, on="seq")
    assert any(to.shard_of([str(seq)]) >= 16 for seq in range(100, 110))  # such items exist
    assert "(all 16 where its new shard is beyond them)" in Reshard(Click, clock=clock).plan(to)
    deployed = _swap_through_every_phase(Click, to, clock, reference)
    Reshard(deployed, clock=clock).finish()
    _stored_on_new_keys(Click, to, reference)
    expect(deployed, reference)


def test_hash_shards_on_other_terms_with_every_read_exact(
    migration_tables: SimulatedClock,
) -> None:
    reference = {seq: "v0" for seq in range(sized(40, 10))}
    for seq in reference:
        Reading(SENSOR, seq, value="v0").save()
    deployed = _swap_through_every_phase(Reading, TO_SHA, migration_tables, reference)
    Reshard(deployed, clock=migration_tables).finish()
    _stored_on_new_keys(Reading, TO_SHA, reference)


def test_a_cursor_taken_before_the_swap_resumes_in_every_phase(
    clicks: tuple[SimulatedClock, dict[int, str]],
) -> None:
    clock, reference = clicks
    follow(Click, cache_seconds=0, clock=clock)
    operator = Reshard(Click, clock=clock)
    first = Click.query(SENSOR, limit=5)
    head = [i.seq for i in first]
    operator.start(TO_HASH, settle_seconds=1)
    cursors: dict[Phase, tuple[list[int], Any]] = {}

    def each(phase: Phase) -> None:
        page = Click.query(SENSOR, limit=5, scan_index_forward=False)
        cursors[phase] = ([i.seq for i in page], page.last_evaluated_key)
        rest = [i.seq for i in Click.query(SENSOR, last_evaluated_key=first.last_evaluated_key)]
        assert head + rest == sorted(reference), phase
        for earlier, (taken, token) in cursors.items():
            rest = [
                i.seq
                for i in Click.query(SENSOR, last_evaluated_key=token, scan_index_forward=False)
            ]
            assert taken + rest == sorted(reference, reverse=True), (earlier, phase)

    run_phases(operator, clock, each)


def test_a_process_declaring_a_third_strategy_is_refused(
    clicks: tuple[SimulatedClock, dict[int, str]],
) -> None:
    clock, _ = clicks
    Reshard(Click, clock=clock).start(TO_HASH, settle_seconds=1)
    other: Any = redeployed(Click, HashShards(8, on="seq", algorithm="sha256"))
    follow(other, cache_seconds=0, clock=clock)
    with pytest.raises(ShardConfigurationError, match="declare the old or the new strategy"):
        other.count(SENSOR)


@pytest.mark.parametrize(
    ("model", "to", "match"),
    [
        (Click, HashShards(8, on="value"), r"names \['value'\], which are not in the table's key"),
        (Click, HashShards(8, on="seq", algorithm=lambda v: 1), "give a named algorithm"),
        (Reading, HashShards(16, on="seq"), "already declares"),
        (Title, HashShards(4, on="title"), "changes by its boundaries"),
        (Views, HashShards(4, on="page"), "counters or secondary indexes"),
        (Tagged, HashShards(4, on="seq"), "counters or secondary indexes"),
    ],
)
def test_swaps_that_cannot_be_followed_are_refused_before_anything_is_written(
    migration_tables: SimulatedClock, model: Any, to: HashShards, match: str
) -> None:
    operator = Reshard(model, clock=migration_tables)
    with pytest.raises(ShardConfigurationError, match=match):
        operator.start(to)
    with pytest.raises(ShardConfigurationError, match=match):
        operator.plan(to)
    with pytest.raises(ShardConfigurationError, match=match):
        operator.estimate(to)
    assert not operator.store.items().exists()  # no state table either


def test_ordered_boundaries_are_not_a_swap(migration_tables: SimulatedClock) -> None:
    """An OrderedShards target stays a boundaries change, not a strategy swap."""
    operator = Reshard(Title, clock=migration_tables)
    assert operator.swap_of(OrderedShards(["", "m"], on="title")) is None


def test_the_command_line_swaps_with_hash_on(
    clicks: tuple[SimulatedClock, dict[int, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--to N --hash-on ATTRS`` through every step; --finish refused until the code
    declares the new strategy; bad combinations are usage errors."""
    _, reference = clicks
    unfollow(Click)  # the command line follows by itself
    model = "tests.migration_models:Click"
    swap = ["--to", "8", "--hash-on", "seq"]
    assert main(["reshard", model, *swap, "--dry-run"]) == 0
    assert "RandomShards(16) -> HashShards(8, on=seq)" in capsys.readouterr().out
    for bad, said in [
        (["--hash-on", "seq"], "give --to N too"),
        (["--to", "8", "--algorithm", "sha256"], "give --hash-on ATTR too"),
        (["--to", "8", "--hash-on", " , "], "name at least one attribute"),
    ]:
        assert main(["reshard", model, *bad, "--dry-run"]) == 2
        assert said in capsys.readouterr().err
    assert main(["reshard", model, "--to", "8", "--hash-on", "value", "--dry-run"]) == 1
    assert "not in the table's key" in capsys.readouterr().err
    assert main(["reshard", model, *swap, "--step", "--settle", "0"]) == 0
    assert "RandomShards(16) -> HashShards(8, on=seq), phase prepare" in capsys.readouterr().out
    for _ in range(20):
        assert main(["reshard", model, "--step"]) == 0
        out = capsys.readouterr().out
        if "swept" in out:
            break
    assert "deploy the code that declares HashShards(8, on=seq)" in out
    assert main(["reshard", model, "--finish"]) == 1
    assert "still declares RandomShards(n=16)" in capsys.readouterr().err
    assert main(["reshard", "tests.migration_models:ClickHashed", "--finish"]) == 0
    assert [(i.seq, i.value) for i in ClickHashed.query(SENSOR)] == sorted(reference.items())


async def _async_expect(model: Any, reference: dict[int, str]) -> None:
    """The async twins of the reads :func:`expect` makes, exact."""
    ordered = sorted(reference.items())
    assert [(i.seq, i.value) for i in await model.aquery(SENSOR).to_list()] == ordered
    assert await model.acount(SENSOR) == len(reference)
    assert sorted((i.seq, i.value) for i in await model.ascan().to_list()) == ordered
    got = await model.abatch_get([(SENSOR, s) for s in reference]).to_list()
    assert {i.seq: i.value for i in got} == reference
    first = model.aquery(SENSOR, limit=3)
    head = [i.seq for i in await first.to_list()]
    rest = model.query(SENSOR, last_evaluated_key=first.last_evaluated_key)  # sync resumes
    assert head + [i.seq for i in rest] == sorted(reference)


def test_the_async_api_follows_a_swap(clicks: tuple[SimulatedClock, dict[int, str]]) -> None:
    """asave, aupdate, adelete by both declarations in every phase; the async reads exact."""
    clock, reference = clicks
    deployed, operator, _ = _started(Click, TO_HASH, clock)
    serial = iter(range(100, 1000))

    async def writes(phase: Phase) -> None:
        for writer in (Click, deployed):
            seq = next(serial)
            await writer(SENSOR, seq, value=f"new in {phase.value}").asave()
            reference[seq] = f"new in {phase.value}"
            item = await writer.aget(SENSOR, min(reference))
            await item.aupdate(actions=[writer.value.set(f"updated in {phase.value}")])
            reference[item.seq] = f"updated in {phase.value}"
            gone = await writer.aget(SENSOR, max(reference))
            await gone.adelete()
            del reference[gone.seq]
            await _async_expect(writer, reference)

    run_phases(operator, clock, lambda phase: asyncio.run(writes(phase)))
    Reshard(deployed, clock=clock).finish()
    _stored_on_new_keys(Click, TO_HASH, reference)


#: Other spellings DynamoDB reads as the same number key: a float, an exponent, -0.0.
def _untidy(seq: int) -> list[float]:
    return [float(seq), float(f"{seq}e0"), -0.0 if seq == 0 else seq * 1.0]


def test_a_swap_hashing_the_sort_key_finds_items_by_any_spelling_of_the_number(
    clicks: tuple[SimulatedClock, dict[int, str]],
) -> None:
    """The new HashShards hashes the sort key: a key given as 7.0, 7e0 or -0.0 is the
    stored 7 or 0 to DynamoDB, so it must be hashed like it, by either declaration."""
    clock, reference = clicks
    deployed, operator, _ = _started(Click, TO_HASH, clock)
    big = 10**37  # 38 digits: a float spelling 1e+37 is the same DynamoDB number
    serial = iter(range(200, 1000))

    def each(phase: Phase) -> None:
        for writer in (Click, deployed):
            seq = next(serial)
            writer(SENSOR, float(seq), value=f"float in {phase.value}").save()
            reference[seq] = f"float in {phase.value}"
            for other in (Click, deployed):
                for spelling in (seq, *_untidy(seq)):
                    assert other.get(SENSOR, spelling).value == reference[seq], (phase, spelling)
            victim = sorted(reference)[1]
            writer.get(SENSOR, float(victim)).update(
                actions=[writer.value.set(f"updated in {phase.value}")]
            )
            reference[victim] = f"updated in {phase.value}"
            gone = sorted(reference)[2]
            writer.get(SENSOR, float(f"{gone}e0")).delete()
            del reference[gone]
            zero = writer.get(SENSOR, -0.0)
            assert zero.seq == 0 and zero.value == reference[0]
        got = {i.seq: i.value for i in deployed.batch_get([(SENSOR, float(s)) for s in reference])}
        assert got == reference, phase
        floats = Click.query(SENSOR, Click.seq.between(10.0, 3e1))
        assert [i.seq for i in floats] == [s for s in sorted(reference) if 10 <= s <= 30]
        expect(Click, reference)
        expect(deployed, reference)

    Click(SENSOR, big, value="big").save()
    reference[big] = "big"
    run_phases(operator, clock, each)
    for model in (Click, deployed):
        assert model.get(SENSOR, 1e37).value == "big"
        assert model.get(SENSOR, big).value == "big"
    Reshard(deployed, clock=clock).finish()
    _stored_on_new_keys(Click, TO_HASH, reference)
