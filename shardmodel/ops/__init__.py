"""Operating a sharded table: hot keys, throttle reports, the table throttle policy, prewarming."""

from shardmodel.ops.hotkeys import HotKey, HotKeyTracker, HotPartition, HotShard, read_stream
from shardmodel.ops.insights import (
    Contributor,
    ContributorInsights,
    InsightRanking,
    contributor_insights,
)
from shardmodel.ops.policy import PolicyAction, TableThrottlePolicy
from shardmodel.ops.prewarm import PrewarmPlan, WarmChange, fan_out_of, prewarm, warm_units
from shardmodel.ops.report import CapacityRow, ThrottleReport, throttle_report

__all__ = [
    "CapacityRow",
    "Contributor",
    "ContributorInsights",
    "HotKey",
    "HotKeyTracker",
    "HotPartition",
    "HotShard",
    "InsightRanking",
    "PolicyAction",
    "PrewarmPlan",
    "TableThrottlePolicy",
    "ThrottleReport",
    "WarmChange",
    "contributor_insights",
    "fan_out_of",
    "prewarm",
    "read_stream",
    "throttle_report",
    "warm_units",
]
