"""What the simulator does with a call's answer: a batch let through in part (the rest left
unprocessed, ``UnprocessedItems``/``UnprocessedKeys``, as DynamoDB answers), and a read
charged by the bytes it returned."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from shardmodel.testing import _wire
from shardmodel.testing._admission import Plan
from shardmodel.testing.capacity import PartitionId
from shardmodel.testing.sizing import item_size, items_size, read_units

__all__ = ["partial_get", "partial_write", "settle_reads"]


def partial_write(
    hook: Any, body: Mapping[str, Any], plan: Plan, keep: Sequence[bool], request_id: str
) -> Any:
    """Write the kept entries of a BatchWriteItem; answer with the others unprocessed."""
    done: dict[str, list[Any]] = {}
    rest: dict[str, list[Any]] = {}
    for (table, position), kept in zip(plan.slots, keep, strict=True):
        target = done if kept else rest
        target.setdefault(table, []).append(body["RequestItems"][table][position])
    if done:
        hook.server("batch_write_item", RequestItems=_wire.from_wire(done))
    return _wire.response(200, {"UnprocessedItems": rest}, request_id)


def partial_get(
    hook: Any, body: Mapping[str, Any], plan: Plan, keep: Sequence[bool], request_id: str
) -> tuple[Any, Plan | None, dict[str, Any]]:
    """Read the kept keys of a BatchGetItem; answer with the others unprocessed.

    Returns the response, the plan of what was read (None: nothing was) for charging
    its reads, and what was read.
    """
    done: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for (table, position), kept in zip(plan.slots, keep, strict=True):
        spec = body["RequestItems"][table]
        target = done if kept else rest
        entry = target.setdefault(table, {**spec, "Keys": []})
        entry["Keys"].append(spec["Keys"][position])
    responses: dict[str, Any] = {}
    kept_plan = None
    if done:
        parsed = hook.server("batch_get_item", RequestItems=_wire.from_wire(done))
        responses = parsed.get("Responses", {})
        kept_plan = Plan(
            "BatchGetItem",
            "read",
            tuple(c for c, k in zip(plan.charges, keep, strict=True) if k),
            tuple(s for s, k in zip(plan.slots, keep, strict=True) if k),
            strong_tables=plan.strong_tables,
        )
    response = _wire.response(
        200, {"Responses": _wire.to_wire(responses), "UnprocessedKeys": rest}, request_id
    )
    return response, kept_plan, responses


def settle_reads(ledger: Any, hook: Any, plan: Plan, parsed: Mapping[str, Any], now: float) -> None:
    """Charge a read by what it returned, beyond the minimum charged when admitted."""
    actual: dict[PartitionId, float] = defaultdict(float)
    operation = plan.operation
    if operation == "GetItem":  # an absent item still costs the minimum
        size = item_size(parsed.get("Item") or {})
        actual[plan.charges[0].partition] += read_units(size, plan.consistent)
    elif operation == "Query":  # one page, charged by the bytes it read
        size = items_size(parsed.get("Items", []))
        actual[plan.charges[0].partition] += read_units(size, plan.consistent)
    elif operation == "Scan":  # each partition the page read, by its bytes
        sizes: dict[PartitionId, int] = defaultdict(int)
        for item in parsed.get("Items", []):
            sizes[hook.partition(plan.table, None, item)] += item_size(item)
        for part, size in sizes.items():
            actual[part] += read_units(size, plan.consistent)
    elif operation == "BatchGetItem":  # each item rounded on its own
        for table, items in parsed.get("Responses", {}).items():
            for item in items:
                part = hook.partition(table, None, item)
                strong = table in plan.strong_tables
                actual[part] += read_units(item_size(item), strong)
    elif operation == "TransactGetItems":
        for charge, entry in zip(plan.charges, parsed.get("Responses", []), strict=False):
            size = item_size(entry.get("Item") or {})
            actual[charge.partition] += 2 * read_units(size, True)
    charged: dict[PartitionId, float] = defaultdict(float)
    for charge in plan.charges:
        charged[charge.partition] += charge.units
    for part, units in actual.items():
        extra = units - charged.get(part, 0.0)
        if extra > 0:
            ledger.settle(part, plan.kind, extra, now)
