"""Merged queries order raw items as DynamoDB orders their sort key, both ways."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import example, given
from hypothesis import strategies as st
from pynamodb.attributes import NumberAttribute

from shardmodel.engine.merge import _DESCENDING, dynamodb_sort_key
from tests.strategies import close_numbers, number_texts

#: Every form DynamoDB accepts for a number, with 38 significant digits at the edges.
NUMBERS = st.one_of(
    st.integers(-(10**38) + 1, 10**38 - 1).map(str),
    st.decimals(min_value=-(10**10), max_value=10**10, allow_nan=False, places=8).map(str),
    st.sampled_from(
        ["0", "-0", "1", "1.0", "1e0", "-1E-130", "9.9999999999999999999999999999999999999E+125"]
    ),
)

#: Clusters of numbers a float cannot tell apart (38 digits, the first 17 shared), each
#: number in one of its equal texts, mixed with any other numbers.
CLOSE_TEXTS = close_numbers(max_size=20).flatmap(
    lambda values: st.tuples(*(number_texts(v) for v in values)).map(list)
)


def check_both_orders(texts: list[str]) -> None:
    """Sorted by the sort key, the items are in exact (Decimal) order, and reversed."""
    key = dynamodb_sort_key(NumberAttribute(attr_name="n"))
    items = [{"n": {"N": text}} for text in texts]
    exact = sorted(Decimal(text) for text in texts)
    assert [Decimal(i["n"]["N"]) for i in sorted(items, key=key)] == exact
    newest_first = sorted(items, key=_DESCENDING[key])
    assert [Decimal(i["n"]["N"]) for i in newest_first] == exact[::-1]


@given(st.lists(NUMBERS, max_size=30))
def test_descending_numbers_are_the_ascending_order_reversed(texts: list[str]) -> None:
    """Any numbers in any accepted form: ascending is exact order, descending its reverse."""
    check_both_orders(texts)


@given(CLOSE_TEXTS, st.lists(NUMBERS, max_size=5), st.randoms(use_true_random=False))
@example(["12345678901234567890.2", "12345678901234567890.1"], [], None)
@example(["-12345678901234567890.1", "-1.23456789012345678902E+19"], ["1e0", "1.0", "1"], None)
@example(
    ["12345678901234567000000000000000000002", "12345678901234567000000000000000000001"], [], None
)
def test_numbers_a_float_cannot_tell_apart_keep_their_exact_order(
    close: list[str], others: list[str], shuffle: object
) -> None:
    """38-digit numbers equal in their first 17 digits order exactly, both directions.

    Also negatives, exponent forms (``1.2E+19``) and the texts DynamoDB treats as one
    number (``1``, ``1.0``, ``1e0``), interleaved with other numbers.
    """
    texts = close + others
    if shuffle is not None:
        shuffle.shuffle(texts)  # type: ignore[attr-defined]
    check_both_orders(texts)
