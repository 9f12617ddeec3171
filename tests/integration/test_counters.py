"""Counters under concurrency on a real server.

moto applies concurrent conditional updates without atomicity (two writers can both pass
one condition), so these run on dynalite, which serializes writes to an item as
DynamoDB does.
"""

from __future__ import annotations

import threading

import pytest

from tests.models import PageViews


def run_threads(threads: int, per_thread: int, tokens: bool) -> list[BaseException]:
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for n in range(per_thread):
                token = f"w{worker}-{n}" if tokens else None
                PageViews.add("hot", views=1, token=token)
        except BaseException as error:  # reported to the test, not lost in the thread
            errors.append(error)

    pool = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return errors


def test_eight_threads_reach_exactly_ten_thousand(backend: str) -> None:
    """8 threads x 1,250 increments on one counter sum to exactly 10,000."""
    if backend == "moto":
        pytest.skip("moto applies concurrent updates non-atomically; proven on dynalite")
    assert run_threads(8, 1250, tokens=False) == []
    assert PageViews.get("hot").views == 10_000


def test_tokened_increments_under_concurrency(backend: str) -> None:
    """Tokened increments from 8 threads, each sent twice, count exactly once."""
    if backend == "moto":
        pytest.skip("moto applies concurrent conditional updates non-atomically; on dynalite")
    assert run_threads(8, 60, tokens=True) == []
    assert run_threads(8, 60, tokens=True) == []  # every token again: no effect
    assert PageViews.get("hot").views == 480
