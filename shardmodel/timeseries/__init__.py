"""Time series in the hybrid bucket layout: no entity in the partition key.

The public time-series guides' production layout writes one reading of entity ``E`` at
time ``t`` under::

    PK = "{md5(E) % N}#{bucket of t}"          7#2023-10-27T15
    SK = "{E}#{t in UTC, microseconds, Z}"     sensor-alpha-001#2023-10-27T15:04:05.123456Z

Writes of many entities spread over ``N`` partitions per bucket; one entity's bucket is
one partition, read with a sort key range that starts with ``E#``. Here the partition
key is declared as strategy segments (:class:`BucketKeyAttribute`), the sort key as
entity plus time (:class:`SeriesKeyAttribute`); a :class:`TimeSeriesModel` fills both
from plain attributes on save, fills the entity and time back from the sort key on load,
and reads "entity E between t0 and t1" as one query per covered bucket, merged in time
order (:meth:`TimeSeriesModel.query_series`, :meth:`TimeSeriesModel.latest`).
"""

from shardmodel.timeseries.herd import herd_offset
from shardmodel.timeseries.keys import (
    BucketKeyAttribute,
    SeriesKeyAttribute,
    SeriesLayout,
    SeriesTimeAttribute,
    series_time_text,
)
from shardmodel.timeseries.model import TimeSeriesModel

__all__ = [
    "BucketKeyAttribute",
    "SeriesKeyAttribute",
    "SeriesLayout",
    "SeriesTimeAttribute",
    "TimeSeriesModel",
    "herd_offset",
    "series_time_text",
]
