"""The Kafka tiered-storage simulator's metrics: the remote index cache of one broker.

Declared through ``brokerlab_metrics``, as any plugin declares its own (see docs/metrics.md).
"""

from __future__ import annotations

from functools import partial

from brokerlab import Metric

__all__ = ["METRICS"]

_kafka = partial(Metric, group="kafka_index_cache", simulator="kafka-tiered-storage")

METRICS: tuple[Metric, ...] = (
    _kafka(
        "index_lookups",
        "lookups",
        "counter",
        "Index lookups (getIndexEntry) by remote fetches this broker served.",
    ),
    _kafka("index_cache_hits", "lookups", "counter", "Lookups served by a live cached entry."),
    _kafka(
        "index_cache_misses",
        "lookups",
        "counter",
        "Lookups that loaded the entry (absent, or expired but not yet removed).",
    ),
    _kafka(
        "index_cache_hit_ratio",
        "ratio",
        "ratio",
        "index_cache_hits / index_lookups.",
        higher_is_better=True,
    ),
    _kafka(
        "remote_index_fetches",
        "fetches",
        "counter",
        "Index files fetched from remote storage (one per index type per load).",
    ),
    _kafka(
        "remote_index_fetches_offset",
        "fetches",
        "counter",
        "Offset index fetches from remote storage.",
    ),
    _kafka(
        "remote_index_fetches_timestamp",
        "fetches",
        "counter",
        "Time index fetches from remote storage.",
    ),
    _kafka(
        "remote_index_fetches_transaction",
        "fetches",
        "counter",
        "Transaction index fetches from remote storage, not-found ones included (an empty file).",
    ),
    _kafka(
        "remote_index_fetched_bytes",
        "bytes",
        "counter",
        "Bytes of index files fetched from remote storage.",
    ),
    _kafka(
        "index_cache_live_bytes_peak",
        "bytes",
        "gauge",
        "Peak sum of the weights of live cached entries (expired ones not yet removed are "
        "resident, not live).",
    ),
    _kafka(
        "index_cache_live_bytes_mean",
        "bytes",
        "gauge",
        "Time-weighted mean of the live cached weight, sampled every sampling interval.",
    ),
    _kafka(
        "index_cache_resident_bytes_peak",
        "bytes",
        "gauge",
        "Peak bytes of index files on disk: cached entries plus .deleted files awaiting deletion.",
    ),
    _kafka(
        "index_cache_resident_bytes_end",
        "bytes",
        "gauge",
        "Index-file bytes on disk at the end of the run.",
    ),
    _kafka(
        "index_cache_stale_bytes_peak",
        "bytes",
        "gauge",
        "Peak bytes of cached entries whose remote segment has been deleted.",
    ),
    _kafka(
        "index_cache_stale_bytes_end",
        "bytes",
        "gauge",
        "Bytes of stale cached entries at the end of the run.",
    ),
    _kafka(
        "index_cache_stale_entries_end",
        "entries",
        "gauge",
        "Stale cached entries at the end of the run.",
    ),
    _kafka(
        "index_cache_stale_byte_seconds", "byte-s", "counter", "Integral of stale bytes over time."
    ),
    _kafka(
        "index_cache_stale_residence_mean_s",
        "s",
        "gauge",
        "Mean time from a segment's deletion until its cached entry left the cache (entries still cached count until the end).",
    ),
    _kafka("index_cache_stale_residence_max_s", "s", "gauge", "Longest such time."),
    _kafka(
        "index_cache_evictions_size", "entries", "counter", "Entries evicted by the size bound."
    ),
    _kafka(
        "index_cache_evictions_expired",
        "entries",
        "counter",
        "Entries removed after their TTL expired.",
    ),
    _kafka(
        "index_cache_evictions_resize",
        "entries",
        "counter",
        "Entries evicted by a resize of the cache.",
    ),
    _kafka(
        "index_cache_removals_explicit",
        "entries",
        "counter",
        "Entries removed explicitly (the leader deleting a segment it owns).",
    ),
    _kafka(
        "remote_segments_deleted",
        "segments",
        "counter",
        "Remote segments deleted by retention, by any leader.",
    ),
    _kafka(
        "leadership_changes",
        "events",
        "counter",
        "Partition leadership moves to or from the observed broker.",
    ),
)
