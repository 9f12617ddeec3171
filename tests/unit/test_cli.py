"""The command line: every command's output, its errors (one line, exit code) and its help."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from shardmodel import __version__
from shardmodel.cli import main
from shardmodel.core.terminal import progress, table
from shardmodel.demo import HOT_KEY, run_demo
from shardmodel.testing import free_port
from tests.support import error_line

Capture = pytest.CaptureFixture[str]


def _one_line_error(capsys: Capture, *phrases: str) -> str:
    """The captured stderr's one error line, with every phrase, and no traceback."""
    return error_line(capsys.readouterr().err, *phrases)


# -- the program -------------------------------------------------------------------------


def test_version_and_help_list_every_command(capsys: Capture) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"shardmodel {__version__}"
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ("demo", "shards", "plan", "prewarm", "hot", "boundaries", "reshard"):
        assert name in out


def test_help_lists_the_commands_in_their_order_and_the_public_names_stay(
    capsys: Capture,
) -> None:
    """Each command registers from a module of its own; --help keeps one fixed order."""
    import shardmodel.cli as cli

    for name in ("COMMANDS", "CommandError", "add_command", "command", "load_model", "main"):
        assert hasattr(cli, name)
    assert main(["--help"]) == 0
    assert "{demo,shards,plan,prewarm,hot,boundaries,reshard}" in capsys.readouterr().out


