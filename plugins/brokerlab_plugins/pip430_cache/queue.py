"""``RangeCacheRemovalQueue``: one FIFO of every cached entry in insertion order (spec §2.4, §2.5).

A pass looks at the head and classifies it:

* MISSING: a range removal already took the entry (``removed``); drop the slot, count nothing.
* then the eviction-predicate chain, first decision wins;
* when every predicate abstains, the queue's own rule: a time pass REMOVEs an expired entry
  (``timestamp < threshold``, strict) and STOPs at a live one; a size pass REMOVEs.

A size pass STOPs once it has freed enough bytes (checked after MISSING, before the predicates).
REQUEUE restamps the entry with the current time, clears ``accessed``, adds one to
``requeue_count`` and moves it to the tail. REMOVE takes the entry out of its ledger's entries
(``owner``) and out of the queue's byte count, the cache's size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Final

from brokerlab.errors import PluginError
from brokerlab.protocols import (
    AttributedPredicate,
    CachedEntryView,
    Clock,
    EvictionDecision,
    EvictionPass,
    EvictionPredicate,
    RequeueRule,
    RulePredicate,
    SilentPredicate,
)
from brokerlab_plugins.entry_cache_common import CacheCounters
from brokerlab_plugins.pip430_cache.entry import CachedEntry, cut_front

__all__ = ["RemovalQueue", "requeue_metric"]

# Final: read once, not looked up by name on every use when the module is compiled.
_REMOVE: Final = EvictionDecision.REMOVE
_REQUEUE: Final = EvictionDecision.REQUEUE
_STOP: Final = EvictionDecision.STOP
_TIME: Final = EvictionPass.TIME
_SIZE: Final = EvictionPass.SIZE

# PIP-430's requeue reasons by predicate name -> their counters: a predicate with one of these
# names counts there unless it names a counter itself (AttributedPredicate).
_REASON_COUNTERS: Final = {
    "recently-accessed": "cache_requeues_accessed",
    "expected-reads": "cache_requeues_expected_reads",
}
# The counters CacheCounters keeps; requeues counted in any other metric go to other_requeues.
_COUNTER_FIELDS: Final = frozenset(_REASON_COUNTERS.values())

Decide = Callable[[CachedEntryView, EvictionPass, int], EvictionDecision | None]
# One link of the chain: the predicate, its bound decide, the slot of its requeue counter, and
# its RequeueRule unpacked into plain values (has a rule, when accessed, minimum expected reads,
# requeue cap or -1): a rule is applied here, on the queue's own entry, without a call.
Link = tuple[EvictionPredicate, Decide, int, bool, bool, int, int]


class RemovalQueue:
    """The global removal queue of a PIP-430 cache manager, and the byte count of what it holds.

    ``size`` is the bytes of the live entries: :meth:`add` counts an entry in and a pass's
    REMOVE counts it out; the manager subtracts what a range removal freed (those wrappers stay
    queued until a pass drops them as MISSING).
    """

    __slots__ = (
        "_chain",
        "_clock",
        "_counters",
        "_head",
        "_metrics",
        "_queue",
        "_requeue_budget",
        "listeners",
        "other_requeues",
        "predicates",
        "size",
    )

    def __init__(
        self,
        predicates: Sequence[EvictionPredicate],
        clock: Clock,
        counters: CacheCounters,
        max_requeues: int = 5,
    ) -> None:
        self.predicates = tuple(predicates)
        # Only predicates with state of their own need the per-entry notifications.
        self.listeners = tuple(p for p in self.predicates if _listens(p))
        self._clock = clock
        self._counters = counters
        # The queue is ``_queue[_head:]``: a list whose consumed head is cut off now and then,
        # which compiled code indexes and appends to directly (a deque is a generic object to it).
        self._queue: list[CachedEntry] = []
        self._head = 0
        self.size = 0
        # Each predicate with its bound decide and the slot of its requeue counter, looked up once
        # and not per decision. A pass counts requeues in a list by slot: one per counter, then
        # one for the unattributed.
        metrics = [requeue_metric(p) for p in self.predicates]
        self._metrics: tuple[str, ...] = tuple(dict.fromkeys(m for m in metrics if m))
        unattributed = len(self._metrics)
        self._chain: tuple[Link, ...] = tuple(
            (p, p.decide, self._metrics.index(m) if m else unattributed, *_unpacked(p))
            for p, m in zip(self.predicates, metrics, strict=True)
        )
        # Requeues counted in metrics other than CacheCounters' own (a plugin's counter).
        self.other_requeues: dict[str, int] = {}
        # With the built-in predicates an entry is requeued at most 1 + max_requeues times in one
        # pass; past that a third-party predicate is looping, and the pass falls back to its rule.
        self._requeue_budget = max(0, max_requeues) + 2  # a cap below 0 requeues as 0 does

    def __len__(self) -> int:
        return len(self._queue) - self._head

    def __iter__(self) -> Iterator[CachedEntry]:
        return iter(self._queue[self._head :])

    def add(self, entry: CachedEntry) -> None:
        """Queue an entry at the tail and count its bytes."""
        self._queue.append(entry)
        self.size += entry.size
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
        head = self._head
        counters = self._counters
        chain = self._chain
        size_pass = kind is _SIZE
        now = self._clock.now_ns()
        budget = start_budget = (len(queue) - head) * self._requeue_budget
        requeues = [0] * (len(self._metrics) + 1)
        unattributed = len(self._metrics)
        removed = removed_bytes = visited = 0
        try:
            while head < len(queue):
                entry = queue[head]
                visited += 1
                if entry.removed:
                    head += 1  # MISSING
                    continue
                if size_pass and removed_bytes >= size_to_free:
                    break
                # The predicate chain, first decision wins (inlined: this loop is the hot path).
                decision: EvictionDecision | None = None
                slot = unattributed
                if budget > 0:
                    for predicate, decide, predicate_slot, ruled, accessed, reads, cap in chain:
                        # RulePredicate: RequeueRule.decide written out on native values, so
                        # no call; test_pip430_cache checks it against the decide path.
                        if ruled:
                            if (
                                (accessed and not entry.accessed)
                                or (reads > 0 and (entry.expected_reads or 0) < reads)
                                or (cap >= 0 and entry.requeue_count >= cap)
                                or (not size_pass and entry.timestamp_ns >= threshold_ns)
                            ):
                                continue
                            decision = _REQUEUE
                            slot = predicate_slot
                            break
                        decision = decide(entry, kind, threshold_ns)
                        if decision is not None:
                            if not isinstance(decision, EvictionDecision):
                                raise _not_a_decision(predicate, decision)
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
                head += 1
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
                    self._take(entry, kind)
        finally:
            self._head = head - cut_front(queue, head)
            counters.cache_eviction_work += visited
            if budget < start_budget:  # every requeue spent one unit of the budget
                for name, count in zip(self._metrics, requeues, strict=False):
                    if name in _COUNTER_FIELDS:
                        setattr(counters, name, getattr(counters, name) + count)
                    elif count:
                        self.other_requeues[name] = self.other_requeues.get(name, 0) + count
        return removed, removed_bytes

    def _take(self, entry: CachedEntry, kind: EvictionPass) -> None:
        """REMOVE a live entry: out of its ledger's map and the byte count, counted by pass."""
        entry.owner.remove(entry.position[1])
        entry.removed = True
        self.size -= entry.size
        if kind is _TIME:
            self._counters.cache_evictions_time += 1
        else:
            self._counters.cache_evictions_size += 1
        for listener in self.listeners:
            listener.on_remove(entry)


