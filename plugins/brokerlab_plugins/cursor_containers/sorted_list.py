"""PIP-430's active-cursor container: cursors grouped by position, with an O(1) rank query.

The rank query ``count_at_or_before(c)`` (Pulsar's ``getNumberOfCursorsAtSamePositionOrBefore``)
is what a read from storage uses as the expected read count, so it must be cheap. Like Pulsar's
linked-list container, every distinct tracked position is one *group* that stores the number of
tracked cursors at or before it, and each cursor points at its group, so the query is one dict
lookup plus an addition. Two differences:

* groups sit in a sorted Python list of distinct positions, so finding where a cursor lands is
  a bisection, O(log n), instead of a walk, and a cursor that passes no other group moves its
  group by overwriting one slot;
* a group's count is stored relative to one shared ``offset``. Adding ``delta`` to a range of
  groups can therefore be done either on the range itself or as ``offset += delta`` plus
  ``-delta`` on the groups outside it, whichever is shorter.

Complexity, with G the number of distinct tracked positions and k the number of groups whose
count changes (those a move crosses, or those at or after an added or removed cursor):

* ``count_at_or_before``, ``slowest_position``, ``len``, ``in``: O(1), worst case, not amortised;
* ``add``, ``remove``, ``update``: O(log G + min(k, G - k)) plus, when a group appears or goes,
  a memmove of the list's tail (O(G) pointers, a few nanoseconds per thousand). A small forward
  step crosses few groups, so the common read-position move is O(log G), and a lone cursor
  passing no group (one subscription per topic, a tail reader) rewrites its slot in O(1).

The invariant it keeps is the one the spec asks for (§0.4), not Pulsar's code: a tail node moved
"in place" still leaves its old group, so the cursors that shared it never count one too many.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter

from brokerlab.protocols import Position

__all__ = ["SortedListCursorContainer"]


class _Group:
    """Tracked cursors at one position: how many, and (minus the offset) how many at or before."""

    __slots__ = ("members", "stored")

    def __init__(self, members: int, stored: int) -> None:
        self.members = members
        self.stored = stored


class SortedListCursorContainer:
    """Active cursors ordered by position, answering ``count_at_or_before`` in O(1).

    Satisfies :class:`~brokerlab.protocols.RankedCursorContainer`. Cursors with position ``None``
    are known (``len``, ``in``) but untracked (rank 0, never the slowest). ``update`` of a cursor
    that is not known does nothing: only active cursors belong here, and the broker moves inactive
    cursors too.
    """

    __slots__ = ("_groups", "_member_of", "_offset", "_order", "_position")

    def __init__(self) -> None:
        self._position: dict[str, Position | None] = {}  # every known cursor
        self._member_of: dict[str, _Group] = {}  # tracked cursor -> its group (query fast path)
        self._order: list[Position] = []  # distinct tracked positions, ascending
        self._groups: dict[Position, _Group] = {}
        self._offset = 0  # real count of a group = group.stored + _offset

    # -- protocol ------------------------------------------------------------------------------

    def add(self, cursor: str, position: Position | None) -> None:
        if cursor in self._position:
            self.update(cursor, position)
            return
        self._position[cursor] = position
        if position is not None:
            self._member_of[cursor] = self._track(position)

    def remove(self, cursor: str) -> None:
        if cursor in self._position:
            old = self._position.pop(cursor)
            if old is not None:
                del self._member_of[cursor]
                self._untrack(old)

    def update(self, cursor: str, position: Position | None) -> None:
        if cursor not in self._position:
            return
        old = self._position[cursor]
        if old == position:
            return
        self._position[cursor] = position
        if old is None:
            assert position is not None
            self._member_of[cursor] = self._track(position)
        elif position is None:
            del self._member_of[cursor]
            self._untrack(old)
        elif len(self._order) == 1 and self._member_of[cursor].members == 1:
            # The only tracked cursor (one subscription per topic): nothing to pass or count.
            # Handled here, where the positions are still the caller's tuples (compiled, _move
            # takes them unboxed and would build new ones for the list and the dict). clear(),
            # not del: a deleted key leaves a dummy, and every few moves the table is rebuilt.
            groups = self._groups
            group = self._member_of[cursor]
            groups.clear()
            groups[position] = group
            self._order[0] = position
        else:
            self._member_of[cursor] = self._move(old, position)

    def slowest_position(self) -> Position | None:
        order = self._order
        return order[0] if order else None

    def count_at_or_before(self, cursor: str) -> int:
        group = self._member_of.get(cursor)
        return 0 if group is None else group.stored + self._offset

    def tracked_count(self) -> int:
        """Cursors with a position (not in the protocol yet: the tail-write count needs it)."""
        return len(self._member_of)

    def __len__(self) -> int:
        return len(self._position)

    def __contains__(self, cursor: object) -> bool:
        return cursor in self._position

    def __repr__(self) -> str:
        return f"SortedListCursorContainer(known={len(self._position)}, groups={len(self._order)})"

    # -- group bookkeeping ---------------------------------------------------------------------

    def _shift(self, lo: int, hi: int, delta: int) -> None:
        """Add ``delta`` to the real count of the groups at indices ``lo <= i < hi``."""
        if lo >= hi:
            return
        order, groups = self._order, self._groups
        total = len(order)
        if hi - lo == 1:  # the common small step: skip building an iterator
            groups[order[lo]].stored += delta
        elif 2 * (hi - lo) <= total:
            for position in order[lo:hi]:
                groups[position].stored += delta
        else:  # cheaper to move everyone via the offset and undo it outside the range
            self._offset += delta
            for position in order[:lo]:
                groups[position].stored -= delta
            for position in order[hi:]:
                groups[position].stored -= delta

    def _new_group(self, position: Position, count_before: int) -> _Group:
        """Create the group at ``position`` holding one cursor, behind ``count_before`` others."""
        insort(self._order, position)
        group = self._groups[position] = _Group(1, count_before + 1 - self._offset)
        return group

    def _count_before(self, index: int) -> int:
        """Real count of the group just before ``index`` (0 when there is none)."""
        if index == 0:
            return 0
        return self._groups[self._order[index - 1]].stored + self._offset

    def _leave(self, position: Position) -> None:
        """One cursor leaves the group at ``position`` (counts already adjusted)."""
        group = self._groups[position]
        group.members -= 1
        if group.members == 0:
            del self._groups[position]
            order = self._order
            del order[bisect_left(order, position)]

    def _track(self, position: Position) -> _Group:
        order = self._order
        index = bisect_left(order, position)
        group = self._groups.get(position)
        if group is not None:
            group.members += 1
            self._shift(index, len(order), 1)
            return group
        before = self._count_before(index)
        self._shift(index, len(order), 1)  # every later group now counts this cursor too
        return self._new_group(position, before)

    def _untrack(self, position: Position) -> None:
        index = bisect_left(self._order, position)
        self._shift(index, len(self._order), -1)
        self._leave(position)

    def _move(self, old: Position, new: Position) -> _Group:
        order, groups = self._order, self._groups
        old_group = groups[old]
        old_index = bisect_left(order, old)
        new_index = bisect_left(order, new)
        new_group = groups.get(new)
        if new > old:
            # Groups in [old, new) stop counting the cursor; groups from ``new`` on still do.
            if old_group.members == 1 and new_group is None and new_index == old_index + 1:
                return self._relabel(old_index, new, old_group)  # a lone cursor passing no group
            old_group.stored -= 1
            self._shift(old_index + 1, new_index, -1)
            if new_group is not None:
                new_group.members += 1
            else:
                new_group = self._new_group(new, self._count_before(new_index))
        else:
            # Groups in [new, old) now count the cursor; the old group counted it already.
            if new_group is not None:
                new_group.members += 1
                self._shift(new_index, old_index, 1)
            elif old_group.members == 1 and new_index == old_index:
                return self._relabel(old_index, new, old_group)
            else:
                before = self._count_before(new_index)
                self._shift(new_index, old_index, 1)
                new_group = self._new_group(new, before)
        self._leave(old)
        return new_group

    def _relabel(self, index: int, new: Position, group: _Group) -> _Group:
        """Move the one-cursor group at ``index`` to ``new`` when no other group lies between:
        counts and the order stay, so the slot is overwritten."""
        order, groups = self._order, self._groups
        del groups[order[index]]
        order[index] = new
        groups[new] = group
        return group

    def _check(self) -> None:
        """Assert the groups against a recount from scratch (for tests)."""
        members = Counter(p for p in self._position.values() if p is not None)
        assert list(self._order) == sorted(members)
        assert self._groups.keys() == members.keys()
        for cursor, position in self._position.items():
            expected = None if position is None else self._groups[position]
            assert self._member_of.get(cursor) is expected
        running = 0
        for position in self._order:
            group = self._groups[position]
            running += group.members
            assert group.members == members[position]
            assert group.stored + self._offset == running