def test_boundaries_and_reshard_help_show_defaults(capsys: Capture) -> None:
    assert main(["boundaries", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--shards" in out and "(default: 20)" in out and "--debug" in out
    assert main(["reshard", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--to" in out and "(default: 30.0)" in out and "(default: 100)" in out


def test_boundaries_and_reshard_usage_errors_are_one_line(capsys: Capture) -> None:
    assert main(["boundaries"]) == 2
    _one_line_error(capsys, "shardmodel boundaries: error:", "--help")
    assert main(["reshard", "app:Model", "--to", "many"]) == 2
    _one_line_error(capsys, "shardmodel reshard: error: argument --to", "--help")


def test_no_command_is_a_usage_error(capsys: Capture) -> None:
    assert main([]) == 2
    _one_line_error(capsys, "shardmodel: error:", "--help")


def test_the_console_script_imports_models_from_the_current_directory(tmp_path: Path) -> None:
    """Run as an installed script (not ``python -m``), from a project directory."""
    project, bin_dir = tmp_path / "project", tmp_path / "bin"
    project.mkdir()
    bin_dir.mkdir()
    (project / "app_models.py").write_text(
        textwrap.dedent(
            """
            from pynamodb.attributes import UnicodeAttribute
            from shardmodel import RandomShards, ShardedKeyAttribute, ShardedModel

            class Orders(ShardedModel):
                class Meta:
                    table_name = "orders"
                    region = "us-east-1"

                key = ShardedKeyAttribute(hash_key=True, strategy=RandomShards(4))
            """
        )
    )
    script = bin_dir / "shardmodel"  # what pip writes: its own directory leads sys.path
    script.write_text("import sys\nfrom shardmodel.cli import main\nsys.exit(main())\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, str(script), "shards", "app_models:Orders"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "has no DynamicShards partition key" in done.stderr  # imported, then refused
    error_line(done.stderr)


def test_debug_shows_the_traceback(capsys: Capture) -> None:
    assert main(["shards", "tests.models:RandomEvent", "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert err.strip().endswith("--to N (see shardmodel shards --help)")


def test_the_sdk_logs_are_silent_unless_debug(
    capsys: Capture, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """botocore's "Found credentials in ..." (INFO) stays off the terminal; --debug shows it."""
    import logging

    from shardmodel.cli import plan

    def run(args: object) -> int:
        logging.getLogger("botocore.credentials").info("Found credentials in environment")
        return 0

    caplog.set_level(logging.INFO)
    monkeypatch.setattr(plan, "_plan", run)  # the command as registered, looked up per run
    assert main(["plan", "--item-bytes", "100"]) == 0
    assert "Found credentials" not in caplog.text
    assert main(["plan", "--item-bytes", "100", "--debug"]) == 0
    assert "Found credentials" in caplog.text
    assert logging.getLogger("botocore").level == logging.NOTSET  # put back


def test_a_local_endpoint_without_credentials_is_told_how_to_give_some(
    capsys: Capture, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tests.models import DynamicEvent

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    host = f"http://127.0.0.1:{free_port()}"
    try:
        assert main(["shards", "tests.models:DynamicEvent", "--host", host]) == 1
    finally:
        DynamicEvent.Meta.host = None  # type: ignore[attr-defined]
        DynamicEvent._connection = None
    _one_line_error(
        capsys, "Unable to locate credentials", "export AWS_ACCESS_KEY_ID=local AWS_SECRET"
    )


# -- demo --------------------------------------------------------------------------------


def test_demo_throttles_the_unsharded_key_and_not_the_sharded_ones() -> None:
    """Unsharded, the burst loses writes to throttling; sharded and dynamic lose none."""
    lines: list[str] = []
    runs = run_demo(writes=1500, shards=8, seed=1, out=lines.append)
    unsharded, sharded, dynamic = runs
    assert unsharded.lost > 0 and unsharded.shards == 1
    assert (sharded.lost, sharded.throttles, sharded.stored, sharded.shards) == (0, 0, 1500, 8)
    assert dynamic.lost == 0 and dynamic.stored == 1500 and dynamic.shards > 1
    assert any(f"{HOT_KEY}  seq=1499" in line for line in lines)  # newest first, merged


def test_demo_prints_every_layout(capsys: Capture) -> None:
    assert main(["demo", "--writes", "300", "--shards", "4"]) == 0
    printed = capsys.readouterr().out
    assert "unsharded" in printed and "RandomShards(4)" in printed
    assert "DynamicShards()" in printed and "One key takes 1,000 writes/s" in printed


@pytest.mark.parametrize("bad", [["--writes", "0"], ["--shards", "-1"], ["--seed", "x"]])
def test_demo_rejects_bad_arguments_in_one_line(capsys: Capture, bad: list[str]) -> None:
    assert main(["demo", *bad]) == 2
    _one_line_error(capsys, "shardmodel demo: error: argument", bad[0])


def test_demo_help_shows_defaults(capsys: Capture) -> None:
    assert main(["demo", "--help"]) == 0
    out = capsys.readouterr().out
    assert "(default: 5000)" in out and "(default: 10)" in out and "(default: 7)" in out


# -- shards ------------------------------------------------------------------------------


@pytest.mark.usefixtures("tables")
def test_shards_lists_grown_keys_then_shrinks_and_compacts_one(capsys: Capture) -> None:
    """`shardmodel shards module:Model` lists hot keys; --key --shrink-to --compact fixes one."""
    from tests.models import DynamicEvent

    DynamicEvent("cold", 1).save()
    DynamicEvent("hot", 0).save()
    assert main(["shards", "tests.models:DynamicEvent", "--key", "hot", "--grow-to", "2"]) == 0
    capsys.readouterr()
    for n in range(1, 20):
        DynamicEvent("hot", n).save()
    assert main(["shards", "tests.models:DynamicEvent"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].split() == ["key", "live", "readable", "history", "(epoch:count)"]
    assert len(listed) == 3 and listed[2].split()[:3] == ["hot", "2", "2"]
    args = ["shards", "tests.models:DynamicEvent", "--key", "hot", "--shrink-to", "1"]
    assert main([*args, "--compact", "--grace", "0"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("moved ") and printed[-1].split()[:3] == ["hot", "1", "1"]
    assert DynamicEvent.count("hot") == 20


@pytest.mark.usefixtures("tables")
def test_shards_grow_to_records_history_and_refuses_a_smaller_count(capsys: Capture) -> None:
    from tests.models import DynamicEvent

    assert main(["shards", "tests.models:DynamicEvent", "--key", "k", "--grow-to", "6"]) == 0
    row = capsys.readouterr().out.splitlines()[-1].split()
    assert row[:3] == ["k", "6", "6"] and row[3].endswith(":1,") and row[4].endswith(":6")
    assert main(["shards", "tests.models:DynamicEvent", "--key", "k", "--grow-to", "3"]) == 1
    _one_line_error(capsys, "ShardKeyError", "has 6 shards; give a larger count")
    assert main(["shards", "tests.models:DynamicEvent"]) == 0
    assert capsys.readouterr().out.splitlines()[2].split()[:2] == ["k", "6"]
    assert main(["shards", "tests.models:DynamicEvent", "--min", "7"]) == 0
    assert capsys.readouterr().out.strip() == "no key has 7 or more shards"
    assert DynamicEvent.shard_metadata("k").number_of_shards == 6  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("args", "code", "phrases"),
    [
        (["tests.models.DynamicEvent"], 2, ["module:Class"]),
        (["tests.nowhere:X"], 1, ["cannot import 'tests.nowhere'"]),
        (["tests.models:Nobody"], 1, ["has no class 'Nobody'"]),
        (["tests.models:RandomEvent"], 2, ["count is fixed"]),
        (["tests.models:DynamicEvent", "--compact"], 2, ["need --key"]),
        (["tests.models:DynamicEvent", "--key", "k", "--shrink-to", "0"], 2, ["--shrink-to"]),
        (["tests.models:DynamicEvent", "--key", "k", "--grow-to", "x"], 2, ["--grow-to"]),
        (
            ["tests.models:DynamicEvent", "--key", "k", "--grow-to", "2", "--shrink-to", "1"],
            2,
            ["not allowed with"],
        ),
        (["tests.models:DynamicEvent", "--host", "localhost:8000"], 2, ["--host", "URL"]),
        (["tests.models:DynamicEvent", "--grace", "-1"], 2, ["--grace"]),
    ],
)
def test_shards_errors_are_one_line(
    capsys: Capture, args: list[str], code: int, phrases: list[str]
) -> None:
    assert main(["shards", *args]) == code
    _one_line_error(capsys, "shardmodel shards: error:", *phrases)


def test_shards_says_an_unreachable_host_in_one_line(
    capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.models import DynamicEvent

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    host = f"http://127.0.0.1:{free_port()}"
    try:
        assert main(["shards", "tests.models:DynamicEvent", "--host", host]) == 1
    finally:
        DynamicEvent.Meta.host = None  # type: ignore[attr-defined]
        DynamicEvent._connection = None
    _one_line_error(capsys, "Could not connect to the endpoint URL")


def test_shards_help_shows_defaults(capsys: Capture) -> None:
    assert main(["shards", "--help"]) == 0
    out = capsys.readouterr().out
    for phrase in ("--grow-to N", "--shrink-to N", "(default: 5.0)", "(default: 2)"):
        assert phrase in out


# -- plan --------------------------------------------------------------------------------


def test_plan_prints_units_shards_and_the_strategy_line(capsys: Capture) -> None:
    assert main(["plan", "--item-bytes", "1536", "--writes-per-second", "5000"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].split()[:2] == ["reads", "0.5"] and out[2].split()[-1] == "1"
    assert out[3].split()[:3] == ["writes", "2", "WCU"] and out[3].split()[-3:] == [
        "10,000",
        "1,000",
        "20",
    ]
    assert "headroom: 2x (each shard planned at 50% of its partition's limit)" in out
    assert "binding: writes, 20 shards" in out
    assert "strategy: ShardedKeyAttribute(hash_key=True, strategy=RandomShards(20))" in out


def test_plan_suggests_hashed_shards_when_reads_bind(capsys: Capture) -> None:
    args = ["--item-bytes", "800", "--reads-per-second", "2000", "--items-per-read", "25"]
    assert main(["plan", *args, "--consistent"]) == 0
    out = capsys.readouterr().out
    assert "5 RCU a Query (25 x 800 B, strong)" in out and "binding: reads, 7 shards" in out
    assert 'HashShards(7, on=["<attribute your reads fix>"])' in out
    assert main(["plan", "--item-bytes", "100"]) == 0
    assert "strategy: none needed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "bad",
    [
        [],
        ["--item-bytes", "0"],
        ["--item-bytes", "1k"],
        ["--item-bytes", "100", "--reads-per-second", "-5"],
        ["--item-bytes", "100", "--writes-per-second", "inf"],
        ["--item-bytes", "100", "--items-per-read", "0"],
        ["--item-bytes", "500000"],
        ["--item-bytes", "100", "--writes-per-second", "1e12"],
        ["--item-bytes", "100", "--headroom", "0.5"],
        ["--item-bytes", "100", "--verify", "--seconds", "600"],
        ["--item-bytes", "400000", "--writes-per-second", "900000"],
    ],
)
def test_plan_errors_are_one_line(capsys: Capture, bad: list[str]) -> None:
    assert main(["plan", *bad]) == 2
    _one_line_error(capsys, "shardmodel plan: error:")


@pytest.mark.parametrize(
    ("args", "phrases"),
    [
        (["--item-bytes", "500000"], ["--item-bytes", "409,600", "DynamoDB's 400 KB item limit"]),
        (
            ["--item-bytes", "100", "--writes-per-second", "1e12"],
            ["--writes-per-second", "at most 1,000,000", "what 1,000 partitions accept"],
        ),
        (
            ["--item-bytes", "400000", "--writes-per-second", "900000"],
            ["over the 1,000 a strategy takes", "2 writes of 391 WCU", "store smaller items"],
        ),
    ],
)
def test_plan_names_the_limit_a_wild_number_breaks(
    capsys: Capture, args: list[str], phrases: list[str]
) -> None:
    assert main(["plan", *args]) == 2
    _one_line_error(capsys, *phrases)


def test_plan_verify_runs_the_suggested_layout_with_no_throttle(capsys: Capture) -> None:
    """The issue's planner case, scaled to a second: RandomShards(20) takes it, none lost."""
    args = ["--item-bytes", "500", "--writes-per-second", "5000", "--seconds", "1"]
    assert main(["plan", *args, "--verify"]) == 0
    out = capsys.readouterr().out
    assert "RandomShards(10)" in out
    assert "verify: RandomShards(10) on the capacity simulator, 1 s: 5,000 writes" in out
    assert "0 write / 0 read throttles" in out and "verify: passed" in out


def test_plan_verify_fails_a_layout_without_headroom(capsys: Capture) -> None:
    """Sized for the mean (headroom 1), random shards throttle: exit code 1, one line."""
    args = ["--item-bytes", "500", "--writes-per-second", "5000", "--seconds", "1"]
    assert main(["plan", *args, "--headroom", "1", "--verify"]) == 1
    captured = capsys.readouterr()
    assert "verify: RandomShards(5)" in captured.out
    assert "the suggested layout throttled" in captured.err and "raise --headroom" in captured.err


def test_plan_counts_both_sides_together_and_shows_what_a_read_costs(capsys: Capture) -> None:
    """2,000 RCU and 600 WCU: neither side alone needs two shards; together 3 with 2x.

    Beside the advice, one read of the key in each layout: requests, items, units.
    """
    args = ["--item-bytes", "4096", "--reads-per-second", "2000", "--consistent"]
    assert main(["plan", *args, "--writes-per-second", "150"]) == 0
    out = capsys.readouterr().out
    assert "binding: both, 3 shards" in out and "HashShards(3" in out
    rows = {line.split("  ")[0]: line.split() for line in out.splitlines()}
    assert rows["unsharded (one partition)"][-4:] == ["1", "1", "1", "1x"]
    other = rows["HashShards(3), any other read"]
    assert " ".join(other[4:]) == "3 up to 3 3 1.25x-1.76x (measured at 1 and 4)"
    args = ["--item-bytes", "400", "--writes-per-second", "10000", "--reads-per-second", "20"]
    assert main(["plan", *args, "--items-per-read", "50"]) == 0
    out = capsys.readouterr().out
    assert "RandomShards(21)" in out and "newest 50" in out
    random_row = next(line for line in out.splitlines() if line.startswith("RandomShards(21)"))
    assert random_row.split()[1:5] == ["21", "up", "to", "126"]


def test_plan_verify_of_400_kb_items_answers_with_no_throttle(capsys: Capture) -> None:
    """409,600-byte items, the largest accepted: planned for, verified, a line a second."""
    args = ["--item-bytes", "409600", "--writes-per-second", "10", "--verify"]
    assert main(["plan", *args]) == 0
    captured = capsys.readouterr()
    assert "verify: RandomShards(76) on the capacity simulator, 2 s: 20 writes" in captured.out
    assert "verify: passed" in captured.out
    assert "simulated second 2 of 2" in captured.err


def test_plan_help_shows_defaults(capsys: Capture) -> None:
    assert main(["plan", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--item-bytes" in out and "(default: 1)" in out and "(default: 0.0)" in out


# -- the terminal helpers ----------------------------------------------------------------


def test_tables_align_text_left_and_numbers_right() -> None:
    text = table(("key", "shards"), [["a", 2], ["longer", 1000]])
    assert text.splitlines() == [
        "key     shards",
        "------  ------",
        "a            2",
        "longer   1,000",
    ]


def test_progress_speaks_up_for_a_slow_step_only() -> None:
    quiet = io.StringIO()
    with progress("quick", stream=quiet, after=3600):
        pass
    assert quiet.getvalue() == ""
    slow = io.StringIO()
    shown = threading.Event()
    with progress("copying", stream=slow, after=0):
        for _ in range(6000):  # wait, with a generous deadline, until the line appears
            if "copying ..." in slow.getvalue():
                shown.set()
                break
            threading.Event().wait(0.01)
    assert shown.is_set()
    assert "copying ... done in" in slow.getvalue() and slow.getvalue().endswith(" s\n")


# -- hot ---------------------------------------------------------------------------------


def _enable_stream(table: str) -> None:
    import boto3

    boto3.client("dynamodb", region_name="us-east-1").update_table(
        TableName=table,
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    )


@pytest.mark.usefixtures("tables")
def test_hot_prints_the_throttle_report_and_the_hot_keys(capsys: Capture) -> None:
    import boto3

    from tests.models import DynamicEvent

    _enable_stream("dynamic-events")
    DynamicEvent.grow_shards("hot", to=3)
    for n in range(30):
        DynamicEvent("hot", n).save()
    DynamicEvent("cold", 0).save()
    boto3.client("cloudwatch", region_name="us-east-1").put_metric_data(
        Namespace="AWS/DynamoDB",
        MetricData=[
            {
                "MetricName": name,
                "Dimensions": [{"Name": "TableName", "Value": "dynamic-events"}],
                "Value": value,
            }
            for name, value in (("WriteThrottleEvents", 7), ("ConsumedWriteCapacityUnits", 60))
        ],
    )
    args = ["hot", "tests.models:DynamicEvent", "--minutes", "5", "--partition-wcu", "0.03"]
    assert main([*args, "--grow"]) == 0
    out = capsys.readouterr().out
    assert "dynamic-events, last 5 min (CloudWatch)" in out
    assert "on-demand" in out and "partition-level: a hot key" in out
    lines = out.splitlines()
    write_row = next(line for line in lines if line.startswith("(table)  write"))
    assert write_row.split()[2:4] == ["7", "0.2"]  # 7 throttles, 60 WCU over 5 minutes
    assert "hot keys: 31 writes read from the stream, last 5 min" in out
    hot = next(line for line in lines if line.startswith("hot  "))
    assert hot.split()[:3] == ["hot", "30", "0.1"] and hot.split()[4] == "3"
    assert float(hot.split()[3]) >= 10  # the peak: 30 writes in a second or two (real time)
    assert hot.split()[5] == "111%"  # 0.1 WCU/s over 3 shards of 0.03
    assert "grew 'hot' to 5 shards" in out and "grew 'cold'" not in out  # 80% headroom
    assert DynamicEvent.shard_metadata("hot").number_of_shards == 5  # type: ignore[union-attr]


@pytest.mark.usefixtures("tables")
def test_hot_without_a_stream_says_how_to_get_one_and_fails(capsys: Capture) -> None:
    """The report still prints; the missing source is the one-line error, exit code 1."""
    assert main(["hot", "tests.models:RandomEvent"]) == 1
    captured = capsys.readouterr()
    assert "no throttling" in captured.out
    error_line(captured.err, "has no stream; enable one")


@pytest.mark.usefixtures("tables")
def test_hot_without_cloudwatch_says_why_in_one_line_and_fails(
    capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from botocore.exceptions import ClientError

    import shardmodel.ops

    def refuse(*args: object, **kwargs: object) -> None:
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "GetMetricData")

    monkeypatch.setattr(shardmodel.ops, "throttle_report", refuse)
    _enable_stream("random-events")
    assert main(["hot", "tests.models:RandomEvent"]) == 1
    captured = capsys.readouterr()
    assert "hot keys: 0 writes read from the stream" in captured.out
    error_line(
        captured.err, "error: CloudWatch unavailable: ClientError: An error occurred (AccessDenied)"
    )


@pytest.mark.usefixtures("tables")
def test_hot_shows_a_time_series_models_hot_sensor_and_bucket(capsys: Capture) -> None:
    from datetime import datetime, timezone

    from tests.models import SeriesReading

    _enable_stream("series-readings")
    at = datetime(2023, 10, 27, 15, tzinfo=timezone.utc)
    for n in range(20):
        SeriesReading(sensor_id="sensor-hot", timestamp=at.replace(second=n)).save()
    SeriesReading(sensor_id="sensor-cold", timestamp=at).save()
    args = ["hot", "tests.models:SeriesReading", "--partition-wcu", "0.01"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "hot entities: 21 writes read from the stream" in out
    rows = [line.split() for line in out.splitlines()]
    assert [r[0] for r in rows if r and r[0].startswith("sensor-")] == ["sensor-hot", "sensor-cold"]
    bucket = next(r for r in rows if r and r[0].endswith("#2023-10-27T15"))
    assert bucket[1] in ("20", "21")  # the hot sensor's bucket (the cold one may share it)


@pytest.mark.usefixtures("tables")
def test_hot_takes_a_provisioned_tables_partition_share(capsys: Capture) -> None:
    """3,000 RCU and 1,500 WCU start on 3 partitions: 500 WCU each."""
    import boto3

    client = boto3.client("dynamodb", region_name="us-east-1")
    client.update_table(
        TableName="random-events",
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 3000, "WriteCapacityUnits": 1500},
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    )
    assert main(["hot", "tests.models:RandomEvent"]) == 0
    out = capsys.readouterr().out
    assert "500 WCU/s a partition (1,500 WCU over 3 initial partition(s))" in out


def _skewed_tenant_table() -> str:
    """TenantEvent's table with a stream: 50 writes from one region, 5 from each of four others.

    Returns the busy physical key. Over a one-minute window that key takes 0.83 WCU/s, the
    rest 0.08 each: 83% of a 1 WCU/s partition, while the key's average over the shards it
    reached is under 25%.
    """
    from tests.models import TenantEvent

    TenantEvent.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    _enable_stream("tenant-events")
    for region, count in (("eu-west-1", 50), ("us-east-1", 5), ("ap-south-1", 5),
                          ("sa-east-1", 5), ("ca-central-1", 5)):  # fmt: skip
        for n in range(count):
            TenantEvent("acme", n, region=region).save()
    return str(TenantEvent("acme", 0, region="eu-west-1").get_physical_key())


@pytest.mark.usefixtures("tables")
@pytest.mark.parametrize(
    ("rule", "heading"),
    [
        ([], "hot physical keys: 80% of 1 WCU/s or more"),  # the default share
        (["--threshold", "0.5"], "hot physical keys: 50% of 1 WCU/s or more"),
        (["--writes-per-second", "0.5"], "hot physical keys: 0.5 writes/s or more"),
    ],
)
def test_hot_names_a_skewed_physical_key_with_its_logical_key(
    capsys: Capture, rule: list[str], heading: str
) -> None:
    """A HashShards key hashed on a skewed attribute: one physical key at 83% is hot."""
    busy = _skewed_tenant_table()
    args = ["hot", "tests.models:TenantEvent", "--minutes", "1", "--partition-wcu", "1", *rule]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "contributor insights: unavailable (NotImplementedError" in out  # moto has none
    assert heading in out
    lines = out.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(heading))
    rows = [line.split() for line in lines[start:]]
    assert rows[3] == [busy, "acme", "0.8", "0.8", "83%"]
    assert len(rows) == 4  # the other regions' keys take 0.08 each


class _InsightsEnabled:
    """A client of moto's that also answers Contributor Insights, which moto does not.

    DynamoDB's DescribeContributorInsights lists the table's rules; CloudWatch's
    GetInsightRuleReport ranks the physical keys of each.
    """

    def __init__(self, client: object, answers: dict[str, object]) -> None:
        self._client = client
        self._answers = answers
        self.asked: list[dict[str, object]] = []

    def __getattr__(self, name: str) -> object:
        if name not in self._answers:
            return getattr(self._client, name)

        def answer(**params: object) -> object:
            self.asked.append(params)
            found = self._answers[name]
            return found(params) if callable(found) else found

        return answer


@pytest.mark.usefixtures("tables")
def test_hot_prints_contributor_insights_folded_to_logical_keys(
    capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the table has Contributor Insights, its PKT and PKC rankings show by logical key."""
    import shardmodel.cli.hot
    from tests.models import TenantEvent

    busy = _skewed_tenant_table()
    quiet = str(TenantEvent("acme", 0, region="us-east-1").get_physical_key())
    rules = {
        "PKT": "DynamoDBContributorInsights-PKT-tenant-events-1732780800000",
        "PKC": "DynamoDBContributorInsights-PKC-tenant-events-1732780800000",
    }
    ranked = {
        rules["PKT"]: [(busy, 12.0)],
        rules["PKC"]: [(busy, 49_140.0), ("zeta#1", 600.0), (quiet, 300.0)],
    }

    def report(params: dict[str, object]) -> dict[str, object]:
        rows = ranked[str(params["RuleName"])]
        return {
            "AggregationStatistic": "Sum",
            "Contributors": [{"Keys": [k], "ApproximateAggregateValue": v} for k, v in rows],
        }

    original = shardmodel.cli.hot._clients
    wrapped: list[_InsightsEnabled] = []

    def clients(model: object, host: str | None) -> tuple[object, object, object]:
        cloudwatch, streams, dynamodb = original(model, host)
        described = {
            "ContributorInsightsStatus": "ENABLED",
            "ContributorInsightsMode": "ACCESSED_AND_THROTTLED_KEYS",
            "ContributorInsightsRuleList": [*rules.values()],
        }
        wrapped.append(_InsightsEnabled(cloudwatch, {"get_insight_rule_report": report}))
        wrapped.append(_InsightsEnabled(dynamodb, {"describe_contributor_insights": described}))
        return wrapped[0], streams, wrapped[1]

    monkeypatch.setattr(shardmodel.cli.hot, "_clients", clients)
    assert main(["hot", "tests.models:TenantEvent", "--minutes", "15", "--top", "5"]) == 0
    out = capsys.readouterr().out
    assert "contributor insights: tenant-events (ACCESSED_AND_THROTTLED_KEYS)" in out
    assert [params["RuleName"] for params in wrapped[0].asked] == [rules["PKT"], rules["PKC"]]
    assert {params["MaxContributorCount"] for params in wrapped[0].asked} == {5}
    assert wrapped[1].asked == [{"TableName": "tenant-events"}]
    lines = out.splitlines()
    accessed = lines.index(next(line for line in lines if line.startswith("most accessed")))
    acme = lines[accessed + 3].split()
    assert acme[:3] == ["acme", "49,440", "54.9"]  # busy and quiet, over 900 s
    assert acme[3:] == [busy, "(49,140),", quiet, "(300)"]
    assert lines[accessed + 4].split() == ["zeta", "600", "0.7", "zeta#1", "(600)"]
    assert "hot keys: 70 writes read from the stream" in out  # the stream still reports


@pytest.mark.usefixtures("tables")
def test_hot_says_in_one_line_that_contributor_insights_is_off(
    capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shardmodel.cli.hot

    _enable_stream("random-events")
    original = shardmodel.cli.hot._clients

    def clients(model: object, host: str | None) -> tuple[object, object, object]:
        cloudwatch, streams, dynamodb = original(model, host)
        off = {"TableName": "random-events", "ContributorInsightsStatus": "DISABLED"}
        return (
            cloudwatch,
            streams,
            _InsightsEnabled(dynamodb, {"describe_contributor_insights": off}),
        )

    monkeypatch.setattr(shardmodel.cli.hot, "_clients", clients)
    assert main(["hot", "tests.models:RandomEvent"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if line.startswith("contributor insights")] == [
        "contributor insights: disabled on random-events (enable it: aws dynamodb "
        "update-contributor-insights --table-name random-events "
        "--contributor-insights-action ENABLE)"
    ]
    assert any(line.startswith("hot keys: 0 writes read from the stream") for line in out)


@pytest.mark.parametrize(
    ("args", "code", "phrases"),
    [
        (["tests.models"], 2, ["module:Class"]),
        (["tests.models:PlainEvent"], 2, ["not a ShardedModel"]),
        (["tests.models:NoSuchModel"], 1, ["has no class 'NoSuchModel'"]),
        (["tests.models:RandomEvent", "--grow"], 2, ["no DynamicShards key to grow"]),
        (["tests.models:RandomEvent", "--minutes", "0"], 2, ["--minutes"]),
        (["tests.models:RandomEvent", "--minutes", "5000"], 2, ["stream keeps 24 hours"]),
        (["tests.models:RandomEvent", "--partition-wcu", "0"], 2, ["--partition-wcu"]),
        (["tests.models:RandomEvent", "--partition-wcu", "2000"], 2, ["1,000 WCU"]),
        (["tests.models:RandomEvent", "--partition-wcu", "-1"], 2, ["--partition-wcu"]),
        (["tests.models:RandomEvent", "--host", "nowhere"], 2, ["--host"]),
        (["tests.models:RandomEvent", "--threshold", "0"], 2, ["--threshold", "above 0"]),
        (["tests.models:RandomEvent", "--threshold", "82"], 2, ["--threshold", "at most 1"]),
        (["tests.models:RandomEvent", "--writes-per-second", "0"], 2, ["--writes-per-second"]),
        (
            ["tests.models:RandomEvent", "--threshold", "0.5", "--writes-per-second", "100"],
            2,
            ["--writes-per-second", "not allowed with argument --threshold"],
        ),
    ],
)
def test_hot_errors_are_one_line(
    capsys: Capture, args: list[str], code: int, phrases: list[str]
) -> None:
    assert main(["hot", *args]) == code
    _one_line_error(capsys, "shardmodel hot: error:", *phrases)


def test_hot_help_shows_defaults(capsys: Capture) -> None:
    assert main(["hot", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--minutes MINUTES" in out and "(default: 15)" in out and "1,000 on-demand" in out


def test_progress_says_when_a_slow_step_failed() -> None:
    out = io.StringIO()
    with pytest.raises(RuntimeError), progress("copying", stream=out, after=0):
        for _ in range(6000):
            if "copying ..." in out.getvalue():
                break
            threading.Event().wait(0.01)
        raise RuntimeError("boom")
    assert "copying ... failed after" in out.getvalue()


def test_no_flag_shows_a_default_that_contradicts_it(capsys: Capture) -> None:
    """``--no-indexes ... (default: True)`` read as the opposite of what the flag does."""
    from shardmodel.cli.registry import COMMANDS  # noqa: F401 - every command registered

    for command in ("hot", "prewarm", "shards", "boundaries", "reshard", "plan", "demo"):
        assert main([command, "--help"]) == 0
        out = capsys.readouterr().out
        assert "(default: True)" not in out and "(default: False)" not in out, command