def _unpacked(predicate: EvictionPredicate) -> tuple[bool, bool, int, int]:
    """A :class:`~brokerlab.protocols.RulePredicate`'s rule as plain values for the hot loop:
    (has a rule, when accessed, minimum expected reads, requeue cap or -1)."""
    rule = predicate.requeue_rule if isinstance(predicate, RulePredicate) else None
    if not isinstance(rule, RequeueRule):
        return (False, False, 0, -1)
    cap = -1 if rule.below_requeues is None else max(0, rule.below_requeues)
    return (True, rule.when_accessed, rule.min_expected_reads, cap)


def _listens(predicate: EvictionPredicate) -> bool:
    """Whether ``predicate`` needs the per-entry notifications: any predicate but a
    :class:`~brokerlab.protocols.SilentPredicate` that says it does not."""
    return not isinstance(predicate, SilentPredicate) or bool(predicate.needs_notifications)


def requeue_metric(predicate: EvictionPredicate) -> str | None:
    """The counter ``predicate``'s requeues count in: the one it names
    (:class:`~brokerlab.protocols.AttributedPredicate`), else its PIP-430 reason's by name."""
    if isinstance(predicate, AttributedPredicate):
        return str(predicate.requeue_metric)
    return _REASON_COUNTERS.get(predicate.name)


def _not_a_decision(predicate: EvictionPredicate, decision: object) -> PluginError:
    # Anything else would fall through to REMOVE and evict without a word.
    return PluginError(
        f"eviction predicate {predicate.name!r} returned {decision!r} from decide(); "
        "allowed: an EvictionDecision or None"
    )
