"""The request bound: which bound a read gets, and the error when a read would pass it."""

from __future__ import annotations

from typing import Any

import pytest

from shardmodel import FanOutLimitError, ShardKeyError
from shardmodel.request_bound import DEFAULT_MAX_REQUESTS, check_fan_out, request_bound


def model_with(**meta: Any) -> type:
    """A stand-in model class whose ``Meta`` carries ``meta``."""
    return type("Orders", (), {"Meta": type("Meta", (), meta)})


def test_the_default_bound_is_one_thousand_partitions() -> None:
    """A model without Meta.max_requests, called without max_requests, gets 1,000."""
    assert DEFAULT_MAX_REQUESTS == 1000
    assert request_bound(model_with()) == 1000
    assert request_bound(type("Bare", (), {})) == 1000


def test_the_call_wins_over_meta_and_meta_over_the_default() -> None:
    """First found: the call's max_requests, then Meta.max_requests, then the default."""
    assert request_bound(model_with(max_requests=7)) == 7
    assert request_bound(model_with(max_requests=7), 3) == 3
    assert request_bound(model_with(), 2500) == 2500
    assert request_bound(model_with(max_requests=1)) == 1
    assert request_bound(model_with(), 1) == 1


@pytest.mark.parametrize("bad", [0, -1, True, False, 2.0, "5", [5]])
def test_a_bad_bound_on_the_call_names_the_argument(bad: Any) -> None:
    """Only a positive int is a bound; the error names max_requests= and the default."""
    with pytest.raises(ShardKeyError) as caught:
        request_bound(model_with(max_requests=9), bad)
    assert str(caught.value) == (
        f"max_requests={bad!r}: give a positive int, the most partitions (buckets x shards) "
        "one read may touch (default 1,000)"
    )


@pytest.mark.parametrize("bad", [0, -3, True, "10"])
def test_a_bad_bound_in_meta_names_the_model(bad: Any) -> None:
    """A wrong Meta.max_requests is reported as ``<Model>.Meta.max_requests``."""
    with pytest.raises(ShardKeyError, match=r"^Orders\.Meta\.max_requests=") as caught:
        request_bound(model_with(max_requests=bad))
    assert f"Orders.Meta.max_requests={bad!r}: give a positive int" in str(caught.value)


def test_a_read_at_its_bound_passes_and_one_more_partition_fails() -> None:
    """The bound is inclusive: ``planned == bound`` is allowed, ``bound + 1`` is refused."""
    check_fan_out("Orders.query", 1000, 1000)
    check_fan_out("Orders.query", 0, 1)
    with pytest.raises(FanOutLimitError) as caught:
        check_fan_out("Orders.query", 1001, 1000)
    assert (caught.value.planned, caught.value.bound) == (1001, 1000)
    assert str(caught.value) == (
        "Orders.query would read 1,001 partitions (buckets x shards), over its bound of "
        "1,000 requests; narrow the range or the shard count, or raise the bound "
        "with max_requests=1001 on the call or Meta.max_requests on the model"
    )
