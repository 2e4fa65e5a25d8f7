"""Bulk loading for benchmarks: many accepted adds at one instant, one call per (bucket, ledger).

Adding 1,000,000 delayed messages one by one to each of 1,000 legacy trackers is 10^9 Python
calls. A :class:`DelayedBatch` groups the messages once, by (bucket, ledger), into Roaring bitmaps
built from their values (``optimize=False``: a run container is something single adds never
make); a tracker's ``load`` then unions each group into its own structures. The result is the
state that ``add_message`` of every message, in the batch's order and at the current instant,
would leave: the same (bucket, ledger, entry) triples and container layouts, the same count and
memory estimates, fixed-delay flags and timer target (``tests/unit/test_delayed_bulk_load.py``
builds trackers both ways and compares them). A tracker refuses a batch holding a message it
would not accept now (due at or before its add cutoff), or one bucketed by another rule.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np
from pyroaring import BitMap

from brokerlab_plugins.legacy_delayed_delivery.buckets import LONG_MAX, Bucketing, add_cutoff
from brokerlab_plugins.legacy_delayed_delivery.sizing import HEAP, PORTABLE

__all__ = ["DelayedBatch", "Group"]


@dataclass(frozen=True)
class Group:
    """The entries of one ledger that fall in one bucket, with the bitmap's own sizes."""

    bucket: int
    ledger_id: int
    entries: BitMap
    pulsar_bytes: int
    heap_bytes: int


@dataclass(frozen=True)
class DelayedBatch:
    """Messages grouped for :meth:`load`; build it with :meth:`of`.

    ``min_gap`` is the smallest ``deliverAt[i] - max(0, deliverAt[:i])`` in the batch's order:
    with it and the extremes, the fixed-delay rule of §3.9 ("out of order by more than a tick")
    is decided for the whole batch without replaying it.
    """

    bucketing: Bucketing
    groups: tuple[Group, ...]
    messages: int
    min_deliver_at: int
    max_deliver_at: int
    min_gap: int

    @classmethod
    def of(
        cls,
        ledgers: np.ndarray,
        entries: np.ndarray,
        deliver_at: np.ndarray,
        bucketing: Bucketing,
    ) -> DelayedBatch:
        """Messages ``(ledgers[i], entries[i], deliver_at[i])``, in the order they are added."""
        d = np.asarray(deliver_at, dtype=np.int64)
        led = np.asarray(ledgers, dtype=np.int64)
        ent = np.asarray(entries, dtype=np.int64)
        if not (len(d) == len(led) == len(ent)) or len(d) == 0:
            raise ValueError("a batch needs equally long, non-empty arrays")
        if ent.min() < 0 or ent.max() >= 1 << 32:
            raise ValueError("entry ids must fit the index's 32-bit bitmaps")
        buckets = _buckets(d, bucketing)
        order = np.lexsort((ent, led, buckets))
        b, lg = buckets[order], led[order]
        values = ent[order].astype(np.uint32)
        cut = np.flatnonzero((b[1:] != b[:-1]) | (lg[1:] != lg[:-1])) + 1
        starts = np.concatenate(([0], cut))
        ends = np.concatenate((cut, [len(values)]))
        groups = []
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            chunk = array("I")
            chunk.frombytes(values[s:e].tobytes())
            bitmap = BitMap(chunk, optimize=False)
            groups.append(
                Group(int(b[s]), int(lg[s]), bitmap, PORTABLE.size(bitmap), HEAP.size(bitmap))
            )
        highest_before = np.concatenate(([0], np.maximum.accumulate(d)[:-1]))
        return cls(
            bucketing=bucketing,
            groups=tuple(groups),
            messages=len(d),
            min_deliver_at=int(d.min()),
            max_deliver_at=int(d.max()),
            min_gap=int((d - np.maximum(highest_before, 0)).min()),
        )

    def check(self, bucketing: Bucketing, now_ms: int, tick_ms: int) -> None:
        """Raise unless a tracker with this bucketing and tick would accept every message now."""
        if bucketing != self.bucketing:
            raise ValueError(
                f"the batch is bucketed by {self.bucketing}, the tracker by {bucketing}"
            )
        cutoff = add_cutoff(now_ms, tick_ms, bucketing.strict)
        if self.min_deliver_at < 0 or self.min_deliver_at <= cutoff:
            raise ValueError(
                f"a message due at {self.min_deliver_at} would be refused (cutoff {cutoff}); "
                "a bulk load holds accepted adds only"
            )

    def keeps_fixed_delay(self, highest_before: int, tick_ms: int) -> bool:
        """Whether adding the batch in order after ``highest_before`` stays within one tick of
        in-order (``deliverAt >= highest so far - tick`` for every message)."""
        return self.min_gap >= -tick_ms and self.min_deliver_at >= highest_before - tick_ms


def _buckets(deliver_at: np.ndarray, bucketing: Bucketing) -> np.ndarray:
    """:meth:`Bucketing.bucket` of every value, vectorised (saturation cases in Python)."""
    if int(deliver_at.max()) > LONG_MAX - bucketing.precision:
        return np.array([bucketing.bucket(int(x)) for x in deliver_at], dtype=np.int64)
    bits = bucketing.bits
    if bucketing.strict and not bucketing.previous_rule:
        return ((deliver_at + (1 << bits) - 1) >> bits) << bits
    return (deliver_at >> bits) << bits
