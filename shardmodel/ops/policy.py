"""Acting on table-level throttles: raise a provisioned table's capacity with UpdateTable.

A partition throttle is one hot key: more table capacity does not help it (sharding
does), so the policy leaves it alone. A table-level throttle means the table (or one
index) used its provisioned rate: the policy raises that side's capacity, within a
ceiling, at most once per cooldown, and may lower it back later within DynamoDB's limit
on decreases. On-demand tables cannot be provisioned: their throttles (and, opt-in,
capacity-related 5xx errors) are classified and logged only.

Opt in on a model::

    class Meta:
        table_name = "orders"
        table_throttle_policy = TableThrottlePolicy(max_wcu=4000, max_rcu=12000)
"""

from __future__ import annotations

import logging
import math
import threading
from datetime import datetime, timezone
from typing import Any, Literal

from attrs import frozen

from shardmodel.core.times import Clock, SystemClock
from shardmodel.ops.report import provisioned_units
from shardmodel.retry import _code
from shardmodel.throttles import Side, ThrottleScope, throttled_side

__all__ = ["DECREASES_ANY_TIME", "DECREASES_PER_DAY", "PolicyAction", "TableThrottlePolicy"]

log = logging.getLogger("shardmodel.ops.policy")

#: Decreases DynamoDB allows at any time in a UTC day...
DECREASES_ANY_TIME = 4
#: ... and in all, one more for each hour without a decrease.
DECREASES_PER_DAY = 27

#: 5xx codes an on-demand table answers while it adapts to a traffic jump.
CAPACITY_5XX = frozenset({"InternalServerError", "ServiceUnavailable", "InternalFailure"})

ActionKind = Literal["raise", "lower", "at-limit", "cooling", "partition", "on-demand", "failed"]


@frozen
class PolicyAction:
    """What the policy did (or decided not to do) about one throttle.

    Attributes:
        kind: ``"raise"``/``"lower"`` (an UpdateTable was sent), ``"at-limit"`` (the
            ceiling or the decrease limit stopped it), ``"cooling"`` (within the
            cooldown), ``"partition"`` (a hot key: nothing to do), ``"on-demand"`` (no
            provisioned capacity to change) or ``"failed"`` (DynamoDB refused the update).
        table: the table.
        index: the global secondary index, or None for the table.
        side: ``"read"`` or ``"write"``.
        old: provisioned units before (None on-demand or unknown).
        new: provisioned units after (None when unchanged).
        at: epoch seconds.
        reason: why, in words.
    """

    kind: ActionKind
    table: str
    index: str | None
    side: Side
    old: float | None
    new: float | None
    at: float
    reason: str


def _check_units(name: str, value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"TableThrottlePolicy({name}={value!r}): give an int of at least 1")


