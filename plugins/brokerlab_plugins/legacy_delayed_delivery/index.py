"""The bucketed index both trackers use: bucket time -> ledger id -> Roaring bitmap of entry ids.

It keeps three running figures by deltas (§3.2, §3.7): the number of distinct (bucket, ledger,
entry) triples, Pulsar's serialized-size estimate and the real-bytes estimate (:mod:`.sizing`).
"""

from __future__ import annotations

from collections.abc import Iterator

from pyroaring import BitMap
from sortedcontainers import SortedDict

from brokerlab.protocols import Position
from brokerlab_plugins.legacy_delayed_delivery.sizing import (
    BUCKET_BYTES,
    HEAP,
    LEDGER_SLOT_BYTES,
    PORTABLE,
)

__all__ = ["BucketIndex"]


class BucketIndex:
    """A sorted map of buckets; each bucket maps ledger ids to a bitmap of entry ids."""

    __slots__ = ("buckets", "count", "heap_bytes", "pulsar_bytes")

    def __init__(self) -> None:
        self.buckets: SortedDict = SortedDict()
        self.count = 0
        self.pulsar_bytes = 0
        self.heap_bytes = 0

    def __bool__(self) -> bool:
        return bool(self.buckets)

    def first_key(self) -> int | None:
        """The smallest bucket key, or ``None`` when empty."""
        return int(self.buckets.keys()[0]) if self.buckets else None

    def add(self, bucket: int, ledger_id: int, entry_id: int) -> bool:
        """Insert one triple; ``False`` when it was already there (bitmap dedup)."""
        ledgers: dict[int, BitMap] | None = self.buckets.get(bucket)
        if ledgers is None:
            ledgers = {}
            self.buckets[bucket] = ledgers
            self.heap_bytes += BUCKET_BYTES
        bitmap = ledgers.get(ledger_id)
        if bitmap is None:
            bitmap = ledgers[ledger_id] = BitMap()
            self.heap_bytes += LEDGER_SLOT_BYTES
        if entry_id in bitmap:
            return False
        bitmap.add(entry_id)
        self.count += 1
        self.pulsar_bytes += PORTABLE.add_delta(bitmap, entry_id)
        self.heap_bytes += HEAP.add_delta(bitmap, entry_id)
        return True

    def add_many(
        self,
        bucket: int,
        ledger_id: int,
        entries: BitMap,
        sizes: tuple[int, int] | None = None,
    ) -> int:
        """Insert every entry of ``entries`` under one (bucket, ledger); returns how many were new.

        Leaves exactly what :meth:`add` of each entry leaves: adds only ever make array
        containers that turn into bitsets past 4,096 values, and so does a union of such
        bitmaps, so layout, count and both estimates match (the size deltas of single adds
        telescope to the size of the final bitmap). ``entries`` must hold no run container
        (build it with ``optimize=False``). ``sizes`` are ``entries``' own (Pulsar, heap) sizes,
        a shortcut when the slot is empty.
        """
        if not entries:
            return 0
        ledgers: dict[int, BitMap] | None = self.buckets.get(bucket)
        if ledgers is None:
            ledgers = {}
            self.buckets[bucket] = ledgers
            self.heap_bytes += BUCKET_BYTES
        bitmap = ledgers.get(ledger_id)
        if bitmap is None:
            ledgers[ledger_id] = BitMap(entries, optimize=False)
            self.heap_bytes += LEDGER_SLOT_BYTES
            if sizes is None:
                sizes = (PORTABLE.size(entries), HEAP.size(entries))
            self.count += len(entries)
            self.pulsar_bytes += sizes[0]
            self.heap_bytes += sizes[1]
            return len(entries)
        before = len(bitmap)
        old_p, old_h = PORTABLE.size(bitmap), HEAP.size(bitmap)
        bitmap |= entries
        added = len(bitmap) - before
        self.count += added
        self.pulsar_bytes += PORTABLE.size(bitmap) - old_p
        self.heap_bytes += HEAP.size(bitmap) - old_h
        return added

    def contains(self, bucket: int, ledger_id: int, entry_id: int) -> bool:
        ledgers = self.buckets.get(bucket)
        if ledgers is None:
            return False
        bitmap = ledgers.get(ledger_id)
        return bitmap is not None and entry_id in bitmap

    def bitmap(self, bucket: int, ledger_id: int) -> BitMap | None:
        ledgers = self.buckets.get(bucket)
        return None if ledgers is None else ledgers.get(ledger_id)

    def items(self, first: int | None = None) -> Iterator[tuple[int, dict[int, BitMap]]]:
        """Buckets in ascending key order, from ``first`` (inclusive) when given."""
        for key in self.buckets.irange(minimum=first):
            yield key, self.buckets[key]

    def buckets_holding(self, ledger_id: int, entry_id: int) -> list[int]:
        """Every bucket holding the position (a full scan: only for rare conflicts)."""
        return [
            key
            for key, ledgers in self.buckets.items()
            if ledger_id in ledgers and entry_id in ledgers[ledger_id]
        ]

    def take(self, bucket: int, ledger_id: int, entries: BitMap) -> int:
        """Remove ``entries`` from one bitmap; returns how many were there."""
        ledgers = self.buckets.get(bucket)
        bitmap = None if ledgers is None else ledgers.get(ledger_id)
        if bitmap is None:
            return 0
        before = len(bitmap)
        old_p, old_h = PORTABLE.size(bitmap), HEAP.size(bitmap)
        bitmap.difference_update(entries)
        removed = before - len(bitmap)
        self._settle(bucket, ledgers, ledger_id, bitmap, removed, old_p, old_h)
        return removed

    def drain(self, cutoff: int, max_messages: int) -> list[Position]:
        """Remove and return up to ``max_messages`` due triples, in legacy order (§3.6)."""
        out: list[Position] = []
        remaining = max_messages
        buckets = self.buckets
        while remaining > 0 and buckets:
            key = buckets.keys()[0]
            if key > cutoff:
                break
            ledgers: dict[int, BitMap] = buckets[key]
            for ledger_id in sorted(ledgers):
                bitmap = ledgers[ledger_id]
                chosen = bitmap[:remaining] if len(bitmap) > remaining else bitmap.copy()
                out.extend((ledger_id, e) for e in chosen)
                remaining -= len(chosen)
                self.take(key, ledger_id, chosen)
                if remaining <= 0:
                    break
        return out

    def remove_at_or_before(self, position: Position) -> int:
        """Drop every triple whose position is ``<= position``; returns how many went."""
        md_ledger, md_entry = position
        removed = 0
        for key in list(self.buckets.keys()):
            ledgers: dict[int, BitMap] = self.buckets[key]
            for ledger_id in [lid for lid in ledgers if lid <= md_ledger]:
                bitmap = ledgers[ledger_id]
                if ledger_id < md_ledger:
                    gone = bitmap.copy()
                elif md_entry < 0:
                    continue
                else:
                    gone = BitMap(bitmap[: int(bitmap.rank(md_entry))])
                if gone:
                    removed += self.take(key, ledger_id, gone)
        return removed

    def clear(self) -> None:
        self.buckets.clear()
        self.count = self.pulsar_bytes = self.heap_bytes = 0

    def _settle(
        self,
        bucket: int,
        ledgers: dict[int, BitMap],
        ledger_id: int,
        bitmap: BitMap,
        removed: int,
        old_pulsar: int,
        old_heap: int,
    ) -> None:
        self.count -= removed
        self.pulsar_bytes += PORTABLE.size(bitmap) - old_pulsar
        self.heap_bytes += HEAP.size(bitmap) - old_heap
        if not bitmap:
            del ledgers[ledger_id]
            self.heap_bytes -= LEDGER_SLOT_BYTES
            if not ledgers:
                del self.buckets[bucket]
                self.heap_bytes -= BUCKET_BYTES
