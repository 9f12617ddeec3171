"""shardmodel's benchmarks: `make bench` prints ratios against a baseline run alongside."""
