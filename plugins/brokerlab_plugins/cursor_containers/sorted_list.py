"""PIP-430's active-cursor container: cursors grouped by position, with an O(1) rank query.

The rank query ``count_at_or_before(c)`` (Pulsar's ``getNumberOfCursorsAtSamePositionOrBefore``)
is what a read from storage uses as the expected read count, so it must be cheap. Like Pulsar's
linked-list container, every distinct tracked position is one *group* that stores the number of
tracked cursors at or before it, and each cursor points at its group, so the query is one dict
lookup plus an addition. Two differences:

* groups sit in a sorted Python list of distinct positions (and a list of the groups beside it),
  so finding where a cursor lands is a bisection, O(log n), instead of a walk, and a cursor that
  passes no other group moves its group by overwriting one slot;
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

from bisect import bisect_left
from collections import Counter
from typing import Any

from brokerlab.protocols import Position

__all__ = ["SortedListCursorContainer"]


class _Group:
    """Tracked cursors at one position: how many, and (minus the offset) how many at or before."""

    __slots__ = ("members", "stored")

    def __init__(self, members: int, stored: int) -> None:
        self.members = members
        self.stored = stored


class _Member:
    """One known cursor: its position (``None``: untracked) and the group it counts in."""

    __slots__ = ("group", "position")

    def __init__(self, position: Position | None, group: _Group | None) -> None:
        self.position = position
        self.group = group


class SortedListCursorContainer:
    """Active cursors ordered by position, answering ``count_at_or_before`` in O(1).

    Satisfies :class:`~brokerlab.protocols.RankedCursorContainer`. Cursors with position ``None``
    are known (``len``, ``in``) but untracked (rank 0, never the slowest). ``update`` of a cursor
    that is not known does nothing: only active cursors belong here, and the broker moves inactive
    cursors too.

    The layout keeps the objects an update touches few: a broker with 10,000 topics moves each
    topic's container in turn, and every object read is a likely cache miss. A cursor is one
    record found by one lookup; groups are found by position in the sorted list, not in a second
    mapping, so a lone cursor's move rewrites one list slot. A container that knows one cursor
    (a topic with one subscription) also keeps its record at hand, so that an update of it does
    not look it up.
    """

    __slots__ = ("_groups", "_members", "_offset", "_order", "_sole", "_sole_name")

    def __init__(self) -> None:
        # The only known cursor's record and name, while there is exactly one (None otherwise).
        # First: compiled, attributes are laid out in the order they are first assigned.
        self._sole: _Member | None = None
        self._sole_name = ""
        self._members: dict[str, _Member] = {}  # every known cursor
        self._order: list[Position] = []  # distinct tracked positions, ascending
        self._groups: list[_Group] = []  # the group at each position of ``_order``
        self._offset = 0  # real count of a group = group.stored + _offset

    # -- protocol ------------------------------------------------------------------------------

    def add(self, cursor: str, position: Position | None) -> None:
        if cursor in self._members:
            self.update(cursor, position)
            return
        group = None if position is None else self._track(position)
        self._members[cursor] = _Member(position, group)
        self._find_sole()

    def remove(self, cursor: str) -> None:
        member = self._members.pop(cursor, None)
        if member is not None and member.position is not None:
            self._untrack(member.position)
        self._find_sole()

    def update(self, cursor: str, position: Position | None) -> None:
        sole = self._sole
        if sole is not None and cursor == self._sole_name:
            member = sole
        else:
            found = self._members.get(cursor)
            if found is None:
                return
            member = found
        # As objects: compiled, narrowing an optional pair unboxes it, and storing it boxes it
        # again into a new tuple; the broker calls this on every read and acknowledgement.
        new: Any = position
        old: Any = member.position
        if old == new:
            return
        member.position = new
        if old is None:
            member.group = self._track(new)
        elif new is None:
            member.group = None
            self._untrack(old)
        elif sole is not None or (len(self._order) == 1 and self._groups[0].members == 1):
            # The only tracked cursor (one subscription per topic): nothing to pass or count.
            self._order[0] = new
        else:
            member.group = self._move(old, new)

    def slowest_position(self) -> Position | None:
        order = self._order
        return order[0] if order else None

    def count_at_or_before(self, cursor: str) -> int:
        member = self._members.get(cursor)
        group = None if member is None else member.group
        return 0 if group is None else group.stored + self._offset

    def tracked_count(self) -> int:
        """Cursors with a position (not in the protocol yet: the tail-write count needs it)."""
        # The last group counts every tracked cursor at or before it: all of them.
        groups = self._groups
        return groups[-1].stored + self._offset if groups else 0

    def __len__(self) -> int:
        return len(self._members)

    def __contains__(self, cursor: object) -> bool:
        return cursor in self._members

    def __repr__(self) -> str:
        return f"SortedListCursorContainer(known={len(self._members)}, groups={len(self._order)})"

    # -- group bookkeeping ---------------------------------------------------------------------

    def _find_sole(self) -> None:
        """Keep ``_sole`` and ``_sole_name`` after the known cursors changed."""
        self._sole = None
        if len(self._members) == 1:
            for name, member in self._members.items():
                self._sole, self._sole_name = member, name

    def _find(self, position: Position) -> tuple[int, _Group | None]:
        """Where ``position`` is or would go in the order, and its group if it has one."""
        order = self._order
        index = bisect_left(order, position)
        if index < len(order) and order[index] == position:
            return index, self._groups[index]
        return index, None

    def _shift(self, lo: int, hi: int, delta: int) -> None:
        """Add ``delta`` to the real count of the groups at indices ``lo <= i < hi``."""
        if lo >= hi:
            return
        groups = self._groups
        total = len(groups)
        if hi - lo == 1:  # the common small step: skip building an iterator
            groups[lo].stored += delta
        elif 2 * (hi - lo) <= total:
            for group in groups[lo:hi]:
                group.stored += delta
        else:  # cheaper to move everyone via the offset and undo it outside the range
            self._offset += delta
            for group in groups[:lo]:
                group.stored -= delta
            for group in groups[hi:]:
                group.stored -= delta

    def _new_group(self, index: int, position: Position, count_before: int) -> _Group:
        """Create the group at ``position`` (``index`` in the order) holding one cursor, behind
        ``count_before`` others."""
        group = _Group(1, count_before + 1 - self._offset)
        self._order.insert(index, position)
        self._groups.insert(index, group)
        return group

    def _count_before(self, index: int) -> int:
        """Real count of the group just before ``index`` (0 when there is none)."""
        if index == 0:
            return 0
        return self._groups[index - 1].stored + self._offset

    def _leave(self, position: Position) -> None:
        """One cursor leaves the group at ``position`` (counts already adjusted)."""
        index = bisect_left(self._order, position)
        group = self._groups[index]
        group.members -= 1
        if group.members == 0:
            del self._order[index]
            del self._groups[index]

    def _track(self, position: Position) -> _Group:
        index, group = self._find(position)
        if group is not None:
            group.members += 1
            self._shift(index, len(self._order), 1)
            return group
        before = self._count_before(index)
        self._shift(index, len(self._order), 1)  # every later group now counts this cursor too
        return self._new_group(index, position, before)

    def _untrack(self, position: Position) -> None:
        index = bisect_left(self._order, position)
        self._shift(index, len(self._order), -1)
        self._leave(position)

    def _move(self, old: Position, new: Position) -> _Group:
        order = self._order
        old_index = bisect_left(order, old)
        old_group = self._groups[old_index]
        new_index, new_group = self._find(new)
        if new > old:
            # Groups in [old, new) stop counting the cursor; groups from ``new`` on still do.
            if old_group.members == 1 and new_group is None and new_index == old_index + 1:
                order[old_index] = new  # a lone cursor passing no group: counts stay
                return old_group
            old_group.stored -= 1
            self._shift(old_index + 1, new_index, -1)
            if new_group is not None:
                new_group.members += 1
            else:
                new_group = self._new_group(new_index, new, self._count_before(new_index))
        else:
            # Groups in [new, old) now count the cursor; the old group counted it already.
            if new_group is not None:
                new_group.members += 1
                self._shift(new_index, old_index, 1)
            elif old_group.members == 1 and new_index == old_index:
                order[old_index] = new  # a lone cursor passing no group: counts stay
                return old_group
            else:
                before = self._count_before(new_index)
                self._shift(new_index, old_index, 1)
                new_group = self._new_group(new_index, new, before)
        self._leave(old)
        return new_group

    def _check(self) -> None:
        """Assert the groups against a recount from scratch (for tests)."""
        if len(self._members) == 1:
            assert self._sole is not None and self._members[self._sole_name] is self._sole
        else:
            assert self._sole is None
        members = Counter(m.position for m in self._members.values() if m.position is not None)
        assert self._order == sorted(members)
        assert len(self._groups) == len(self._order)
        for member in self._members.values():
            if member.position is None:
                assert member.group is None
            else:
                assert member.group is self._groups[self._order.index(member.position)]
        running = 0
        for position, group in zip(self._order, self._groups, strict=True):
            running += group.members
            assert group.members == members[position]
            assert group.stored + self._offset == running
