"""shardmodel.streams: a table's stream during a layout change shows the application only.

A change moves every item (fence, copy, tombstone, confirmation, sweep), each a stream
record; the application saves, updates and deletes in every phase, from a process a
phase behind too. Read back from moto's stream, :func:`~shardmodel.streams.changes`
must give exactly the application's writes, in order, with logical keys.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from shardmodel import HashShards, RandomShards, ShardedKeyAttribute, ShardedModel
from shardmodel.errors import UnsupportedOperationError
from shardmodel.migration import Phase, Reshard, follow, unfollow
from shardmodel.migration.reshard import JOBS
from shardmodel.streams import changes
from shardmodel.testing import SimulatedClock, bind_models, create_tables, mock_dynamodb


def _model(name: str, strategy: Any, view: str = "NEW_AND_OLD_IMAGES") -> Any:
    meta = type(
        "Meta",
        (),
        {"table_name": f"streamed-{name.lower()}", "region": "us-east-1", "stream_view_type": view},
    )
    namespace = {
        "Meta": meta,
        "__module__": __name__,
        "sensor": ShardedKeyAttribute(hash_key=True, strategy=strategy),
        "seq": NumberAttribute(range_key=True),
        "value": UnicodeAttribute(null=True),
    }
    return type(name, (ShardedModel,), namespace)


Hashed = _model("Hashed", HashShards(4, on=["seq"]))
Randomed = _model("Randomed", RandomShards(4))
KeysOnly = _model("KeysOnly", HashShards(4, on=["seq"]), view="KEYS_ONLY")
MODELS = (Hashed, Randomed, KeysOnly)


@pytest.fixture
def streamed() -> Iterator[SimulatedClock]:
    with mock_dynamodb():
        bind_models(MODELS, host=None)
        create_tables(MODELS)
        yield SimulatedClock(start=1_700_000_000.0)
        for model in MODELS:
            unfollow(model)


def _records(model: Any) -> list[dict[str, Any]]:
    """Every record of the table's stream, in order (one shard on moto)."""
    arn = model.describe_table()["LatestStreamArn"]
    # botocore sends a stream ARN's requests to <account>.streams-ddb..., which moto
    # does not answer: the regional endpoint, named
    client = boto3.client(
        "dynamodbstreams",
        region_name="us-east-1",
        endpoint_url="https://streams.dynamodb.us-east-1.amazonaws.com",
    )
    found: list[dict[str, Any]] = []
    for shard in client.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = client.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while iterator:
            page = client.get_records(ShardIterator=iterator, Limit=1000)
            found.extend(page["Records"])
            iterator = page.get("NextShardIterator") if page["Records"] else None
    return found


@pytest.mark.parametrize(("model", "to"), [(Hashed, 8), (Randomed, 2)], ids=["grow", "shrink"])
def test_a_layout_change_s_moves_are_not_changes(
    streamed: SimulatedClock, model: Any, to: int
) -> None:
    clock = streamed

    class Behind(model):  # type: ignore[misc]
        """Another process, a phase behind."""

    done: list[tuple[str, int, str | None, str | None]] = []  # kind, seq, old, new value
    values: dict[int, str] = {}

    def save(writer: Any, seq: int, value: str) -> None:
        writer(sensor="k", seq=seq, value=value).save()
        done.append(("MODIFY" if seq in values else "INSERT", seq, values.get(seq), value))
        values[seq] = value

    for seq in range(40):  # two updated and two deleted in each phase
        save(model, seq, "v")
    follow(model, cache_seconds=0, clock=clock)
    lag = follow(Behind, cache_seconds=10**9, clock=clock)
    operator = Reshard(model, clock=clock)
    state = operator.start(to, settle_seconds=1)
    lag.refresh()
    seqs = iter(range(40))
    fresh = iter(range(100, 200))
    while True:
        for writer in (Behind, model):
            name = f"{writer.__name__}-{state.phase.value}"
            save(writer, next(fresh), name)
            updated = writer.get("k", next(seqs))
            updated.update(actions=[writer.value.set(name)])
            done.append(("MODIFY", updated.seq, values[updated.seq], name))
            values[updated.seq] = name
            if state.phase.value != "prepare":
                deleted = next(seqs)
                writer.get("k", deleted).delete()
                done.append(("REMOVE", deleted, values.pop(deleted), None))
        lag.refresh()
        if state.phase == Phase.DONE:
            break
        clock.advance(1)
        if state.phase in JOBS:
            operator.run_job()
        state = operator.advance()
    clock.advance(1)
    operator.run_job()  # the sweep
    records = _records(model)
    assert len(records) > 2 * len(done)  # the moves wrote most of them
    got = [
        (
            c.kind,
            c.item.seq,
            None if c.old is None else c.old.value,
            None if c.new is None else c.new.value,
        )
        for c in changes(model, records)
    ]
    assert got == done
    assert {c.item.sensor for c in changes(model, records)} == {"k"}  # logical keys


def test_a_stream_without_images_is_refused_by_name(streamed: SimulatedClock) -> None:
    KeysOnly(sensor="k", seq=1, value="v").save()
    with pytest.raises(UnsupportedOperationError, match="NEW_AND_OLD_IMAGES"):
        list(changes(KeysOnly, _records(KeysOnly)))
