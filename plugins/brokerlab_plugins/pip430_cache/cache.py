"""The PIP-430 entry-cache manager (``RangeEntryCacheManagerImpl`` as merged by PR #24623).

One instance serves the broker: per-ledger entry maps, the global size, one removal queue in
insertion order, the asynchronous size eviction and the expected read counts (spec §0.2, §2, §3).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Final

from brokerlab.protocols import (
    CursorContainer,
    PluginContext,
    Position,
    RankedCursorContainer,
)
from brokerlab_plugins.entry_cache_common import (
    AsyncEviction,
    BacklogCaching,
    CacheCounters,
    CacheLimits,
)
from brokerlab_plugins.pip430_cache.entry import CachedEntry, LedgerEntries
from brokerlab_plugins.pip430_cache.queue import RemovalQueue

__all__ = ["Pip430EntryCache"]

_MS: Final = 1_000_000

_LEGACY_ONLY = ("cache_inserts_refused", "cache_ledgers_visited")


class _Ledgers:
    """One managed ledger's cache: ledger id -> its entries by id, plus its cursor state."""

    __slots__ = (
        "cursors",
        "had_cursors",
        "last_id",
        "last_ledger",
        "ledgers",
        "rank",
        "slowest",
        "window_start_ns",
    )

    def __init__(self, cursors: CursorContainer, now_ns: int) -> None:
        self.cursors = cursors
        # The rank query of a container that has one, found by its members and taken once.
        self.rank: Callable[[str], int] | None = (
            cursors.count_at_or_before if isinstance(cursors, RankedCursorContainer) else None
        )
        self.ledgers: dict[int, LedgerEntries] = {}
        # The ledger found last: reads, adds and releases mostly hit one ledger in a row. Until
        # one is found, ``last_id`` is -1, which the lookup never takes for a ledger id.
        self.last_id = -1
        self.last_ledger = LedgerEntries()
        # The continue-caching window starts when the ledger is loaded (spec §3.5).
        self.window_start_ns = now_ns
        self.had_cursors = len(cursors) > 0
        # The slowest active position last seen (invalidation without expected read counts).
        self.slowest = cursors.slowest_position()

    def ledger(self, ledger_id: int) -> LedgerEntries | None:
        """The entry map of ``ledger_id``, if it has one."""
        if ledger_id == self.last_id and ledger_id >= 0:
            return self.last_ledger
        ledger = self.ledgers.get(ledger_id)
        if ledger is not None:
            self.last_id = ledger_id
            self.last_ledger = ledger
        return ledger

    def drop_ledger(self, ledger_id: int) -> LedgerEntries | None:
        if ledger_id == self.last_id:
            self.last_id = -1
        return self.ledgers.pop(ledger_id, None)

    def entries(self) -> Iterator[CachedEntry]:
        for ledger in self.ledgers.values():
            yield from ledger.values()


