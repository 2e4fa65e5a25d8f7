"""One managed ledger's legacy cache: entries ordered by position (``RangeCache`` before 4.1)."""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from typing import Final

from brokerlab.protocols import CursorContainer, Position

__all__ = ["LedgerCache", "key_of", "position_of"]

# A position as one int that orders exactly as the (ledger_id, entry_id) tuple does: ints hash
# and compare several times faster than tuples, and every insert and read builds one key. The
# offset keeps any Java ``long`` entry id (-1 included) within its ledger's 64-bit span.
_ENTRY_BITS: Final = 64
_ENTRY_OFFSET: Final = 1 << 63
_ENTRY_MASK: Final = (1 << _ENTRY_BITS) - 1


def key_of(ledger_id: int, entry_id: int) -> int:
    """The cache key of a position."""
    return (ledger_id << _ENTRY_BITS) + entry_id + _ENTRY_OFFSET


def position_of(key: int) -> Position:
    """The position of a cache key."""
    return key >> _ENTRY_BITS, (key & _ENTRY_MASK) - _ENTRY_OFFSET


class LedgerCache:
    """Position key -> (size, timestamp), walked in position order by the legacy removals.

    The order lives in a min-heap of keys beside the dict: every walk starts at the lowest
    position, and a heap push or pop runs in C where a sorted container's runs in Python.
    ``remove_ledger`` leaves its keys in the heap; a walk drops a key that is no longer in
    ``entries`` without counting it, and the heap is rebuilt once such keys outnumber the live.

    Every removal method returns ``(entries, bytes)`` removed and keeps ``size`` in step.
    """

    __slots__ = ("_order", "cursors", "entries", "name", "size", "slowest")

    def __init__(self, name: str, cursors: CursorContainer) -> None:
        self.name = name
        self.cursors = cursors
        self.entries: dict[int, tuple[int, int]] = {}
        self._order: list[int] = []  # min-heap of keys; may hold removed ones (see above)
        self.size = 0
        self.slowest: Position | None = cursors.slowest_position()

    def put(self, key: int, size: int, now_ns: int) -> bool:
        entries = self.entries
        if key in entries:
            return False
        entries[key] = (size, now_ns)
        heappush(self._order, key)
        self.size += size
        return True

    def positions(self) -> dict[Position, int]:
        """Position -> size in position order."""
        entries = self.entries
        return {position_of(key): entries[key][0] for key in sorted(entries)}

    def evict_before_timestamp(self, max_ts: int) -> tuple[int, int, int]:
        """Remove from the lowest position while ``timestamp <= max_ts`` (inclusive, §5.3).

        Stops at the first live entry in position order, however old the entries behind it are:
        the head-of-line blocking PIP-430 cites. Returns (entries, bytes, entries examined).
        """
        entries, order = self.entries, self._order
        count = freed = examined = 0
        while order:
            value = entries.get(order[0])
            if value is None:  # removed with its ledger
                heappop(order)
                continue
            examined += 1
            size, ts = value
            if ts > max_ts:
                break
            del entries[heappop(order)]
            count += 1
            freed += size
        self.size -= freed
        return count, freed, examined

    def evict_lowest(self, size_to_free: int) -> tuple[int, int]:
        """Legacy ``evictLeastAccessedEntries``: lowest positions first until enough is freed."""
        entries, order = self.entries, self._order
        count = freed = 0
        while entries and freed < size_to_free:
            value = entries.pop(heappop(order), None)
            if value is not None:
                count += 1
                freed += value[0]
        self.size -= freed
        return count, freed

    def invalidate_before(self, position: Position) -> tuple[int, int]:
        """``invalidateEntries``: remove every entry strictly before ``position``."""
        entries, order = self.entries, self._order
        end = key_of(*position)
        count = freed = 0
        while order and order[0] < end:
            value = entries.pop(heappop(order), None)
            if value is not None:
                count += 1
                freed += value[0]
        self.size -= freed
        return count, freed

    def remove_ledger(self, ledger_id: int) -> tuple[int, int]:
        """``invalidateAllEntries(ledgerId)``: every entry of one ledger."""
        entries = self.entries
        doomed = [key for key in entries if key >> _ENTRY_BITS == ledger_id]
        freed = 0
        for key in doomed:
            freed += entries.pop(key)[0]
        self.size -= freed
        if len(self._order) > 2 * len(entries):
            self._order = list(entries)
            heapify(self._order)
        return len(doomed), freed

    def clear(self) -> tuple[int, int]:
        count, freed = len(self.entries), self.size
        self.entries.clear()
        self._order.clear()
        self.size = 0
        return count, freed
