"""Thin model facades over the engine: ShardedModel, TimeSeriesModel, their metaclasses."""
