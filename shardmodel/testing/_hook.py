"""The botocore event handlers the capacity simulator installs on one client.

Private: :class:`~shardmodel.testing.simulator.CapacitySimulator` is the public face. The
hook knows the simulator only as :class:`~shardmodel.testing._admission.Admission`.
"""

from __future__ import annotations

import inspect
import json
import random
import re
import threading
from collections.abc import Mapping
from typing import Any

from attrs import frozen

from shardmodel.errors import ShardModelError
from shardmodel.testing import _wire
from shardmodel.testing._admission import STATE, Admission, Plan, Shim
from shardmodel.testing.capacity import Charge, PartitionId
from shardmodel.testing.sizing import attribute_value_size, item_size, read_units, write_units

_READS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"})
_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
_RETRY_ID = "retry-config-dynamodb"
_EQUALS = re.compile(r"([#\w.\-]+|:\w+)\s*=\s*([#\w.\-]+|:\w+)")
_BATCH_LIMIT = 25
#: Held while moto executes one request. DynamoDB applies each request atomically; moto,
#: called from many threads at once, does not (concurrent ADDs lose increments).
SERVER_LOCK = threading.RLock()


class SimulatorError(ShardModelError, RuntimeError):
    """The simulator cannot attach to a client as configured; the message says what to change."""


@frozen
class Schema:
    """A table's key attribute names, from DescribeTable."""

    hash_key: str
    range_key: str | None
    global_indexes: Mapping[str, str]


def _accepted(factory: Any, **kwargs: Any) -> Any:
    # older botocore versions take fewer arguments; pass only what this one accepts
    names = inspect.signature(factory).parameters
    return factory(**{k: v for k, v in kwargs.items() if k in names})


