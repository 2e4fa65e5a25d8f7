"""The legacy cache's own metrics: what only its per-ledger design counts.

Declared through ``brokerlab_metrics``, as any plugin declares its own (see docs/metrics.md).
"""

from __future__ import annotations

from brokerlab import Metric

__all__ = ["METRICS"]

METRICS: tuple[Metric, ...] = (
    Metric(
        "cache_inserts_refused",
        "entries",
        "counter",
        "Inserts refused because the cache was full (legacy cache only).",
        "cache",
    ),
    Metric(
        "cache_ledgers_visited",
        "ledgers",
        "counter",
        "Managed-ledger caches visited by timestamp eviction passes (legacy CPU proxy).",
        "cache",
    ),
)
