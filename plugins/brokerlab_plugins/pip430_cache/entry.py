"""``RangeCacheEntryWrapper``: one cached entry, the object the global removal queue holds; and
one ledger's map of them by entry id."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from brokerlab.protocols import Position

__all__ = ["CachedEntry", "LedgerEntries", "cut_front"]

# Consumed slots a list keeps at its front before cut_front cuts them off.
_CUT_AFTER: Final = 1024


def cut_front(items: list[Any], consumed: int) -> int:
    """Cut the first ``consumed`` items off ``items`` once they are most of the list; returns
    how many were cut (0 or ``consumed``). Amortised, each item is copied at most once."""
    if consumed > _CUT_AFTER and 2 * consumed > len(items):
        del items[:consumed]
        return consumed
    return 0


class CachedEntry:
    """A cached entry and its queue state; satisfies :class:`~brokerlab.protocols.CachedEntryView`.

    ``expected_reads`` is the entry's ``EntryReadCountHandler`` (``None``: no handler), kept in
    ``reads`` when ``counted``. In the simulation every reader copy is released before the next
    cache call, so the count lives here instead of in a handler object shared with copies.
    ``removed`` is the wrapper's ``key == null``: a range removal sets it and leaves the wrapper
    in the queue, to be dropped as MISSING.
    """

    __slots__ = (
        "accessed",
        "counted",
        "owner",
        "position",
        "reads",
        "removed",
        "requeue_count",
        "size",
        "timestamp_ns",
    )

    def __init__(
        self,
        position: Position,
        size: int,
        timestamp_ns: int,
        expected_reads: int | None,
        owner: LedgerEntries,
    ) -> None:
        self.position = position
        self.size = size
        self.timestamp_ns = timestamp_ns
        # The count as a plain int and whether there is one: adding to an ``int | None`` field
        # would make a new int object on every release.
        self.reads = 0 if expected_reads is None else expected_reads
        self.counted = expected_reads is not None
        self.owner = owner  # the ledger's map this wrapper sits in
        self.requeue_count = 0
        self.accessed = False
        self.removed = False

    @property
    def expected_reads(self) -> int | None:
        return self.reads if self.counted else None

    def __repr__(self) -> str:
        return (
            f"CachedEntry({self.position}, size={self.size}, ts={self.timestamp_ns}, "
            f"reads={self.expected_reads}, requeued={self.requeue_count}, "
            f"accessed={self.accessed}, removed={self.removed})"
        )


class LedgerEntries:
    """One ledger's cached entries by entry id (its part of ``RangeCache``).

    Entry ids are small dense ints, cached in runs, so the entries sit in a list of slots that
    starts at id ``base`` (``None`` where nothing is cached): a lookup is an index instead of a
    hash of a boxed int. The slots span the lowest to the highest id cached; the empty slots a
    FIFO eviction leaves at the front are cut off once they are most of the list, so each slot is
    copied at most once per pass of the window.
    """

    __slots__ = ("_base", "_count", "_first", "_slots")

    def __init__(self) -> None:
        self._slots: list[CachedEntry | None] = []
        self._base = 0  # the id of slot 0
        self._first = 0  # no entry sits before this slot
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def get(self, entry_id: int) -> CachedEntry | None:
        index = entry_id - self._base
        if 0 <= index < len(self._slots):
            return self._slots[index]
        return None

    def add(self, entry_id: int, entry: CachedEntry) -> bool:
        """Put ``entry`` at ``entry_id`` unless an entry is there; whether it was put."""
        slots = self._slots
        if self._count == 0:
            slots.clear()
            self._base = entry_id
            self._first = 0
        index = entry_id - self._base
        if index < 0:  # below the window: rare (a reader behind everything cached)
            front: list[CachedEntry | None] = [None] * -index
            self._slots = slots = front + slots
            self._base = entry_id
            self._first -= index
            index = 0
        elif index >= len(slots):
            if index > len(slots):
                slots.extend([None] * (index - len(slots)))
            slots.append(entry)
            self._count += 1
            return True
        elif slots[index] is not None:
            return False
        slots[index] = entry
        self._count += 1
        if index < self._first:
            self._first = index
        return True

    def remove(self, entry_id: int) -> None:
        """Take out the entry at ``entry_id``, which must be there."""
        slots = self._slots
        index = entry_id - self._base
        slots[index] = None
        self._count -= 1
        if index != self._first or self._count == 0:
            return
        first = index + 1
        while slots[first] is None:  # an entry remains after it
            first += 1
        cut = cut_front(slots, first)
        self._base += cut
        self._first = first - cut

    def values(self) -> Iterator[CachedEntry]:
        """The entries in entry-id order."""
        for entry in self._slots[self._first :]:
            if entry is not None:
                yield entry
