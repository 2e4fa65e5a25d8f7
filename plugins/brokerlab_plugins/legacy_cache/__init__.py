"""The legacy broker entry cache: Pulsar's managed-ledger cache before PIP-430 (up to 4.0.x).

Registers the ``legacy`` entry cache (spec §0.1, §5). It consults no eviction predicates; pair it
with the ``heap`` cursor container (the default when ``cacheEvictionByExpectedReadCount=false``).
"""

from __future__ import annotations

from collections.abc import Iterator

from brokerlab import EntryCacheRecord, Metric, hookimpl
from brokerlab_plugins.legacy_cache.cache import LegacyEntryCache
from brokerlab_plugins.legacy_cache.metrics import METRICS

__all__ = ["LegacyEntryCache"]


@hookimpl
def brokerlab_entry_caches() -> Iterator[EntryCacheRecord]:
    yield EntryCacheRecord(
        name="legacy",
        description="Pulsar <= 4.0 cache: per-ledger caches, proportional size eviction, "
        "position-order TTL eviction, invalidation up to the slowest reader",
        factory=LegacyEntryCache,
    )


@hookimpl
def brokerlab_metrics() -> Iterator[Metric]:
    yield from METRICS
