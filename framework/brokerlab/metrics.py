"""The one registry of metric names: unit, kind and meaning of every number a simulation reports.

Plugins report through ``stats()`` and the broker model through its own counters; both may only use
names registered here, so results, reports and ``docs/metrics.md`` (generated from this table)
always agree on what a number means.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Literal

__all__ = ["METRICS", "Metric", "invariants", "metric", "metrics_of"]

Kind = Literal["counter", "gauge", "ratio", "latency"]


@dataclass(frozen=True)
class Metric:
    """A reported number. ``invariant`` metrics must be zero in every correct run.

    ``simulator`` names the broker model that reports it: a run reports exactly the metrics of its
    simulator, and the others stay empty (null) in matrix results. A metric with ``reported_when``
    is reported only by runs that meet that condition (a mechanism the workload switches on), so
    the results of every other run stay as they were before the mechanism existed.
    ``higher_is_better`` tells a report which way to rank configurations on the metric (a hit
    ratio, a rate achieved); every other metric is a cost, where lower is better.
    """

    name: str
    unit: str
    kind: Kind
    description: str
    group: str
    invariant: bool = False
    simulator: str = "pulsar"
    reported_when: str = ""
    higher_is_better: bool = False


# The metrics of one group share its group, simulator and reporting condition.
_kafka = partial(Metric, group="kafka_index_cache", simulator="kafka-tiered-storage")
_trace = partial(Metric, group="cache_trace", simulator="cache-trace")
_publishing = partial(
    Metric,
    group="publishing",
    reported_when="a topic sets max_pending_messages or storage.write_latency_ms is not zero",
)


_TABLE: tuple[Metric, ...] = (
    # -- messages ------------------------------------------------------------------------------
    Metric(
        "published",
        "messages",
        "counter",
        "Messages published by producers: persisted to the managed ledgers (with a write latency, once their write completed), the backlog written before time zero included.",
        "messages",
    ),
    Metric(
        "published_entries",
        "entries",
        "counter",
        "Entries (batches) written to the managed ledgers.",
        "messages",
    ),
    Metric(
        "delivered",
        "messages",
        "counter",
        "Messages dispatched to consumers, redeliveries included.",
        "messages",
    ),
    Metric(
        "acked",
        "messages",
        "counter",
        "Messages acknowledged by consumers; a message redelivered after a restart and acknowledged again counts again.",
        "messages",
    ),
    Metric(
        "redelivered",
        "messages",
        "counter",
        "Messages dispatched again that were delivered and not acknowledged: after a negative ack, because their consumer left, or after a broker restart or unload (acknowledged ones a restart forgot: see redelivered_after_restart).",
        "messages",
    ),
    Metric(
        "redelivered_after_restart",
        "messages",
        "counter",
        "Messages acknowledged before a broker restart and dispatched again after it, because the persisted ack state did not record them.",
        "messages",
    ),
    Metric(
        "unacked_at_end",
        "messages",
        "gauge",
        "Messages not acknowledged when the run ends, summed over subscriptions as delivered and acked are: a message two subscriptions never acknowledged counts twice.",
        "messages",
    ),
    Metric(
        "lost",
        "messages",
        "counter",
        "Messages a subscription will never receive: recovered as acknowledged without having been acknowledged. Must be zero.",
        "invariants",
        invariant=True,
    ),
    Metric(
        "delivered_after_ack",
        "messages",
        "counter",
        "Messages dispatched to a subscription after that subscription acknowledged them (outside a restart). Must be zero.",
        "invariants",
        invariant=True,
    ),
    Metric(
        "delayed_early_deliveries",
        "messages",
        "counter",
        "Delayed messages handed out before their deliver-at time (strict mode) or more than one tick of the subscription's own before it (non-strict). Must be zero for a faithful tracker.",
        "invariants",
        invariant=True,
    ),
    Metric(
        "latency_p50_ms",
        "ms",
        "latency",
        "Median end-to-end latency (publish to consumer processing), virtual time.",
        "latency",
    ),
    Metric(
        "latency_p99_ms",
        "ms",
        "latency",
        "99th percentile end-to-end latency, virtual time.",
        "latency",
    ),
    # -- entry cache ---------------------------------------------------------------------------
    Metric("cache_hits", "entries", "counter", "Entries served from the entry cache.", "cache"),
    Metric(
        "cache_misses", "entries", "counter", "Entries the entry cache could not serve.", "cache"
    ),
    Metric(
        "cache_hit_ratio",
        "ratio",
        "ratio",
        "cache_hits / (cache_hits + cache_misses).",
        "cache",
        higher_is_better=True,
    ),
    Metric(
        "storage_entries_read",
        "entries",
        "counter",
        "Entries read from storage (BookKeeper reads).",
        "cache",
    ),
    Metric("storage_bytes_read", "bytes", "counter", "Bytes read from storage.", "cache"),
    Metric(
        "unavailable_ms",
        "ms",
        "counter",
        "Time topics were unavailable during restart and unload outages (outage_s), summed over "
        "topics.",
        "messages",
    ),
    Metric(
        "brokers",
        "brokers",
        "gauge",
        "Brokers in the cluster (the workload's [cluster] table). With more than one, counters "
        "add up over brokers and gauges are the largest broker's.",
        "messages",
    ),
    Metric(
        "topic_moves",
        "topics",
        "counter",
        "Topics handed over to another broker when a broker's outage ended, or moved with their "
        "bundle by an unload of a topic.",
        "messages",
    ),
    Metric(
        "held_entries",
        "entries",
        "counter",
        "Entries producers held while their topic was unavailable, persisted once it was back.",
        "messages",
    ),
    Metric(
        "storage_read_ops",
        "reads",
        "counter",
        "Read operations sent to storage (each reads one or more entries of one ledger).",
        "cache",
    ),
    Metric(
        "storage_entries_shared",
        "entries",
        "counter",
        "Entries a read took from another read of the same ledger already under way, instead of "
        "reading them from storage again (Pulsar's PendingReadsManager). Zero when storage reads "
        "take no time.",
        "reads",
    ),
    Metric(
        "storage_wait_ms",
        "ms",
        "counter",
        "Time dispatchers' reads were under way, from issue to hand-over, summed over reads: "
        "waiting in the in-flight limiter's line and for storage.",
        "reads",
    ),
    Metric(
        "storage_reads_in_flight_peak",
        "reads",
        "gauge",
        "Most storage read operations under way at once on the broker.",
        "reads",
    ),
    Metric(
        "reads_in_flight_peak_bytes",
        "bytes",
        "gauge",
        "Peak of the in-flight reads limiter's estimated bytes held "
        "(managedLedgerMaxReadsInFlightSizeInMB; zero when it is disabled).",
        "reads",
    ),
    Metric(
        "read_permit_wait_ms",
        "ms",
        "counter",
        "Time reads waited in the in-flight reads limiter's line, summed over reads.",
        "reads",
    ),
    Metric(
        "read_failures",
        "reads",
        "counter",
        "Reads that failed because the in-flight reads limiter timed them out or had no room in "
        "its line; each makes its dispatcher back off (dispatcherReadFailureBackoff*).",
        "reads",
    ),
    Metric("cache_inserts", "entries", "counter", "Entries inserted into the cache.", "cache"),
    Metric(
        "cache_inserts_refused",
        "entries",
        "counter",
        "Inserts refused because the cache was full (legacy cache only).",
        "cache",
    ),
    Metric(
        "cache_peak_bytes", "bytes", "gauge", "Largest number of bytes the cache held.", "cache"
    ),
    Metric(
        "cache_max_overshoot_bytes",
        "bytes",
        "gauge",
        "Largest excess of cached bytes over the configured limit.",
        "cache",
    ),
    Metric(
        "cache_evictions_time",
        "entries",
        "counter",
        "Entries evicted because their time to live ran out.",
        "cache",
    ),
    Metric("cache_evictions_size", "entries", "counter", "Entries evicted to free space.", "cache"),
    Metric(
        "cache_evictions_invalidation",
        "entries",
        "counter",
        "Entries removed because every reader moved past them.",
        "cache",
    ),
    Metric(
        "cache_evictions_clear",
        "entries",
        "counter",
        "Entries removed when a cache was cleared or closed.",
        "cache",
    ),
    Metric(
        "cache_evictions_ledger_deleted",
        "entries",
        "counter",
        "Entries removed with a deleted or trimmed ledger.",
        "cache",
    ),
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
        "cache_eviction_work",
        "entries",
        "counter",
        "Queue slots or cached entries examined by eviction passes (a CPU proxy).",
        "cache",
    ),
    Metric(
        "cache_ledgers_visited",
        "ledgers",
        "counter",
        "Managed-ledger caches visited by timestamp eviction passes (legacy CPU proxy).",
        "cache",
    ),
    Metric(
        "cache_non_evictable_bytes",
        "bytes",
        "gauge",
        "Bytes of cached entries with at least one expected read, at the end.",
        "cache",
    ),
    # -- delayed delivery ----------------------------------------------------------------------
    Metric(
        "delayed_messages",
        "messages",
        "counter",
        "Messages the delayed-delivery tracker accepted.",
        "delayed",
    ),
    Metric(
        "delayed_max_earliness_ms",
        "ms",
        "gauge",
        "Largest earliness of an early delayed delivery.",
        "delayed",
    ),
    Metric(
        "delayed_duplicate_deliveries",
        "messages",
        "counter",
        "Positions returned to a subscription more often than that subscription added them.",
        "delayed",
    ),
    Metric(
        "delayed_spurious_available",
        "calls",
        "counter",
        "has-message-available answered true, then nothing was scheduled.",
        "delayed",
    ),
    Metric(
        "delayed_foreign_tick_changes",
        "events",
        "counter",
        "A subscription's tick changed without a tick change of its own.",
        "delayed",
    ),
    Metric(
        "delayed_index_bytes",
        "bytes",
        "gauge",
        "Peak bytes of the delayed-delivery index (shared index, or the sum over trackers).",
        "delayed",
    ),
    Metric(
        "delayed_subscription_state_bytes",
        "bytes",
        "gauge",
        "Peak bytes of per-subscription tracker state (topic-level tracker only).",
        "delayed",
    ),
    Metric(
        "delayed_index_positions",
        "positions",
        "gauge",
        "Peak (bucket, position) pairs stored in the index.",
        "delayed",
    ),
    Metric(
        "delayed_pulsar_memory_bytes",
        "bytes",
        "gauge",
        "Peak of the trackers' own memory estimate, as Pulsar reports it.",
        "delayed",
    ),
    Metric(
        "delayed_prunes",
        "passes",
        "counter",
        "Prune passes that removed something (topic-level tracker).",
        "delayed",
    ),
    Metric(
        "delayed_timer_wakeups",
        "wakeups",
        "counter",
        "Dispatcher read wake-ups requested by delayed-delivery timers.",
        "delayed",
    ),
    # -- ack state -----------------------------------------------------------------------------
    Metric(
        "ack_persists",
        "writes",
        "counter",
        "Cursor ack-state writes (cursor-ledger entries and metadata-store nodes).",
        "ack_state",
    ),
    Metric(
        "ack_persisted_bytes",
        "bytes",
        "counter",
        "Bytes of every cursor ack-state write.",
        "ack_state",
    ),
    Metric(
        "ack_ranges_dropped",
        "ranges",
        "counter",
        "Acked ranges left out of persists because of a limit, summed over persists.",
        "ack_state",
    ),
    Metric(
        "ack_write_amplification",
        "ratio",
        "ratio",
        "Bytes written / bytes of the state that changed since the previous persist.",
        "ack_state",
    ),
    Metric(
        "ack_bytes_per_ack",
        "bytes",
        "ratio",
        "Ack-state bytes written per acknowledgement.",
        "ack_state",
    ),
    Metric(
        "ack_max_ranges",
        "ranges",
        "gauge",
        "Largest individually-acked range count of any cursor.",
        "ack_state",
    ),
    Metric(
        "dispatch_paused_ms",
        "ms",
        "counter",
        "Time dispatchers spent paused by the ack-state persister, summed over subscriptions.",
        "ack_state",
    ),
    Metric(
        "ack_changed_bytes",
        "bytes",
        "counter",
        "Bytes of ack state changed since each cursor's previous successful persist (header, properties, MessageRange form of the changed ledgers): the denominator of ack_write_amplification.",
        "ack_state",
    ),
    Metric(
        "ack_metadata_store_writes",
        "writes",
        "counter",
        "Cursor metadata-store node writes: ledger switches, BookKeeper-failure fallbacks, closes.",
        "ack_state",
    ),
    Metric(
        "ack_oversize_entries",
        "writes",
        "counter",
        "Cursor-ledger entries larger than the BookKeeper frame (fallback to the metadata store; PIP-81: a failed flush).",
        "ack_state",
    ),
    Metric(
        "ack_cursor_ledger_rollovers",
        "events",
        "counter",
        "Cursor ledgers rolled over (entry count or age).",
        "ack_state",
    ),
    Metric(
        "ack_writes_lost_in_flight",
        "writes",
        "counter",
        "Cursor-ledger writes of ack state still in flight when their broker crashed: never durable, so recovery read the state before them and their acknowledgements went out again.",
        "ack_state",
        reported_when="storage.write_latency_ms is not zero (by the persisters that model writes in flight)",
    ),
    Metric(
        "ack_truncations",
        "builds",
        "counter",
        "Persists whose MessageRange list was truncated by managedLedgerMaxUnackedRangesToPersist (unacked_ranges.truncated).",
        "ack_state",
    ),
    Metric(
        "ack_batch_truncations",
        "builds",
        "counter",
        "Persists whose batch bitsets were truncated by managedLedgerMaxBatchDeletedIndexToPersist.",
        "ack_state",
    ),
    Metric(
        "ack_ledgers_dropped",
        "ledgers",
        "counter",
        "Long-array form: ledgers left out by the toRanges cardinality cap, summed over persists.",
        "ack_state",
    ),
    Metric(
        "ack_entries_dropped",
        "entries",
        "counter",
        "Long-array form: acked entries left out by the toRanges cardinality cap, summed over persists.",
        "ack_state",
    ),
    Metric(
        "ack_bytes_dropped",
        "bytes",
        "counter",
        "PIP-299 byte limit: bytes of individual acks left out of persists, summed over persists.",
        "ack_state",
    ),
    Metric(
        "ack_swap_ins",
        "ledgers",
        "counter",
        "PIP-81: per-ledger ack state swapped into memory from the cursor ledger.",
        "ack_state",
    ),
    Metric(
        "ack_swap_outs",
        "ledgers",
        "counter",
        "PIP-81: per-ledger ack state swapped out of memory by the LRU cap.",
        "ack_state",
    ),
    Metric("broker_restarts", "events", "counter", "Broker restarts simulated.", "ack_state"),
    Metric(
        "dedup_producers_lost",
        "producers",
        "counter",
        "With deduplication on: producers whose last sequence id a restart or unload lost (not in the recovered pulsar.dedup snapshot, no entry after it).",
        "ack_state",
    ),
    # -- publishing: closed-loop producers and write latency -----------------------------------
    _publishing(
        "publish_offered",
        "messages",
        "counter",
        "Messages the producers' arrival processes offered while publishing: published, rejected, still waiting for room in a blocked producer's queue when producers stopped, or still being written when the run ended.",
    ),
    _publishing(
        "publish_rate_achieved",
        "messages/s",
        "ratio",
        "Messages sent while publishing and persisted by the end of the run, per second of the publishing period (time zero until the last producer stops). Below the offered rate when producers wait for their pending sends or reject sends.",
        higher_is_better=True,
    ),
    _publishing(
        "publish_latency_p50_ms",
        "ms",
        "latency",
        "Median publish latency: from a message's send to its entry being persisted (its write and every earlier write of the topic completed), virtual time, 1 us resolution.",
    ),
    _publishing(
        "publish_latency_p99_ms",
        "ms",
        "latency",
        "99th percentile publish latency, virtual time, 1 us resolution.",
    ),
    _publishing(
        "publish_rejected",
        "messages",
        "counter",
        "Messages whose send failed at once because their producer had max_pending_messages pending (block_if_queue_full = false).",
    ),
    _publishing(
        "producer_blocked_ms",
        "ms",
        "counter",
        "Time producers spent blocked in send, their queue of pending messages full (block_if_queue_full = true), summed over producers.",
    ),
    # -- Kafka tiered storage: the remote index cache (simulator kafka-tiered-storage) ---------
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
    # -- cache trace replay (the cache-trace simulator) ------------------------------------------
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

METRICS: dict[str, Metric] = {m.name: m for m in _TABLE}


def metric(name: str) -> Metric:
    """The registered metric ``name``; a KeyError names the unknown metric."""
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"metric {name!r} is not registered in brokerlab.metrics") from None


def metrics_of(simulator: str, *, conditional: bool = True) -> list[str]:
    """Names of the metrics that ``simulator`` reports, in registry order; without the ones
    reported only under a condition when ``conditional`` is false (what every run reports)."""
    return [
        m.name for m in _TABLE if m.simulator == simulator and (conditional or not m.reported_when)
    ]


def invariants() -> list[str]:
    """Names of the metrics that must be zero in every correct run."""
    return [m.name for m in _TABLE if m.invariant]
