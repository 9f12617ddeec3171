"""Hot keys from DynamoDB Streams: Lambda events and a get_records loop on moto."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from shardmodel.ops import HotKeyTracker, HotShard, contributor_insights, read_stream
from shardmodel.testing import SimulatedClock
from tests.models import DynamicEvent, HashedEvent, RandomEvent, TenantEvent

PAYLOAD = {"event_type": {"S": "x" * 200}}


def _record(physical: str, at: float, n: int, name: str = "user_id") -> dict[str, Any]:
    """One Lambda-style stream record (epoch seconds, DynamoDB JSON)."""
    keys = {name: {"S": physical}, "timestamp": {"N": str(n)}}
    return {
        "eventName": "INSERT",
        "eventSource": "aws:dynamodb",
        "dynamodb": {
            "ApproximateCreationDateTime": at,
            "Keys": keys,
            "NewImage": {**keys, **PAYLOAD},
            "SizeBytes": 260,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    }


def _burst(key: str, per_second: int, seconds: range, shards: int = 1) -> list[dict[str, Any]]:
    return [
        _record(f"{key}#{n % shards}", at + n / per_second, n)
        for at in seconds
        for n in range(per_second)
    ]


@pytest.mark.usefixtures("tables")
def test_a_lambda_handler_names_the_hot_key_and_grows_it_before_it_throttles() -> None:
    """900 writes/s on one shard is 90% of a partition: grown to 2 shards (80% headroom)."""
    clock = SimulatedClock(start=1_700_000_009.5)  # in the last second written
    tracker = HotKeyTracker(DynamicEvent, window=10, grow=True, clock=clock)
    event = {"Records": _burst("hot", 900, range(1_700_000_000, 1_700_000_010))}
    event["Records"] += _burst("cold", 20, range(1_700_000_000, 1_700_000_010))
    result = tracker.handler(event)
    assert result["counted"] == 9200
    assert result["hot"] == [("hot", 900.0, 1)]
    assert result["grown"] == {"hot": 2}
    metadata = DynamicEvent.shard_metadata("hot")
    assert metadata is not None and [e.count for e in metadata.history] == [1, 2]
    assert DynamicEvent.shard_metadata("cold") is None  # never touched
    top = tracker.top(2)
    assert [k.logical_key for k in top] == ["hot", "cold"]
    assert (top[0].writes, top[0].shards, top[0].load) == (9000, 2, 0.45)
    assert tracker.handler({"Records": []})["grown"] == {}  # 2 shards hold 900/s


def test_the_window_slides_and_late_records_are_ignored() -> None:
    tracker = HotKeyTracker(RandomEvent, window=60, clock=SimulatedClock(start=1000))
    tracker.record(_burst("a", 10, range(1000, 1010), shards=10))
    assert [(k.logical_key, k.writes) for k in tracker.top()] == [("a", 100)]
    tracker.record(_burst("b", 50, range(1065, 1066)))
    # seconds 1006-1009 of a are still in the minute up to 1065
    assert [(k.logical_key, k.writes) for k in tracker.top()] == [("b", 50), ("a", 40)]
    tracker.record(_burst("b", 5, range(1075, 1076)))
    assert [(k.logical_key, k.writes) for k in tracker.top()] == [("b", 55)]  # a left
    tracker.record([_record("a#1", 1001, 0)])  # late: its second left the window
    assert [k.logical_key for k in tracker.top()] == ["b"]
    assert tracker.top()[0].shards == 10  # RandomShards(10): every key spreads over 10


def test_fixed_strategies_report_their_spread() -> None:
    clock = SimulatedClock(start=49.5)
    spread = HotKeyTracker(RandomEvent, window=10, partition_wcu=10, clock=clock)
    spread.record(_burst("r", 50, range(40, 50), shards=10))
    (key,) = spread.top()
    assert (key.per_second, key.shards, key.needed_shards) == (50.0, 10, 5)
    assert key.load == 0.5 and spread.hot() == []
    with pytest.raises(ValueError, match="no DynamicShards key"):
        spread.grow_hot()


def test_a_key_hashed_on_its_sort_key_spreads_like_random_shards() -> None:
    """The issue's case: HashShards(8, on=[timestamp]) spreads one key over 8 shards.

    It used to count as one shard, load 0.9 where the same records under RandomShards
    give about 0.1: the writes reached 8 physical keys, so the key has 8 shards.
    """
    loads = []
    for model, shards in ((HashedEvent, 8), (RandomEvent, 10)):
        tracker = HotKeyTracker(model, window=10, partition_wcu=80, clock=SimulatedClock(49.5))
        tracker.record(_burst("k", 72, range(40, 50), shards=shards))
        (key,) = tracker.top()
        loads.append((key.shards, round(key.load, 2)))
        assert tracker.hot() == []
    assert loads == [(8, 0.11), (10, 0.09)]


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"window": 0}, "window"),
        ({"partition_wcu": "1000"}, "partition_wcu"),
        ({"threshold": 1.5}, "threshold"),
        ({"grow": True}, "grow"),
    ],
)
def test_bad_settings_name_the_setting(options: dict[str, Any], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        HotKeyTracker(RandomEvent, **options)


@pytest.mark.usefixtures("tables")
def test_a_get_records_loop_on_moto_maps_physical_keys_back_and_grows_the_hot_one() -> None:
    """Real stream records from moto: 4 physical keys of 'hot' count as one logical key."""
    table = DynamicEvent.Meta.table_name
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    stream_arn = dynamodb.update_table(
        TableName=table,
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )["TableDescription"]["LatestStreamArn"]
    DynamicEvent.grow_shards("hot", to=4)
    for n in range(40):
        DynamicEvent("hot", n, event_type="click").save()
    for n in range(3):
        DynamicEvent("cold", n).save()
    stored = {e.get_physical_key() for e in DynamicEvent.query("hot")}
    assert len(stored) > 1
    # a tiny per-partition limit makes 40 writes a minute hot: 0.67 WCU/s over 4 shards
    tracker = HotKeyTracker(DynamicEvent, window=60, partition_wcu=0.1, grow=True)
    # botocore now routes by the ARN's account (<account>.streams-ddb...), which moto
    # does not answer: name the regional endpoint
    streams = boto3.client(
        "dynamodbstreams",
        region_name="us-east-1",
        endpoint_url="https://streams.dynamodb.us-east-1.amazonaws.com",
    )
    assert read_stream(tracker, stream_arn, streams) == 43
    top = tracker.top()
    assert [(k.logical_key, k.writes, k.shards) for k in top] == [("hot", 40, 4), ("cold", 3, 1)]
    assert [k.logical_key for k in tracker.hot()] == ["hot"]  # cold: 0.05 WCU/s, half
    grown = tracker.grow_hot()
    assert grown == {"hot": 9}  # 0.667 WCU/s at 80% of 0.1 per shard
    assert DynamicEvent.shard_metadata("hot").number_of_shards == 9  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="max_calls"):
        read_stream(tracker, stream_arn, streams, max_calls=0)


def test_records_of_other_layouts_and_tables_are_skipped(caplog: pytest.LogCaptureFixture) -> None:
    tracker = HotKeyTracker(RandomEvent, window=60, clock=SimulatedClock(start=10))
    foreign = [_record("no-suffix", 5, 0), _record("a#1", 5, 1, name="other_key")]
    assert tracker.record([*foreign, _record("a#1", 5, 2)]) == 1
    assert "stream key 'no-suffix' skipped" in caplog.text
    assert [(k.logical_key, k.writes) for k in tracker.top()] == [("a", 1)]


def _reading(bucket: str, sensor: str, at: float, n: int) -> dict[str, Any]:
    """A stream record of SeriesReading: PK ``<shard>#<hour>``, SK ``<sensor>#<time>``."""
    keys = {"PK": {"S": bucket}, "SK": {"S": f"{sensor}#2023-10-27T15:00:{n % 60:02d}.{n:06d}Z"}}
    return {
        "eventName": "INSERT",
        "dynamodb": {"ApproximateCreationDateTime": at, "Keys": keys, "NewImage": keys},
    }


