"""One managed ledger's legacy cache: entries ordered by position (``RangeCache`` before 4.1)."""

from __future__ import annotations

from sortedcontainers import SortedDict

from brokerlab.protocols import CursorContainer, Position

__all__ = ["LedgerCache"]


class LedgerCache:
    """Position -> (size, timestamp) in position order, with the legacy removal walks.

    Every removal method returns ``(entries, bytes)`` removed and keeps ``size`` in step.
    """

    __slots__ = ("cursors", "entries", "name", "size", "slowest")

    def __init__(self, name: str, cursors: CursorContainer) -> None:
        self.name = name
        self.cursors = cursors
        self.entries: SortedDict = SortedDict()
        self.size = 0
        self.slowest: Position | None = cursors.slowest_position()

    def put(self, position: Position, size: int, now_ns: int) -> bool:
        entries = self.entries
        if position in entries:
            return False
        entries[position] = (size, now_ns)
        self.size += size
        return True

    def evict_before_timestamp(self, max_ts: int) -> tuple[int, int, int]:
        """Remove from the lowest position while ``timestamp <= max_ts`` (inclusive, §5.3).

        Stops at the first live entry in position order, however old the entries behind it are:
        the head-of-line blocking PIP-430 cites. Returns (entries, bytes, entries examined).
        """
        entries = self.entries
        count = freed = examined = 0
        while entries:
            examined += 1
            size, ts = entries.peekitem(0)[1]
            if ts > max_ts:
                break
            entries.popitem(0)
            count += 1
            freed += size
        self.size -= freed
        return count, freed, examined

    def evict_lowest(self, size_to_free: int) -> tuple[int, int]:
        """Legacy ``evictLeastAccessedEntries``: lowest positions first until enough is freed."""
        entries = self.entries
        count = freed = 0
        while entries and freed < size_to_free:
            size, _ = entries.popitem(0)[1]
            count += 1
            freed += size
        self.size -= freed
        return count, freed

    def invalidate_before(self, position: Position) -> tuple[int, int]:
        """``invalidateEntries``: remove every entry strictly before ``position``."""
        entries = self.entries
        doomed = list(entries.irange(maximum=position, inclusive=(True, False)))
        freed = 0
        for key in doomed:
            freed += entries.pop(key)[0]
        self.size -= freed
        return len(doomed), freed

    def remove_ledger(self, ledger_id: int) -> tuple[int, int]:
        """``invalidateAllEntries(ledgerId)``: every entry of one ledger."""
        entries = self.entries
        doomed = list(entries.irange((ledger_id, -1), (ledger_id + 1, -1), inclusive=(True, False)))
        freed = 0
        for key in doomed:
            freed += entries.pop(key)[0]
        self.size -= freed
        return len(doomed), freed

    def clear(self) -> tuple[int, int]:
        count, freed = len(self.entries), self.size
        self.entries.clear()
        self.size = 0
        return count, freed