class Hook:
    """The handlers attached to one botocore client."""

    def __init__(self, simulator: Admission[Hook], client: Any) -> None:
        self.simulator = simulator
        self.client = client
        self._shadow: Any = None
        self._schemas: dict[str, Schema] = {}
        self._buffered: list[tuple[str, Mapping[str, Any]]] = []
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        retries = client.meta.config.retries or {}
        mode = retries.get("mode")
        if mode != "standard":
            raise SimulatorError(
                f"CapacitySimulator: the client uses botocore's {mode!r} retry mode; the "
                "simulator drives the 'standard' mode (PynamoDB's default). Set PynamoDB's "
                "retry_configuration to {'mode': 'standard', 'total_max_attempts': 4}."
            )
        from botocore.retries import standard

        self.max_attempts = retries.get("total_max_attempts") or standard.DEFAULT_MAX_ATTEMPTS
        self.retry = self._build_retry_handler(simulator.backoff_rng)

    # -- wiring ---------------------------------------------------------------------

    def _build_retry_handler(self, rng: random.Random) -> Any:
        from botocore.retries import quota, standard

        adapter = standard.RetryEventAdapter()
        detector = _accepted(standard.ThrottlingErrorDetector, retry_event_adapter=adapter)
        checker = _accepted(
            standard.RetryQuotaChecker, quota=quota.RetryQuota(), throttling_detector=detector
        )
        backoff = _accepted(
            standard.ExponentialBackoff,
            random=rng.random,
            service_name="dynamodb",
            throttling_detector=detector,
        )
        policy = standard.RetryPolicy(
            retry_checker=standard.StandardRetryConditions(max_attempts=self.max_attempts),
            retry_backoff=backoff,
        )
        self.release_quota = checker.release_retry_quota
        return _accepted(
            standard.RetryHandler,
            retry_policy=policy,
            retry_event_adapter=adapter,
            retry_quota=checker,
            service_name="dynamodb",
        )

    def install(self) -> None:
        events = self.client.meta.events
        tag = f"shardmodel-simulator-{id(self)}"
        events.register_first("before-send.dynamodb", self.before_send, unique_id=tag + "-send")
        events.register_first(
            "before-call.dynamodb.PutItem", self.before_call, unique_id=tag + "-call"
        )
        events.register("response-received.dynamodb", self.on_response, unique_id=tag + "-recv")
        events.register("after-call-error.dynamodb", self.on_error, unique_id=tag + "-error")
        events.register("after-call.dynamodb", self.release_quota, unique_id=tag + "-quota")
        events.unregister("needs-retry.dynamodb", unique_id=_RETRY_ID)
        events.register("needs-retry.dynamodb", self.needs_retry, unique_id=_RETRY_ID)

    def uninstall(self) -> None:
        from botocore.retries import standard

        events = self.client.meta.events
        tag = f"shardmodel-simulator-{id(self)}"
        events.unregister("before-send.dynamodb", unique_id=tag + "-send")
        events.unregister("before-call.dynamodb.PutItem", unique_id=tag + "-call")
        events.unregister("response-received.dynamodb", unique_id=tag + "-recv")
        events.unregister("after-call-error.dynamodb", unique_id=tag + "-error")
        events.unregister("after-call.dynamodb", unique_id=tag + "-quota")
        events.unregister("needs-retry.dynamodb", unique_id=_RETRY_ID)
        standard.register_retry_handler(self.client, max_attempts=self.max_attempts)

    @property
    def shadow(self) -> Any:
        """A second client to the same endpoint, outside the simulator, for side work."""
        with self._lock:
            if self._shadow is None:
                import botocore.session
                from botocore.config import Config

                self._shadow = botocore.session.get_session().create_client(
                    "dynamodb",
                    region_name=self.client.meta.region_name,
                    endpoint_url=self.client.meta.endpoint_url,
                    config=Config(
                        retries={"total_max_attempts": 1, "mode": "standard"},
                        parameter_validation=False,
                    ),
                )
            return self._shadow

    def server(self, operation: str, **params: Any) -> Any:
        """Run one request on the side client, atomically with the simulated clients'."""
        with SERVER_LOCK:
            return getattr(self.shadow, operation)(**params)

    def schema(self, table: str) -> Schema:
        found = self._schemas.get(table)
        if found is None:
            description = self.server("describe_table", TableName=table)["Table"]
            hash_key = next(
                k["AttributeName"] for k in description["KeySchema"] if k["KeyType"] == "HASH"
            )
            indexes = {
                index["IndexName"]: next(
                    k["AttributeName"] for k in index["KeySchema"] if k["KeyType"] == "HASH"
                )
                for index in description.get("GlobalSecondaryIndexes", [])
            }
            range_key = next(
                (k["AttributeName"] for k in description["KeySchema"] if k["KeyType"] == "RANGE"),
                None,
            )
            found = self._schemas[table] = Schema(hash_key, range_key, indexes)
        return found

    # -- buffered writes ------------------------------------------------------------

    @staticmethod
    def bufferable(operation: str, body: Mapping[str, Any]) -> bool:
        """A put whose outcome does not depend on what the table holds."""
        conditional = any(k in body for k in ("ConditionExpression", "Expected"))
        return (
            operation == "PutItem"
            and not conditional
            and body.get("ReturnValues", "NONE") == "NONE"
        )

    def buffer(self, table: str, item: Mapping[str, Any]) -> None:
        with self._lock:
            self._buffered.append((table, item))

    def flush(self) -> None:
        """Store the buffered puts, 25 to a BatchWriteItem, the last put of a key winning."""
        # held to the end: a concurrent call (a fanned-out query) waits until all is stored
        with self._flush_lock:
            self._flush()

    def _flush(self) -> None:
        with self._lock:
            pending, self._buffered = self._buffered, []
        if not pending:
            return
        latest: dict[str, dict[str, Mapping[str, Any]]] = {}
        for table, item in pending:
            schema = self.schema(table)
            names = [n for n in (schema.hash_key, schema.range_key) if n is not None]
            key = json.dumps([item.get(n) for n in names], sort_keys=True)
            latest.setdefault(table, {}).pop(key, None)
            latest[table][key] = item
        requests = [
            (table, {"PutRequest": {"Item": item}})
            for table, items in latest.items()
            for item in items.values()
        ]
        for start in range(0, len(requests), _BATCH_LIMIT):
            chunk: dict[str, list[Any]] = {}
            for table, request in requests[start : start + _BATCH_LIMIT]:
                chunk.setdefault(table, []).append(request)
            while chunk:
                answer = self.server("batch_write_item", RequestItems=_wire.from_wire(chunk))
                chunk = _wire.to_wire(answer.get("UnprocessedItems") or {})

    # -- planning: which partitions an attempt charges ------------------------------

    def partition(
        self, table: str, index: str | None, attributes: Mapping[str, Any] | None
    ) -> PartitionId:
        schema = self.schema(table)
        if index is not None and index not in schema.global_indexes:
            index = None  # a local index lives in the table's partitions
        name = schema.hash_key if index is None else schema.global_indexes[index]
        value = (attributes or {}).get(name)
        text = _wire.key_text(value) if isinstance(value, Mapping) else "?"
        return self.simulator.ledger.partition(table, index, text)

    def _query_key(self, body: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
        conditions = body.get("KeyConditions")
        if isinstance(conditions, Mapping) and name in conditions:
            return {name: conditions[name]["AttributeValueList"][0]}
        names = body.get("ExpressionAttributeNames", {})
        values = body.get("ExpressionAttributeValues", {})
        for left, right in _EQUALS.findall(body.get("KeyConditionExpression", "")):
            attr, placeholder = (left, right) if right.startswith(":") else (right, left)
            if names.get(attr, attr) == name and placeholder in values:
                return {name: values[placeholder]}
        return None

    def plan(self, operation: str, body: Mapping[str, Any]) -> Plan | None:
        if operation in ("PutItem", "UpdateItem", "DeleteItem"):
            table = body["TableName"]
            attributes = body.get("Item") or body.get("Key") or {}
            size = item_size(attributes)
            if operation == "UpdateItem":
                values = body.get("ExpressionAttributeValues", {}).values()
                size += sum(attribute_value_size(v) for v in values)
            charge = Charge(self.partition(table, None, attributes), write_units(size))
            return Plan(operation, "write", (charge,))
        if operation == "GetItem":
            consistent = bool(body.get("ConsistentRead"))
            part = self.partition(body["TableName"], None, body["Key"])
            return Plan(
                operation, "read", (Charge(part, read_units(0, consistent)),), (), consistent
            )
        if operation == "Query":
            table, index = body["TableName"], body.get("IndexName")
            schema = self.schema(table)
            gsi = index if index in schema.global_indexes else None
            name = schema.hash_key if gsi is None else schema.global_indexes[gsi]
            part = self.partition(table, gsi, self._query_key(body, name))
            consistent = bool(body.get("ConsistentRead"))
            return Plan(
                operation, "read", (Charge(part, read_units(0, consistent)),), (), consistent
            )
        if operation == "Scan":
            return Plan(
                operation, "read", (), (), bool(body.get("ConsistentRead")), body["TableName"]
            )
        if operation == "BatchWriteItem":
            charges, slots = [], []
            for table, requests in body["RequestItems"].items():
                for position, request in enumerate(requests):
                    ((_, spec),) = request.items()
                    attributes = spec.get("Item") or spec.get("Key")
                    part = self.partition(table, None, attributes)
                    charges.append(Charge(part, write_units(item_size(attributes))))
                    slots.append((table, position))
            return Plan(operation, "write", tuple(charges), tuple(slots))
        if operation == "BatchGetItem":
            charges, slots = [], []
            for table, spec in body["RequestItems"].items():
                units = read_units(0, bool(spec.get("ConsistentRead")))
                for position, key in enumerate(spec["Keys"]):
                    charges.append(Charge(self.partition(table, None, key), units))
                    slots.append((table, position))
            strong = frozenset(
                t for t, spec in body["RequestItems"].items() if spec.get("ConsistentRead")
            )
            return Plan(operation, "read", tuple(charges), tuple(slots), strong_tables=strong)
        if operation in ("TransactWriteItems", "TransactGetItems"):
            reading = operation == "TransactGetItems"
            charges = []
            for action in body["TransactItems"]:
                ((_, spec),) = action.items()
                attributes = spec.get("Item") or spec.get("Key") or {}
                size = item_size(attributes)
                units = read_units(size, True) if reading else write_units(size)
                # transactions cost twice the units of the same plain requests
                charges.append(
                    Charge(self.partition(spec["TableName"], None, attributes), 2 * units)
                )
            return Plan(operation, "read" if reading else "write", tuple(charges), (), reading)
        return None

    # -- the handlers ---------------------------------------------------------------

    def before_call(self, params: Any = None, context: Any = None, **_: Any) -> Any:
        """Answer a buffered put before botocore signs and sends it (the common case)."""
        if not self.simulator.buffer_writes or not isinstance(context, dict):
            return None
        raw = params.get("body") if isinstance(params, dict) else None
        if not raw:
            return None
        body = json.loads(raw.decode("utf-8") if isinstance(raw, bytes | bytearray) else raw)
        if not self.bufferable("PutItem", body):
            return None
        shim = Shim(url=str(params.get("url", "")), context=context, body=raw)
        return self.simulator._first_attempt(self, shim)

    def before_send(self, request: Any, event_name: str = "", **_: Any) -> Any:
        operation = event_name.rsplit(".", 1)[-1]
        if operation == "UpdateTable":  # new provisioned rates become the table's limits
            raw = request.body
            self.simulator._provision(
                json.loads(raw.decode("utf-8") if isinstance(raw, bytes | bytearray) else raw)
            )
            return None
        if operation not in _READS and operation not in _WRITES:
            return None
        outcome = self.simulator._attempt(self, operation, request)
        call = request.context.get(STATE) if isinstance(request.context, dict) else None
        if outcome is None and call is not None:
            SERVER_LOCK.acquire()  # released when the response (or an error) comes back
            call.holding = True
        return outcome

    @staticmethod
    def release(context: Any) -> None:
        call = context.get(STATE) if isinstance(context, dict) else None
        if call is not None and call.holding:
            call.holding = False
            SERVER_LOCK.release()

    def on_error(self, context: Any = None, **_: Any) -> None:
        self.release(context)

    def on_response(self, context: Any = None, parsed_response: Any = None, **_: Any) -> None:
        self.release(context)
        call = context.get(STATE) if isinstance(context, dict) else None
        if call is None or call.pending is None:
            return
        (plan, now), call.pending = call.pending, None
        if not isinstance(parsed_response, Mapping) or "Error" in parsed_response:
            return
        self.simulator._settle_reads(self, plan, parsed_response, now)

    def needs_retry(self, **kwargs: Any) -> Any:
        delay = self.retry.needs_retry(**kwargs)
        if isinstance(delay, bool) or not isinstance(delay, int | float) or delay <= 0:
            return delay
        context = kwargs.get("request_dict", {}).get("context", {})
        self.simulator._wait(context.get(STATE), float(delay), backoff=True)
        return 0.0  # retry now: the back-off was spent on the simulated clock
