"""PIP-430's broker entry cache, as merged by apache/pulsar PR #24623 (released in 4.2.x).

Registers the ``pip430`` entry cache and the two eviction predicates that PIP-430's removal queue
consults: ``recently-accessed`` (``managedLedgerCacheEvictionExtendTTLOfRecentlyAccessed``) and
``expected-reads`` (``cacheEvictionByExpectedReadCount``). The host builds the chain from those
Pulsar switches plus ``sim.evictionPredicates``, so a third-party predicate joins the same chain.
"""

from __future__ import annotations

from collections.abc import Iterator

from brokerlab import EntryCacheRecord, EvictionPredicateRecord, Metric, hookimpl
from brokerlab_plugins.pip430_cache.cache import Pip430EntryCache
from brokerlab_plugins.pip430_cache.entry import CachedEntry
from brokerlab_plugins.pip430_cache.metrics import METRICS
from brokerlab_plugins.pip430_cache.predicates import (
    ExpectedReadsPredicate,
    RecentlyAccessedPredicate,
    StatelessPredicate,
)
from brokerlab_plugins.pip430_cache.queue import RemovalQueue

__all__ = [
    "CachedEntry",
    "ExpectedReadsPredicate",
    "Pip430EntryCache",
    "RecentlyAccessedPredicate",
    "RemovalQueue",
    "StatelessPredicate",
]


@hookimpl
def brokerlab_entry_caches() -> Iterator[EntryCacheRecord]:
    yield EntryCacheRecord(
        name="pip430",
        description="PIP-430 (Pulsar 4.2): one global removal queue, expected read counts, "
        "TTL extension of recently accessed entries",
        factory=Pip430EntryCache,
        uses_eviction_predicates=True,
    )


@hookimpl
def brokerlab_eviction_predicates() -> Iterator[EvictionPredicateRecord]:
    yield EvictionPredicateRecord(
        name="recently-accessed",
        description="Requeue an entry read since it was last queued "
        "(managedLedgerCacheEvictionExtendTTLOfRecentlyAccessed)",
        factory=lambda context: RecentlyAccessedPredicate(),
    )
    yield EvictionPredicateRecord(
        name="expected-reads",
        description="Requeue an entry that still has expected reads, up to "
        "managedLedgerCacheEvictionExtendTTLOfEntriesWithRemainingExpectedReadsMaxTimes times",
        factory=lambda context: ExpectedReadsPredicate.from_settings(context.settings),
    )


@hookimpl
def brokerlab_metrics() -> Iterator[Metric]:
    yield from METRICS
