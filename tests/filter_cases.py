"""Differential cases for shardmodel.expressions.filters: the server's filter against ours.

A plain model with every attribute type is scanned with each condition on the server
(moto or dynalite); :func:`shardmodel.expressions.filters.matches` must select the same items
from the unfiltered raw items.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pynamodb.attributes import (
    BinaryAttribute,
    BooleanAttribute,
    ListAttribute,
    MapAttribute,
    NumberAttribute,
    NumberSetAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
)
from pynamodb.expressions.condition import size as untyped_size
from pynamodb.models import Model

from shardmodel.expressions.filters import matches


class Doc(Model):
    """Every attribute type a filter can test."""

    class Meta:
        table_name = "filter-docs"
        region = "us-east-1"

    doc_id = UnicodeAttribute(hash_key=True)
    n = NumberAttribute(null=True)
    s = UnicodeAttribute(null=True)
    b = BinaryAttribute(null=True, legacy_encoding=False)
    flag = BooleanAttribute(null=True)
    tags = UnicodeSetAttribute(null=True)
    nums = NumberSetAttribute(null=True)
    items = ListAttribute(null=True)  # type: ignore[var-annotated]
    meta = MapAttribute(null=True)  # type: ignore[var-annotated,no-untyped-call]


# no empty strings: dynalite predates DynamoDB accepting them (attribute_type fails)
DOCS = [
    Doc(doc_id="a", n=1, s="apple", b=b"\x00\x01", flag=True, tags={"x", "y"}, nums={1, 2}),
    Doc(doc_id="b", n=1.5, s="Äpfel", items=[1, "two", 3], meta={"k": 5, "deep": {"v": "w"}}),
    Doc(doc_id="c", n=-3, s="Cherry", b=b"\xff", flag=False, tags={"apple"}, meta={"k": "5"}),
    Doc(doc_id="d", s="banana", items=["apple"], nums={10}),
    Doc(doc_id="e"),
]


def size(attribute: Any) -> Any:
    return untyped_size(attribute)  # type: ignore[no-untyped-call]


CONDITIONS: list[Callable[[], Any]] = [
    lambda: Doc.n == 1,
    lambda: Doc.n != 1,
    lambda: Doc.n < 1.5,
    lambda: Doc.n >= -3,
    lambda: Doc.n.between(-3, 1),
    lambda: Doc.n.is_in(1, 7, -3),
    lambda: Doc.s > "b",
    lambda: Doc.s < "Z",
    lambda: Doc.s != "apple",
    lambda: Doc.s.startswith("ba"),
    lambda: Doc.s.contains("an"),
    lambda: Doc.b > b"\x00\x02",
    lambda: Doc.flag == True,  # noqa: E712
    lambda: Doc.tags.contains("apple"),
    lambda: Doc.nums.contains(10),
    lambda: Doc.items.contains("apple"),
    lambda: Doc.meta["k"] == 5,
    lambda: Doc.meta["deep"]["v"] == "w",
    lambda: Doc.items[1] == "two",
    lambda: Doc.n.exists(),
    lambda: Doc.n.does_not_exist(),
    lambda: Doc.s.is_type(),  # type: ignore[no-untyped-call]
    lambda: Doc.tags.exists() & (size(Doc.tags) >= 2),
    lambda: Doc.s.exists() & (size(Doc.s) == 5),
    lambda: ~(Doc.n > 0) | Doc.flag.exists(),
    lambda: (Doc.n > 0) & ~Doc.s.startswith("a"),
]


def check_filters() -> None:
    """For every condition, the server's scan and matches() select the same items."""
    Doc.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    try:
        for doc in DOCS:
            doc.save()
        raw = Doc._get_connection().scan()["Items"]
        assert len(raw) == len(DOCS)
        for make in CONDITIONS:
            condition = make()
            server = sorted(d.doc_id for d in Doc.scan(condition))
            ours = sorted(item["doc_id"]["S"] for item in raw if matches(condition, item))
            assert ours == server, f"{condition!r}: server {server}, ours {ours}"
    finally:
        Doc.delete_table()
