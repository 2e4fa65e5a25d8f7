"""Cumulative cache counters under their declared metric names (the framework's entry-cache
metrics, and each cache plugin's own)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, fields

__all__ = ["CacheCounters"]


@dataclass(slots=True)
class CacheCounters:
    """Counters both caches keep; each field name is a declared metric name.

    ``cache_peak_bytes`` and ``cache_max_overshoot_bytes`` are high-water marks kept at insert
    time, where the size can only have grown.
    """

    cache_hits: int = 0
    cache_misses: int = 0
    cache_inserts: int = 0
    cache_inserts_refused: int = 0
    cache_peak_bytes: int = 0
    cache_max_overshoot_bytes: int = 0
    cache_evictions_time: int = 0
    cache_evictions_size: int = 0
    cache_evictions_invalidation: int = 0
    cache_evictions_clear: int = 0
    cache_evictions_ledger_deleted: int = 0
    cache_requeues_accessed: int = 0
    cache_requeues_expected_reads: int = 0
    cache_eviction_work: int = 0
    cache_ledgers_visited: int = 0

    def removals(self) -> int:
        """Entries that left the cache, whatever the reason."""
        return (
            self.cache_evictions_time
            + self.cache_evictions_size
            + self.cache_evictions_invalidation
            + self.cache_evictions_clear
            + self.cache_evictions_ledger_deleted
        )

    def as_stats(self, *, without: Collection[str] = ()) -> dict[str, float]:
        """Every counter by metric name but those ``without`` names: a mechanism the reporting
        cache does not have, whose metric it must not report (as 0 or otherwise)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in without}
