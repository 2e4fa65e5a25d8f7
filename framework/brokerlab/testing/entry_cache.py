"""Contracts for entry caches and for the eviction predicates a removal queue consults.

:class:`CacheBench` builds one cache exactly as a simulation of a profile would (the profile's
cursor container and predicate chain, the periodic eviction task on a virtual clock) and drives it
through the :class:`~brokerlab.protocols.EntryCache` protocol only. :class:`EntryCacheMachine`
is a hypothesis state machine over a bench; the two suites below use both.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from brokerlab.host import PluginHost
from brokerlab.profiles import Profile
from brokerlab.protocols import (
    CachedEntryView,
    CursorContainer,
    EntryCache,
    EvictionDecision,
    EvictionPass,
    EvictionPredicate,
    Position,
    RequeueRule,
    RulePredicate,
)
from brokerlab.records import EntryCacheRecord, EvictionPredicateRecord
from brokerlab.testing._common import (
    MS,
    Simulate,
    build_context,
    check_simulation,
    check_stats,
    examples,
    run_machine,
)

__all__ = [
    "REMOVAL_COUNTERS",
    "AccessProbe",
    "CacheBench",
    "EntryCacheContract",
    "EntryCacheMachine",
    "EntryView",
    "EvictionPredicateContract",
    "cache_overrides",
    "check_size_bounded_under_a_flood",
    "check_unread_entries_expire",
    "check_young_entries_stay",
]

REMOVAL_COUNTERS = (
    "cache_evictions_time",
    "cache_evictions_size",
    "cache_evictions_invalidation",
    "cache_evictions_clear",
    "cache_evictions_ledger_deleted",
)
"""The registered reasons an entry leaves a cache; each removal is counted under exactly one."""

BENCH_CACHE_MB = 1
"""The cache size the suites use: 1 MiB, with entries of 1/64 to 6/64 of it."""


# --------------------------------------------------------------------------------------------
# A cache on a bench
# --------------------------------------------------------------------------------------------


def cache_overrides(
    host: PluginHost, profile: Profile, entry_cache: str, **more: str
) -> dict[str, str]:
    """``--set`` values that select ``entry_cache`` on top of ``profile``.

    A cache that consults no eviction predicates gets the profile's ``sim.evictionPredicates``
    list cleared (the host refuses that combination); a profile with ``managedLedgerCacheSizeMB=0``
    (which always selects ``disabled``) gets a 64 MiB cache instead.
    """
    record: EntryCacheRecord = host.select("entry_cache", entry_cache).record
    overrides = {"sim.entryCache": entry_cache}
    if not record.uses_eviction_predicates and profile.get("sim.evictionPredicates"):
        overrides["sim.evictionPredicates"] = ","  # a list with no names: clears the profile's
    if profile.get("managedLedgerCacheSizeMB") == 0:
        overrides["managedLedgerCacheSizeMB"] = "64"
    overrides.update(more)
    return overrides


class CacheBench:
    """One entry cache of ``profile``, built as ``simulate`` builds it, on its own event loop.

    The profile's ``sim.entryCache`` (``disabled`` when ``managedLedgerCacheSizeMB=0``) picks the
    record; a cache that consults predicates gets the chain the profile selects, followed by
    ``extra_predicates`` (a test's own probes) (:attr:`predicates`). The periodic eviction task
    runs every ``managedLedgerCacheEvictionIntervalMs`` of virtual time, as in the broker. Time
    moves only in :meth:`advance` and :meth:`settle`.
    """

    def __init__(
        self,
        host: PluginHost,
        profile: Profile,
        seed: int = 0,
        *,
        extra_predicates: Sequence[EvictionPredicate] = (),
    ) -> None:
        settings = profile.settings
        name = (
            "disabled" if profile.get("managedLedgerCacheSizeMB") == 0 else settings.sim_entry_cache
        )
        self.record: EntryCacheRecord = host.select(
            "entry_cache", name, key="sim.entryCache"
        ).record
        self.context, self.loop = build_context(
            host, profile, seed, predicates=self.record.uses_eviction_predicates
        )
        if extra_predicates and self.record.uses_eviction_predicates:
            chain = (*self.context.eviction_predicates, *extra_predicates)
            self.context = self.context.with_(eviction_predicates=chain)
        self.cache: EntryCache = self.record.factory(self.context)
        self.limit: int = settings.cache_size_bytes
        self.ttl_ms: int = settings.managed_ledger_cache_eviction_time_threshold_millis
        self.interval_ms: int = settings.cache_eviction_interval_ms
        interval = self.interval_ms * MS
        self.loop.call_every(interval, interval, self.cache.evict_expired)
        self.cursors: dict[str, CursorContainer] = {}

    @property
    def predicates(self) -> tuple[EvictionPredicate, ...]:
        """The predicate objects the cache consults, in chain order."""
        return self.context.eviction_predicates

    def open_topic(
        self, topic: str, cursors: Mapping[str, Position | None] | None = None
    ) -> CursorContainer:
        """Open ``topic``'s managed ledger with active cursors ``cursors`` (default: one cursor
        with no tracked position, so that adds are cached but expect no reads)."""
        container = self.cursors.get(topic)
        if container is None:
            assert self.context.new_cursor_container is not None
            container = self.cursors[topic] = self.context.new_cursor_container()
            for name, position in ({"idle": None} if cursors is None else cursors).items():
                container.add(name, position)
        self.cache.open_ledger(topic, container)
        return container

    def move_cursor(self, topic: str, cursor: str, position: Position | None) -> None:
        """Add or move a cursor (``None``: remove it) and tell the cache."""
        container = self.cursors[topic]
        if position is None:
            container.remove(cursor)
        else:
            container.add(cursor, position)
        self.cache.cursors_changed(topic)

    def insert(self, topic: str, position: Position, size: int) -> bool:
        return self.cache.insert(topic, position, size)

    def read(
        self, topic: str, ledger_id: int, first: int, last: int, reader: str = "reader"
    ) -> list[int]:
        """A read of ``first..last``; returns the misses (checked to be a sorted subset)."""
        misses = self.cache.read(topic, ledger_id, first, last, reader)
        assert misses == sorted(set(misses)), f"misses {misses} are not sorted and unique"
        assert all(first <= e <= last for e in misses), f"misses {misses} outside {first}..{last}"
        return misses

    def hits(self, topic: str, position: Position, reader: str = "probe") -> bool:
        """Whether a one-entry read of ``position`` is served (it counts as a read)."""
        return not self.read(topic, position[0], position[1], position[1], reader)

    def advance(self, ms: int) -> None:
        """Let ``ms`` milliseconds of virtual time pass, running every task that falls due."""
        self.loop.run_until(self.loop.now_ns() + ms * MS)

    def settle(self) -> None:
        """Run what is due now (the asynchronous size eviction an insert scheduled)."""
        self.loop.run_until(self.loop.now_ns())

    def size(self) -> int:
        return self.cache.size_bytes()

    def stats(self) -> Mapping[str, float]:
        return self.cache.stats()


def entry_size(limit: int, position: Position) -> int:
    """A size from 1/64 to 6/64 of ``limit`` that depends on the position only."""
    unit = max(1, limit // 64)
    return unit * (1 + (position[0] * 7 + position[1] * 13) % 6)


# --------------------------------------------------------------------------------------------
# The state machine: random broker events against what may be cached
# --------------------------------------------------------------------------------------------

_TOPICS = {"x": (1, 2), "y": (3, 4)}  # ledger ids are unique across the broker, as in Pulsar
_READERS = ("r1", "r2")
_LAST_ENTRY = 24


class EntryCacheMachine(RuleBasedStateMachine):
    """Random adds, reads, storage reads, cursor moves, replays, time, ledger deletions and
    reopenings, through the protocol only, against the set of entries that *may* be cached.

    Checked after every step: ``size_bytes() >= 0``; the hits and misses reported in ``stats()``
    equal those the reads returned; only registered metrics. Checked whenever time has run: the
    size is at most the limit plus one entry (Pulsar admits an entry while the cache holds less
    than its limit). Checked at the end, by reading every entry once: the served entries' sizes add
    up to ``size_bytes()``, and when the cache reports insert and removal counters, inserts minus
    removals equals the entries held (every removal counted under exactly one reason). A read never
    serves an entry that was never inserted, or that a ledger deletion or a close removed.
    """

    def __init__(self, make_bench: Callable[[], CacheBench]) -> None:
        super().__init__()
        self.bench = make_bench()
        for topic in _TOPICS:
            self.bench.open_topic(topic, {})
        self.limit = self.bench.limit
        self.largest = max(entry_size(self.limit, (0, e)) for e in range(6))
        self.maybe: dict[tuple[str, Position], int] = {}
        self.hit_count = 0
        self.miss_count = 0

    def _size(self, position: Position) -> int:
        return entry_size(self.limit, position)

    @rule(
        topic=st.sampled_from(sorted(_TOPICS)),
        ledger=st.integers(0, 1),
        entry=st.integers(0, _LAST_ENTRY),
    )
    def add(self, topic: str, ledger: int, entry: int) -> None:
        position = (_TOPICS[topic][ledger], entry)
        if self.bench.insert(topic, position, self._size(position)):
            self.maybe[(topic, position)] = self._size(position)

    @rule(
        topic=st.sampled_from(sorted(_TOPICS)),
        ledger=st.integers(0, 1),
        first=st.integers(0, _LAST_ENTRY),
        count=st.integers(1, 5),
        reader=st.sampled_from(_READERS),
    )
    def read(self, topic: str, ledger: int, first: int, count: int, reader: str) -> None:
        ledger_id = _TOPICS[topic][ledger]
        last = first + count - 1
        misses = self.bench.read(topic, ledger_id, first, last, reader)
        for entry in range(first, last + 1):
            if entry not in misses:
                assert (topic, (ledger_id, entry)) in self.maybe, (
                    f"served {topic} {(ledger_id, entry)}, which was never inserted or was removed"
                )
        self.hit_count += count - len(misses)
        self.miss_count += len(misses)
        sizes = [self._size((ledger_id, e)) for e in misses]
        self.bench.cache.storage_read(topic, ledger_id, misses, sizes, reader)
        for entry, size in zip(misses, sizes, strict=True):
            self.maybe[(topic, (ledger_id, entry))] = size
        for entry in range(first, last + 1):
            self.bench.cache.released(topic, (ledger_id, entry))

    @rule(
        topic=st.sampled_from(sorted(_TOPICS)),
        reader=st.sampled_from(_READERS),
        ledger=st.integers(0, 1),
        entry=st.none() | st.integers(0, _LAST_ENTRY),
    )
    def move_cursor(self, topic: str, reader: str, ledger: int, entry: int | None) -> None:
        position = None if entry is None else (_TOPICS[topic][ledger], entry)
        self.bench.move_cursor(topic, reader, position)

    @rule(topic=st.sampled_from(sorted(_TOPICS)), entry=st.integers(0, _LAST_ENTRY))
    def replay(self, topic: str, entry: int) -> None:
        self.bench.cache.replayed(topic, (_TOPICS[topic][0], entry))

    @rule(ms=st.sampled_from([0, 1, 5, 10, 40, 400, 1200]))
    def advance(self, ms: int) -> None:
        self.bench.advance(ms)
        self._check_bound()

    @rule(topic=st.sampled_from(sorted(_TOPICS)), ledger=st.integers(0, 1))
    def delete_ledger(self, topic: str, ledger: int) -> None:
        ledger_id = _TOPICS[topic][ledger]
        self.bench.cache.ledger_deleted(topic, ledger_id)
        self.maybe = {k: v for k, v in self.maybe.items() if k[0] != topic or k[1][0] != ledger_id}

    @rule(topic=st.sampled_from(sorted(_TOPICS)))
    def reopen(self, topic: str) -> None:
        self.bench.cache.close_ledger(topic)
        self.maybe = {k: v for k, v in self.maybe.items() if k[0] != topic}
        self.bench.open_topic(topic)

    def _check_bound(self) -> None:
        size = self.bench.size()
        assert size <= self.limit + self.largest, (
            f"{size} bytes cached after eviction ran; the limit is {self.limit}"
        )

    @invariant()
    def accounting(self) -> None:
        assert self.bench.size() >= 0, f"negative size {self.bench.size()}"
        stats = self.bench.stats()
        check_stats(stats, "the cache")
        assert stats.get("cache_hits") == self.hit_count, (
            f"stats say {stats.get('cache_hits')} hits, the reads returned {self.hit_count}"
        )
        assert stats.get("cache_misses") == self.miss_count, (
            f"stats say {stats.get('cache_misses')} misses, the reads returned {self.miss_count}"
        )

    def teardown(self) -> None:
        self.bench.settle()
        self._check_bound()
        stats = dict(self.bench.stats())
        held = [key for key in self.maybe if self.bench.hits(key[0], key[1])]
        held_bytes = sum(self.maybe[key] for key in held)
        assert held_bytes == self.bench.size(), (
            f"size_bytes() is {self.bench.size()} but the entries served add up to {held_bytes}"
        )
        if "cache_inserts" in stats:
            removals = sum(stats.get(name, 0) for name in REMOVAL_COUNTERS)
            assert stats["cache_inserts"] - removals == len(held), (
                f"{stats['cache_inserts']} inserts - {removals} removals != {len(held)} held"
            )


# --------------------------------------------------------------------------------------------
# Checks shared by the entry-cache suite and the chained-predicate suite
# --------------------------------------------------------------------------------------------


def check_unread_entries_expire(bench: CacheBench) -> None:
    """Unread entries nobody expects to read are gone, counted as time evictions, once older than
    the TTL and the eviction task has run."""
    bench.open_topic("t")
    held = [pos for pos in ((5, e) for e in range(8)) if bench.insert("t", pos, 100)]
    before = dict(bench.stats())
    bench.advance(bench.ttl_ms + 2 * bench.interval_ms + 1)
    assert bench.size() == 0, f"{bench.size()} bytes still cached after the TTL"
    after = bench.stats()
    if "cache_evictions_time" in after:
        counted = after["cache_evictions_time"] - before.get("cache_evictions_time", 0)
        assert counted == len(held), f"{len(held)} entries expired, {counted} counted"
    for pos in held:
        assert not bench.hits("t", pos), f"{pos} served after it expired"


def check_young_entries_stay(bench: CacheBench) -> None:
    """Entries younger than the TTL, far below the size limit, are still served after the
    eviction task has run: they are not expired yet, and nothing else asks for room."""
    bench.open_topic("t")
    held = [pos for pos in ((5, e) for e in range(8)) if bench.insert("t", pos, 100)]
    half = bench.ttl_ms // 2
    if not held or half < bench.interval_ms:
        return  # nothing cached, or the eviction task would not run before half the TTL
    bench.advance(half)
    evicted = bench.stats().get("cache_evictions_time", 0)
    assert evicted == 0, f"{evicted} entries evicted by time at half the TTL"
    for pos in held:
        assert bench.hits("t", pos), (
            f"{pos} is no longer served {half} ms after it was inserted; the TTL is "
            f"{bench.ttl_ms} ms and the cache holds {bench.size()} of {bench.limit} bytes"
        )


def check_size_bounded_under_a_flood(bench: CacheBench) -> None:
    """Six times the limit inserted, with some reads: once the eviction an insert triggers has
    run, the cache holds at most its limit plus one entry, and evicted to get there."""
    bench.open_topic("t", {"reader": (7, 0)})
    largest = max(entry_size(bench.limit, (0, e)) for e in range(6))
    inserted = 0
    for e in range(6 * 64 // 3):
        size = entry_size(bench.limit, (7, e))
        inserted += size if bench.insert("t", (7, e), size) else 0
        if e % 4 == 3:
            bench.read("t", 7, e - 3, e, "reader")
        bench.settle()
        assert bench.size() <= bench.limit + largest, f"{bench.size()} bytes after eviction"
        if e % 10 == 0:
            bench.advance(1)
    stats = bench.stats()
    if inserted > bench.limit and "cache_evictions_size" in stats:
        assert stats["cache_evictions_size"] > 0, "over the limit, yet no size eviction"
    if "cache_peak_bytes" in stats:
        assert stats["cache_peak_bytes"] >= bench.size()


class AccessProbe:
    """An eviction predicate that never decides and records the ``on_access`` calls it gets."""

    name = "contract-access-probe"

    def __init__(self) -> None:
        self.accesses: Counter[Position] = Counter()

    def decide(
        self, entry: CachedEntryView, kind: EvictionPass, threshold_ns: int
    ) -> EvictionDecision | None:
        return None

    def on_insert(self, entry: CachedEntryView) -> None:
        return None

    def on_access(self, entry: CachedEntryView) -> None:
        assert entry.accessed, f"on_access({entry.position}) with accessed still False"
        self.accesses[entry.position] += 1

    def on_remove(self, entry: CachedEntryView) -> None:
        return None


# --------------------------------------------------------------------------------------------
# Entry-cache contract
# --------------------------------------------------------------------------------------------


class EntryCacheContract:
    """What every entry cache must do. Subclass it and name your record in ``entry_cache``::

        class TestMyCache(EntryCacheContract):
            @pytest.fixture
            def entry_cache(self) -> str:
                return "my-cache"

    The suite runs under ``brokerlab_profile`` with a 1 MiB cache. Set ``entries_expire = False``
    for a cache that ignores ``managedLedgerCacheEvictionTimeThresholdMillis``; ``examples`` is the
    number of random scenarios the state machine tries.
    """

    entries_expire: ClassVar[bool] = True
    examples: ClassVar[int] = 25

    @pytest.fixture
    def entry_cache(self) -> str:
        """The name of the entry-cache record under test (override this fixture)."""
        pytest.fail("override the 'entry_cache' fixture to name the record under test")

    def bench(
        self, host: PluginHost, profile: Profile, entry_cache: str, seed: int = 0
    ) -> CacheBench:
        """A bench of the cache under test, under ``profile`` with a 1 MiB limit."""
        overrides = cache_overrides(
            host, profile, entry_cache, managedLedgerCacheSizeMB=str(BENCH_CACHE_MB)
        )
        return CacheBench(host, profile.with_overrides(overrides), seed)

    def test_random_operations_keep_size_and_counters_consistent(
        self, brokerlab_host: PluginHost, brokerlab_profile: Profile, entry_cache: str
    ) -> None:
        """Size accounting, stats and stale reads over random broker events (state machine)."""
        overrides = cache_overrides(
            brokerlab_host,
            brokerlab_profile,
            entry_cache,
            managedLedgerCacheSizeMB=str(BENCH_CACHE_MB),
        )
        run_machine(
            _machine_of(brokerlab_host, brokerlab_profile.with_overrides(overrides)),
            examples(self.examples, stateful_step_count=40),
        )

    def test_deleted_ledgers_and_closed_topics_serve_nothing(
        self, brokerlab_host: PluginHost, brokerlab_profile: Profile, entry_cache: str
    ) -> None:
        """Invalidation: a deleted ledger's and a closed topic's entries are gone, their bytes
        are no longer counted, and the removals are counted under their reason."""
        bench = self.bench(brokerlab_host, brokerlab_profile, entry_cache)
        bench.open_topic("t")
        sizes = {
            (ledger, e): entry_size(bench.limit, (ledger, e)) for ledger in (1, 2) for e in range(4)
        }
        held = {pos: size for pos, size in sizes.items() if bench.insert("t", pos, size)}
        bench.settle()
        assert bench.size() == sum(held.values()), "size_bytes() is not the bytes inserted"
        for pos in held:
            assert bench.hits("t", pos), f"{pos} was inserted (insert returned True) but not served"
        before = dict(bench.stats())

        bench.cache.ledger_deleted("t", 1)
        in_ledger_1 = [pos for pos in held if pos[0] == 1]
        assert bench.size() == sum(held[pos] for pos in held if pos[0] == 2)
        for pos in sizes:
            assert bench.hits("t", pos) == (pos in held and pos[0] == 2), f"{pos} after deletion"
        self._counted(bench, before, "cache_evictions_ledger_deleted", len(in_ledger_1))

        before = dict(bench.stats())
        bench.cache.close_ledger("t")
        assert bench.size() == 0, "a closed topic's entries are still counted"
        self._counted(bench, before, "cache_evictions_clear", len(held) - len(in_ledger_1))
        bench.open_topic("t")
        for pos in sizes:
            assert not bench.hits("t", pos), f"{pos} served after the topic was closed"

    @staticmethod
    def _counted(bench: CacheBench, before: Mapping[str, float], name: str, count: int) -> None:
        after = bench.stats()
        if name in after:
            assert after[name] - before.get(name, 0) == count, f"{name} did not count {count}"
        if "cache_inserts" in after:
            removed = sum(after.get(n, 0) - before.get(n, 0) for n in REMOVAL_COUNTERS)
            assert removed == count, f"{count} entries left, {removed} removals were counted"

    def test_unread_entries_expire_after_the_ttl(
        self, brokerlab_host: PluginHost, brokerlab_profile: Profile, entry_cache: str
    ) -> None:
        """An entry nobody reads and nobody expects to read is gone once it is older than
        ``managedLedgerCacheEvictionTimeThresholdMillis`` and the eviction task has run, and it is
        counted as a time eviction."""
        if not self.entries_expire:
            pytest.skip("this cache declares entries_expire = False")
        check_unread_entries_expire(self.bench(brokerlab_host, brokerlab_profile, entry_cache))

    def test_entries_stay_until_the_ttl(
        self, brokerlab_host: PluginHost, brokerlab_profile: Profile, entry_cache: str
    ) -> None:
        """An entry a cache far below its limit accepted is still served at half the TTL: the
        eviction task expires only entries older than the TTL."""
        check_young_entries_stay(self.bench(brokerlab_host, brokerlab_profile, entry_cache))

    def test_size_stays_bounded_under_a_flood(
        self, brokerlab_host: PluginHost, brokerlab_profile: Profile, entry_cache: str
    ) -> None:
        """Six times the limit inserted, with some reads: once the eviction an insert triggers
        has run, the cache holds at most its limit plus one entry, and evicted to get there."""
        check_size_bounded_under_a_flood(self.bench(brokerlab_host, brokerlab_profile, entry_cache))

    def test_hits_are_reported_to_the_predicates(
        self, brokerlab_host: PluginHost, brokerlab_profile: Profile, entry_cache: str
    ) -> None:
        """A cache that consults eviction predicates calls ``on_access`` once for every entry a
        read serves, single-entry and range reads alike, with the entry's ``accessed`` set
        (:class:`~brokerlab.protocols.EvictionPredicate`,
        :class:`~brokerlab.protocols.CachedEntryView`)."""
        record: EntryCacheRecord = brokerlab_host.select("entry_cache", entry_cache).record
        if not record.uses_eviction_predicates:
            pytest.skip("this cache consults no eviction predicates")
        probe = AccessProbe()
        overrides = cache_overrides(
            brokerlab_host,
            brokerlab_profile,
            entry_cache,
            managedLedgerCacheSizeMB=str(BENCH_CACHE_MB),
        )
        bench = CacheBench(
            brokerlab_host, brokerlab_profile.with_overrides(overrides), extra_predicates=[probe]
        )
        bench.open_topic("t")
        for e in range(8):
            bench.insert("t", (5, e), 100)
        served: Counter[Position] = Counter()
        for first, last in ((0, 7), (2, 2), (1, 4), (6, 6), (3, 9)):
            misses = bench.read("t", 5, first, last)
            served.update((5, e) for e in range(first, last + 1) if e not in misses)
        assert probe.accesses == served, (
            f"reads served {dict(served)}, but on_access was called for {dict(probe.accesses)}"
        )

    def test_runs_deterministically_in_a_simulation(
        self,
        brokerlab_host: PluginHost,
        brokerlab_profile: Profile,
        simulate: Simulate,
        entry_cache: str,
    ) -> None:
        """The broker runs with this cache: same seed, same result; no invariant broken."""
        check_simulation(simulate, cache_overrides(brokerlab_host, brokerlab_profile, entry_cache))


# --------------------------------------------------------------------------------------------
# Eviction-predicate contract
# --------------------------------------------------------------------------------------------


@dataclass
class EntryView:
    """A cached entry as a predicate sees it (:class:`~brokerlab.protocols.CachedEntryView`).

    Mutable, so a test can play the removal queue: on REQUEUE the queue restamps the entry, clears
    ``accessed`` and adds one to ``requeue_count`` (:meth:`requeued`).
    """

    position: Position
    size: int
    timestamp_ns: int = 0
    requeue_count: int = 0
    accessed: bool = False
    expected_reads: int | None = None

    def requeued(self, now_ns: int) -> None:
        """What the PIP-430 queue does to an entry it moves to the tail."""
        self.timestamp_ns = now_ns
        self.accessed = False
        self.requeue_count += 1


_PREDICATE_OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("insert"),
            st.integers(1, 64 * 1024),
            st.none() | st.integers(-2, 3),
        ),
        st.tuples(st.just("access"), st.integers(0, 63)),
        st.tuples(st.just("remove"), st.integers(0, 63)),
        st.tuples(
            st.just("decide"),
            st.integers(0, 63),
            st.sampled_from([EvictionPass.TIME, EvictionPass.SIZE]),
            st.integers(0, 3000),
        ),
        st.tuples(st.just("tick"), st.integers(0, 500)),
    ),
    max_size=120,
)


def play_predicate(
    predicate: EvictionPredicate, loop: Any, ops: list[tuple[Any, ...]]
) -> list[Any]:
    """Feed ``ops`` to ``predicate`` the way a removal queue would; return its decisions.

    ``insert`` creates an entry and calls ``on_insert``; ``access`` marks one accessed and calls
    ``on_access``; ``remove`` (a range removal) calls ``on_remove``; ``decide`` asks about a live
    entry with a TTL of the given milliseconds and applies the decision (REQUEUE restamps,
    REMOVE and MISSING call ``on_remove``); ``tick`` moves the clock ``loop`` forward.
    """
    live: list[EntryView] = []
    decisions: list[Any] = []
    next_id = 0
    for op in ops:
        kind = op[0]
        now = loop.now_ns()
        if kind == "insert":
            view = EntryView((9, next_id), op[1], timestamp_ns=now, expected_reads=op[2])
            next_id += 1
            live.append(view)
            predicate.on_insert(view)
        elif kind == "tick":
            loop.run_until(now + op[1] * MS)
        elif live:
            view = live[op[1] % len(live)]
            if kind == "access":
                view.accessed = True
                predicate.on_access(view)
            elif kind == "remove":
                live.remove(view)
                predicate.on_remove(view)
            else:
                decision = predicate.decide(view, op[2], now - op[3] * MS)
                assert decision is None or isinstance(decision, EvictionDecision), (
                    f"decide() returned {decision!r}, not an EvictionDecision or None"
                )
                decisions.append((view.position, decision))
                if decision is EvictionDecision.REQUEUE:
                    view.requeued(now)
                elif decision in (EvictionDecision.REMOVE, EvictionDecision.MISSING):
                    live.remove(view)
                    predicate.on_remove(view)
    return decisions


class EvictionPredicateContract:
    """What every eviction predicate must do. Subclass it and name your record::

        class TestMyPredicate(EvictionPredicateContract):
            @pytest.fixture
            def eviction_predicate(self) -> str:
                return "my-predicate"

    The chained tests put the predicate (via ``sim.evictionPredicates``) into the chain of every
    installed entry cache that consults predicates, after the ones the profile's Pulsar switches
    select, with a 1 MiB cache.
    """

    examples: ClassVar[int] = 40

    @pytest.fixture
    def eviction_predicate(self) -> str:
        """The name of the eviction-predicate record under test (override this fixture)."""
        pytest.fail("override the 'eviction_predicate' fixture to name the record under test")

    @staticmethod
    def chained_profiles(
        host: PluginHost, profile: Profile, eviction_predicate: str
    ) -> Iterator[Profile]:
        """``profile`` with the predicate chained, once per cache that consults predicates."""
        caches = [
            r.record.name for r in host.records("entry_cache") if r.record.uses_eviction_predicates
        ]
        assert caches, "no installed entry cache consults eviction predicates"
        for cache in caches:
            yield profile.with_overrides(
                cache_overrides(
                    host,
                    profile,
                    cache,
                    **{
                        "sim.evictionPredicates": eviction_predicate,
                        "managedLedgerCacheSizeMB": str(BENCH_CACHE_MB),
                    },
                )
            )

    def test_decisions_are_valid_and_deterministic(
        self, brokerlab_host: PluginHost, brokerlab_profile: Profile, eviction_predicate: str
    ) -> None:
        """Whatever the entries look like, ``decide`` returns an :class:`EvictionDecision` or
        ``None``, and two predicates built from the same seed decide the same."""
        record: EvictionPredicateRecord = brokerlab_host.select(
            "eviction_predicate", eviction_predicate
        ).record

        @examples(self.examples)
        @given(ops=_PREDICATE_OPS, seed=st.integers(0, 2**16))
        def check(ops: list[tuple[Any, ...]], seed: int) -> None:
            runs = []
            for _ in range(2):
                context, loop = build_context(brokerlab_host, brokerlab_profile, seed)
                predicate = record.factory(context)
                assert isinstance(predicate.name, str) and predicate.name
                runs.append(play_predicate(predicate, loop, ops))
            assert runs[0] == runs[1], "the same seed and events gave different decisions"

        check()

    def test_a_requeue_rule_decides_as_decide_does(
        self, brokerlab_host: PluginHost, brokerlab_profile: Profile, eviction_predicate: str
    ) -> None:
        """A :class:`~brokerlab.protocols.RulePredicate` with a rule: a queue applies the rule
        instead of calling ``decide``, so on any entry they must agree."""
        record: EvictionPredicateRecord = brokerlab_host.select(
            "eviction_predicate", eviction_predicate
        ).record
        context, _ = build_context(brokerlab_host, brokerlab_profile)
        predicate = record.factory(context)
        rule = predicate.requeue_rule if isinstance(predicate, RulePredicate) else None
        if rule is None:
            pytest.skip("this predicate gives no requeue_rule: every decision is a call")
        assert isinstance(rule, RequeueRule), f"requeue_rule is {rule!r}, not a RequeueRule"

        @examples(self.examples * 5)
        @given(
            timestamp=st.integers(0, 10**6),
            requeues=st.integers(0, 12),
            accessed=st.booleans(),
            reads=st.none() | st.integers(-2, 4),
            kind=st.sampled_from(EvictionPass),
            threshold=st.integers(0, 10**6),
        )
        def check(
            timestamp: int,
            requeues: int,
            accessed: bool,
            reads: int | None,
            kind: EvictionPass,
            threshold: int,
        ) -> None:
            entry = EntryView((1, 0), 100, timestamp, requeues, accessed, reads)
            expected = predicate.decide(entry, kind, threshold)
            assert rule.decide(entry, kind, threshold) == expected, (
                f"requeue_rule {rule} and decide() disagree on {entry} ({kind}, {threshold})"
            )

        check()

    def test_chained_cache_keeps_the_entry_cache_contract(
        self, brokerlab_host: PluginHost, brokerlab_profile: Profile, eviction_predicate: str
    ) -> None:
        """With the predicate in the chain the cache still honours its size bound, its counters
        and its invalidations (the entry-cache state machine)."""
        for profile in self.chained_profiles(brokerlab_host, brokerlab_profile, eviction_predicate):
            run_machine(
                _machine_of(brokerlab_host, profile),
                examples(max(5, self.examples // 2), stateful_step_count=40),
            )

    def test_chained_cache_still_expires_unread_entries(
        self, brokerlab_host: PluginHost, brokerlab_profile: Profile, eviction_predicate: str
    ) -> None:
        """With the predicate in the chain, an entry nobody reads and nobody expects to read
        still leaves once older than the TTL: the predicate must not STOP or REQUEUE where the
        queue's own rule removes an expired, unread entry (the entry-cache TTL contract)."""
        for profile in self.chained_profiles(brokerlab_host, brokerlab_profile, eviction_predicate):
            check_unread_entries_expire(CacheBench(brokerlab_host, profile))

    def test_chained_cache_stays_bounded_under_a_flood(
        self, brokerlab_host: PluginHost, brokerlab_profile: Profile, eviction_predicate: str
    ) -> None:
        """With the predicate in the chain, a size pass still frees room: the cache holds at most
        its limit plus one entry once the eviction an insert triggers has run."""
        for profile in self.chained_profiles(brokerlab_host, brokerlab_profile, eviction_predicate):
            check_size_bounded_under_a_flood(CacheBench(brokerlab_host, profile))

    def test_chained_cache_is_deterministic(
        self, brokerlab_host: PluginHost, brokerlab_profile: Profile, eviction_predicate: str
    ) -> None:
        """The same events on two caches built from one seed give the same hits and stats."""
        for profile in self.chained_profiles(brokerlab_host, brokerlab_profile, eviction_predicate):
            first, second = (_replay(CacheBench(brokerlab_host, profile, 3), 11) for _ in range(2))
            assert first == second, "the same seed and events gave different results"

    def test_runs_deterministically_in_a_simulation(
        self,
        brokerlab_host: PluginHost,
        brokerlab_profile: Profile,
        simulate: Simulate,
        eviction_predicate: str,
    ) -> None:
        """The broker runs with the predicate chained: same seed, same result; no invariant
        broken."""
        for profile in self.chained_profiles(brokerlab_host, brokerlab_profile, eviction_predicate):
            # cache_overrides keeps a size-0 profile from selecting the disabled cache.
            overrides = cache_overrides(
                brokerlab_host,
                brokerlab_profile,
                profile.settings.sim_entry_cache,
                **{"sim.evictionPredicates": eviction_predicate},
            )
            check_simulation(simulate, overrides)


def _machine_of(host: PluginHost, profile: Profile) -> Callable[[], EntryCacheMachine]:
    """A factory of state machines over fresh benches of ``profile``."""
    return lambda: EntryCacheMachine(lambda: CacheBench(host, profile))


def _replay(bench: CacheBench, seed: int) -> tuple[list[list[int]], dict[str, float]]:
    """A fixed pseudo-random mix of adds, re-reads and time on one topic."""
    rng = random.Random(seed)
    bench.open_topic("t", {"a": (1, 0), "b": None})
    misses: list[list[int]] = []
    for e in range(300):
        bench.insert("t", (1, e), entry_size(bench.limit, (1, e)))
        if rng.random() < 0.5:
            first = rng.randint(max(0, e - 40), e)
            misses.append(bench.read("t", 1, first, min(e, first + 3), rng.choice("ab")))
        if rng.random() < 0.2:
            bench.advance(rng.choice([1, 10, 300]))
        bench.settle()
    return misses, dict(bench.stats())
