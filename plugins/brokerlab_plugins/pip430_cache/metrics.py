"""PIP-430's own metrics: its removal queue's requeues and the bytes expected reads keep.

Declared through ``brokerlab_metrics``, as any plugin declares its own (see docs/metrics.md).
"""

from __future__ import annotations

from brokerlab import Metric

__all__ = ["METRICS"]

METRICS: tuple[Metric, ...] = (
    Metric(
        "cache_requeues_accessed",
        "entries",
        "counter",
        "Removal-queue requeues because the entry was recently accessed.",
        "cache",
    ),
    Metric(
        "cache_requeues_expected_reads",
        "entries",
        "counter",
        "Removal-queue requeues because reads were still expected.",
        "cache",
    ),
    Metric(
        "cache_non_evictable_bytes",
        "bytes",
        "gauge",
        "Bytes of cached entries with at least one expected read, at the end.",
        "cache",
    ),
)
