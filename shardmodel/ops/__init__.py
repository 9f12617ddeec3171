"""Operating a sharded table: hot keys, throttle reports and the table throttle policy."""

from shardmodel.ops.hotkeys import HotKey, HotKeyTracker, read_stream

__all__ = ["HotKey", "HotKeyTracker", "read_stream"]
