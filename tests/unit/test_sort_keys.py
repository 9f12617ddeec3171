"""Merged queries order raw items as DynamoDB orders their sort key, both ways."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st
from pynamodb.attributes import NumberAttribute

from shardmodel.engine.merge import _DESCENDING, dynamodb_sort_key

#: Every form DynamoDB accepts for a number, with 38 significant digits at the edges.
NUMBERS = st.one_of(
    st.integers(-(10**38) + 1, 10**38 - 1).map(str),
    st.decimals(min_value=-(10**10), max_value=10**10, allow_nan=False, places=8).map(str),
    st.sampled_from(
        ["0", "-0", "1", "1.0", "1e0", "-1E-130", "9.9999999999999999999999999999999999999E+125"]
    ),
)


@given(st.lists(NUMBERS, max_size=30))
def test_descending_numbers_are_the_ascending_order_reversed(texts: list[str]) -> None:
    key = dynamodb_sort_key(NumberAttribute(attr_name="n"))
    items = [{"n": {"N": text}} for text in texts]
    exact = sorted(Decimal(text) for text in texts)
    assert [Decimal(i["n"]["N"]) for i in sorted(items, key=key)] == exact
    newest_first = sorted(items, key=_DESCENDING[key])
    assert [Decimal(i["n"]["N"]) for i in newest_first] == exact[::-1]
