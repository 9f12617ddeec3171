"""The capacity simulator: DynamoDB's partition throttling, latency and faults, on moto.

It hooks a botocore DynamoDB client through botocore's public event system:

* ``before-send`` (registered first, ahead of moto's handler): charges the attempt to its
  physical partitions and, when a partition or the table is out of capacity or a fault
  is drawn, answers with a real HTTP error response (or raises a connection error), so
  moto never sees the request;
* ``response-received``: charges reads by the bytes they actually returned;
* ``needs-retry``: botocore's own standard-mode retry handler, rebuilt with a seeded
  jitter source, whose back-off delay is spent on the simulated clock instead of sleeping.

Everything runs on an injectable clock, so a test that throttles thousands of requests
finishes in seconds and gives the same numbers on every run.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from botocore.exceptions import ClientError
from pynamodb.models import Model

from shardmodel.testing import _wire
from shardmodel.testing._admission import STATE, Call, Plan, Shim
from shardmodel.testing._hook import Hook, SimulatorError
from shardmodel.testing.batches import partial_get, partial_write, settle_reads
from shardmodel.testing.capacity import (
    CapacityLedger,
    CapacityLimits,
    Kind,
    PartitionId,
    PartitionUsage,
    Throttle,
)
from shardmodel.testing.clock import Clock, SimulatedClock
from shardmodel.testing.faults import Faults, Latency
from shardmodel.throttles import throttling_reasons

__all__ = ["CapacitySimulator", "SimulatorClockWarning", "SimulatorError", "throttling_reasons"]

_HOT_KEY_MESSAGE = (
    "Throughput exceeds the current capacity for one or more partitions of your table or "
    "index (simulated). If exceptions persist, check if you have a hot key."
)
_TABLE_MESSAGE = (
    "The level of configured provisioned throughput for the table was exceeded (simulated). "
    "Consider increasing your provisioning level with the UpdateTable API."
)


class SimulatorClockWarning(UserWarning):
    """A model attached to the simulator keeps time on a clock other than the simulator's."""


