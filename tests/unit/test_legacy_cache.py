"""The ``legacy`` entry cache against spec pip430-entry-cache.md §7 (scenarios 24-26) and a
reference model (hypothesis). Scenarios 1-23 and 32-37 are in ``test_pip430_cache.py``; 27-31
(upstream ``EntryCacheManagerTest``) are re-expressed in ``tests/conformance``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from brokerlab.broker.events import EventLoop
from brokerlab.profiles.model import BrokerSettings
from brokerlab.protocols import CursorContainer, PluginContext, Position
from brokerlab_plugins.cursor_containers import HeapCursorContainer
from brokerlab_plugins.entry_cache_common import CacheLimits
from brokerlab_plugins.legacy_cache import LegacyEntryCache

MS = 1_000_000
T = "t"


def make_cache(
    limits: CacheLimits | None = None, **keys: Any
) -> tuple[LegacyEntryCache, EventLoop, HeapCursorContainer]:
    """A legacy cache with topic ``t`` open on a heap container; ``keys`` are Pulsar keys."""
    loop = EventLoop()
    context = PluginContext(
        settings=BrokerSettings.model_validate({"cacheEvictionByExpectedReadCount": False, **keys}),
        clock=loop,
        scheduler=loop,
        rng=np.random.default_rng(0),
        new_cursor_container=HeapCursorContainer,
    )
    cache = LegacyEntryCache(context, limits=limits)
    cursors = HeapCursorContainer()
    cache.open_ledger(T, cursors)
    return cache, loop, cursors


def moved(cache: LegacyEntryCache, cursors: CursorContainer, name: str, pos: Position) -> None:
    cursors.update(name, pos)
    cache.cursors_changed(T)


# ---- ManagedCursorContainerTest (24-26): the heap's slowest drives invalidation -----------------


def _fill(cache: LegacyEntryCache, cursors: CursorContainer, positions: list[Position]) -> None:
    for ledger in range(1, 12):
        for entry in range(6):
            cache.put(T, (ledger, entry), 1)
    for i, pos in enumerate(positions):
        cursors.add(f"seed{i}", pos)
    cache.cursors_changed(T)  # the first slowest position: entries before it go


def _lowest(cache: LegacyEntryCache) -> Position:
    return min(cache.cached(T))


def test_scenario_24_simple() -> None:
    cache, _, c = make_cache()
    c.add("5:5", (5, 5))
    assert c.slowest_position() == (5, 5)
    c.add("2:2", (2, 2))
    c.add("2:0", (2, 0))
    assert c.slowest_position() == (2, 0)
    c.add("4:0", (4, 0))
    c.add("3:5", (3, 5))
    cache.cursors_changed(T)
    for ledger in range(1, 12):
        for entry in range(6):
            cache.put(T, (ledger, entry), 1)
    moved(cache, c, "2:0", (3, 0))
    assert c.slowest_position() == (2, 2) and _lowest(cache) == (2, 2)
    moved(cache, c, "2:2", (10, 5))
    assert c.slowest_position() == (3, 0) and _lowest(cache) == (3, 0)
    c.remove("2:0")
    cache.cursors_changed(T)
    assert c.slowest_position() == (3, 5) and _lowest(cache) == (3, 5)
    for name in ("2:2", "3:5", "5:5"):
        c.remove(name)
    cache.cursors_changed(T)
    assert c.slowest_position() == (4, 0) and _lowest(cache) == (4, 0)
    c.remove("4:0")
    cache.cursors_changed(T)
    assert c.slowest_position() is None and len(c) == 0
    assert cache.cached(T) == {}  # no active cursor: the whole cache is cleared


def test_scenario_25_updating_outside_the_container() -> None:
    cache, _, c = make_cache()
    _fill(cache, c, [(2, 2), (5, 5)])
    assert _lowest(cache) == (2, 2)
    # The cursor moved, but nobody told the container: nothing changes.
    cache.cursors_changed(T)
    assert c.slowest_position() == (2, 2) and _lowest(cache) == (2, 2)
    moved(cache, c, "seed0", (6, 0))
    assert c.slowest_position() == (5, 5) and _lowest(cache) == (5, 5)


def test_scenario_26_ordering() -> None:
    cache, _, c = make_cache()
    names = {"test1": (5, 5), "test2": (5, 1), "test3": (7, 1), "test4": (6, 4), "test5": (7, 0)}
    for name, pos in names.items():
        c.add(name, pos)
    cache.cursors_changed(T)
    for ledger in range(1, 12):
        for entry in range(6):
            cache.put(T, (ledger, entry), 1)
    assert c.slowest_position() == (5, 1)
    for name, slowest in (("test2", (5, 5)), ("test1", (6, 4)), ("test4", (7, 0))):
        c.remove(name)
        cache.cursors_changed(T)
        assert c.slowest_position() == slowest and _lowest(cache) == slowest


# ---- behaviour outside the numbered scenarios ---------------------------------------------------


def test_time_eviction_is_inclusive_and_blocked_by_a_younger_head() -> None:
    cache, loop, c = make_cache(managedLedgerCacheEvictionTimeThresholdMillis=100)
    c.add("a", (0, 0))
    cache.cursors_changed(T)
    cache.put(T, (0, 5), 1)
    loop.run_until(50 * MS)
    cache.put(T, (0, 1), 1)  # a catch-up read inserts a lower position later
    loop.run_until(100 * MS)
    cache.evict_expired()  # (0,5) expired (<=) but (0,1) heads position order and is live
    assert set(cache.cached(T)) == {(0, 1), (0, 5)}
    loop.run_until(150 * MS)
    cache.evict_expired()
    assert cache.cached(T) == {}
    assert cache.counters.cache_ledgers_visited == 2


def test_size_eviction_is_sized_from_the_bytes_held_before_the_triggering_insert() -> None:
    """Spec §5.1: the gate captures ``currentSize`` when it schedules the eviction, and the insert
    that triggered it still goes in (99 < max)."""
    cache, loop, c = make_cache(CacheLimits.of(100, 0.9, 1000))  # trigger 98, watermark 90
    c.add("a", (1, 0))
    cache.cursors_changed(T)
    for entry in range(99):
        assert cache.put(T, (1, entry), 1)
    assert cache.put(T, (1, 99), 1)  # 99 held > 98: one eviction of 99 - 90 = 9 bytes
    assert cache.size_bytes() == 100
    loop.run_until(0)
    assert cache.size_bytes() == 91 and min(cache.cached(T)) == (1, 9)
    assert cache.counters.cache_evictions_size == 9


def test_size_eviction_shares_are_truncated_as_doubles() -> None:
    """Spec §5.2: ``share = (long)(sizeToFree * (size / (double) selectedTotal))``. For 90 bytes
    and a cache holding 700 of the 1000 selected, 90 * 0.7 is 62.999... in doubles, so the share
    is 62 and the cache's 62-byte head alone pays it (an exact quotient of 63 would empty it)."""
    cache, loop, _ = make_cache(CacheLimits(max_size=1880, trigger=1842, watermark=1780, ttl_ns=0))
    sizes = {"a": [62, 638], "b": [27, 273], "c0": [290], "c1": [290], "c2": [290]}
    for ledger, (topic, entries) in enumerate(sizes.items(), start=1):
        cache.open_ledger(topic, HeapCursorContainer())
        for entry, size in enumerate(entries):
            assert cache.put(topic, (ledger, entry), size)
    cache.open_ledger("d", HeapCursorContainer())
    assert cache.put("d", (9, 0), 1)  # 1870 held > 1842: one eviction of 1870 - 1780 = 90 bytes
    loop.run_until(loop.now_ns())
    # Only a and b (1000 of 1871 bytes) are selected; shares 62 and 27.
    assert cache.cached("a") == {(1, 1): 638}
    assert cache.cached("b") == {(2, 1): 273}
    assert cache.size_bytes() == 1871 - 89