class Pip430EntryCache:
    """PIP-430's cache: never refuses an insert for space, evicts through the removal queue.

    Satisfies :class:`~brokerlab.protocols.EntryCache`. With ``cacheEvictionByExpectedReadCount``
    off it falls back as the spec says: no expected counts on adds, no continue-caching window,
    storage reads cached (count 1) only for readers that cache reads by the legacy rules, and
    entries invalidated up to the slowest active cursor when it moves (see
    :meth:`cursors_changed`).
    """

    def __init__(self, context: PluginContext, *, limits: CacheLimits | None = None) -> None:
        settings = context.settings
        self.limits = limits or CacheLimits.from_settings(settings)
        self._clock = context.clock
        self._by_read_count: bool = settings.cache_eviction_by_expected_read_count
        self._window_ns = settings.continue_caching_window_ms * _MS if self._by_read_count else 0
        self.counters = CacheCounters()
        self.queue = RemovalQueue(
            context.eviction_predicates,
            context.clock,
            self.counters,
            settings.managed_ledger_cache_eviction_extend_ttl_of_entries_with_remaining_expected_reads_max_times,
        )
        self._eviction = AsyncEviction(context.clock, context.scheduler)
        self._backlog = BacklogCaching(settings, context.clock)
        self._topics: dict[str, _Ledgers] = {}
        # The topic looked up last, by identity: the broker passes each topic's own name object.
        self._last_topic: str | None = None
        self._last_state: _Ledgers | None = None
        # The entry a single-entry read found or an insert added last (see _add_expected_reads).
        self._last_entry: CachedEntry | None = None

    # ---- managed ledgers ------------------------------------------------------------------------

    def _state(self, topic: str) -> _Ledgers | None:
        """The topic's cache state (``None`` when it has no open managed ledger)."""
        if topic is self._last_topic:
            return self._last_state
        state = self._topics.get(topic)
        self._last_topic = topic
        self._last_state = state
        return state

    def open_ledger(self, topic: str, cursors: CursorContainer) -> None:
        self._topics[topic] = _Ledgers(cursors, self._clock.now_ns())
        self._last_topic = None
        self._backlog.open(topic)

    def close_ledger(self, topic: str) -> None:
        state = self._topics.pop(topic, None)
        self._last_topic = None
        self._backlog.close(topic)
        if state is not None:
            count = self._drop(state.entries())
            self.counters.cache_evictions_clear += count

    def ledger_deleted(self, topic: str, ledger_id: int) -> None:
        state = self._state(topic)
        ledger = None if state is None else state.drop_ledger(ledger_id)
        if ledger is not None and len(ledger):
            self.counters.cache_evictions_ledger_deleted += self._drop(list(ledger.values()))

    def cursors_changed(self, topic: str) -> None:
        """The active cursors changed: note when the last one left (the continue-caching window,
        spec §3.5), and without expected read counts invalidate up to the slowest one.

        With ``cacheEvictionByExpectedReadCount`` on, PIP-430 does not invalidate on cursor moves
        (spec §3.6). With it off, the manager does what it did before PIP-430 (PIP-430 text: the
        cursor-based eviction "functions as before"; upstream ``EntryCacheManagerTest
        .verifyHitsMisses`` on the PIP-430 line): when the slowest active position changes,
        entries before it are invalidated at once, and when no cursor is active the ledger's cache
        is cleared. The container orders cursors by read position, or by mark-delete position
        with ``cacheEvictionByMarkDeletedPosition``.
        """
        state = self._state(topic)
        if state is None:
            return
        cursors = state.cursors
        has = len(cursors) > 0
        if state.had_cursors and not has:
            state.window_start_ns = self._clock.now_ns()
        state.had_cursors = has
        if not self._by_read_count:
            self._invalidate_up_to_slowest(state)

    def _invalidate_up_to_slowest(self, state: _Ledgers) -> None:
        """``invalidateEntriesUpToSlowestReaderPosition`` when the slowest position moved."""
        slowest = state.cursors.slowest_position()
        has = len(state.cursors) > 0
        if slowest == state.slowest and has:
            return
        state.slowest = slowest
        if not state.ledgers:
            return
        if not has:
            entries = list(state.entries())
            state.ledgers.clear()
            state.last_id = -1
            self.counters.cache_evictions_clear += self._drop(entries)
        elif slowest is not None:  # ``invalidateEntries(slowest)``: strictly before it
            slowest_ledger, slowest_entry = slowest
            doomed: list[CachedEntry] = []
            for ledger_id, ledger in state.ledgers.items():
                if ledger_id > slowest_ledger:
                    continue
                for entry in ledger.values():  # in entry-id order
                    if ledger_id == slowest_ledger and entry.position[1] >= slowest_entry:
                        break
                    doomed.append(entry)
            for entry in doomed:
                entry.owner.remove(entry.position[1])
            self.counters.cache_evictions_invalidation += self._drop(doomed)

    # ---- adds and reads -------------------------------------------------------------------------

    def insert(self, topic: str, position: Position, size: int) -> bool:
        """The add path: ``shouldCacheAddedEntry``, then an insert with all active cursors."""
        state = self._state(topic)
        if state is None:
            return False
        cursors = state.cursors
        if len(cursors) == 0:
            if self._clock.now_ns() - state.window_start_ns >= self._window_ns:
                return False
            expected = 0
        else:
            expected = cursors.tracked_count() if self._by_read_count else 0
        if self._backlog.enabled:
            self._backlog.saw_entries(topic, position[0], position[1])
        return self._put(state, position, size, expected if expected > 0 else None)

    def put(self, topic: str, position: Position, size: int, expected_reads: int | None) -> bool:
        """``RangeEntryCacheImpl.insert`` without the add-path gate (tests, trace replay)."""
        state = self._state(topic)
        return state is not None and self._put(state, position, size, expected_reads)

    def _put(self, state: _Ledgers, position: Position, size: int, reads: int | None) -> bool:
        ledger_id, entry_id = position
        ledger = state.ledger(ledger_id)
        if ledger is None:
            ledger = state.ledgers[ledger_id] = LedgerEntries()
        entry = CachedEntry(position, size, self._clock.now_ns(), reads, ledger)
        if not ledger.add(entry_id, entry):  # a duplicate is rare: the wrapper is made first
            return False  # a duplicate is rejected; the cached entry keeps its count (§2.1)
        self._last_entry = entry
        queue = self.queue
        queue.add(entry)
        current = queue.size
        counters = self.counters
        counters.cache_inserts += 1
        if current > counters.cache_peak_bytes:
            counters.cache_peak_bytes = current
            overshoot = current - self.limits.max_size
            if overshoot > counters.cache_max_overshoot_bytes:
                counters.cache_max_overshoot_bytes = overshoot
        if current > self.limits.trigger:
            self._eviction.request(self._evict_to_watermark)
        return True

    def read(self, topic: str, ledger_id: int, first: int, last: int, reader: str) -> list[int]:
        if first == last:  # single-entry reads are common (replays, trace replay): no loop
            return [] if self.read_entry(topic, ledger_id, first, reader) else [first]
        state = self._state(topic)
        counters = self.counters
        if self._backlog.enabled:
            self._backlog.saw_read(topic, ledger_id, first, last, reader)
        ledger = None if state is None else state.ledger(ledger_id)
        if ledger is None or len(ledger) == 0:
            counters.cache_misses += last - first + 1
            return list(range(first, last + 1))
        listeners = self.queue.listeners
        misses: list[int] = []
        for entry_id in range(first, last + 1):
            entry = ledger.get(entry_id)
            if entry is None:
                misses.append(entry_id)
            else:
                entry.accessed = True
                for listener in listeners:
                    listener.on_access(entry)
        counters.cache_misses += len(misses)
        counters.cache_hits += last - first + 1 - len(misses)
        return misses

    def read_entry(self, topic: str, ledger_id: int, entry_id: int, reader: str) -> bool:
        """:meth:`read` of the one entry ``entry_id``, answering whether it was a hit (the trace
        replay's request, without a list of misses)."""
        state = self._state(topic)
        if self._backlog.enabled:
            self._backlog.saw_read(topic, ledger_id, entry_id, entry_id, reader)
        ledger = None if state is None else state.ledger(ledger_id)
        entry = None if ledger is None else ledger.get(entry_id)
        if entry is None:
            self.counters.cache_misses += 1
            return False
        entry.accessed = True
        for listener in self.queue.listeners:
            listener.on_access(entry)
        self.counters.cache_hits += 1
        self._last_entry = entry
        return True

    def storage_read(
        self,
        topic: str,
        ledger_id: int,
        entry_ids: Sequence[int],
        sizes: Sequence[int],
        reader: str,
    ) -> None:
        """Insert what a reader read from storage when reads are expected (spec §2.2, §3.2)."""
        state = self._state(topic)
        if state is None:
            return
        expected = self._expected_after_storage_read(state, topic, reader)
        if expected <= 0:
            return
        for entry_id, size in zip(entry_ids, sizes, strict=True):
            self._put(state, (ledger_id, entry_id), size, expected)

    def storage_read_entry(
        self, topic: str, ledger_id: int, entry_id: int, size: int, reader: str
    ) -> None:
        """:meth:`storage_read` of the one entry ``entry_id`` (the trace replay's miss)."""
        state = self._state(topic)
        if state is not None:
            expected = self._expected_after_storage_read(state, topic, reader)
            if expected > 0:
                self._put(state, (ledger_id, entry_id), size, expected)

    def _expected_after_storage_read(self, state: _Ledgers, topic: str, reader: str) -> int:
        """The expected read count an entry ``reader`` read from storage is cached with."""
        rank = state.rank
        if self._by_read_count and rank is not None:
            return rank(reader)
        # Legacy mapping of ``isCacheReadEntry()`` onto the count: 1 or 0 (§3.2, inferred).
        return 1 if self._backlog.caches_reads(topic, reader) else 0

    def released(self, topic: str, position: Position) -> None:
        self.release_entry(topic, position[0], position[1])

    def release_entry(self, topic: str, ledger_id: int, entry_id: int) -> None:
        """:meth:`released` without a position tuple (the trace replay's release)."""
        self._add_expected_reads(topic, ledger_id, entry_id, -1)  # markRead; never clamped (§1.2)

    def replayed(self, topic: str, position: Position) -> None:
        self._add_expected_reads(topic, position[0], position[1], 1)

    def _add_expected_reads(self, topic: str, ledger_id: int, entry_id: int, delta: int) -> None:
        state = self._state(topic)
        ledger = None if state is None else state.ledger(ledger_id)
        if ledger is None:
            return
        entry = self._last_entry
        # A dispatcher releases what it has just read or cached: the entry found or added last is
        # usually the one, and needs no lookup while it is still cached.
        if (
            entry is None
            or entry.removed
            or entry.owner is not ledger
            or entry.position[1] != entry_id
        ):
            entry = ledger.get(entry_id)
        if entry is not None and entry.counted:
            entry.reads += delta

    # ---- eviction -------------------------------------------------------------------------------

    def evict_expired(self) -> None:
        """The periodic ``doCacheEviction``: a time pass, then a size check (spec §2.6)."""
        self.queue.evict_before(self._clock.now_ns() - self.limits.ttl_ns)
        self._evict_to_watermark()

    def _evict_to_watermark(self) -> None:
        """``doEvictToWatermarkWhenOverThreshold``: re-reads the size when it runs."""
        current = self.queue.size
        if current > self.limits.trigger:
            to_free = current - self.limits.watermark
            if to_free > 0:
                self.queue.evict_size(to_free)

    def _drop(self, entries: Iterator[CachedEntry] | list[CachedEntry]) -> int:
        """Range removal: wrappers stay queued and are dropped later as MISSING (spec §2.3)."""
        count = freed = 0
        listeners = self.queue.listeners
        for entry in entries:
            entry.removed = True
            count += 1
            freed += entry.size
            for listener in listeners:
                listener.on_remove(entry)
        self.queue.size -= freed
        return count

    def remove_range(
        self, topic: str, first: Position, last: Position, *, last_inclusive: bool
    ) -> tuple[int, int]:
        """``RangeCache.removeRange``: (entries, bytes) removed; counted as invalidations."""
        state = self._state(topic)
        if state is None:
            return 0, 0
        doomed: list[CachedEntry] = []
        for ledger in state.ledgers.values():
            for entry in ledger.values():
                pos = entry.position
                if first <= pos and (pos < last or (last_inclusive and pos == last)):
                    doomed.append(entry)
        for entry in doomed:
            entry.owner.remove(entry.position[1])
        freed = sum(entry.size for entry in doomed)
        self.counters.cache_evictions_invalidation += self._drop(doomed)
        return len(doomed), freed

    # ---- views ----------------------------------------------------------------------------------

    def entry(self, topic: str, position: Position) -> CachedEntry | None:
        """The cached wrapper at ``position``, if any (no access is recorded)."""
        state = self._state(topic)
        if state is None:
            return None
        ledger = state.ledger(position[0])
        return None if ledger is None else ledger.get(position[1])

    def cached(self, topic: str) -> dict[Position, int]:
        """Position -> size of everything ``topic`` has cached (tests and reports)."""
        state = self._state(topic)
        return {} if state is None else {e.position: e.size for e in state.entries()}

    def non_evictable(self, *, pulsar_definition: bool = False) -> tuple[int, int]:
        """(entries, bytes) protected by expected reads (``expected_reads >= 1``).

        ``pulsar_definition`` also counts entries without a count, as Pulsar's
        ``getNonEvictableSize`` does (spec §0.4, scenario 18).
        """
        count = size = 0
        for state in self._topics.values():
            for entry in state.entries():
                reads = entry.expected_reads
                if (reads is None and pulsar_definition) or (reads is not None and reads >= 1):
                    count += 1
                    size += entry.size
        return count, size

    def size_bytes(self) -> int:
        return self.queue.size

    def stats(self) -> Mapping[str, float]:
        # Refused inserts and visited ledgers are the legacy cache's (declared by its plugin).
        stats = self.counters.as_stats(without=_LEGACY_ONLY)
        stats.update(self.queue.other_requeues)
        stats["cache_non_evictable_bytes"] = self.non_evictable()[1]
        return stats
