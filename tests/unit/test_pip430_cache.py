"""The ``pip430`` entry cache against spec pip430-entry-cache.md §7 (scenarios 10-11, 19-23, 32-37),
a reference model (hypothesis), and a byte-capacity FIFO (and libCacheSim's FIFO when installed).

Scenarios 24-31 (legacy heap and legacy cache) are in ``test_legacy_cache.py``.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from brokerlab.broker.events import EventLoop
from brokerlab.errors import PluginError
from brokerlab.profiles.model import BrokerSettings
from brokerlab.protocols import EvictionPredicate, PluginContext, Position, RequeueRule
from brokerlab_plugins.cursor_containers import SortedListCursorContainer
from brokerlab_plugins.entry_cache_common import CacheLimits
from brokerlab_plugins.pip430_cache import (
    ExpectedReadsPredicate,
    Pip430EntryCache,
    RecentlyAccessedPredicate,
    StatelessPredicate,
)
from brokerlab_plugins.pip430_cache.entry import CachedEntry, LedgerEntries

MS = 1_000_000
MB = 1024 * 1024
T = "t"


def make_cache(
    *,
    max_requeue: int = 5,
    extend: bool = True,
    limits: CacheLimits | None = None,
    predicates: Sequence[EvictionPredicate] | None = None,
    **keys: Any,
) -> tuple[Pip430EntryCache, EventLoop, SortedListCursorContainer]:
    """A cache with topic ``t`` open, its own event loop and the topic's cursor container.

    ``max_requeue`` and ``extend`` give the spec's "Q(maxRequeue, extendAccessed)"; ``keys`` are
    further Pulsar keys by their profile spelling.
    """
    values: dict[str, Any] = {
        "managedLedgerCacheEvictionExtendTTLOfEntriesWithRemainingExpectedReadsMaxTimes": (
            max_requeue
        ),
        "managedLedgerCacheEvictionExtendTTLOfRecentlyAccessed": extend,
        "managedLedgerContinueCachingAddedEntriesAfterLastActiveCursorLeavesMillis": 0,
        **keys,
    }
    broker_settings = BrokerSettings.model_validate(values)
    if predicates is None:
        chain: list[EvictionPredicate] = [RecentlyAccessedPredicate()] if extend else []
        chain.append(ExpectedReadsPredicate(max_requeue))
        predicates = chain
    loop = EventLoop()
    context = PluginContext(
        settings=broker_settings,
        clock=loop,
        scheduler=loop,
        rng=np.random.default_rng(0),
        eviction_predicates=tuple(predicates),
        new_cursor_container=SortedListCursorContainer,
    )
    cache = Pip430EntryCache(context, limits=limits)
    cursors = SortedListCursorContainer()
    cache.open_ledger(T, cursors)
    return cache, loop, cursors


def time_pass(cache: Pip430EntryCache, loop: EventLoop) -> tuple[int, int]:
    """One nanosecond later, a time pass that finds everything queued so far expired."""
    loop.run_until(loop.now_ns() + 1)
    return cache.queue.evict_before(loop.now_ns())


def hits(cache: Pip430EntryCache, first: int, last: int, ledger: int = 0) -> list[int]:
    misses = set(cache.read(T, ledger, first, last, "reader"))
    return [e for e in range(first, last + 1) if e not in misses]


# ---- RangeCacheTest (scenarios 1-11) ------------------------------------------------------------


# Scenarios 1-9 (RangeCacheTest) are in tests/conformance/test_range_cache.py; 10 and 11 below
# exercise the newest upstream RangeCache (pages of 64 entries), which that file does not have.


def test_scenario_10_ranges_across_ledgers() -> None:
    cache, _, _ = make_cache()
    for pos in [(1, 62), (1, 63), (1, 64), (1, 192), (2, 0), (2, 1)]:
        cache.put(T, pos, 1, None)
    assert cache.remove_range(T, (1, 0), (1, 64), last_inclusive=False)[0] == 2
    assert cache.remove_range(T, (-1, 0), (2, 1), last_inclusive=False)[0] == 3
    assert list(cache.cached(T)) == [(2, 1)]


def test_scenario_11_eviction_frees_pages() -> None:
    cache, _, _ = make_cache(extend=False)
    for i in range(192):
        cache.put(T, (1, i), 1, None)
    assert cache.queue.evict_size(65) == (65, 65)
    assert cache.queue.evict_size(2**63 - 1) == (127, 127)


# Scenarios 12-18 (RangeCacheRemovalQueueTest) are in
# tests/conformance/test_range_cache_removal_queue.py.


# ---- ActiveManagedCursorContainerTest (19-23), seen through storage-read expected counts --------


def _expected_after_storage_read(cache: Pip430EntryCache, reader: str, entry_id: int) -> int | None:
    cache.storage_read(T, 9, [entry_id], [1], reader)
    entry = cache.entry(T, (9, entry_id))
    return None if entry is None else entry.expected_reads


def _cursors(cursors: SortedListCursorContainer, positions: dict[int, Position], seed: int) -> None:
    order = list(positions)
    random.Random(seed).shuffle(order)
    for i in order:
        cursors.add(f"cursor{i}", positions[i])


def test_scenario_19_reverse_insertion() -> None:
    cache, _, cursors = make_cache()
    for i in (3, 2, 1):
        cursors.add(f"cursor{i}", (0, i))
    assert [_expected_after_storage_read(cache, f"cursor{i}", i) for i in (1, 2, 3)] == [1, 2, 3]


def test_scenario_20_shared_positions() -> None:
    cache, _, cursors = make_cache()
    _cursors(cursors, {i: (0, i // 2) for i in range(1, 1001)}, 20)
    for i in range(1, 1001):
        expected = i + 1 if i % 2 == 0 and 2 <= i <= 998 else i
        assert _expected_after_storage_read(cache, f"cursor{i}", i) == expected


def test_scenario_21_seek_forward() -> None:
    cache, _, cursors = make_cache()
    _cursors(cursors, {i: (0, i) for i in range(1, 1001)}, 21)
    cursors.update("cursor500", (0, 1001))
    assert _expected_after_storage_read(cache, "cursor500", 0) == 1000
    for i in (1, 499, 501, 1000):
        assert _expected_after_storage_read(cache, f"cursor{i}", i) == (i if i < 500 else i - 1)


def test_scenario_22_one_large_group() -> None:
    cache, _, cursors = make_cache()
    positions = {1: (0, 1), 2: (0, 2), 999: (0, 4), 1000: (0, 5)}
    positions |= {i: (0, 3) for i in range(3, 999)}
    _cursors(cursors, positions, 22)
    assert _expected_after_storage_read(cache, "cursor4", 4) == 998


def test_scenario_23_random_seeks() -> None:
    cache, _, cursors = make_cache()
    rng = random.Random(23)
    where = {f"cursor{i}": (0, i) for i in range(1, 201)}
    for name, pos in where.items():
        cursors.add(name, pos)
    for step in range(2000):
        name = rng.choice(list(where))
        old = where[name]
        new = rng.choice([(0, 1), (2, 2**63 - 1), (0, max(1, old[1] + rng.randint(-50, 99)))])
        cursors.update(name, new)
        where[name] = new
        probe = rng.choice(list(where))
        brute = sum(1 for p in where.values() if p <= where[probe])
        assert _expected_after_storage_read(cache, probe, 10_000 + step) == brute
    for name in where:
        cursors.update(name, (0, int(name.removeprefix("cursor"))))
    assert _expected_after_storage_read(cache, "cursor150", 50_000) == 150


# ---- PIP-430 final, derived (scenarios 32-37) ---------------------------------------------------


def test_scenario_32_pip430_simple() -> None:
    cache, loop, _ = make_cache(max_requeue=5, extend=True, limits=CacheLimits.of(10, 0.8, 1000))
    cache.open_ledger("cache1", SortedListCursorContainer())
    cache.open_ledger("cache2", SortedListCursorContainer())
    cache.put("cache1", (1, 1), 4, None)
    cache.put("cache1", (1, 0), 3, None)
    for e in range(3):
        cache.put("cache2", (2, e), 1, None)
    assert cache.size_bytes() == 10
    loop.run_until(loop.now_ns())  # the asynchronous size eviction runs after the insert
    assert cache.size_bytes() == 6 and (1, 1) not in cache.cached("cache1")
    assert cache.put("cache2", (2, 3), 1, None)
    assert cache.size_bytes() == 7
    assert sum(cache.cached("cache1").values()) == 3
    assert sum(cache.cached("cache2").values()) == 4


def _ticking(cache: Pip430EntryCache, loop: EventLoop) -> None:
    loop.call_every(10 * MS, 10 * MS, cache.evict_expired)


@pytest.mark.parametrize("extend", [True, False])
def test_scenario_33_ttl_timeline(extend: bool) -> None:
    cache, loop, _ = make_cache(extend=extend, managedLedgerCacheEvictionTimeThresholdMillis=1000)
    _ticking(cache, loop)
    cache.put(T, (0, 0), 1, None)  # never accessed
    cache.put(T, (0, 1), 1, None)  # accessed at 500 ms
    loop.run_until(500 * MS)
    assert hits(cache, 1, 1) == [1]
    loop.run_until(1009 * MS)
    assert set(cache.cached(T)) == {(0, 0), (0, 1)}
    loop.run_until(1010 * MS)
    assert (0, 0) not in cache.cached(T)
    if not extend:
        assert cache.cached(T) == {}
        return
    assert (0, 1) in cache.cached(T)
    loop.run_until(2019 * MS)
    assert (0, 1) in cache.cached(T)
    loop.run_until(2020 * MS)
    assert cache.cached(T) == {}
    assert cache.counters.cache_requeues_accessed == 1


def test_scenario_34_expected_read_protection() -> None:
    cache, loop, _ = make_cache(max_requeue=5, extend=True)
    _ticking(cache, loop)
    cache.put(T, (0, 0), 1, 2)
    for k in range(1, 6):
        loop.run_until((k * 1010 - 1) * MS)
        entry = cache.entry(T, (0, 0))
        assert entry is not None and entry.requeue_count == k - 1
        loop.run_until(k * 1010 * MS)
        entry = cache.entry(T, (0, 0))
        assert entry is not None and entry.requeue_count == k
    loop.run_until(6059 * MS)
    assert cache.entry(T, (0, 0)) is not None
    loop.run_until(6060 * MS)
    assert cache.entry(T, (0, 0)) is None
    # After two reads are consumed, the entry goes at its next expiry.
    cache.put(T, (0, 1), 1, 2)
    cache.released(T, (0, 1))
    cache.released(T, (0, 1))
    loop.run_until(7070 * MS)
    assert cache.entry(T, (0, 1)) is None
    assert cache.counters.cache_requeues_expected_reads == 5


@pytest.mark.parametrize("extend", [True, False])
def test_scenario_35_tail_write_fan_out(extend: bool) -> None:
    cache, loop, cursors = make_cache(extend=extend)
    for name in ("a", "b", "c"):
        cursors.add(name, (0, 0))
    cache.cursors_changed(T)
    assert cache.insert(T, (0, 0), 10)
    entry = cache.entry(T, (0, 0))
    assert entry is not None and entry.expected_reads == 3
    for name in ("a", "b", "c"):
        assert cache.read(T, 0, 0, 0, name) == []
        cache.released(T, (0, 0))
    assert entry.expected_reads == 0
    assert cache.read(T, 0, 0, 0, "late") == []
    cache.released(T, (0, 0))
    assert entry.expected_reads == -1
    time_pass(cache, loop)
    if extend:  # the 4th hit set "accessed": one requeue, then removal
        assert cache.entry(T, (0, 0)) is entry
        time_pass(cache, loop)
    assert cache.entry(T, (0, 0)) is None


def test_scenario_36_catch_up_read() -> None:
    cache, _, cursors = make_cache()
    cursors.add("A", (0, 5))
    cursors.add("B", (0, 5))
    cursors.add("C", (0, 9))
    assert cache.read(T, 0, 5, 8, "A") == [5, 6, 7, 8]
    cache.storage_read(T, 0, [5, 6, 7, 8], [1, 1, 1, 1], "A")
    for e in range(5, 9):
        cache.released(T, (0, e))
        entry = cache.entry(T, (0, e))
        assert entry is not None and entry.expected_reads == 1
    assert cache.read(T, 0, 20, 21, "inactive") == [20, 21]
    cache.storage_read(T, 0, [20, 21], [1, 1], "inactive")
    assert cache.entry(T, (0, 20)) is None


def test_scenario_37_requeue_consumes_budget() -> None:
    cache, loop, _ = make_cache(max_requeue=2, extend=True)
    cache.put(T, (0, 0), 1, 1)
    for _ in range(2):
        assert hits(cache, 0, 0) == [0]
        loop.run_until(loop.now_ns() + 1)
        cache.queue.evict_before(loop.now_ns())
    entry = cache.entry(T, (0, 0))
    assert entry is not None and entry.requeue_count == 2
    assert cache.counters.cache_requeues_accessed == 2
    # Still one expected read, but the shared budget is spent: only a new access helps.
    assert hits(cache, 0, 0) == [0]
    loop.run_until(loop.now_ns() + 1)
    cache.queue.evict_before(loop.now_ns())
    assert cache.entry(T, (0, 0)) is entry
    loop.run_until(loop.now_ns() + 1)
    cache.queue.evict_before(loop.now_ns())
    assert cache.entry(T, (0, 0)) is None
    assert cache.counters.cache_requeues_expected_reads == 0


# ---- behaviour outside the numbered scenarios ---------------------------------------------------


def test_continue_caching_window() -> None:
    cache, loop, cursors = make_cache(
        managedLedgerContinueCachingAddedEntriesAfterLastActiveCursorLeavesMillis=100
    )
    assert cache.insert(T, (0, 0), 1)  # within the window after load
    loop.run_until(100 * MS)
    assert not cache.insert(T, (0, 1), 1)
    cursors.add("a", (0, 2))
    cache.cursors_changed(T)
    assert cache.insert(T, (0, 2), 1)
    loop.run_until(150 * MS)
    cursors.remove("a")
    cache.cursors_changed(T)
    assert cache.insert(T, (0, 3), 1)  # the last cursor just left
    entry = cache.entry(T, (0, 3))
    assert entry is not None and entry.expected_reads is None
    loop.run_until(250 * MS)
    assert not cache.insert(T, (0, 4), 1)


def test_legacy_fallback_without_expected_read_counts() -> None:
    cache, _, cursors = make_cache(
        cacheEvictionByExpectedReadCount=False,
        managedLedgerContinueCachingAddedEntriesAfterLastActiveCursorLeavesMillis=None,
    )
    assert not cache.insert(T, (0, 0), 1)  # no window without expected-read mode
    cursors.add("a", (0, 0))
    cache.cursors_changed(T)
    assert cache.insert(T, (0, 0), 1)
    entry = cache.entry(T, (0, 0))
    assert entry is not None and entry.expected_reads is None
    cache.storage_read(T, 1, [0], [1], "a")  # the reader does not cache reads by default
    assert cache.entry(T, (1, 0)) is None


def test_ledger_deleted_and_close_leave_missing_wrappers() -> None:
    cache, _, _ = make_cache()
    for e in range(3):
        cache.put(T, (1, e), 2, None)
        cache.put(T, (2, e), 3, None)
    cache.ledger_deleted(T, 1)
    assert cache.size_bytes() == 9 and len(cache.queue) == 6
    assert cache.counters.cache_evictions_ledger_deleted == 3
    # (1,0) is MISSING, (2,0) is removed, (1,1) is MISSING and dropped before the STOP.
    assert cache.queue.evict_size(1) == (1, 3)
    assert len(cache.queue) == 3
    cache.close_ledger(T)
    assert cache.size_bytes() == 0 and cache.counters.cache_evictions_clear == 2


def test_third_party_predicate_that_always_requeues_cannot_hang_a_pass() -> None:
    class Sticky:
        name = "sticky"

        def decide(self, entry: Any, kind: Any, threshold_ns: int) -> Any:
            from brokerlab.protocols import EvictionDecision

            return EvictionDecision.REQUEUE

        def on_insert(self, entry: Any) -> None: ...
        def on_access(self, entry: Any) -> None: ...
        def on_remove(self, entry: Any) -> None: ...

    cache, loop, _ = make_cache(predicates=[Sticky()], limits=CacheLimits.of(100, 0.5, 1000))
    for e in range(30):
        cache.put(T, (0, e), 5, None)
    loop.run_until(loop.now_ns())
    assert cache.size_bytes() <= 100
    time_pass(cache, loop)  # returns


# ---- reference model (hypothesis) ---------------------------------------------------------------

TOPICS = ("x", "y")
READERS = ("r1", "r2", "r3")
LIMIT = 60


class Pip430Machine(RuleBasedStateMachine):
    """Random adds, reads, releases, replays, time and closes against a dict of what is cached
    and of each cached entry's expected read count (its count when cached, plus replays, minus
    releases)."""

    def __init__(self) -> None:
        super().__init__()
        self.cache, self.loop, _ = make_cache(limits=CacheLimits.of(LIMIT, 0.5, 30))
        self.cursors = {t: SortedListCursorContainer() for t in TOPICS}
        for t in TOPICS:
            self.cache.open_ledger(t, self.cursors[t])
        self.loop.call_every(10 * MS, 10 * MS, self.cache.evict_expired)
        self.model: dict[tuple[str, Position], int] = {}
        self.reads: dict[tuple[str, Position], int | None] = {}

    def snapshot(self) -> dict[tuple[str, Position], int]:
        return {(t, p): s for t in TOPICS for p, s in self.cache.cached(t).items()}

    def sync(self) -> None:
        now = self.snapshot()
        assert now.keys() <= self.model.keys(), "something cached that was never inserted"
        self.model = now
        self.reads = {key: count for key, count in self.reads.items() if key in now}

    def cached_now(self, t: str, position: Position) -> None:
        """Note the count an entry was just cached with."""
        entry = self.cache.entry(t, position)
        assert entry is not None
        self.reads[(t, position)] = entry.expected_reads

    def add_reads(self, t: str, position: Position, delta: int) -> None:
        count = self.reads.get((t, position))
        if count is not None:
            self.reads[(t, position)] = count + delta

    @rule(t=st.sampled_from(TOPICS), e=st.integers(0, 20), size=st.integers(1, 15))
    def add(self, t: str, e: int, size: int) -> None:
        if self.cache.insert(t, (0, e), size):
            self.model[(t, (0, e))] = size
            self.cached_now(t, (0, e))
        self.sync()

    @rule(t=st.sampled_from(TOPICS), first=st.integers(0, 20), n=st.integers(0, 4),
          reader=st.sampled_from(READERS))  # fmt: skip
    def read(self, t: str, first: int, n: int, reader: str) -> None:
        before = self.snapshot()
        last = first + n
        misses = self.cache.read(t, 1 if first > 15 else 0, first, last, reader)
        ledger = 1 if first > 15 else 0
        for e in range(first, last + 1):
            assert ((t, (ledger, e)) in before) == (e not in misses)
        self.cache.storage_read(t, ledger, misses, [3] * len(misses), reader)
        for e in misses:
            if (ledger, e) in self.cache.cached(t):
                self.model[(t, (ledger, e))] = 3
                self.cached_now(t, (ledger, e))
        for e in range(first, last + 1):
            self.cache.released(t, (ledger, e))
            self.add_reads(t, (ledger, e), -1)
        self.sync()

    @rule(
        t=st.sampled_from(TOPICS), reader=st.sampled_from(READERS), e=st.none() | st.integers(0, 20)
    )
    def move_cursor(self, t: str, reader: str, e: int | None) -> None:
        cursors = self.cursors[t]
        if e is None:
            cursors.remove(reader)
        else:
            cursors.add(reader, (0, e))
        self.cache.cursors_changed(t)

    @rule(t=st.sampled_from(TOPICS), e=st.integers(0, 20))
    def replay(self, t: str, e: int) -> None:
        self.cache.replayed(t, (0, e))
        self.add_reads(t, (0, e), 1)

    @rule(ms=st.integers(0, 40))
    def advance(self, ms: int) -> None:
        self.loop.run_until(self.loop.now_ns() + ms * MS)
        self.sync()
        assert self.cache.size_bytes() <= LIMIT  # the async size eviction has run

    @rule(t=st.sampled_from(TOPICS), ledger=st.integers(0, 1))
    def delete_ledger(self, t: str, ledger: int) -> None:
        self.cache.ledger_deleted(t, ledger)
        self.sync()

    @precondition(lambda self: self.loop.now_ns() % 3 == 0)
    @rule(t=st.sampled_from(TOPICS))
    def reopen(self, t: str) -> None:
        self.cache.close_ledger(t)
        self.cache.open_ledger(t, self.cursors[t])
        self.sync()

    @invariant()
    def accounting(self) -> None:
        size = self.cache.size_bytes()
        assert size >= 0
        assert size == sum(self.model.values())
        counters = self.cache.counters
        # Every entry that left the cache was counted under exactly one reason.
        assert counters.cache_inserts - counters.removals() == len(self.model)

    @invariant()
    def expected_reads(self) -> None:
        for (t, position), count in self.reads.items():
            entry = self.cache.entry(t, position)
            assert entry is not None and entry.expected_reads == count, (t, position)


TestPip430Model = Pip430Machine.TestCase
TestPip430Model.settings = settings(max_examples=40, stateful_step_count=40, deadline=None)


# ---- one ledger's entries by id, against a dict ------------------------------------------------

LedgerOp = tuple[str, int]
LEDGER_OPS = st.lists(
    st.tuples(st.sampled_from(["add", "remove", "remove-lowest"]), st.integers(0, 3000))
    | st.tuples(st.just("add-run"), st.integers(1, 1500)),
    max_size=60,
)


def apply_ledger_ops(ops: Sequence[LedgerOp]) -> tuple[LedgerEntries, dict[int, CachedEntry]]:
    entries, model = LedgerEntries(), {}
    next_id = 0
    for op, value in ops:
        if op == "remove-lowest" and model:  # what a FIFO eviction does
            lowest = min(model)
            entries.remove(lowest)
            del model[lowest]
        elif op == "remove" and value in model:
            entries.remove(value)
            del model[value]
        elif op in ("add", "add-run"):
            ids = [value] if op == "add" else range(next_id, next_id + value)
            for entry_id in ids:
                wrapper = CachedEntry((0, entry_id), 1, 0, None, entries)
                assert entries.add(entry_id, wrapper) == (entry_id not in model)
                model.setdefault(entry_id, wrapper)
            next_id = max(next_id, max(ids) + 1)
        assert len(entries) == len(model)
    return entries, model


@settings(max_examples=150, deadline=None)
@given(LEDGER_OPS)
def test_ledger_entries_behave_as_a_dict_by_entry_id(ops: list[LedgerOp]) -> None:
    entries, model = apply_ledger_ops(ops)
    assert [e.position[1] for e in entries.values()] == sorted(model)
    for entry_id in range(-2, 4600):
        assert entries.get(entry_id) is model.get(entry_id)


def test_ledger_entries_cut_off_what_a_fifo_left_behind() -> None:
    """A window sliding over 100,000 ids keeps its slots near its width (white box: the slot
    list), and still finds every entry in it."""
    entries = LedgerEntries()
    for entry_id in range(100_000):
        entries.add(entry_id, CachedEntry((0, entry_id), 1, 0, None, entries))
        if entry_id >= 500:
            entries.remove(entry_id - 500)
    assert len(entries) == 500
    assert len(entries._slots) <= 500 + 2 * 1025
    assert [e.position[1] for e in entries.values()] == list(range(99_500, 100_000))
    assert entries.get(99_499) is None and entries.get(99_500) is not None


# ---- differential: both predicates off = a FIFO -------------------------------------------------


def zipf_trace(n_requests: int, n_objects: int, alpha: float, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n_objects + 1) ** alpha
    trace: list[int] = rng.choice(n_objects, size=n_requests, p=weights / weights.sum()).tolist()
    return trace


def pip430_hits(
    trace: Sequence[int], limits: CacheLimits, predicates: Sequence[EvictionPredicate] = ()
) -> tuple[int, Pip430EntryCache]:
    """Hits of unit-size entries read by one reader, each miss read from storage; the cache."""
    cache, loop, cursors = make_cache(predicates=predicates, limits=limits)
    cursors.add("r", (0, 0))
    hit_count = 0
    for obj in trace:
        if cache.read(T, 0, obj, obj, "r"):
            cache.storage_read(T, 0, [obj], [1], "r")
            loop.run_until(loop.now_ns())
        else:
            hit_count += 1
    return hit_count, cache


def fifo_limits(limit: int) -> CacheLimits:
    """Watermark 0.98 (= the trigger): with no predicate PIP-430 keeps the newest ``trigger``."""
    return CacheLimits.of(limit, 0.98, 1000)


def fifo_hits(trace: Sequence[int], capacity: int) -> int:
    order: deque[int] = deque()
    held: set[int] = set()
    hit_count = 0
    for obj in trace:
        if obj in held:
            hit_count += 1
            continue
        if len(order) >= capacity:
            held.discard(order.popleft())
        order.append(obj)
        held.add(obj)
    return hit_count


TRACE = zipf_trace(20_000, 2_000, 0.9, 7)


@pytest.mark.parametrize("limit", [50, 300, 1000])
def test_differential_fifo(limit: int) -> None:
    limits = fifo_limits(limit)
    assert pip430_hits(TRACE, limits)[0] == fifo_hits(TRACE, limits.trigger)


@pytest.mark.parametrize("limit", [50, 300, 1000])
def test_differential_libcachesim_fifo(limit: int) -> None:
    lcs = pytest.importorskip("libcachesim", reason="libcachesim (dev-only GPL oracle) missing")
    limits = fifo_limits(limit)
    oracle = lcs.FIFO(cache_size=limits.trigger, hashpower=16)
    expected = 0
    for obj in TRACE:
        request = lcs.Request(obj_size=1, obj_id=obj + 1)
        expected += bool(oracle.get(request))
    assert pip430_hits(TRACE, limits)[0] == expected


# ---- differential: only recently-accessed = FIFO with a second chance ---------------------------


def second_chance_hits(trace: Sequence[int], limits: CacheLimits) -> int:
    """The reference: a FIFO whose head, when read since it was queued, goes to the tail once
    with its mark cleared; above the trigger it frees down to the watermark (unit sizes)."""
    order: deque[int] = deque()
    accessed: dict[int, bool] = {}
    hit_count = 0
    for obj in trace:
        if obj in accessed:
            accessed[obj] = True
            hit_count += 1
            continue
        order.append(obj)
        accessed[obj] = False
        if len(order) > limits.trigger:
            to_free, freed = len(order) - limits.watermark, 0
            while freed < to_free:
                head = order.popleft()
                if accessed[head]:
                    accessed[head] = False
                    order.append(head)
                else:
                    del accessed[head]
                    freed += 1
    return hit_count


@pytest.mark.parametrize(("limit", "watermark"), [(50, 0.9), (300, 0.5), (1000, 0.98)])
def test_differential_second_chance(limit: int, watermark: float) -> None:
    # 20,000 requests requeue and remove far more than the queue's 1,024 consumed head slots, so
    # the queue compacts its list many times during the run.
    limits = CacheLimits.of(limit, watermark, 1000)
    hit_count, cache = pip430_hits(TRACE, limits, (RecentlyAccessedPredicate(),))
    assert hit_count == second_chance_hits(TRACE, limits)
    assert cache.counters.cache_requeues_accessed > 1024
    assert len(cache.queue) == len(list(cache.queue)) == cache.size_bytes()


def test_a_subclass_of_a_built_in_predicate_decides_and_names_itself() -> None:
    """Built-in predicates run compiled; a Python subclass still overrides what it redefines.
    A renamed subclass keeps the rule's requeue counter (``requeue_metric``); one that names
    another counter reports there."""

    class Renamed(RecentlyAccessedPredicate):
        name = "renamed"

    class Elsewhere(RecentlyAccessedPredicate):
        name = "elsewhere"
        requeue_metric = "cache_requeues_expected_reads"

    class Keeper(RecentlyAccessedPredicate):
        def decide(self, entry: Any, kind: Any, threshold_ns: int) -> Any:
            from brokerlab.protocols import EvictionDecision

            return EvictionDecision.STOP

    for predicate, survives, counted, elsewhere in (
        (RecentlyAccessedPredicate(), True, 1, 0),
        (Renamed(), True, 1, 0),
        (Elsewhere(), True, 0, 1),
        (Keeper(), True, 0, 0),
    ):
        cache, loop, _ = make_cache(predicates=(predicate,))
        cache.put(T, (0, 0), 1, None)
        cache.put(T, (0, 1), 1, None)
        assert hits(cache, 0, 0) == [0]
        time_pass(cache, loop)
        assert ((0, 0) in cache.cached(T)) is survives, predicate
        assert ((0, 1) in cache.cached(T)) is isinstance(predicate, Keeper), predicate
        assert cache.counters.cache_requeues_accessed == counted, predicate
        assert cache.counters.cache_requeues_expected_reads == elsewhere, predicate


def test_a_subclass_of_the_stateless_base_that_listens_is_notified() -> None:
    """The queue skips notifying a StatelessPredicate, unless its class overrides a notification."""

    class Counting(StatelessPredicate):
        name = "counting"

        def __init__(self) -> None:
            self.seen: list[str] = []

        def on_insert(self, entry: Any) -> None:
            self.seen.append("insert")

        def on_access(self, entry: Any) -> None:
            self.seen.append("access")

    class Quiet(StatelessPredicate):
        name = "quiet"

    counting = Counting()
    cache, _, _ = make_cache(predicates=(Quiet(), counting))
    assert cache.queue.listeners == (counting,)
    cache.put(T, (0, 0), 1, None)
    assert hits(cache, 0, 0) == [0]
    assert counting.seen == ["insert", "access"]


def test_a_predicate_deciding_something_else_is_a_plugin_error() -> None:
    class Wrong(StatelessPredicate):
        name = "wrong"

        def decide(self, entry: Any, kind: Any, threshold_ns: int) -> Any:
            return "requeue"

    cache, loop, _ = make_cache(predicates=(Wrong(),))
    cache.put(T, (0, 0), 1, None)
    with pytest.raises(PluginError, match="predicate 'wrong' returned 'requeue' from decide"):
        time_pass(cache, loop)


# ---- cursor-driven invalidation without expected read counts (#24 item 1) -----------------------


def _without_read_counts() -> tuple[Pip430EntryCache, SortedListCursorContainer]:
    cache, _, cursors = make_cache(cacheEvictionByExpectedReadCount=False)
    cursors.add("a", (1, 0))
    cursors.add("b", (1, 2))
    cache.cursors_changed(T)
    for ledger, entry in [(0, 5), (1, 0), (1, 1), (1, 2), (1, 3), (2, 0)]:
        assert cache.insert(T, (ledger, entry), 1)
    return cache, cursors


def test_without_read_counts_the_slowest_cursor_moving_invalidates_before_it() -> None:
    cache, cursors = _without_read_counts()
    cursors.update("b", (1, 9))  # not the slowest: nothing goes
    cache.cursors_changed(T)
    assert len(cache.cached(T)) == 6
    cursors.update("a", (1, 2))  # the slowest is now (1,2): (0,5), (1,0), (1,1) go
    cache.cursors_changed(T)
    assert sorted(cache.cached(T)) == [(1, 2), (1, 3), (2, 0)]
    assert cache.size_bytes() == 3 and cache.counters.cache_evictions_invalidation == 3
    # The wrappers stay queued and are dropped as MISSING by the next pass.
    assert cache.queue.evict_size(1) == (1, 1)


def test_without_read_counts_the_last_cursor_leaving_clears_the_ledger_cache() -> None:
    cache, cursors = _without_read_counts()
    cursors.remove("a")  # the slowest is now b's (1,2)
    cache.cursors_changed(T)
    assert sorted(cache.cached(T)) == [(1, 2), (1, 3), (2, 0)]
    cursors.remove("b")
    cache.cursors_changed(T)
    assert cache.cached(T) == {} and cache.size_bytes() == 0
    assert cache.counters.cache_evictions_clear == 3
    assert cache.counters.cache_evictions_invalidation == 3


def test_with_read_counts_cursor_moves_invalidate_nothing() -> None:
    cache, _, cursors = make_cache(cacheEvictionByExpectedReadCount=True)
    cursors.add("a", (1, 0))
    cache.cursors_changed(T)
    for entry in range(3):
        assert cache.insert(T, (1, entry), 1)
    cursors.update("a", (1, 3))
    cache.cursors_changed(T)
    cursors.remove("a")
    cache.cursors_changed(T)
    assert len(cache.cached(T)) == 3 and cache.counters.removals() == 0


@pytest.mark.parametrize("max_requeue", [-1, -(2**31)])
def test_a_requeue_cap_below_zero_acts_as_zero(max_requeue: int) -> None:
    """``managedLedgerCacheEvictionExtendTTLOfEntriesWithRemainingExpectedReadsMaxTimes`` is a
    plain int with no minimum (apache/pulsar ``ServiceConfiguration.java`` at
    06ea0be755459d9186e0f54b098e7ecc9ed7f8d6), and the removal queue requeues an entry with
    expected reads only while ``requeueCount < max`` (spec pip430-entry-cache.md §2.4,
    ``RangeCacheRemovalQueue``): below 0 no such requeue happens, as with 0, while an accessed
    entry is still requeued once (scenarios 13 and 14 with the cap below 0)."""
    cache, loop, _ = make_cache(max_requeue=max_requeue, extend=True)
    cache.put(T, (0, 0), 10, 1)
    assert time_pass(cache, loop) == (1, 10)
    cache.put(T, (0, 1), 10, None)
    assert hits(cache, 1, 1) == [1]
    assert time_pass(cache, loop) == (0, 0)
    assert time_pass(cache, loop) == (1, 10)


class _RuleOnly:
    """A third-party predicate that is only a rule: its decide() must never be called."""

    needs_notifications = False

    def __init__(self, name: str, rule: RequeueRule) -> None:
        self.name = name
        self.requeue_rule = rule

    def decide(self, entry: Any, kind: Any, threshold_ns: int) -> Any:
        raise AssertionError("a queue that knows rules does not call decide()")

    def on_insert(self, entry: Any) -> None: ...

    def on_access(self, entry: Any) -> None: ...

    def on_remove(self, entry: Any) -> None: ...


class _Asked:
    """A built-in predicate without its rule: the queue must call its decide()."""

    needs_notifications = False

    def __init__(self, inner: RecentlyAccessedPredicate | ExpectedReadsPredicate) -> None:
        self.name = inner.name
        self.decide = inner.decide

    def on_insert(self, entry: Any) -> None: ...

    def on_access(self, entry: Any) -> None: ...

    def on_remove(self, entry: Any) -> None: ...


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("put"), st.integers(1, 64), st.none() | st.integers(0, 2)),
            st.tuples(st.just("read"), st.integers(0, 40)),
            st.tuples(st.just("time"), st.integers(1, 3)),
            st.tuples(st.just("size"), st.integers(1, 200)),
        ),
        max_size=80,
    )
)
def test_a_rule_predicate_is_applied_without_a_call_and_decides_as_the_built_ins(
    ops: list[tuple[Any, ...]],
) -> None:
    """RulePredicate: the queue applies ``requeue_rule`` itself. Two third-party predicates that
    are only the built-ins' rules (their ``decide`` raises) give the same cache, counters
    included, as the built-ins asked through ``decide`` under any mix of adds, hits, time and
    size passes."""
    built_in = make_cache(
        predicates=(_Asked(RecentlyAccessedPredicate()), _Asked(ExpectedReadsPredicate(2))),
        max_requeue=2,
    )
    rules = make_cache(
        predicates=(
            _RuleOnly("recently-accessed", RequeueRule(when_accessed=True)),
            _RuleOnly("expected-reads", RequeueRule(min_expected_reads=1, below_requeues=2)),
        ),
        max_requeue=2,
    )
    for cache, loop, _ in (built_in, rules):
        entry = 0
        for op in ops:
            if op[0] == "put":
                cache.put(T, (0, entry), op[1], op[2])
                entry += 1
            elif op[0] == "read" and entry:
                hits(cache, op[1] % entry, op[1] % entry)
            elif op[0] == "time":
                loop.run_until(loop.now_ns() + op[1] * MS)
                cache.queue.evict_before(loop.now_ns() - MS)
            elif op[0] == "size":
                cache.queue.evict_size(op[1])
    assert rules[0].cached(T) == built_in[0].cached(T)
    assert rules[0].stats() == built_in[0].stats()
    assert [e.requeue_count for e in rules[0].queue] == [e.requeue_count for e in built_in[0].queue]


def test_a_built_in_predicate_offers_its_rule_unless_a_subclass_decides_otherwise() -> None:
    assert RecentlyAccessedPredicate().requeue_rule == RequeueRule(when_accessed=True)
    assert ExpectedReadsPredicate(3).requeue_rule == RequeueRule(
        min_expected_reads=1, below_requeues=3
    )

    class Decides(RecentlyAccessedPredicate):
        def decide(self, entry: Any, kind: Any, threshold_ns: int) -> Any:
            return None

    class Rules(ExpectedReadsPredicate):
        def _rule(self, *args: Any) -> Any:
            return None

    class Renamed(ExpectedReadsPredicate):
        name = "renamed"

    assert Decides().requeue_rule is None and Rules(3).requeue_rule is None
    assert Renamed(3).requeue_rule == ExpectedReadsPredicate(3).requeue_rule
