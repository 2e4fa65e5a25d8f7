"""The legacy active-cursor container: a binary min-heap by position plus a name -> slot map.

It models Pulsar's ``ManagedCursorContainer`` as far as the cache sees it: ``add``, ``update`` and
``remove`` are O(log n), ``slowest_position`` is O(1), and there is no rank query, so it satisfies
:class:`~brokerlab.protocols.CursorContainer` only. One deliberate difference (spec §0.4, §4.3):
Pulsar's removal sifts the item moved into the vacated slot down only, which breaks heap order when
that item is smaller than its new parent; here it sifts whichever way restores the order.
"""

from __future__ import annotations

from brokerlab.protocols import Position

__all__ = ["HeapCursorContainer"]


class HeapCursorContainer:
    """Min-heap of tracked cursors keyed by position; cursors with position ``None`` are only known.

    Equal positions are not ordered among themselves (the heap need not be stable). ``update`` of
    a cursor that is not known does nothing: only active cursors belong here, and the broker moves
    inactive cursors too.
    """

    __slots__ = ("_heap", "_slot", "_untracked")

    def __init__(self) -> None:
        self._heap: list[tuple[Position, str]] = []
        self._slot: dict[str, int] = {}  # tracked cursor -> index in _heap
        self._untracked: set[str] = set()

    # -- protocol ------------------------------------------------------------------------------

    def add(self, cursor: str, position: Position | None) -> None:
        if cursor in self._slot or cursor in self._untracked:
            self.update(cursor, position)
        elif position is None:
            self._untracked.add(cursor)
        else:
            self._push(cursor, position)

    def remove(self, cursor: str) -> None:
        self._untracked.discard(cursor)
        if cursor in self._slot:
            self._pop(cursor)

    def update(self, cursor: str, position: Position | None) -> None:
        slot = self._slot.get(cursor)
        if slot is None:
            if cursor in self._untracked and position is not None:
                self._untracked.discard(cursor)
                self._push(cursor, position)
            return
        if position is None:
            self._pop(cursor)
            self._untracked.add(cursor)
            return
        old = self._heap[slot][0]
        self._heap[slot] = (position, cursor)
        if position < old:
            self._sift_up(slot)
        elif position > old:
            self._sift_down(slot)

    def slowest_position(self) -> Position | None:
        return self._heap[0][0] if self._heap else None

    def tracked_count(self) -> int:
        """Cursors with a position (not in the protocol yet: the tail-write count needs it)."""
        return len(self._slot)

    def __len__(self) -> int:
        return len(self._slot) + len(self._untracked)

    def __contains__(self, cursor: object) -> bool:
        return cursor in self._slot or cursor in self._untracked

    def __repr__(self) -> str:
        return f"HeapCursorContainer(tracked={len(self._slot)}, untracked={len(self._untracked)})"

    # -- heap mechanics ------------------------------------------------------------------------

    def _push(self, cursor: str, position: Position) -> None:
        self._heap.append((position, cursor))
        self._slot[cursor] = len(self._heap) - 1
        self._sift_up(len(self._heap) - 1)

    def _pop(self, cursor: str) -> None:
        slot = self._slot.pop(cursor)
        last = self._heap.pop()
        if slot == len(self._heap):
            return  # the removed item was the last one: nothing moves
        self._heap[slot] = last
        self._slot[last[1]] = slot
        # The moved item came from another subtree and may be smaller than its new parent, so
        # sifting down alone (as Pulsar does) is not enough.
        if self._sift_up(slot) == slot:
            self._sift_down(slot)

    def _sift_up(self, i: int) -> int:
        heap, slot = self._heap, self._slot
        item = heap[i]
        while i > 0:
            parent = (i - 1) >> 1
            if heap[parent][0] <= item[0]:
                break
            heap[i] = heap[parent]
            slot[heap[i][1]] = i
            i = parent
        heap[i] = item
        slot[item[1]] = i
        return i

    def _sift_down(self, i: int) -> int:
        heap, slot = self._heap, self._slot
        n = len(heap)
        item = heap[i]
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n and heap[child + 1][0] < heap[child][0]:
                child += 1
            if item[0] <= heap[child][0]:
                break
            heap[i] = heap[child]
            slot[heap[i][1]] = i
            i = child
        heap[i] = item
        slot[item[1]] = i
        return i

    def _check(self) -> None:
        """Assert the heap order and the slot map (for tests)."""
        for i, (position, cursor) in enumerate(self._heap):
            assert self._slot[cursor] == i
            assert i == 0 or self._heap[(i - 1) >> 1][0] <= position
        assert len(self._slot) == len(self._heap)
        assert not self._untracked & self._slot.keys()
