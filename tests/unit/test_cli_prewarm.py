"""``shardmodel prewarm`` and :func:`shardmodel.ops.prewarm`: warm throughput, on moto."""

from __future__ import annotations

from typing import Any

import pytest

from shardmodel.cli import main
from shardmodel.ops import prewarm, warm_units
from tests.support import error_line

Capture = pytest.CaptureFixture[str]

#: The flash sale of the docs: 5,000 writes/s and 1,000 Queries/s of ten 1.5 KB items.
EVENT = ["--item-bytes", "1536", "--writes-per-second", "5000", "--reads-per-second", "1000"]
EVENT += ["--items-per-read", "10"]


def _describe(table: str) -> dict[str, Any]:
    import boto3

    return boto3.client("dynamodb", region_name="us-east-1").describe_table(TableName=table)[
        "Table"
    ]


def _warm(source: dict[str, Any]) -> tuple[int, int]:
    warm = source["WarmThroughput"]
    return warm["ReadUnitsPerSecond"], warm["WriteUnitsPerSecond"]


def _one_line(capsys: Capture, *phrases: str) -> None:
    error_line(capsys.readouterr().err, *phrases)


@pytest.mark.usefixtures("tables")
def test_prewarm_sets_the_warm_throughput_of_the_table_and_its_index(capsys: Capture) -> None:
    """10,000 WCU and 2,000 RCU a second, 2x: DescribeTable shows 20,000 / 12,000 (kept)."""
    assert warm_units(1536, 1000, 10, 5000) == (4000, 20000)
    assert _warm(_describe("photos")) == (12000, 4000)  # a new on-demand table's
    assert main(["prewarm", "tests.models:Photo", *EVENT]) == 0
    out = capsys.readouterr().out
    assert "photos: 4,000 read / 20,000 write units a second (2x headroom)" in out
    assert "UpdateTable sent" in out
    table = _describe("photos")
    assert _warm(table) == (12000, 20000)  # reads were warm enough: never lowered
    assert [_warm(index) for index in table["GlobalSecondaryIndexes"]] == [(12000, 20000)]


