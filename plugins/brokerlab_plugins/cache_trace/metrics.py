"""The cache-trace simulator's metrics: a trace replayed through a Pulsar entry cache.

Declared through ``brokerlab_metrics``, as any plugin declares its own (see docs/metrics.md).
"""

from __future__ import annotations

from functools import partial

from brokerlab import Metric

__all__ = ["METRICS"]

_trace = partial(Metric, group="cache_trace", simulator="cache-trace")

METRICS: tuple[Metric, ...] = (
    _trace(
        "trace_requests",
        "requests",
        "counter",
        "Trace requests replayed through the entry cache (zero-size requests excluded).",
    ),
    _trace(
        "trace_skipped_requests",
        "requests",
        "counter",
        "Zero-size requests in the replayed span, left out as libCacheSim leaves them out by default.",
    ),
    _trace(
        "trace_objects",
        "objects",
        "gauge",
        "Distinct objects requested: each one's first request is a miss for any cache.",
    ),
    _trace(
        "trace_span_s", "s", "gauge", "Trace time replayed, from the first request to the last."
    ),
    _trace("trace_hits", "requests", "counter", "Requests the entry cache served."),
    _trace(
        "trace_misses",
        "requests",
        "counter",
        "Requests the entry cache could not serve (read from storage).",
    ),
    _trace(
        "trace_hit_ratio",
        "ratio",
        "ratio",
        "trace_hits / trace_requests, comparable with a generic cache's request hit ratio on the same trace.",
        higher_is_better=True,
    ),
    _trace(
        "trace_byte_hit_ratio",
        "ratio",
        "ratio",
        "Bytes of the requests served by the cache / bytes requested.",
        higher_is_better=True,
    ),
    _trace(
        "trace_miss_bytes", "bytes", "counter", "Bytes of the missed requests: what storage serves."
    ),
    _trace(
        "trace_peak_cache_bytes",
        "bytes",
        "gauge",
        "Most bytes the cache counted, right after admitting a miss (before the size eviction it may trigger).",
    ),
)
