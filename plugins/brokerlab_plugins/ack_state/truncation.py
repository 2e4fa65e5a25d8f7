"""Which part of the ack state a write keeps: the count caps (§4) and the PIP-299 byte budget.

All rules keep the lowest positions and drop everything above the cut, so a truncated write is
still a subset of the truth: what is left out is redelivered after a restart, never lost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from brokerlab.protocols import BatchAck, Position
from brokerlab_plugins.ack_state.shapes import LedgerState, Range, ledger_words
from brokerlab_plugins.ack_state.wire_size import (
    batch_info_bytes,
    long_list_map_bytes,
    message_range_bytes,
)

__all__ = ["Release", "first_batches", "to_ranges", "walk_budget", "walk_ledgers_budget"]

Release = Literal["4.x", "5.0"]


def first_batches(batches: Mapping[Position, BatchAck], limit: int) -> dict[Position, BatchAck]:
    """The ``limit`` lowest batch bitsets by position (the batch-index cap)."""
    if not batches:
        return {}  # most writes: no partially acked batch
    return {pos: batches[pos] for pos in sorted(batches)[: max(0, limit)]}


def to_ranges(ledgers: Mapping[int, LedgerState], limit: int, release: Release) -> list[int]:
    """Ledgers the long-array form keeps under the cardinality cap ``limit`` (§4.3).

    The running total counts acked entries, not ranges. 4.x (``OpenLongPairRangeSet``) includes a
    ledger while the total *before* it is within the cap, so the first ledger always goes in and so
    does the one that crosses the cap; 5.0 (``PositionRangeSet``) includes it only if the total
    *after* it is within the cap, and stops at the first exclusion.
    """
    kept: list[int] = []
    total = 0
    for lid, ledger in ledgers.items():
        if not ledger.ranges:
            continue
        after = total + ledger.cardinality
        if (total if release == "4.x" else after) > limit:
            break
        kept.append(lid)
        total = after
    return kept


def walk_budget(
    ranges: Sequence[Range], batches: Mapping[Position, BatchAck], budget: int
) -> tuple[int, dict[Position, BatchAck], int]:
    """PIP-299 MessageRange walk: ranges (placed by upper bound) and batches in position order.

    Items are kept while the running total stays within ``budget``; the walk stops at the first
    item that does not fit. Returns (ranges kept, batches kept, bytes kept).
    """
    if not batches:  # the common case: a running sum over the ranges alone
        used = 0
        for kept, r in enumerate(ranges):
            cost = message_range_bytes(*r)
            if used + cost > budget:
                return kept, {}, used
            used += cost
        return len(ranges), {}, used
    items: list[tuple[Position, int, int]] = [(upper, 0, i) for i, (_, upper) in enumerate(ranges)]
    items.extend((pos, 1, 0) for pos in batches)
    items.sort()
    used = kept_ranges = 0
    kept_batches: dict[Position, BatchAck] = {}
    for pos, kind, i in items:
        cost = message_range_bytes(*ranges[i]) if kind == 0 else batch_info_bytes(pos, batches[pos])
        if used + cost > budget:
            break
        used += cost
        if kind == 0:
            kept_ranges += 1
        else:
            kept_batches[pos] = batches[pos]
    return kept_ranges, kept_batches, used


def walk_ledgers_budget(
    ledgers: Mapping[int, LedgerState], budget: int
) -> tuple[list[int], dict[Position, BatchAck], int]:
    """PIP-299 long-array walk: whole LongListMap entries (and each ledger's batches) in order.

    A ledger's map is placed after its batch bitsets [brokerlab model]; the walk stops at the first
    item that does not fit. Returns (ledgers kept, batches kept, bytes kept).
    """
    kept: list[int] = []
    kept_batches: dict[Position, BatchAck] = {}
    used = 0
    for lid, ledger in ledgers.items():
        for pos, ack in ledger.batches:
            cost = batch_info_bytes(pos, ack)
            if used + cost > budget:
                return kept, kept_batches, used
            used += cost
            kept_batches[pos] = ack
        if ledger.ranges:
            cost = long_list_map_bytes(lid, ledger_words(ledger.ranges))
            if used + cost > budget:
                return kept, kept_batches, used
            used += cost
            kept.append(lid)
    return kept, kept_batches, used