def test_a_time_series_model_shows_its_hot_sensor_and_its_hot_bucket() -> None:
    """The time-series guide's hot sensor: 2,000 writes/s into one bucket, twice a partition."""
    from tests.models import SeriesReading

    clock = SimulatedClock(start=104.5)
    tracker = HotKeyTracker(SeriesReading, window=5, clock=clock)
    hot = [_reading("3#2023-10-27T15", "sensor-hot", 100 + n / 2000, n) for n in range(10_000)]
    cold = [
        _reading(f"{n % 10}#2023-10-27T15", f"sensor-{n:03d}", 100 + n / 100, n) for n in range(500)
    ]
    assert tracker.record(hot + cold) == 10_500
    top = tracker.top(2)
    assert top[0].logical_key == "sensor-hot"
    assert (top[0].shards, top[0].per_second, top[0].load) == (1, 2000.0, 2.0)
    assert top[0].peak_load == 2.0
    assert [k.logical_key for k in tracker.hot()] == ["sensor-hot"]
    bucket = tracker.partitions(1)[0]
    assert (bucket.key, bucket.peak_per_second) == ("3#2023-10-27T15", 2010.0)  # hot + cold
    assert bucket.peak_load == 2.01


def test_a_burst_shows_its_peak_second_not_the_windows_average() -> None:
    """3,000 writes in one second of a 15-minute window: 3.3 WCU/s on average, 3,000 at peak."""
    tracker = HotKeyTracker(RandomEvent, window=900, clock=SimulatedClock(start=1000.5))
    tracker.record(_burst("sale", 3000, range(1000, 1001), shards=10))
    (key,) = tracker.top()
    assert round(key.per_second, 1) == 3.3 and key.load < 0.01
    assert (key.peak_per_second, key.partition_peak, key.peak_load) == (3000.0, 300.0, 0.3)


