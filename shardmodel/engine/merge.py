"""The merged query: every shard of one logical key read as one ordered, resumable stream.

Per-shard queries run on a process-wide thread pool, each query using at most its
``parallelism`` of it (inside an async call: as tasks of the running event loop, see
:func:`shardmodel.core.workers.workers`). Shards whose segments split the sort
order (time buckets on the sort key) form groups read one after another; the shards of
a group are merged lazily with a k-way heap in DynamoDB's sort order. Memory holds at
most two pages per shard of the active group. (Items one logical item keeps under several
keys are combined above the merge, by :mod:`shardmodel.engine.grouping`.)
"""

from __future__ import annotations

import bisect
import functools
import heapq
import math
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from typing import Any, Generic, TypeVar

from attrs import frozen
from pynamodb.attributes import Attribute
from pynamodb.constants import NUMBER

from shardmodel.core.telemetry import Operation
from shardmodel.core.workers import Replies, Runner, Task, usable_here, workers
from shardmodel.engine.cursor import CURSOR_VERSION, Cursor, RawKey, position, raw_key

__all__ = [
    "DEFAULT_ITEM_BUDGET",
    "REQUEST_ITEMS",
    "MergedQuery",
    "QueryIdentity",
    "count_shards",
    "dynamodb_sort_key",
    "first_page_size",
]

_T = TypeVar("_T")
_RawItem = dict[str, dict[str, Any]]
#: fetch(physical key, exclusive start key, page limit) -> a Query response
Fetch = Callable[[str, RawKey | None, int | None], dict[str, Any]]

#: Items a multi-shard query without a limit keeps in flight, over all shards. One parsed
#: 1 MB page of ~100-byte items holds about 10,000; with two pages per shard in flight
#: this stays near two such pages (16 shards: 750-item pages).
DEFAULT_ITEM_BUDGET = 24_000


#: Buffered items a limited query ranks to plan its follow-up pages (bigger: none planned).
PLANNED_ITEMS = 4_096

#: Sort keys whose reverse order is cheaper than wrapping them (numbers negate).
_DESCENDING: weakref.WeakKeyDictionary[Callable[[_RawItem], Any], Callable[[_RawItem], Any]] = (
    weakref.WeakKeyDictionary()
)


def dynamodb_sort_key(attribute: Attribute[Any] | None) -> Callable[[_RawItem], Any]:
    """Order raw items the way DynamoDB orders this sort key.

    Numbers compare numerically, strings by their UTF-8 bytes, binary by bytes.
    """
    if attribute is None:
        return lambda item: 0
    name, kind = attribute.attr_name, attribute.attr_type

    if kind == NUMBER:

        def number(item: _RawItem) -> Any:
            value = item[name][NUMBER]
            # whole numbers (the common epoch or sequence keys) compare as ints, cheaper
            # than Decimal and equal in order; ints and Decimals compare with each other
            return int(value) if value.isdigit() else Decimal(value)

        def negated(item: _RawItem) -> Any:
            value = item[name][NUMBER]
            # copy_negate: exact (unary minus rounds to the context's 28 digits)
            return -int(value) if value.isdigit() else Decimal(value).copy_negate()

        _DESCENDING[number] = negated
        return number

    def key(item: _RawItem) -> Any:
        value = item[name][kind]
        if isinstance(value, str):
            return value.encode("utf-8")
        return bytes(value)

    return key


#: What one more shard request costs the client, in items read and not returned: a shard
#: request of the async 64-shard latest-100 costs ~80 µs of CPU, such an item ~2 µs (it is
#: parsed and ranked, never built). At 20, the 64-shard read took 14-20% more CPU (4 items
#: a shard and 8 follow-ups against 5 a shard; ``make bench``, in-process A/B).
REQUEST_ITEMS = 40


