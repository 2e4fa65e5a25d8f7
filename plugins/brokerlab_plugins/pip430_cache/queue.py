"""``RangeCacheRemovalQueue``: one FIFO of every cached entry in insertion order (spec §2.4, §2.5).

A pass looks at the head and classifies it:

* MISSING: a range removal already took the entry (``removed``); drop the slot, count nothing.
* then the eviction-predicate chain, first decision wins;
* when every predicate abstains, the queue's own rule: a time pass REMOVEs an expired entry
  (``timestamp < threshold``, strict) and STOPs at a live one; a size pass REMOVEs.

A size pass STOPs once it has freed enough bytes (checked after MISSING, before the predicates).
REQUEUE restamps the entry with the current time, clears ``accessed``, adds one to
``requeue_count`` and moves it to the tail.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Final

from brokerlab.protocols import Clock, EvictionDecision, EvictionPass, EvictionPredicate
from brokerlab_plugins.entry_cache_common import CacheCounters
from brokerlab_plugins.pip430_cache.entry import CachedEntry
from brokerlab_plugins.pip430_cache.predicates import StatelessPredicate

__all__ = ["RemovalQueue"]

# Final: read once, not looked up by name on every use when the module is compiled.
_REMOVE: Final = EvictionDecision.REMOVE
_REQUEUE: Final = EvictionDecision.REQUEUE
_STOP: Final = EvictionDecision.STOP
_TIME: Final = EvictionPass.TIME
_SIZE: Final = EvictionPass.SIZE

# Requeue reason -> counter; a requeue by any other predicate is not attributed.
_REQUEUE_COUNTERS = {
    "recently-accessed": "cache_requeues_accessed",
    "expected-reads": "cache_requeues_expected_reads",
}
# A pass counts requeues in a list by slot: one per counter, then one for the unattributed.
_COUNTER_NAMES: Final = tuple(_REQUEUE_COUNTERS.values())
_UNATTRIBUTED: Final = len(_COUNTER_NAMES)
_SLOTS = {reason: slot for slot, reason in enumerate(_REQUEUE_COUNTERS)}


class RemovalQueue:
    """The global removal queue of a PIP-430 cache manager.

    ``remove(entry, kind)`` is the manager's callback that takes a live entry out of its ledger
    cache and updates the size accounting; the queue only decides and keeps the order.
    """

    __slots__ = (
        "_chain",
        "_clock",
        "_counters",
        "_queue",
        "_remove",
        "_requeue_budget",
        "listeners",
        "predicates",
    )

    def __init__(
        self,
        predicates: Sequence[EvictionPredicate],
        clock: Clock,
        counters: CacheCounters,
        remove: Callable[[CachedEntry, EvictionPass], None],
        max_requeues: int = 5,
    ) -> None:
        self.predicates = tuple(predicates)
        # Only predicates with state of their own need the per-entry notifications.
        self.listeners = tuple(p for p in self.predicates if not isinstance(p, StatelessPredicate))
        self._clock = clock
        self._counters = counters
        self._remove = remove
        self._queue: deque[CachedEntry] = deque()
        # Each predicate with the slot of its requeue counter, looked up once and not per requeue.
        self._chain = tuple((p, _SLOTS.get(p.name, _UNATTRIBUTED)) for p in self.predicates)
        # With the built-in predicates an entry is requeued at most 1 + max_requeues times in one
        # pass; past that a third-party predicate is looping, and the pass falls back to its rule.
        self._requeue_budget = max_requeues + 2

    def __len__(self) -> int:
        return len(self._queue)

    def __iter__(self) -> Iterator[CachedEntry]:
        return iter(self._queue)

    def add(self, entry: CachedEntry) -> None:
        """Queue an entry at the tail."""
        self._queue.append(entry)
        for listener in self.listeners:
            listener.on_insert(entry)

    def evict_before(self, threshold_ns: int) -> tuple[int, int]:
        """Time pass (``evictLEntriesBeforeTimestamp``): returns (entries, bytes) removed."""
        return self._pass(_TIME, threshold_ns, 0)

    def evict_size(self, size_to_free: int) -> tuple[int, int]:
        """Size pass (``evictLeastAccessedEntries``): free at least ``size_to_free`` bytes."""
        if size_to_free <= 0:
            raise ValueError(f"size_to_free must be positive, got {size_to_free}")
        return self._pass(_SIZE, 0, size_to_free)

    def _pass(self, kind: EvictionPass, threshold_ns: int, size_to_free: int) -> tuple[int, int]:
        queue = self._queue
        counters = self._counters
        chain = self._chain
        size_pass = kind is _SIZE
        now = self._clock.now_ns()
        budget = start_budget = len(queue) * self._requeue_budget
        requeues = [0] * (_UNATTRIBUTED + 1)
        removed = removed_bytes = visited = 0
        try:
            while queue:
                entry = queue[0]
                visited += 1
                if entry.removed:
                    queue.popleft()  # MISSING
                    continue
                if size_pass and removed_bytes >= size_to_free:
                    break
                # The predicate chain, first decision wins (inlined: this loop is the hot path).
                decision: EvictionDecision | None = None
                slot = _UNATTRIBUTED
                if budget > 0:
                    for predicate, predicate_slot in chain:
                        decision = predicate.decide(entry, kind, threshold_ns)
                        if decision is not None:
                            slot = predicate_slot
                            break
                elif not size_pass:
                    break  # a third-party predicate keeps requeueing: end the time pass
                if decision is None:
                    if not size_pass and entry.timestamp_ns >= threshold_ns:
                        break  # the queue's own rule: STOP at a live head
                    decision = _REMOVE
                elif decision is _STOP:
                    break
                queue.popleft()
                if decision is _REQUEUE:
                    budget -= 1
                    entry.timestamp_ns = now
                    entry.accessed = False
                    entry.requeue_count += 1
                    queue.append(entry)
                    requeues[slot] += 1
                else:
                    # REMOVE; a predicate's MISSING for a live entry also means "evict", so the
                    # size accounting stays right (MISSING proper belongs to the queue).
                    removed += 1
                    removed_bytes += entry.size
                    self._remove(entry, kind)
        finally:
            counters.cache_eviction_work += visited
            if budget < start_budget:  # every requeue spent one unit of the budget
                for name, count in zip(_COUNTER_NAMES, requeues, strict=False):
                    setattr(counters, name, getattr(counters, name) + count)
        return removed, removed_bytes