REGIONS = ("eu-west-1", "us-east-1", "ap-south-1", "sa-east-1", "ca-central-1")


def _skewed_tenant(seconds: range) -> tuple[list[dict[str, Any]], str]:
    """819 writes a second from one region, 10 from each of four others: (records, busy key)."""
    records, busy = [], ""
    for at in seconds:
        for region, per_second in zip(REGIONS, (819, 10, 10, 10, 10), strict=True):
            physical = str(TenantEvent("acme", 0, region=region).get_physical_key())
            busy = busy or physical
            records += [
                _record(physical, at + n / per_second, n, "tenant") for n in range(per_second)
            ]
    return records, busy


def test_a_key_hashed_on_a_skewed_attribute_is_hot_on_its_busy_physical_key() -> None:
    """The audit's case: one physical partition at 819 of 1,000 WCU/s (0.82 of its limit).

    Averaged over the shards the key reached, the load is 0.11 and the key was never hot;
    judged physical key by physical key, ``acme#<n>`` takes 0.82 and is reported, folded
    to ``acme``, by the default share (0.8), a share set lower, and the time-series
    guide's 100 writes a second on one physical key.
    """
    tracker = HotKeyTracker(TenantEvent, window=10, clock=SimulatedClock(start=49.5))
    records, busy = _skewed_tenant(range(40, 50))
    assert tracker.record(records) == 8590
    (key,) = tracker.top()
    assert key.shards >= 2 and key.load < 0.5  # the average hid it
    for options in ({}, {"threshold": 0.5}, {"writes_per_second": 100}):
        (hot,) = tracker.hot(**options)
        assert hot.logical_key == "acme"
        assert hot.hot_shards == (HotShard(busy, "acme", 8190, 8190.0, 10.0, 1000.0),)
        (shard,) = hot.hot_shards
        assert (shard.writes_per_second, round(shard.load, 3)) == (819.0, 0.819)
    assert tracker.hot(threshold=0.9) == []
    assert tracker.hot(writes_per_second=820) == []
    assert len(tracker.hot(writes_per_second=10)[0].hot_shards) == len(
        {TenantEvent("acme", 0, region=r).get_physical_key() for r in REGIONS}
    )


def test_a_rate_on_one_physical_key_counts_writes_not_units() -> None:
    """The guide's rule counts writes: 150 writes of 3 KB a second pass 100 writes/s."""
    tracker = HotKeyTracker(RandomEvent, window=10, clock=SimulatedClock(start=49.5))
    big = {"event_type": {"S": "x" * 3000}}
    records = _burst("big", 150, range(40, 50))
    for record in records:
        record["dynamodb"]["NewImage"].update(big)
    tracker.record(records)
    (hot,) = tracker.hot(writes_per_second=100)
    assert [(s.key, s.writes_per_second, s.per_second) for s in hot.hot_shards] == [
        ("big#0", 150.0, 450.0)
    ]
    assert tracker.hot() == []  # 450 WCU/s is 45% of a partition


@pytest.mark.parametrize(
    ("options", "phrases"),
    [
        ({"threshold": 0}, ["threshold=0", "(0, 1]"]),
        ({"threshold": 819}, ["threshold=819", "writes_per_second"]),
        ({"threshold": "0.5"}, ["threshold='0.5'"]),
        ({"writes_per_second": 0}, ["writes_per_second=0", "above 0"]),
        ({"writes_per_second": True}, ["writes_per_second=True"]),
        ({"threshold": 0.5, "writes_per_second": 100}, ["give one"]),
    ],
)
def test_bad_hot_thresholds_name_the_argument_and_the_fix(
    options: dict[str, Any], phrases: list[str]
) -> None:
    tracker = HotKeyTracker(RandomEvent, window=10, clock=SimulatedClock(start=49.5))
    with pytest.raises(ValueError) as error:
        tracker.hot(**options)
    assert all(phrase in str(error.value) for phrase in phrases)


# -- Contributor Insights ------------------------------------------------------------------

NOW = datetime(2026, 11, 28, 12, tzinfo=timezone.utc)
PKC = "DynamoDBContributorInsights-PKC-tenant-events-1732780800000"
PKT = "DynamoDBContributorInsights-PKT-tenant-events-1732780800000"


