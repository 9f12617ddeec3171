"""Tests of shardmodel.testing: the pytest plugin, the capacity simulator, faults."""