@pytest.mark.usefixtures("tables")
def test_prewarm_counts_every_shard_a_whole_key_query_reads(capsys: Capture) -> None:
    """200 Queries/s of 50 items of 400 B: 1,000 RCU unsharded with 2x, over 10 shards more.

    Each Query of a RandomShards(10) key is 10 shard Queries of the merged query's first
    page (9 items: 0.5 RCU each): 1,000 read units a second, 2,000 with 2x; a HashShards(8)
    key whose Queries fix the shard reads one shard a Query.
    """
    event = ["--item-bytes", "400", "--reads-per-second", "200", "--items-per-read", "50"]
    assert warm_units(400, 200, 50) == (1000, 0)
    assert main(["prewarm", "tests.models:RandomEvent", *event, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "2,000 read / 0 write units a second (2x headroom; each Query reads 10 shards)" in out
    assert main(["prewarm", "tests.models:HashedEvent", *event, "--dry-run"]) == 0
    assert "3,200 read / 0 write" in capsys.readouterr().out  # 8 shards of 11 items: 1 RCU
    fixed = [*event, "--dry-run", "--reads-fix-shard"]
    assert main(["prewarm", "tests.models:HashedEvent", *fixed]) == 0
    assert "1,000 read / 0 write units a second (2x headroom)\n" in capsys.readouterr().out
    wide = ["--item-bytes", "400", "--reads-per-second", "30000", "--dry-run"]
    assert main(["prewarm", "tests.models:RandomEvent", *wide]) == 2
    _one_line(capsys, "300,000 read units", "reads 10 shards", "--reads-fix-shard")


@pytest.mark.usefixtures("tables")
def test_prewarm_dry_run_and_an_already_warm_table_send_nothing(capsys: Capture) -> None:
    assert main(["prewarm", "tests.models:Photo", *EVENT, "--dry-run"]) == 0
    assert "dry run: nothing sent" in capsys.readouterr().out
    assert _warm(_describe("photos")) == (12000, 4000)
    small = ["--item-bytes", "100", "--writes-per-second", "100"]
    assert main(["prewarm", "tests.models:Photo", *small]) == 0
    assert "photos is already warm enough: nothing sent" in capsys.readouterr().out


@pytest.mark.usefixtures("tables")
def test_prewarm_without_indexes_leaves_them(capsys: Capture) -> None:
    assert main(["prewarm", "tests.models:Photo", *EVENT, "--no-indexes"]) == 0
    table = _describe("photos")
    assert _warm(table) == (12000, 20000)
    assert _warm(table["GlobalSecondaryIndexes"][0]) == (12000, 4000)


@pytest.mark.usefixtures("tables")
def test_a_target_over_the_on_demand_maximum_is_refused_before_anything_is_sent() -> None:
    """DescribeTable's OnDemandThroughput caps the table: warming above it would not help."""
    from tests.models import Photo

    class Capped:
        """A client whose table has an on-demand maximum of 15,000 write units a second."""

        def __init__(self) -> None:
            import boto3

            self.client = boto3.client("dynamodb", region_name="us-east-1")
            self.updates = 0

        def describe_table(self, **kwargs: Any) -> dict[str, Any]:
            answer: dict[str, Any] = self.client.describe_table(**kwargs)
            limit = {"MaxReadRequestUnits": -1, "MaxWriteRequestUnits": 15000}
            answer["Table"]["OnDemandThroughput"] = limit
            return answer

        def update_table(self, **kwargs: Any) -> None:
            self.updates += 1

    capped = Capped()
    with pytest.raises(ValueError, match=r"on-demand maximum \(15,000\).*MaxWriteRequestUnits"):
        prewarm(Photo, item_bytes=1536, writes_per_second=5000, client=capped)
    assert capped.updates == 0
    plan = prewarm(Photo, item_bytes=1536, writes_per_second=3000, client=capped)
    assert plan.write_units == 12000 and capped.updates == 1


@pytest.mark.parametrize(
    ("args", "phrases"),
    [
        (["--item-bytes", "100"], ["give --reads-per-second and/or --writes-per-second"]),
        ([*EVENT, "--headroom", "20"], ["--headroom", "more is waste"]),
        (["--item-bytes", "500000", "--writes-per-second", "1"], ["400 KB item limit"]),
        (
            ["--item-bytes", "1024", "--writes-per-second", "30000"],
            ["60,000 write units a second is over the per-table quota of 40,000", "--max-units"],
        ),
        ([*EVENT, "--host", "localhost:8000"], ["--host", "URL"]),
        (["--item-bytes", "1", "--writes-per-second", "1", "--max-units", "0"], ["--max-units"]),
    ],
)
def test_prewarm_refuses_bad_arguments_before_touching_the_table(
    capsys: Capture, args: list[str], phrases: list[str]
) -> None:
    """Usage errors (exit code 2), checked before the model is imported or the table read."""
    assert main(["prewarm", "tests.nowhere:Model", *args]) == 2
    _one_line(capsys, "shardmodel prewarm: error:", *phrases)


@pytest.mark.usefixtures("tables")
def test_prewarm_on_a_missing_table_fails_in_one_line(capsys: Capture) -> None:
    from tests.models import Photo

    Photo.delete_table()
    assert main(["prewarm", "tests.models:Photo", *EVENT]) == 1
    _one_line(capsys, "shardmodel prewarm: error:", "ResourceNotFoundException")


def test_prewarm_help_shows_defaults(capsys: Capture) -> None:
    assert main(["prewarm", "--help"]) == 0
    out = capsys.readouterr().out
    assert "(default: 40000)" in out and "(default: 2.0)" in out and "--dry-run" in out