class CapacitySimulator:
    """DynamoDB's partition capacity, latency and faults, attached to PynamoDB models.

    Example::

        sim = CapacitySimulator(clock=SimulatedClock(), limits=CapacityLimits())
        with sim.attach(Event):
            ...  # drive load, advancing sim.clock
        assert sim.table_usage("user-events").write_throttles == 0

    Args:
        clock: the simulated clock requests are charged on (default: a new one at 0).
        limits: the capacity to enforce (default: 1,000 WCU/s and 3,000 RCU/s per partition).
        faults: fault rates to inject (default: none).
        latency: latency to add to every attempt (default: none).
        seed: seeds the fault, latency and back-off jitter draws.
        concurrent: True (default): retry back-off and latency run on each call's own
            timeline, as if the calls came from many concurrent clients, and the clock
            moves only when the test moves it. False: they advance the shared clock, as
            for one single-threaded client.
        buffer_writes: answer admitted unconditional puts at once and store them in
            batches of 25 before the client's next other request (or :meth:`flush`), so
            a load test pays moto's cost per batch, not per put. Items are not visible
            to other clients until then.
        reasons: False leaves ``ThrottlingReasons`` out of throttling errors, as older
            endpoints do (to test a CloudWatch fallback).
    """

    def __init__(
        self,
        clock: Clock | None = None,
        limits: CapacityLimits | None = None,
        faults: Faults | None = None,
        latency: Latency | None = None,
        seed: int = 0,
        concurrent: bool = True,
        buffer_writes: bool = False,
        reasons: bool = True,
    ) -> None:
        self.clock: Clock = clock if clock is not None else SimulatedClock()
        self.ledger = CapacityLedger(limits)
        self.faults = faults or Faults()
        self.latency = latency or Latency()
        self.concurrent = concurrent
        self.buffer_writes = buffer_writes
        self.reasons = reasons
        self.rng = random.Random(seed)
        self.backoff_rng = random.Random(seed + 1)
        self._hooks: dict[int, Hook] = {}
        self._lock = threading.RLock()
        self.attempts = 0
        self.throttles: Counter[str] = Counter()
        self.injected: Counter[str] = Counter()
        self.latency_seconds = 0.0
        self.backoff_seconds = 0.0

    # -- attaching --------------------------------------------------------------------

    def attach(self, *models: type[Model]) -> CapacitySimulator:
        """Simulate capacity on the clients of ``models`` (every table those clients use).

        Attach after the models are bound to their endpoint: rebinding a model drops its
        client, and the simulator with it. Returns the simulator, usable in ``with``.
        """
        for model in models:
            self._check_clock(model)
            self.attach_client(model._get_connection().connection.client)
        return self

    def _check_clock(self, model: type[Model]) -> None:
        """Warn when a model's ``DynamicShards`` keeps time on a clock of its own.

        Its cooldown, jitter and metadata caches would then run on the wall clock while
        the load runs on the simulated one: a 60 s cooldown never passes in a simulated
        minute, or passes at once.
        """
        if not isinstance(self.clock, SimulatedClock):
            return
        from shardmodel.engine import sharding_of
        from shardmodel.errors import ShardConfigurationError

        try:
            directory = sharding_of(model).directory
        except (ShardConfigurationError, AttributeError, TypeError):
            return  # not a sharded model
        if directory is not None and directory.settings.clock is not self.clock:
            warnings.warn(
                f"{model.__name__}: its DynamicShards keeps time on its own clock "
                f"({type(directory.settings.clock).__name__}), not the simulator's: its "
                "cooldown, jitter and caches run on that clock while the load runs on the "
                "simulated one; declare DynamicShards(clock=sim.clock) with the "
                "simulator's clock",
                SimulatorClockWarning,
                stacklevel=3,
            )

    def attach_client(self, client: Any) -> None:
        """Simulate capacity on one botocore DynamoDB client."""
        with self._lock:
            if id(client) in self._hooks:
                return
            hook = Hook(self, client)
            hook.install()
            self._hooks[id(client)] = hook

    def flush(self) -> None:
        """Store every buffered put now (see ``buffer_writes``)."""
        with self._lock:
            hooks = list(self._hooks.values())
        for hook in hooks:
            hook.flush()

    def detach(self) -> None:
        """Store buffered puts, then restore every client's own retry handler."""
        self.flush()
        with self._lock:
            for hook in self._hooks.values():
                hook.uninstall()
            self._hooks.clear()

    def __enter__(self) -> CapacitySimulator:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.detach()

    # -- results ----------------------------------------------------------------------

    def usage(self) -> Mapping[PartitionId, PartitionUsage]:
        """Every partition's consumed units and throttle counts so far."""
        return self.ledger.usage()

    def table_usage(self, table: str, index: str | None = None) -> PartitionUsage:
        """The summed usage of one table's (or one index's) partitions."""
        parts = [u for p, u in self.usage().items() if p.table == table and p.index == index]
        return PartitionUsage(
            read_units=sum(u.read_units for u in parts),
            write_units=sum(u.write_units for u in parts),
            reads=sum(u.reads for u in parts),
            writes=sum(u.writes for u in parts),
            read_throttles=sum(u.read_throttles for u in parts),
            write_throttles=sum(u.write_throttles for u in parts),
        )

    def report(self, limit: int = 20) -> str:
        """A text table of the busiest partitions, for a failing test's output."""
        rows = sorted(
            self.usage().items(),
            key=lambda item: -(item[1].write_units + item[1].read_units),
        )[:limit]
        lines = [
            f"{'table/index':<30} {'partition':<28} {'WCU total':>9} {'RCU total':>9} "
            f"{'w-thr':>6} {'r-thr':>6}"
        ]
        for part, use in rows:
            where = part.table if part.index is None else f"{part.table}/{part.index}"
            lines.append(
                f"{where:<30} {part.partition[:28]:<28} {use.write_units:>9.1f} "
                f"{use.read_units:>9.1f} {use.write_throttles:>6} {use.read_throttles:>6}"
            )
        lines.append(
            f"attempts={self.attempts} throttles={dict(self.throttles)} "
            f"faults={dict(self.injected)} backoff={self.backoff_seconds:.2f}s "
            f"latency={self.latency_seconds:.2f}s"
        )
        return "\n".join(lines)

    # -- the simulation (called by the hooks) -----------------------------------------

    def _wait(self, call: Call | None, seconds: float, backoff: bool = False) -> None:
        with self._lock:
            if backoff:
                self.backoff_seconds += seconds
            else:
                self.latency_seconds += seconds
        if not self.concurrent:
            self.clock.sleep(seconds)
        elif call is not None:
            call.offset += seconds
            if getattr(self.clock, "on_timeline", False):
                self.clock.sleep(seconds)  # the calling thread's own time moves with its call

    def _first_attempt(self, hook: Hook, shim: Shim) -> Any:
        """Decide a put's first attempt in before-call; answer it there if it was buffered."""
        from botocore.exceptions import BotoCoreError

        outcome: Any
        try:
            outcome = self._attempt(hook, "PutItem", shim)
        except BotoCoreError as error:
            outcome = error
        call: Call = shim.context[STATE]
        if call.buffered is not None and outcome is not None:
            parsed = dict(call.buffered)
            parsed["ResponseMetadata"] = {
                "RequestId": outcome.headers.get("x-amzn-RequestId", ""),
                "HTTPStatusCode": 200,
                "HTTPHeaders": dict(outcome.headers),
                "RetryAttempts": 0,
            }
            return outcome, parsed
        call.preset = (outcome,)  # before-send delivers it, inside botocore's retry loop
        return None

    def _attempt(self, hook: Hook, operation: str, request: Any) -> Any:
        context = request.context if isinstance(getattr(request, "context", None), dict) else {}
        call = context.get(STATE)
        if call is None:
            call = context[STATE] = Call(start=self.clock.now())
        if call.preset is not None:
            (outcome,), call.preset = call.preset, None
            if isinstance(outcome, BaseException):
                raise outcome
            if outcome is not None:
                request.url = _wire.ANSWERED_URL
            return outcome
        with self._lock:
            self.attempts += 1
            request_id = f"shardmodel-sim-{self.attempts}"
            delay = self.latency.draw(self.rng)
            fault = self.faults.draw(operation, self.rng)
        if delay:
            self._wait(call, delay)
        now = call.start + call.offset if self.concurrent else self.clock.now()
        raw = request.body
        body = json.loads(raw.decode("utf-8") if isinstance(raw, bytes | bytearray) else raw)
        buffering = self.buffer_writes and hook.bufferable(operation, body)
        if not buffering:
            hook.flush()  # whatever this call does, it sees every earlier write
        try:
            plan = hook.plan(operation, body)
        except ClientError:
            plan = None  # no such table: let the server answer with its own error
        if fault is not None and fault not in ("lost_response", "unprocessed"):
            with self._lock:
                self.injected[fault] += 1
            return self._inject(fault, request, request_id, plan, hook, body)
        if plan is None:
            return None
        batch = operation in ("BatchWriteItem", "BatchGetItem")
        if batch:
            return self._batch(hook, operation, request, request_id, body, plan, now, fault)
        throttles = self.ledger.admit_all(plan.charges, plan.kind, now)
        if throttles:
            return self._throttled(request, request_id, operation, plan, throttles, hook)
        if plan.kind == "read":
            call.pending = (plan, now)
        if fault == "lost_response":
            with self._lock:
                self.injected[fault] += 1
            hook.flush()  # the lost write goes straight to the server: after earlier ones
            return self._lose_response(hook, operation, request, body)
        if buffering:
            hook.buffer(body["TableName"], body["Item"])
            request.url = _wire.ANSWERED_URL
            answer: dict[str, Any] = {}
            if body.get("ReturnConsumedCapacity", "NONE") != "NONE":
                units = sum(c.units for c in plan.charges)
                answer["ConsumedCapacity"] = {
                    "TableName": body["TableName"],
                    "CapacityUnits": units,
                }
            call.buffered = answer
            return _wire.response(200, answer, request_id)
        return None

    def _provision(self, body: Mapping[str, Any]) -> None:
        """An UpdateTable's new provisioned rates become the table's (and index's) limits."""
        table = body["TableName"]
        updates: list[tuple[str | None, Any]] = [(None, body.get("ProvisionedThroughput"))]
        for change in body.get("GlobalSecondaryIndexUpdates", []):
            update = change.get("Update") or {}
            updates.append((update.get("IndexName"), update.get("ProvisionedThroughput")))
        for index, throughput in updates:
            sides: tuple[tuple[Kind, str], ...] = (
                ("read", "ReadCapacityUnits"),
                ("write", "WriteCapacityUnits"),
            )
            for kind, name in sides:
                units = (throughput or {}).get(name)
                if units:
                    self.ledger.provision(table, index, kind, float(units))

    def _count_throttles(self, throttles: Iterable[Throttle]) -> None:
        with self._lock:
            self.throttles.update(t.reason for t in throttles)

    def _throttled(
        self,
        request: Any,
        request_id: str,
        operation: str,
        plan: Plan,
        throttles: Sequence[Throttle],
        hook: Hook,
    ) -> Any:
        self._count_throttles(throttles)
        request.url = _wire.ANSWERED_URL
        region = hook.client.meta.region_name
        if operation.startswith("Transact"):
            refused = {t.partition for t in throttles}
            reasons = [
                {"Code": "ThrottlingError", "Message": "Throughput exceeds the current capacity"}
                if charge.partition in refused
                else {"Code": "None"}
                for charge in plan.charges
            ]
            return _wire.error(
                400,
                "TransactionCanceledException",
                "Transaction cancelled, please refer cancellation reasons for specific reasons",
                request_id,
                CancellationReasons=reasons,
            )
        first = throttles[0]
        message = _HOT_KEY_MESSAGE if first.is_partition else _TABLE_MESSAGE
        reasons = [
            {
                "reason": t.reason,
                "resource": _wire.table_arn(region, t.partition.table, t.partition.index),
            }
            for t in throttles
        ]
        extra = {"ThrottlingReasons": reasons} if self.reasons else {}
        return _wire.error(
            400, "ProvisionedThroughputExceededException", message, request_id, **extra
        )

    def _inject(
        self,
        fault: str,
        request: Any,
        request_id: str,
        plan: Plan | None,
        hook: Hook,
        body: Mapping[str, Any],
    ) -> Any:
        from botocore.exceptions import EndpointConnectionError

        if fault == "connection_error":
            raise EndpointConnectionError(endpoint_url=request.url)
        request.url = _wire.ANSWERED_URL
        if fault == "internal_error":
            return _wire.error(500, "InternalServerError", "Internal server error", request_id)
        if fault == "transaction_conflict":
            actions = len(body.get("TransactItems", [])) or 1
            conflict = self.rng.randrange(actions)
            reasons = [
                {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
                if position == conflict
                else {"Code": "None"}
                for position in range(actions)
            ]
            return _wire.error(
                400,
                "TransactionCanceledException",
                "Transaction cancelled, please refer cancellation reasons for specific reasons",
                request_id,
                CancellationReasons=reasons,
            )
        # an injected throttle names the partition the request was for
        kind: Kind = "read" if plan is None or plan.kind == "read" else "write"
        target = plan.charges[0].partition if plan and plan.charges else None
        reason = f"Table{'Read' if kind == 'read' else 'Write'}KeyRangeThroughputExceeded"
        resource = (
            _wire.table_arn(hook.client.meta.region_name, target.table, target.index)
            if target
            else ""
        )
        with self._lock:
            self.throttles[reason] += 1
        extra = {"ThrottlingReasons": [{"reason": reason, "resource": resource}]}
        return _wire.error(
            400,
            "ProvisionedThroughputExceededException",
            _HOT_KEY_MESSAGE,
            request_id,
            **(extra if self.reasons else {}),
        )

    def _lose_response(
        self, hook: Hook, operation: str, request: Any, body: Mapping[str, Any]
    ) -> Any:
        from botocore import xform_name
        from botocore.exceptions import ReadTimeoutError

        url = request.url
        # a refused write (a failed condition) still reaches the caller as a timeout
        with contextlib.suppress(ClientError):
            hook.server(xform_name(operation), **_wire.from_wire(body))
        raise ReadTimeoutError(endpoint_url=url)

    def _batch(
        self,
        hook: Hook,
        operation: str,
        request: Any,
        request_id: str,
        body: Mapping[str, Any],
        plan: Plan,
        now: float,
        fault: str | None,
    ) -> Any:
        count = len(plan.charges)
        left_out = [False] * count
        if fault == "unprocessed":
            with self._lock:
                self.injected[fault] += 1
                fraction = self.faults.unprocessed_fraction
                left_out = [self.rng.random() < fraction for _ in range(count)]
                if not any(left_out):
                    left_out[self.rng.randrange(count)] = True
        offered = [c for c, out in zip(plan.charges, left_out, strict=True) if not out]
        verdicts = iter(self.ledger.admit_each(offered, plan.kind, now))
        outcomes = [None if out else next(verdicts) for out in left_out]
        refused = [t for t in outcomes if t is not None]
        throttled = [t is not None for t in outcomes]
        if not any(left_out) and not refused:
            if plan.kind == "read":
                call = request.context.get(STATE) if isinstance(request.context, dict) else None
                if call is not None:
                    call.pending = (plan, now)
            return None
        if all(throttled):  # DynamoDB fails the call when it can process no item at all
            return self._throttled(request, request_id, operation, plan, refused, hook)
        self._count_throttles(refused)
        keep = [not (out or thr) for out, thr in zip(left_out, throttled, strict=True)]
        request.url = _wire.ANSWERED_URL
        if operation == "BatchWriteItem":
            return partial_write(hook, body, plan, keep, request_id)
        return self._partial_get(hook, body, plan, keep, request_id, now)

    def _partial_get(
        self,
        hook: Hook,
        body: Mapping[str, Any],
        plan: Plan,
        keep: Sequence[bool],
        request_id: str,
        now: float,
    ) -> Any:
        response, kept_plan, responses = partial_get(hook, body, plan, keep, request_id)
        if kept_plan is not None:
            self._settle_reads(hook, kept_plan, {"Responses": responses}, now)
        return response

    def _settle_reads(
        self,
        hook: Hook,
        plan: Plan,
        parsed: Mapping[str, Any],
        now: float,
    ) -> None:
        """Charge a read by what it returned, beyond the minimum charged when admitted."""
        settle_reads(self.ledger, hook, plan, parsed, now)