def _check_number(name: str, value: object, least: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= least:
        raise ValueError(
            f"TableThrottlePolicy({name}={value!r}): give a number of at least {least}"
        )


class TableThrottlePolicy:
    """Raise a provisioned table's capacity when the whole table throttles (opt-in).

    Args:
        max_wcu: the most write units a second the policy provisions (None: it never
            raises writes).
        max_rcu: the most read units a second it provisions (None: never raises reads).
        factor: a raise multiplies the provisioned units by this ...
        step: ... and adds at least this many.
        cooldown: seconds after a raise of one side of a table or index before the
            next (DynamoDB applies a change in minutes; until then it throttles anyway).
        lower_after: seconds without a raise after which :meth:`relax` lowers a raised
            side back to what it was (None: never lower).
        on_demand_5xx: also classify an on-demand table's capacity-related 5xx errors
            (``InternalServerError``, ``ServiceUnavailable``) as table-level.
        clock: the time source.
    """

    def __init__(
        self,
        max_wcu: int | None = None,
        max_rcu: int | None = None,
        factor: float = 1.5,
        step: int = 1,
        cooldown: float = 300.0,
        lower_after: float | None = None,
        on_demand_5xx: bool = False,
        clock: Clock | None = None,
    ) -> None:
        _check_units("max_wcu", max_wcu)
        _check_units("max_rcu", max_rcu)
        if max_wcu is None and max_rcu is None:
            raise ValueError(
                "TableThrottlePolicy(): give max_wcu and/or max_rcu, the ceiling it may raise to"
            )
        _check_number("factor", factor, 1)
        _check_units("step", step)
        _check_number("cooldown", cooldown, 0)
        if lower_after is not None:
            _check_number("lower_after", lower_after, 0)
        self.max_wcu = max_wcu
        self.max_rcu = max_rcu
        self.factor = float(factor)
        self.step = step
        self.cooldown = float(cooldown)
        self.lower_after = lower_after
        self.on_demand_5xx = on_demand_5xx
        self.clock: Clock = clock or SystemClock()
        self.actions: list[PolicyAction] = []
        self._raised: dict[tuple[str, str | None, Side], float] = {}
        self._baseline: dict[tuple[str, str | None, Side], float] = {}
        self._decreases: dict[str, list[float]] = {}
        #: sides a caller is raising or lowering now (outside the lock)
        self._deciding: set[tuple[str, str | None, Side]] = set()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"TableThrottlePolicy(max_wcu={self.max_wcu}, max_rcu={self.max_rcu}, "
            f"factor={self.factor}, step={self.step}, cooldown={self.cooldown})"
        )

    # -- classifying -----------------------------------------------------------------

    def observe(
        self, model: Any, error: BaseException, scope: ThrottleScope | None
    ) -> PolicyAction | None:
        """Act on one classified error of ``model``'s table; returns what was done.

        ``scope`` is the classification of :func:`shardmodel.throttles.throttle_scope`
        (None: not a throttle; then only an opted-in on-demand 5xx is acted on). Never
        raises: a failure to act is recorded, and the caller's own error stands.
        """
        table = model.Meta.table_name
        side, index = _side_and_index(error)
        try:
            return self._decide(model, error, scope, table, index, side)
        except Exception as failure:  # DescribeTable unreachable...: never mask the throttle
            reason = f"could not act: {type(failure).__name__}: {' '.join(str(failure).split())}"
            return self._record("failed", table, index, side, reason)

    def _decide(
        self,
        model: Any,
        error: BaseException,
        scope: ThrottleScope | None,
        table: str,
        index: str | None,
        side: Side,
    ) -> PolicyAction | None:
        if scope is None:
            if not (self.on_demand_5xx and _code(error) in CAPACITY_5XX):
                return None
            description = model._get_connection().describe_table()
            if not _on_demand(description):
                return None
            return self._record(
                "on-demand",
                table,
                index,
                side,
                f"capacity-related {_code(error)} on an on-demand table: it is adapting to "
                "a traffic jump; spread the load or pre-warm (OnDemandThroughput)",
            )
        if scope == "partition":
            return self._record(
                "partition",
                table,
                index,
                side,
                "one partition is hot: more table capacity would not help; shard the key",
            )
        return self._raise(model, table, index, side)

    # -- raising -----------------------------------------------------------------------

    def _raise(self, model: Any, table: str, index: str | None, side: Side) -> PolicyAction:
        # the lock is never held across a request: inside an event loop (async calls, a
        # sync query's shard requests) a task waiting on it would stop the loop's thread
        connection = model._get_connection()
        key = (table, index, side)
        with self._lock:
            now = self.clock.now()
            last = self._raised.get(key)
            reason = None
            if key in self._deciding:
                reason = "a raise of it is being decided now"
            elif last is not None and now - last < self.cooldown:
                reason = f"raised {now - last:.0f} s ago; the cooldown is {self.cooldown:.0f} s"
            else:
                self._deciding.add(key)
        if reason is not None:
            return self._record("cooling", table, index, side, reason)
        try:
            return self._raise_now(connection, table, index, side, now)
        finally:
            with self._lock:
                self._deciding.discard(key)

    def _raise_now(
        self, connection: Any, table: str, index: str | None, side: Side, now: float
    ) -> PolicyAction:
        """Raise one side now: this caller holds the decision (``_deciding``)."""
        description = connection.describe_table()
        if _on_demand(description):
            return self._record(
                "on-demand",
                table,
                index,
                side,
                "the on-demand table is at its maximum throughput: raise its "
                "OnDemandThroughput or the account quota",
            )
        current = _units(description, index)
        ceiling = self.max_rcu if side == "read" else self.max_wcu
        old = current[side]
        target = old if ceiling is None else min(ceiling, self._grown(old))
        if target <= old:
            limit = "no max set" if ceiling is None else f"the ceiling is {ceiling}"
            return self._record(
                "at-limit",
                table,
                index,
                side,
                f"{side} capacity is {old:.0f} and {limit}",
                old=old,
            )
        with self._lock:
            self._raised[(table, index, side)] = now
            self._baseline.setdefault((table, index, side), old)
        return self._update(connection, table, index, side, current, target, "raise")

    def _grown(self, units: float) -> int:
        return int(max(math.ceil(round(units * self.factor, 9)), units + self.step))

    def _update(
        self,
        connection: Any,
        table: str,
        index: str | None,
        side: Side,
        current: dict[Side, float],
        target: float,
        kind: ActionKind,
    ) -> PolicyAction:
        units = {**current, side: target}
        read, write = int(units["read"]), int(units["write"])
        try:
            if index is None:
                connection.update_table(read_capacity_units=read, write_capacity_units=write)
            else:
                connection.update_table(
                    global_secondary_index_updates=[
                        {
                            "index_name": index,
                            "read_capacity_units": read,
                            "write_capacity_units": write,
                        }
                    ]
                )
        except Exception as error:  # in use, limit exceeded...: the throttled write goes on
            return self._record(
                "failed",
                table,
                index,
                side,
                f"UpdateTable refused: {' '.join(str(error).split())}",
                old=current[side],
            )
        verb = "raised" if kind == "raise" else "lowered"
        return self._record(
            kind,
            table,
            index,
            side,
            f"{verb} {side} capacity from {current[side]:.0f} to {target:.0f}",
            old=current[side],
            new=target,
        )

    # -- lowering ----------------------------------------------------------------------

    def relax(self, model: Any) -> list[PolicyAction]:
        """Lower every side this policy raised on ``model``'s table back to what it was.

        Only after ``lower_after`` quiet seconds, and only while DynamoDB's limit on
        decreases allows one (4 a UTC day at any time, then one an hour up to 27).
        """
        if self.lower_after is None:
            return []
        table = model.Meta.table_name
        connection = model._get_connection()
        done: list[PolicyAction] = []
        with self._lock:  # the sides due, read under the lock; the requests outside it
            now = self.clock.now()
            due = sorted(
                (
                    (key, raised_at)
                    for key, raised_at in self._raised.items()
                    if key[0] == table
                    and now - raised_at >= self.lower_after
                    and key not in self._deciding
                ),
                key=lambda kv: (str(kv[0][1]), kv[0][2]),
            )
            self._deciding.update(key for key, _ in due)
        try:
            for key, raised_at in due:
                _, index, side = key
                description = connection.describe_table()
                current = _units(description, index)
                baseline = self._baseline[key]
                if current[side] <= baseline:
                    continue
                if not self._may_decrease(table, description, now):
                    done.append(
                        self._record(
                            "at-limit",
                            table,
                            index,
                            side,
                            "DynamoDB's decreases for today are used up",
                            old=current[side],
                        )
                    )
                    continue
                action = self._update(connection, table, index, side, current, baseline, "lower")
                if action.kind == "lower":
                    with self._lock:
                        self._decreases.setdefault(table, []).append(now)
                        if self._raised.get(key) == raised_at:
                            del self._raised[key], self._baseline[key]
                done.append(action)
        finally:
            with self._lock:
                self._deciding.difference_update(key for key, _ in due)
        return done

    def _may_decrease(self, table: str, description: dict[str, Any], now: float) -> bool:
        day = math.floor(now / 86400)
        mine = [t for t in self._decreases.get(table, []) if math.floor(t / 86400) == day]
        throughput = description.get("ProvisionedThroughput", {})
        count = max(len(mine), int(throughput.get("NumberOfDecreasesToday") or 0))
        last_seen = throughput.get("LastDecreaseDateTime")
        last = max(mine, default=None)
        if isinstance(last_seen, datetime):
            last = max(last or 0.0, last_seen.astimezone(timezone.utc).timestamp())
        elif isinstance(last_seen, int | float):
            last = max(last or 0.0, float(last_seen))
        if count < DECREASES_ANY_TIME:
            return True
        return count < DECREASES_PER_DAY and (last is None or now - last >= 3600)

    # -- records -------------------------------------------------------------------------

    def _record(
        self,
        kind: ActionKind,
        table: str,
        index: str | None,
        side: Side,
        reason: str,
        *,
        old: float | None = None,
        new: float | None = None,
    ) -> PolicyAction:
        action = PolicyAction(kind, table, index, side, old, new, self.clock.now(), reason)
        self.actions.append(action)
        where = table if index is None else f"{table}/{index}"
        level = logging.WARNING if kind in ("at-limit", "failed", "on-demand") else logging.INFO
        if kind in ("partition", "cooling"):
            level = logging.DEBUG
        log.log(level, "%s %s throttle: %s: %s", where, side, kind, reason)
        return action


def _side_and_index(error: BaseException) -> tuple[Side, str | None]:
    """The side (from ``ThrottlingReasons``, else the operation) and the index throttled."""
    index = None
    cause = getattr(error, "cause", None) or error
    found = getattr(cause, "response", None) or {}
    for entry in found.get("ThrottlingReasons") or []:
        resource = str(entry.get("resource", ""))
        if "/index/" in resource:
            index = resource.split("/index/", 1)[1]
    return throttled_side(error), index


def _on_demand(description: dict[str, Any]) -> bool:
    return provisioned_units(description, None) is None


def _units(description: dict[str, Any], index: str | None) -> dict[Side, float]:
    return provisioned_units(description, index) or {"read": 0.0, "write": 0.0}
