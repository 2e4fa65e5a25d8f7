"""The topic-level tracker's own metrics (PIP-448).

Declared through ``brokerlab_metrics``, as any plugin declares its own (see docs/metrics.md).
"""

from __future__ import annotations

from brokerlab import Metric

__all__ = ["METRICS"]

METRICS: tuple[Metric, ...] = (
    Metric(
        "delayed_subscription_state_bytes",
        "bytes",
        "gauge",
        "Peak bytes of per-subscription tracker state (topic-level tracker only).",
        "delayed",
    ),
    Metric(
        "delayed_prunes",
        "passes",
        "counter",
        "Prune passes that removed something (topic-level tracker).",
        "delayed",
    ),
)
