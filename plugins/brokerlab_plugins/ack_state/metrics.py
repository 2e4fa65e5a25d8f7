"""The ack-state persisters' own metrics: the state each persist changed, the limits that
truncate it, where it is written.

Declared through ``brokerlab_metrics``, as any plugin declares its own (see docs/metrics.md).
"""

from __future__ import annotations

from brokerlab import Metric

__all__ = ["METRICS"]

METRICS: tuple[Metric, ...] = (
    Metric(
        "ack_write_amplification",
        "ratio",
        "ratio",
        "Bytes written / bytes of the state that changed since the previous persist.",
        "ack_state",
        ratio_of=("ack_persisted_bytes", ("ack_changed_bytes",)),
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
)