def _stubbed(
    mode: str, rules: list[str], reports: dict[str, list[tuple[str, float]]]
) -> tuple[Any, Any]:
    """DynamoDB and CloudWatch clients answering from botocore's Stubber (moto has neither call)."""
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    described = Stubber(dynamodb)
    described.add_response(
        "describe_contributor_insights",
        {
            "TableName": "tenant-events",
            "ContributorInsightsStatus": "ENABLED",
            "ContributorInsightsMode": mode,
            "ContributorInsightsRuleList": rules,
        },
        {"TableName": "tenant-events"},
    )
    described.activate()
    reported = Stubber(cloudwatch)
    for rule, rows in reports.items():
        reported.add_response(
            "get_insight_rule_report",
            {
                "KeyLabels": ["PK"],
                "AggregationStatistic": "Sum",
                "Contributors": [
                    {"Keys": [key], "ApproximateAggregateValue": value, "Datapoints": []}
                    for key, value in rows
                ],
            },
            {
                "RuleName": rule,
                "StartTime": NOW - timedelta(minutes=15),
                "EndTime": NOW,
                "Period": 60,
                "MaxContributorCount": 10,
                "OrderBy": "Sum",
            },
        )
    reported.activate()
    return dynamodb, cloudwatch


def test_contributor_insights_fold_physical_keys_to_their_logical_keys() -> None:
    """The PKT and PKC rules rank physical keys: each folds to the logical key it belongs to."""
    busy = str(TenantEvent("acme", 0, region="eu-west-1").get_physical_key())
    quiet = str(TenantEvent("acme", 0, region="us-east-1").get_physical_key())
    other = str(TenantEvent("zeta", 0, region="eu-west-1").get_physical_key())
    dynamodb, cloudwatch = _stubbed(
        "ACCESSED_AND_THROTTLED_KEYS",
        [PKC, PKT, PKC.replace("-PKC-", "-SKC-")],
        {
            PKT: [(busy, 120.0)],
            PKC: [(busy, 737_100.0), (other, 9_000.0), (quiet, 9_000.0), ("hand-written", 5.0)],
        },
    )
    found = contributor_insights(
        TenantEvent, dynamodb=dynamodb, cloudwatch=cloudwatch, now=lambda: NOW
    )
    assert found.enabled and found.mode == "ACCESSED_AND_THROTTLED_KEYS"
    throttled, accessed = found.rankings
    assert (throttled.ranking, throttled.rule, accessed.ranking, accessed.rule) == (
        "throttled",
        PKT,
        "accessed",
        PKC,
    )
    assert [(c.key, c.logical_key) for c in throttled.contributors] == [(busy, "acme")]
    assert [
        (logical, total, [c.key for c in keys]) for logical, total, keys in accessed.folded()
    ] == [
        ("acme", 746_100.0, [busy, quiet]),
        ("zeta", 9_000.0, [other]),
        (None, 5.0, ["hand-written"]),
    ]
    text = found.render()
    assert "most throttled partition keys, last 15 min" in text and PKT in text
    acme = next(line for line in text.splitlines()[::-1] if line.startswith("acme "))
    assert acme.split()[1:3] == ["746,100", "829"]  # 746,100 over 900 s
    assert f"{busy} (737,100), {quiet} (9,000)" in acme
    assert "(-: a key of no single logical key" in text


def test_contributor_insights_in_throttled_keys_mode_and_when_off() -> None:
    dynamodb, cloudwatch = _stubbed("THROTTLED_KEYS", [PKT], {PKT: []})
    found = contributor_insights(
        TenantEvent, dynamodb=dynamodb, cloudwatch=cloudwatch, now=lambda: NOW
    )
    assert [r.ranking for r in found.rankings] == ["throttled"]  # no PKC rule in this mode
    assert "(no throttled keys in the window)" in found.render()
    off = boto3.client("dynamodb", region_name="us-east-1")
    with Stubber(off) as stub:
        stub.add_response(
            "describe_contributor_insights",
            {"TableName": "tenant-events", "ContributorInsightsStatus": "DISABLED"},
        )
        found = contributor_insights(TenantEvent, dynamodb=off, cloudwatch=object())
    assert not found.enabled and found.rankings == ()
    assert found.render() == (
        "contributor insights: disabled on tenant-events (enable it: aws dynamodb "
        "update-contributor-insights --table-name tenant-events --contributor-insights-action "
        "ENABLE)"
    )


@pytest.mark.parametrize(
    ("options", "phrase"),
    [({"minutes": 0}, "minutes=0"), ({"top": 101}, "top=101"), ({"top": True}, "top=True")],
)
def test_bad_contributor_insights_settings_fail_before_any_request(
    options: dict[str, Any], phrase: str
) -> None:
    with pytest.raises(ValueError, match=phrase):
        contributor_insights(TenantEvent, dynamodb=object(), cloudwatch=object(), **options)
