"""Dynamic shard counts: the metadata table, growth on throttling, shrink, compaction."""