def test_backlogged_cursor_caching() -> None:
    cache, loop, _ = make_cache(
        managedLedgerMinimumBacklogCursorsForCaching=1,
        managedLedgerMinimumBacklogEntriesForCaching=1,
        managedLedgerMaxBacklogBetweenCursorsForCaching=2**31 - 1,
    )
    for e in range(100):
        cache.insert(T, (0, e), 1)  # no active cursor: nothing cached, but entries are seen
    for reader in ("a", "b"):
        cache.read(T, 0, 0, 9, reader)
    cache.storage_read(T, 0, list(range(10)), [1] * 10, "a")
    assert cache.size_bytes() == 0  # the first check runs with the stats, after a minute
    loop.run_until(60_000 * MS)
    cache.storage_read(T, 0, list(range(10)), [1] * 10, "a")
    assert cache.size_bytes() == 10


@pytest.mark.parametrize(
    ("min_cursors", "min_entries", "max_between", "cached"),
    [(-1, 1, 2**31 - 1, 0), (1, -5, 2**31 - 1, 10), (1, 1, -1, 0)],
)
def test_backlogged_cursor_caching_takes_any_int(
    min_cursors: int, min_entries: int, max_between: int, cached: int
) -> None:
    """The three keys are plain ints with no minimum (apache/pulsar ``ServiceConfiguration.java``
    at 06ea0be755459d9186e0f54b098e7ecc9ed7f8d6: ``managedLedgerMinimumBacklogCursorsForCaching``,
    ``managedLedgerMinimumBacklogEntriesForCaching``,
    ``managedLedgerMaxBacklogBetweenCursorsForCaching``), and ``ManagedLedgerImpl.
    checkCursorsToCacheEntries`` (spec pip430-entry-cache.md §5.3) compares them as they are:
    fewer than 1 cursor turns the check off, a negative minimum backlog admits every cursor, and
    a negative difference makes no two cursors similar."""
    cache, loop, _ = make_cache(
        managedLedgerMinimumBacklogCursorsForCaching=min_cursors,
        managedLedgerMinimumBacklogEntriesForCaching=min_entries,
        managedLedgerMaxBacklogBetweenCursorsForCaching=max_between,
    )
    for e in range(100):
        cache.insert(T, (0, e), 1)
    for reader in ("a", "b"):
        cache.read(T, 0, 0, 9, reader)
    loop.run_until(60_000 * MS)
    cache.storage_read(T, 0, list(range(10)), [1] * 10, "a")
    assert cache.size_bytes() == cached


