"""Hypothesis: for any sensor and time, the model's keys are the guide's keys, byte for byte.

No I/O: ``serialize()`` is what a save sends. The guide's formula is written here
without shardmodel: md5 of the sensor id % N, the hour in UTC, the UTC time with six
fraction digits and ``Z``. (Years before 1000 are left out: the guide's ``strftime``
does not pad them, the model writes ``0999-...`` so the text still sorts as the time.)
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.models import SeriesReading

sensors = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="#"), min_size=1, max_size=60
)
zones = st.sampled_from(
    [timezone.utc, *(timezone(timedelta(minutes=m)) for m in (-720, -330, 345, 840))]
)
moments = st.datetimes(
    min_value=datetime(1000, 1, 2), max_value=datetime(9999, 12, 30), timezones=zones
)


def guide_keys(sensor: str, moment: datetime, shards: int = 10) -> tuple[str, str]:
    ts = moment.astimezone(timezone.utc)
    shard = int(hashlib.md5(sensor.encode("utf-8")).hexdigest(), 16) % shards
    return (
        f"{shard}#{ts.strftime('%Y-%m-%dT%H')}",
        f"{sensor}#{ts.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}",
    )


@given(sensor=sensors, moment=moments, form=st.sampled_from(["datetime", "iso", "epoch"]))
def test_model_keys_equal_the_guides(sensor: str, moment: datetime, form: str) -> None:
    given_time: Any = moment
    if form == "iso":
        given_time = moment.isoformat()
    elif form == "epoch" and moment.year >= 1970:
        given_time = int(moment.timestamp())
        moment = datetime.fromtimestamp(given_time, timezone.utc)
    item = SeriesReading(sensor_id=sensor, timestamp=given_time, value=1).serialize()
    pk, sk = guide_keys(sensor, moment)
    assert item == {"PK": {"S": pk}, "SK": {"S": sk}, "value": {"N": "1"}}
