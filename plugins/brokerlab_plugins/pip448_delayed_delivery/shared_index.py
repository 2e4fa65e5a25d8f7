"""The one index per topic: each (bucket, position) pair stored once, whoever added it (§0.2).

Besides the bucketed index it keeps ``present`` (every position held, any bucket) and ``multi``
(positions held in more than one bucket). Per-subscription views store positions only, and
``multi`` tells them when a position's bucket is ambiguous and must be stored explicitly.
"""

from __future__ import annotations

from pyroaring import BitMap

from brokerlab.protocols import Position
from brokerlab_plugins.legacy_delayed_delivery.index import BucketIndex
from brokerlab_plugins.legacy_delayed_delivery.sizing import heap_bytes

__all__ = ["SharedIndex", "discard_at_or_before"]


def discard_at_or_before(bitmaps: dict[int, BitMap], position: Position) -> int:
    """Remove every entry ``<= position`` from a ledger -> bitmap map; returns how many went."""
    md_ledger, md_entry = position
    removed = 0
    for ledger_id in [lid for lid in bitmaps if lid <= md_ledger]:
        bitmap = bitmaps[ledger_id]
        if ledger_id < md_ledger:
            removed += len(bitmap)
            del bitmaps[ledger_id]
            continue
        if md_entry < 0:
            continue
        gone = int(bitmap.rank(md_entry))
        if gone:
            bitmap.remove_range(0, md_entry + 1)
            removed += gone
        if not bitmap:
            del bitmaps[ledger_id]
    return removed


class SharedIndex:
    """A topic's shared bucketed index plus the position-membership maps the views rely on."""

    __slots__ = ("index", "multi", "present")

    def __init__(self) -> None:
        self.index = BucketIndex()
        self.present: dict[int, BitMap] = {}
        self.multi: dict[int, BitMap] = {}

    def is_multi(self, ledger_id: int, entry_id: int) -> bool:
        bitmap = self.multi.get(ledger_id)
        return bitmap is not None and entry_id in bitmap

    def add(self, bucket: int, ledger_id: int, entry_id: int) -> int | None:
        """Store the pair; returns the position's previous single bucket when it just became
        ambiguous (held in two buckets), so views can pin their copies to it."""
        if self.index.contains(bucket, ledger_id, entry_id):
            return None
        present = self.present.get(ledger_id)
        if present is None:
            present = self.present[ledger_id] = BitMap()
        pinned: int | None = None
        if entry_id in present and not self.is_multi(ledger_id, entry_id):
            # Rare (a re-add with another deliverAt): find the one bucket holding it so far.
            pinned = self.index.buckets_holding(ledger_id, entry_id)[0]
            self.multi.setdefault(ledger_id, BitMap()).add(entry_id)
        self.index.add(bucket, ledger_id, entry_id)
        present.add(entry_id)
        return pinned

    def add_many(
        self, bucket: int, ledger_id: int, entries: BitMap, sizes: tuple[int, int] | None = None
    ) -> BitMap:
        """Store every pair of one (bucket, ledger) whose position no other bucket holds; returns
        the entries that another bucket already holds, left for :meth:`add` one by one (they
        become ambiguous, and views must pin their copies). ``sizes`` as in ``add_many`` of
        :class:`BucketIndex`, valid only while nothing is left out."""
        held = self.index.bitmap(bucket, ledger_id)
        new = entries - held if held is not None else entries
        present = self.present.get(ledger_id)
        if present is None:
            present = self.present[ledger_id] = BitMap()
        elsewhere = new & present
        if elsewhere:
            new = new - elsewhere
        if new is not entries:
            sizes = None
        self.index.add_many(bucket, ledger_id, new, sizes)
        present |= new
        return elsewhere

    def prune(self, position: Position) -> int:
        """Remove every pair at or before ``position``; returns how many pairs went."""
        removed = self.index.remove_at_or_before(position)
        if removed:
            discard_at_or_before(self.present, position)
            discard_at_or_before(self.multi, position)
        return removed

    def clear(self) -> None:
        self.index.clear()
        self.present.clear()
        self.multi.clear()

    def heap_bytes(self) -> int:
        """Real bytes: the bucketed index plus the membership maps."""
        return self.index.heap_bytes + heap_bytes(self.present) + heap_bytes(self.multi)