def test_mark_delete_mode_caches_reads() -> None:
    cache, _, _ = make_cache(cacheEvictionByMarkDeletedPosition=True)
    cache.storage_read(T, 0, [0, 1], [4, 4], "a")
    assert cache.size_bytes() == 8


def test_ledger_deleted() -> None:
    cache, _, _ = make_cache()
    for ledger in (1, 2):
        for e in range(3):
            cache.put(T, (ledger, e), 1)
    cache.ledger_deleted(T, 1)
    assert set(cache.cached(T)) == {(2, 0), (2, 1), (2, 2)}
    assert cache.counters.cache_evictions_ledger_deleted == 3 and cache.size_bytes() == 3


# ---- reference model (hypothesis) ---------------------------------------------------------------

TOPICS = ("x", "y")
READERS = ("r1", "r2")
LIMIT = 60
MAX_ENTRY = 15


class LegacyMachine(RuleBasedStateMachine):
    """Random adds, reads, cursor moves and time against a dict of what is cached."""

    def __init__(self) -> None:
        super().__init__()
        self.cache, self.loop, _ = make_cache(
            CacheLimits.of(LIMIT, 0.5, 30), cacheEvictionByMarkDeletedPosition=True
        )
        self.cursors = {t: HeapCursorContainer() for t in TOPICS}
        for t in TOPICS:
            self.cache.open_ledger(t, self.cursors[t])
        self.loop.call_every(10 * MS, 10 * MS, self.cache.evict_expired)
        self.model: dict[tuple[str, Position], int] = {}

    def snapshot(self) -> dict[tuple[str, Position], int]:
        return {(t, p): s for t in TOPICS for p, s in self.cache.cached(t).items()}

    def sync(self) -> None:
        now = self.snapshot()
        assert now.keys() <= self.model.keys(), "something cached that was never inserted"
        self.model = now

    @rule(t=st.sampled_from(TOPICS), e=st.integers(0, 20), size=st.integers(1, MAX_ENTRY))
    def add(self, t: str, e: int, size: int) -> None:
        if self.cache.insert(t, (0, e), size):
            self.model[(t, (0, e))] = size
        self.sync()

    @rule(t=st.sampled_from(TOPICS), first=st.integers(0, 20), n=st.integers(0, 4),
          reader=st.sampled_from(READERS))  # fmt: skip
    def read(self, t: str, first: int, n: int, reader: str) -> None:
        before = self.snapshot()
        misses = self.cache.read(t, 0, first, first + n, reader)
        wanted = range(first, first + n + 1)
        # All or nothing: a range not wholly cached is read from storage again, whole.
        fully_cached = all((t, (0, e)) in before for e in wanted)
        assert misses == ([] if fully_cached else list(wanted))
        self.cache.storage_read(t, 0, misses, [3] * len(misses), reader)
        for e in misses:
            if (0, e) in self.cache.cached(t) and (t, (0, e)) not in before:
                self.model[(t, (0, e))] = 3
        self.sync()

    @rule(
        t=st.sampled_from(TOPICS), reader=st.sampled_from(READERS), e=st.none() | st.integers(0, 20)
    )
    def move_cursor(self, t: str, reader: str, e: int | None) -> None:
        before = self.cursors[t].slowest_position()
        if e is None:
            self.cursors[t].remove(reader)
        else:
            self.cursors[t].add(reader, (0, e))
        self.cache.cursors_changed(t)
        self.sync()
        slowest = self.cursors[t].slowest_position()
        if slowest is None and len(self.cursors[t]) == 0:
            assert not any(topic == t for (topic, _) in self.model)
        elif slowest is not None and slowest != before:
            assert all(p >= slowest for (topic, p) in self.model if topic == t)

    @rule(ms=st.integers(0, 40))
    def advance(self, ms: int) -> None:
        self.loop.run_until(self.loop.now_ns() + ms * MS)
        self.sync()

    @invariant()
    def accounting(self) -> None:
        size = self.cache.size_bytes()
        assert size >= 0
        assert size == sum(self.model.values())
        # Inserts are refused at the limit, so one entry is the most it can overshoot.
        assert size < LIMIT + MAX_ENTRY
        counters = self.cache.counters
        assert counters.cache_inserts - counters.removals() == len(self.model)


TestLegacyModel = LegacyMachine.TestCase
TestLegacyModel.settings = settings(max_examples=40, stateful_step_count=40, deadline=None)
