"""The legacy (pre-PIP-430) entry-cache manager: per-ledger caches, a global limit, and
cursor-driven invalidation (spec §0.1, §5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

from brokerlab.protocols import CursorContainer, PluginContext, Position
from brokerlab_plugins.entry_cache_common import (
    AsyncEviction,
    BacklogCaching,
    CacheCounters,
    CacheLimits,
)
from brokerlab_plugins.legacy_cache.ledger_cache import LedgerCache, key_of
from brokerlab_plugins.legacy_cache.policy import evict_proportionally

__all__ = ["LegacyEntryCache"]

_REMOVAL_QUEUE_ONLY = ("cache_requeues_accessed", "cache_requeues_expected_reads")


class LegacyEntryCache:
    """Pulsar's cache before 4.1; satisfies :class:`~brokerlab.protocols.EntryCache`.

    * adds are cached only while the ledger has an active cursor;
    * every insert passes ``hasSpaceInCache``: above 0.98 of the limit it schedules one size
      eviction (sized from the bytes held at that moment) and it refuses the entry unless the
      cache holds less than the limit;
    * storage reads are cached only for readers that cache reads (backlogged-cursor caching, or
      ``cacheEvictionByMarkDeletedPosition``);
    * when the slowest active cursor moves, entries before it are invalidated; when no cursor is
      active the whole ledger cache is cleared;
    * the periodic task walks every ledger's cache in position order and stops at the first entry
      that has not expired.
    """

    def __init__(self, context: PluginContext, *, limits: CacheLimits | None = None) -> None:
        self.limits = limits or CacheLimits.from_settings(context.settings)
        self._clock = context.clock
        self.counters = CacheCounters()
        self._eviction = AsyncEviction(context.clock, context.scheduler)
        self._backlog = BacklogCaching(context.settings, context.clock)
        self._caches: dict[str, LedgerCache] = {}
        self._size = 0

    # ---- managed ledgers ------------------------------------------------------------------------

    def open_ledger(self, topic: str, cursors: CursorContainer) -> None:
        self._caches[topic] = LedgerCache(topic, cursors)
        self._backlog.open(topic)

    def close_ledger(self, topic: str) -> None:
        """``removeEntryCache``: the ledger's cache is cleared and forgotten."""
        cache = self._caches.pop(topic, None)
        self._backlog.close(topic)
        if cache is not None:
            count, freed = cache.clear()
            self._removed(freed)
            self.counters.cache_evictions_clear += count

    def ledger_deleted(self, topic: str, ledger_id: int) -> None:
        cache = self._caches.get(topic)
        if cache is not None:
            count, freed = cache.remove_ledger(ledger_id)
            self._removed(freed)
            self.counters.cache_evictions_ledger_deleted += count

    def cursors_changed(self, topic: str) -> None:
        """``invalidateEntriesUpToSlowestReaderPosition`` when the slowest position changed."""
        cache = self._caches.get(topic)
        if cache is None:
            return
        cursors = cache.cursors
        slowest = cursors.slowest_position()
        if slowest == cache.slowest and len(cursors) > 0:
            return
        cache.slowest = slowest
        if cache.size <= 0:
            return
        if len(cursors) == 0:
            count, freed = cache.clear()
            self.counters.cache_evictions_clear += count
        elif slowest is not None:
            count, freed = cache.invalidate_before(slowest)
            self.counters.cache_evictions_invalidation += count
        else:
            return  # only untracked cursors: nothing to invalidate up to
        self._removed(freed)

    def invalidate_entries(self, topic: str, position: Position) -> tuple[int, int]:
        """``invalidateEntries(position)``: remove entries strictly before ``position``."""
        cache = self._caches.get(topic)
        if cache is None:
            return 0, 0
        count, freed = cache.invalidate_before(position)
        self._removed(freed)
        self.counters.cache_evictions_invalidation += count
        return count, freed

    # ---- adds and reads -------------------------------------------------------------------------

    def insert(self, topic: str, position: Position, size: int) -> bool:
        """The add path: cached only while at least one cursor is active (spec §3.1)."""
        cache = self._caches.get(topic)
        if cache is None or len(cache.cursors) == 0:
            return False
        if self._backlog.enabled:
            self._backlog.saw_entries(topic, position[0], position[1])
        return self._put(cache, key_of(position[0], position[1]), size)

    def put(self, topic: str, position: Position, size: int) -> bool:
        """``RangeEntryCacheImpl.insert`` without the add-path gate (tests, trace replay)."""
        cache = self._caches.get(topic)
        return cache is not None and self._put(cache, key_of(position[0], position[1]), size)

    def _put(self, cache: LedgerCache, key: int, size: int) -> bool:
        current = self._size
        limits = self.limits
        if current > limits.trigger and not self._eviction.in_flight:
            # The size held now, before this insert, as Pulsar's gate captures it (spec §5.1);
            # not built while an eviction is pending (request() would drop it).
            self._eviction.request(partial(self._evict, current))
        if current >= limits.max_size:  # hasSpaceInCache is currentSize < maxSize
            self.counters.cache_inserts_refused += 1
            return False
        if not cache.put(key, size, self._clock.now_ns()):
            return False
        current += size
        self._size = current
        counters = self.counters
        counters.cache_inserts += 1
        if current > counters.cache_peak_bytes:
            counters.cache_peak_bytes = current
            overshoot = current - limits.max_size
            if overshoot > counters.cache_max_overshoot_bytes:
                counters.cache_max_overshoot_bytes = overshoot
        return True

    def read(self, topic: str, ledger_id: int, first: int, last: int, reader: str) -> list[int]:
        cache = self._caches.get(topic)
        counters = self.counters
        if self._backlog.enabled:
            self._backlog.saw_read(topic, ledger_id, first, last, reader)
        if cache is None or not cache.entries:
            counters.cache_misses += last - first + 1
            return list(range(first, last + 1))
        entries = cache.entries
        base = key_of(ledger_id, 0)  # the keys of one ledger's entries are consecutive
        if first == last:  # single-entry reads are common (replays, trace replay): no loop
            if base + first in entries:
                counters.cache_hits += 1
                return []
            counters.cache_misses += 1
            return [first]
        count = last - first + 1
        for e in range(first, last + 1):
            if base + e not in entries:
                # Not all cached: the whole range is read from storage again and the cached
                # entries are released unused (pre-PIP-430 RangeEntryCacheImpl.asyncReadEntry0).
                counters.cache_misses += count
                return list(range(first, last + 1))
        counters.cache_hits += count
        return []

    def storage_read(
        self,
        topic: str,
        ledger_id: int,
        entry_ids: Sequence[int],
        sizes: Sequence[int],
        reader: str,
    ) -> None:
        cache = self._caches.get(topic)
        if cache is None or not self._backlog.caches_reads(topic, reader):
            return
        base = key_of(ledger_id, 0)
        if len(entry_ids) == 1 == len(sizes):  # one entry (trace replay): skip building a zip
            self._put(cache, base + entry_ids[0], sizes[0])
            return
        for entry_id, size in zip(entry_ids, sizes, strict=True):
            self._put(cache, base + entry_id, size)

    def released(self, topic: str, position: Position) -> None:
        return None  # no expected read counts before PIP-430

    def replayed(self, topic: str, position: Position) -> None:
        return None

    # ---- eviction -------------------------------------------------------------------------------

    def evict_expired(self) -> None:
        """The factory task: visit every open ledger, evict expired entries in position order."""
        max_ts = self._clock.now_ns() - self.limits.ttl_ns
        counters = self.counters
        freed_total = 0
        for cache in self._caches.values():
            counters.cache_ledgers_visited += 1
            if cache.size > 0:
                count, freed, examined = cache.evict_before_timestamp(max_ts)
                counters.cache_evictions_time += count
                counters.cache_eviction_work += examined
                freed_total += freed
        self._removed(freed_total)

    def _evict(self, captured_size: int) -> None:
        """The scheduled size eviction, sized from the bytes held when the insert gate ran."""
        to_free = captured_size - self.limits.watermark
        if to_free <= 0 or not self._caches:
            return
        count, freed = evict_proportionally(self._caches.values(), to_free)
        self.counters.cache_evictions_size += count
        self.counters.cache_eviction_work += count
        self._removed(freed)

    def _removed(self, freed: int) -> None:
        self._size -= freed

    # ---- views ----------------------------------------------------------------------------------

    def cached(self, topic: str) -> dict[Position, int]:
        """Position -> size of everything ``topic`` has cached (tests and reports)."""
        cache = self._caches.get(topic)
        return {} if cache is None else cache.positions()

    def ledger_size(self, topic: str) -> int:
        cache = self._caches.get(topic)
        return 0 if cache is None else cache.size

    def size_bytes(self) -> int:
        return self._size

    def stats(self) -> Mapping[str, float]:
        # Requeues are PIP-430's removal queue's (declared by its plugin): none here.
        return self.counters.as_stats(without=_REMOVAL_QUEUE_ONLY)
