"""The client-side filter selects what moto's own filter selects, for every attribute type."""

from __future__ import annotations

import pytest

from shardmodel import UnsupportedOperationError
from shardmodel.expressions.filters import matches
from tests.filter_cases import Doc, check_filters

pytestmark = pytest.mark.usefixtures("tables")


def test_filters_match_the_server() -> None:
    check_filters()


def test_no_condition_keeps_everything() -> None:
    assert matches(None, {"doc_id": {"S": "a"}})


def test_an_unknown_condition_is_refused_by_name() -> None:
    class Odd(type(Doc.n == 1)):  # type: ignore[misc]
        pass

    odd = Odd("=", *(Doc.n == 1).values)
    assert matches(Doc.n == 1, {"n": {"N": "1.0"}})
    with pytest.raises(UnsupportedOperationError, match="filter_condition"):
        matches(odd, {"n": {"N": "1"}})