@functools.lru_cache(maxsize=1024)
def first_page_size(remaining: int, shards: int) -> int:
    """The first page to ask of each of ``shards`` shards to serve ``remaining`` items.

    Items spread over random shards follow a binomial law: ask the mean plus 2.5 standard
    deviations, but never more than twice the fair share, so items read stay within 2x
    the items returned. The cap binds for large fan-outs: the newest 100 of 16 random
    shards ask 12 a shard, and ~31% of such reads need a second round for the shard
    holding more than 12 of them (mean 1.34 rounds; 13 a shard: 14%, but 2.08x read;
    16: 0.7%, 2.55x read; ``benchmarks/rounds.py`` over random layouts).

    Where the fair share is a few items the cap costs requests instead: a shard whose
    page holds only items the limit takes needs a follow-up page. So the page grows by
    one while a shard holds exactly that many of the items (and not the last one) with a
    probability over ``1 / REQUEST_ITEMS``: the follow-ups one more item a shard saves
    then cost more than the items. The newest 100 of 64 shards ask 5 a shard, not 3
    (over random layouts 4.7 follow-up requests at 4 a shard, 1.3 at 5, for 319 items
    read instead of 264); of 256 shards 3, not 1 (~83 follow-ups become ~2).
    """
    if shards <= 1:
        return max(1, remaining)
    share = 1.0 / shards
    estimate = remaining * share + 2.5 * math.sqrt(remaining * share * (1 - share))
    page = max(1, min(math.ceil(estimate), (2 * remaining) // shards))
    while page < remaining:
        exactly = _binomial(remaining, share, page)
        if REQUEST_ITEMS * exactly * (1 - page / remaining) <= 1:
            break
        page += 1
    return page


def _binomial(n: int, p: float, k: int) -> float:
    """P(X = k) for X ~ Binomial(n, p), 0 < p < 1 (in logs: n may be large)."""
    log = (
        math.lgamma(n + 1)
        - math.lgamma(k + 1)
        - math.lgamma(n - k + 1)
        + k * math.log(p)
        + (n - k) * math.log1p(-p)
    )
    return math.exp(log)


@frozen
class QueryIdentity:
    """What a cursor must match to resume a query.

    ``conditions``: the digest of its key condition, time range and filter
    (:func:`~shardmodel.engine.cursor.conditions_digest`).
    """

    model: str
    index: str | None
    logical_key: str
    forward: bool
    conditions: str = ""


class _Descending:
    """Reverses the order of a sort key for the heap (bytes cannot be negated)."""

    __slots__ = ("key",)

    def __init__(self, key: Any) -> None:
        self.key = key

    def __lt__(self, other: _Descending) -> bool:
        return bool(other.key < self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and self.key == other.key

    __hash__ = None  # type: ignore[assignment]


class _Shard:
    """One shard's stream: what it has fetched, what the caller received from it."""

    __slots__ = ("buffer", "exhausted", "group", "key", "last", "next_start", "start", "task")

    def __init__(self, key: str, group: int, start: RawKey | None, done: bool) -> None:
        self.key = key
        self.group = group
        self.start = start  # where the caller's view of this shard begins
        self.last: _RawItem | None = None  # the last item handed to the caller
        self.next_start: RawKey | None = start  # ExclusiveStartKey of the next fetch
        self.exhausted = done  # no more pages
        self.buffer: deque[tuple[Any, _RawItem]] = deque()  # (sort key, item)
        self.task: Task[dict[str, Any]] | None = None  # the request in flight


class MergedQuery(Generic[_T]):
    """An iterator over the merged shards of one logical key.

    Attributes:
        total_count: items returned to the caller so far.
        items_read: items DynamoDB returned over all shards (the read cost in items).
        requests: Query calls made.
        consumed_capacity: read capacity units DynamoDB reported, summed over shards.
        shard_count: shards the query reads.
    """

    def __init__(
        self,
        *,
        fetch: Fetch,
        groups: Sequence[Sequence[str]],
        sort_key: Callable[[_RawItem], Any],
        forward: bool,
        build: Callable[[_RawItem], _T],
        key_names: Sequence[str],
        identity: QueryIdentity,
        encode: Callable[[Cursor], str],
        limit: int | None = None,
        page_size: int | None = None,
        parallelism: int = 10,
        resume: Cursor | None = None,
        item_budget: int = DEFAULT_ITEM_BUDGET,
        runner: Runner | None = None,
        on_empty: Callable[[], None] | None = None,
    ) -> None:
        self._fetch = fetch
        self._on_empty = on_empty  # called once if every shard ends without an item
        if forward:
            self._sort_key = sort_key
        else:
            self._sort_key = _DESCENDING.get(sort_key) or (lambda item: _Descending(sort_key(item)))
        self._build = build
        self._key_names = tuple(key_names)
        self._identity = identity
        self._encode = encode
        self._limit = limit
        self._page_size = page_size
        self._item_budget = item_budget
        positions = {p.key: p for p in resume.shards} if resume is not None else {}
        self._groups: list[list[_Shard]] = []
        for number, group in enumerate(groups):
            shards = []
            for key in group:
                found = positions.get(key)
                start = raw_key(found.start) if found is not None and found.start else None
                shards.append(_Shard(key, number, start, found.done if found else False))
            self._groups.append(shards)
        self.shard_count = sum(len(g) for g in self._groups)
        self._workers = max(1, min(parallelism, max((len(g) for g in self._groups), default=1)))
        self._inflight = 0
        # threads, the event loop inside an async call, or the executor's choice
        self._runner = workers() if runner is None else runner
        self._done: Replies[dict[str, Any]] = self._runner.replies()
        self._heap: list[tuple[Any, int, _RawItem, _Shard]] = []
        self._waiting: set[_Shard] = set()
        self._active = -1
        self._sequence = 0
        self._closed = False
        self._fresh = False  # pages arrived since the follow-ups were last planned
        self.total_count = 0
        self.items_read = 0
        self.requests = 0
        self.consumed_capacity = 0.0
        self._operation: Operation | None = None

    def observe(self, operation: Operation) -> None:
        """Send every request under ``operation``'s span, and end it when this query ends."""
        self._operation = operation

    # -- iteration --------------------------------------------------------------------

    def __iter__(self) -> Iterator[_T]:
        return self

    def __next__(self) -> _T:
        if not self._ready():
            raise StopIteration
        return self._take()

    def next_now(self, missing: Any) -> Any:
        """The next item when ``next`` gives it without waiting for a page (it may send
        requests), else ``missing``: an async iterator takes such an item without a
        greenlet switch."""
        limit = self._limit
        if (
            not self._heap
            or self._waiting
            or self._closed
            or (limit is not None and self.total_count >= limit)
        ):
            return missing
        # no _ready: with nothing waited for it would do nothing, as _fill plans the
        # follow-ups of every page it takes before it returns
        return self._take()

    def _take(self) -> _T:
        """The item at the top of the heap, its shard advanced (the heap is not empty)."""
        _, _, item, shard = heapq.heappop(self._heap)
        shard.last = item
        self._advance(shard)
        self.total_count += 1
        return self._build(item)

    def peek(self) -> _RawItem | None:
        """The raw item ``next`` would return, without consuming it (None at the end)."""
        return self._heap[0][2] if self._ready() else None

    def _ready(self) -> bool:
        """Make the next item available at the top of the heap; False when done."""
        if self._closed or (self._limit is not None and self.total_count >= self._limit):
            self.close()
            return False
        try:
            while True:
                self._fill()
                if self._heap:
                    return True
                if self._active + 1 >= len(self._groups):
                    self.close()
                    empty = self._on_empty
                    if empty is not None and not self.total_count:
                        self._on_empty = None
                        empty()
                    return False
                self._activate(self._active + 1)
        except BaseException as error:
            if self._operation is not None:
                self._operation.fail(error)
            self.close()
            raise

    def close(self) -> None:
        """Stop: cancel queued shard requests and wait out the ones already sent.

        Afterwards no thread works for this query; the shared worker threads stay idle
        for the next one.
        """
        if self._closed:
            return
        self._closed = True
        self._here()
        for group in self._groups:
            for shard in group:
                if shard.task is not None:
                    shard.task.cancel()  # not yet started: skipped
                shard.task = None
        while self._inflight:  # every task comes back once, run or skipped
            self._done.get()
            self._inflight -= 1
        self._waiting.clear()  # the heap stays: the cursor still needs what it holds
        self._end_operation()

    def _end_operation(self) -> None:
        operation = self._operation
        if operation is not None:
            self._operation = None
            operation.set(
                shards=self.shard_count,
                requests=self.requests,
                items_read=self.items_read,
                items=self.total_count,
                consumed_capacity=self.consumed_capacity,
            )
            operation.end()

    def __del__(self) -> None:
        for group in getattr(self, "_groups", ()):
            for shard in group:
                if shard.task is not None:
                    shard.task.cancel()
        if getattr(self, "_operation", None) is not None:
            self._end_operation()  # left unfinished: its span ends when it goes

    @property
    def outstanding(self) -> int:
        """Shard requests sent or queued and not yet consumed."""
        return self._inflight

    @property
    def last_evaluated_key(self) -> str | None:
        """An opaque cursor resuming after the last item returned, or None when complete."""
        shards = []
        complete = True
        for group in self._groups:
            for shard in group:
                done = shard.exhausted and not shard.buffer and not self._in_heap(shard)
                complete = complete and done
                start = shard.start if shard.last is None else self._key_of(shard.last)
                shards.append(position(shard.key, start, done))
        if complete:
            return None
        return self._encode(
            Cursor(
                version=CURSOR_VERSION,
                model=self._identity.model,
                index=self._identity.index,
                logical_key=self._identity.logical_key,
                forward=self._identity.forward,
                conditions=self._identity.conditions,
                shards=tuple(shards),
            )
        )

    def _key_of(self, item: _RawItem) -> RawKey:
        return {name: item[name] for name in self._key_names if name in item}

    # -- scheduling -------------------------------------------------------------------

    def _in_heap(self, shard: _Shard) -> bool:
        return any(entry[3] is shard for entry in self._heap)

    def _activate(self, number: int) -> None:
        self._active = number
        for shard in self._groups[number]:
            if not shard.exhausted:
                self._waiting.add(shard)
                self._schedule(shard)

    def _alive(self) -> int:
        return sum(1 for s in self._groups[self._active] if not s.exhausted) or 1

    def _page(self, first: bool) -> int | None:
        if self._page_size is not None:
            return self._page_size
        shards = len(self._groups[self._active])
        if self._limit is not None:
            remaining = max(1, self._limit - self.total_count)
            if first:
                return first_page_size(remaining, shards)
            return max(1, min(remaining, math.ceil(remaining / self._alive()) + 1))
        if shards == 1:
            return None  # one shard: DynamoDB's own 1 MB pages, as PynamoDB does
        return max(25, self._item_budget // (2 * shards))

    def _here(self) -> None:
        """Wait where the caller runs now: after a hand-off, on a runner of this place.

        A sync iterator's requests may run on its thread's kept loop, in greenlets of
        that thread. Read on by another thread (the first may have ended, its loop with
        it) or inside a coroutine (a loop already runs there), that loop cannot be
        driven: the requests in flight are left to it (reads: nothing changes on the
        table) and each of those shards is asked again from the same position on the
        runner of where the iterator is now, so no item is lost or repeated.
        """
        if usable_here(self._done):
            return
        for group in self._groups:
            for shard in group:
                if shard.task is not None:
                    shard.task.cancel()
                    shard.task = None
        self._inflight = 0
        self._runner = workers()
        self._done = self._runner.replies()

    def _schedule(self, shard: _Shard, page: int | None = None) -> None:
        if shard.task is not None or shard.exhausted or self._closed:
            return
        if self._inflight >= self._workers:
            return  # at this query's share of the pool; _fill schedules it later
        if page is None:
            page = self._page(first=shard.next_start is shard.start and shard.last is None)
        operation = self._operation
        # the task runs in a copy of the context: with this query's span current in it
        token = None if operation is None else operation.attach()
        try:
            shard.task = self._runner.submit(
                self._fetch, (shard.key, shard.next_start, page), self._done, shard
            )
        finally:
            if token is not None:
                operation.detach(token)  # type: ignore[union-attr]
        self._inflight += 1

    def _fill(self) -> None:
        """Wait until every shard the merge needs has delivered, failing fast on errors."""
        self._here()
        while self._waiting:
            for shard in list(self._waiting):
                self._schedule(shard)
            finished = [self._done.get()]
            while not self._done.empty():
                finished.append(self._done.get())
            self._inflight -= len(finished)
            for task in finished:
                shard = task.tag
                shard.task = None
                self._absorb(shard, task.value())
            if self._limit is None and self._active >= 0:
                for shard in self._groups[self._active]:
                    self._prefetch(shard)
        if self._fresh and not self._waiting:
            self._fresh = False
            self._plan_follow_ups()

    def _plan_follow_ups(self) -> None:
        """Ask now, all at once, for the next page of every shard the limit will reach.

        A shard whose buffered items all rank within the remaining limit among every
        item buffered will run dry before the limit is met, and the merge will wait for
        its next page then; sent one at a time, those pages cost a round trip each.
        Each page is sized as it would be then (the share left after that shard's last
        item), so the same shards are read with the same limits, in one round.
        """
        if self._limit is None or self._page_size is not None or self._active < 0:
            return
        remaining = self._limit - self.total_count
        group = self._groups[self._active]
        if sum(len(s.buffer) for s in group) + len(self._heap) > PLANNED_ITEMS:
            return
        keys = sorted(
            [entry[0] for entry in self._heap]
            + [sort for shard in group for sort, _ in shard.buffer]
        )
        heads = {entry[3]: entry[0] for entry in self._heap}
        alive = self._alive()
        for shard in group:
            if shard.exhausted or shard.task is not None or shard not in heads:
                continue
            last = shard.buffer[-1][0] if shard.buffer else heads[shard]
            rank = bisect.bisect_right(keys, last)  # its last item's place in the merge
            if rank < remaining:
                left = remaining - rank + 1  # what the limit leaves once it is taken
                self._schedule(shard, max(1, min(left, math.ceil(left / alive) + 1)))

    def _absorb(self, shard: _Shard, response: dict[str, Any]) -> None:
        items = response.get("Items", [])
        self.requests += 1
        self.items_read += len(items)
        capacity = response.get("ConsumedCapacity") or {}
        self.consumed_capacity += float(capacity.get("CapacityUnits", 0) or 0)
        sort_key = self._sort_key  # once an item: the merge and the planning share it
        shard.buffer.extend([(sort_key(item), item) for item in items])
        self._fresh = True
        shard.next_start = response.get("LastEvaluatedKey")
        shard.exhausted = shard.next_start is None
        if shard in self._waiting:
            if shard.buffer:
                self._waiting.discard(shard)
                self._push(shard)
            elif shard.exhausted:
                self._waiting.discard(shard)
            else:
                self._schedule(shard)  # a page the filter emptied: read on
        self._prefetch(shard)

    def _prefetch(self, shard: _Shard) -> None:
        """Without a limit, ask for a shard's next page while the caller consumes this one."""
        if self._limit is None and shard.group == self._active and not shard.exhausted:
            self._schedule(shard)

    def _push(self, shard: _Shard) -> None:
        sort, item = shard.buffer.popleft()
        self._sequence += 1
        heapq.heappush(self._heap, (sort, self._sequence, item, shard))

    def _advance(self, shard: _Shard) -> None:
        if shard.buffer:
            self._push(shard)
        elif not shard.exhausted:
            self._waiting.add(shard)
            self._schedule(shard)


def count_shards(
    fetch: Callable[[str, RawKey | None], dict[str, Any]],
    keys: Sequence[str],
    parallelism: int,
    runner: Runner | None = None,
) -> int:
    """Sum ``Select=COUNT`` queries over every shard, all pages, on a bounded pool."""

    def count_one(key: str) -> int:
        total, start = 0, None
        while True:
            response = fetch(key, start)
            total += int(response.get("Count", 0))
            start = response.get("LastEvaluatedKey")
            if start is None:
                return total

    if len(keys) == 1:
        return count_one(keys[0])
    total = 0
    step = max(1, parallelism)
    if runner is None:
        runner = workers()
    replies: Replies[int] = runner.replies()
    for start in range(0, len(keys), step):
        batch = keys[start : start + step]
        for key in batch:
            runner.submit(count_one, (key,), replies)
        tasks = [replies.get() for _ in batch]  # all back before raising: none left working
        total += sum(task.value() for task in tasks)
    return total
