"""Operating a sharded table: hot keys, throttle reports and the table throttle policy."""

from shardmodel.ops.hotkeys import HotKey, HotKeyTracker, read_stream
from shardmodel.ops.policy import PolicyAction, TableThrottlePolicy
from shardmodel.ops.report import CapacityRow, ThrottleReport, throttle_report

__all__ = [
    "CapacityRow",
    "HotKey",
    "HotKeyTracker",
    "PolicyAction",
    "TableThrottlePolicy",
    "ThrottleReport",
    "read_stream",
    "throttle_report",
]
