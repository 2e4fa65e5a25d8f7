"""A dispatcher's replay queue: positions to dispatch again, lowest first.

Entries arrive here for two reasons, which the metrics keep apart: a *redelivery* (negative ack,
a consumer that left) and a *deferral* (no consumer could take the entry when it was read, e.g. a
Key_Shared key whose consumer has no permits). For Key_Shared the queue also indexes positions by
the consumer that owns their key, so finding what the consumers with permits can take costs
O(consumers + batch), not a scan over every blocked entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from heapq import merge
from itertools import islice
from typing import Generic, TypeVar

from sortedcontainers import SortedSet

from brokerlab.protocols import Position

__all__ = ["ReplayQueue"]

Owner = TypeVar("Owner")


class ReplayQueue(Generic[Owner]):
    """Sorted positions with their keys, redelivery marks and (optionally) owners."""

    __slots__ = (
        "_by_owner",
        "_key_counts",
        "_key_of",
        "_owner_of",
        "_positions",
        "_redeliveries",
        "size",
    )

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        # How many positions are queued. Public for one reason: ``if replay.size`` is the
        # dispatcher's cheapest "is anything waiting?" test, asked on every read, and an int on
        # this object spares a look into the map below (one more cold object with 10,000
        # topics). Read-only outside.
        self.size = 0
        # Created on the first add: most subscriptions never replay anything, and a run with
        # 10,000 of them should not build 10,000 empty sorted sets.
        self._positions: SortedSet | None = None
        # Each queued position's key.
        self._key_of: dict[Position, int] = {}
        self._redeliveries: set[Position] = set()
        self._by_owner: dict[Owner | None, SortedSet] = {}
        self._owner_of: dict[Position, Owner | None] = {}
        self._key_counts: dict[int, int] = {}

    def __len__(self) -> int:
        return self.size

    def __bool__(self) -> bool:
        return self.size > 0

    def __contains__(self, position: object) -> bool:
        return position in self._key_of

    def __iter__(self) -> Iterator[Position]:
        return iter(self._positions if self._positions is not None else ())

    def add(self, position: Position, key: int, owner: Owner | None, *, redelivery: bool) -> bool:
        """Queue ``position``; returns False when it was queued already."""
        if position in self._key_of:
            if redelivery:
                self._redeliveries.add(position)
            return False
        if self._positions is None:
            self._positions = SortedSet()
        self._positions.add(position)
        self._key_of[position] = key
        self.size += 1
        self._key_counts[key] = self._key_counts.get(key, 0) + 1
        if redelivery:
            self._redeliveries.add(position)
        self._owner_of[position] = owner
        self._owned(owner).add(position)
        return True

    def discard(self, position: Position) -> bool:
        """Take ``position`` out; returns whether it was queued as a redelivery."""
        key = self._key_of.pop(position, None)
        if key is None:
            return False
        self.size -= 1
        assert self._positions is not None  # it holds every queued position
        self._positions.discard(position)
        left = self._key_counts[key] - 1
        if left:
            self._key_counts[key] = left
        else:
            del self._key_counts[key]
        owner = self._owner_of.pop(position)
        owned = self._by_owner[owner]
        owned.discard(position)
        if not owned:
            del self._by_owner[owner]
        if position in self._redeliveries:
            self._redeliveries.discard(position)
            return True
        return False

    def redeliveries(self) -> list[Position]:
        """The queued positions that were dispatched before (not those only deferred)."""
        return [p for p in self if p in self._redeliveries]

    def has_key(self, key: int) -> bool:
        """Whether some entry with ``key`` waits here (a later one must wait behind it)."""
        return key in self._key_counts

    def first(self, limit: int) -> list[Position]:
        return list(islice(self, limit))

    def first_owned_by(self, owners: Iterable[tuple[Owner, int]], limit: int) -> list[Position]:
        """The lowest ``limit`` positions owned by one of ``owners``, given as ``(owner, cap)``
        pairs: at most ``cap`` of each owner's lowest positions."""
        by_owner = self._by_owner
        runs = [islice(by_owner[o], cap) for o, cap in owners if o in by_owner]
        return list(islice(merge(*runs), limit))

    def reassign(self, owner_of_key: Callable[[int], Owner | None]) -> None:
        """Recompute every position's owner (the set of consumers changed)."""
        self._by_owner = {}
        for position in self:
            owner = owner_of_key(self._key_of[position])
            self._owner_of[position] = owner
            self._owned(owner).add(position)

    def _owned(self, owner: Owner | None) -> SortedSet:
        """The positions ``owner`` owns, created when it gets its first one."""
        owned = self._by_owner.get(owner)
        if owned is None:
            owned = self._by_owner[owner] = SortedSet()
        return owned

    def clear(self) -> None:
        self._reset()
