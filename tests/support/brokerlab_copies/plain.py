"""PIP-430's two requeue rules on the plain ``EvictionPredicate`` protocol: no optional
protocol, so the queue notifies them of everything and attributes their requeues by name."""

from __future__ import annotations

from typing import Any

from brokerlab import CachedEntryView, EvictionDecision, EvictionPass

__all__ = ["PlainExpectedReads", "PlainRecentlyAccessed"]


def _requeue_unless_live(
    timestamp_ns: int, kind: EvictionPass, threshold_ns: int
) -> EvictionDecision | None:
    if kind is EvictionPass.TIME and timestamp_ns >= threshold_ns:
        return None
    return EvictionDecision.REQUEUE


class PlainRecentlyAccessed:
    name = "recently-accessed"

    def decide(
        self, entry: CachedEntryView, kind: EvictionPass, threshold_ns: int
    ) -> EvictionDecision | None:
        if not entry.accessed:
            return None
        return _requeue_unless_live(entry.timestamp_ns, kind, threshold_ns)

    def on_insert(self, entry: CachedEntryView) -> None:
        pass

    def on_access(self, entry: CachedEntryView) -> None:
        pass

    def on_remove(self, entry: CachedEntryView) -> None:
        pass


class PlainExpectedReads(PlainRecentlyAccessed):
    name = "expected-reads"

    def __init__(self, max_requeues: int) -> None:
        self.max_requeues = max_requeues

    @classmethod
    def from_settings(cls, settings: Any) -> PlainExpectedReads:
        return cls(
            settings.managed_ledger_cache_eviction_extend_ttl_of_entries_with_remaining_expected_reads_max_times
        )

    def decide(
        self, entry: CachedEntryView, kind: EvictionPass, threshold_ns: int
    ) -> EvictionDecision | None:
        if (entry.expected_reads or 0) < 1 or entry.requeue_count >= self.max_requeues:
            return None
        return _requeue_unless_live(entry.timestamp_ns, kind, threshold_ns)
