"""A topic's managed ledger: a sequence of ledgers holding entries, with rollover.

A ledger keeps its entries' fields in one flat list of ints (entry ``e``'s field ``f`` at
``e * FIELDS + f``): appending and reading create no per-entry objects, and an entry's fields share
one list. Columns would be five lists whose ends an append touches; with 10,000 topics publishing
in turn those are five cache misses where one list costs one. A position is
``(ledger_id, entry_id)``.

Compiled, a value typed :data:`~brokerlab.protocols.Position` is a pair of machine integers, and
each time it leaves compiled code (a dict key, a protocol call, a persister reading the cursor)
it is boxed into a new tuple, and a ledger id above 256 into a new int. Positions that travel
(those a cursor stores, the one an append returns) are therefore typed :data:`BoxedPosition`:
one tuple object, built once from the ledger's boxed id and shared by everything that reads it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Any, Final

from mypy_extensions import mypyc_attr

from brokerlab.protocols import Position

__all__ = [
    "BATCH",
    "DELIVER_AT_MS",
    "FIELDS",
    "KEY",
    "PUBLISH_NS",
    "SIZE",
    "BoxedPosition",
    "Ledger",
    "LedgerIds",
    "ManagedLedger",
]

NO_KEY: Final = -1

BoxedPosition = Any
"""A :data:`~brokerlab.protocols.Position` held as one tuple object (see the module docstring)."""

# An entry's fields, in the order they are stored. ``DELIVER_AT_MS`` is 0 for a message without
# delay; ``BATCH`` is the number of messages in the entry.
SIZE: Final = 0
PUBLISH_NS: Final = 1
KEY: Final = 2
BATCH: Final = 3
DELIVER_AT_MS: Final = 4
FIELDS: Final = 5


# Subclassable when compiled: a test may hand out BookKeeper's ids as it chooses (one call per
# ledger, so the dynamic dispatch costs nothing measurable).
@mypyc_attr(allow_interpreted_subclasses=True)
class LedgerIds:
    """Hands out ledger ids across the broker, as BookKeeper does: unique and increasing."""

    def __init__(self, first: int = 1) -> None:
        self._next = first

    def next(self) -> int:
        value = self._next
        self._next += 1
        return value


class Ledger:
    """One ledger's entries: ``fields[entry_id * FIELDS + field]``."""

    __slots__ = ("boxed_id", "fields", "ledger_id")

    def __init__(self, ledger_id: int) -> None:
        self.ledger_id = ledger_id
        self.fields: list[int] = []
        # The id as one Python int for the positions built from it: compiled, ``ledger_id`` is a
        # machine integer, boxed into a new int object (ids pass 256) for every tuple built.
        self.boxed_id: Any = ledger_id

    def __len__(self) -> int:
        return len(self.fields) // FIELDS

    def field(self, entry_id: int, field: int) -> int:
        """One field of one entry."""
        return self.fields[entry_id * FIELDS + field]

    def column(self, field: int, first: int, stop: int) -> list[int]:
        """``field`` of entries ``first`` to ``stop - 1``."""
        if stop - first == 1:
            # A one-entry read (a tail reader's usual one): an extended slice costs ten times more.
            return [self.fields[first * FIELDS + field]]
        return self.fields[first * FIELDS + field : stop * FIELDS : FIELDS]


class ManagedLedger:
    """The entries of one topic, split into ledgers of at most ``max_entries_per_ledger`` entries.

    A new ledger is opened when the current one is full, on the next append (Pulsar's
    ``managedLedgerMaxEntriesPerLedger``; the time-based rollover rules are not modelled).
    """

    __slots__ = (
        "_first_index",
        "_ids",
        "_order",
        "bytes_written",
        "current",
        "current_id",
        "ledgers",
        "max_entries_per_ledger",
        "topic",
    )

    def __init__(self, topic: str, ids: LedgerIds, max_entries_per_ledger: int) -> None:
        # The open ledger (the last one) and its id: plain attributes, read on every append and
        # every read. Declared first: compiled, attributes are laid out in this order, and these
        # three then share the object's first cache line.
        self.current: Ledger
        self.current_id: int
        self.max_entries_per_ledger = max_entries_per_ledger
        self.topic = topic
        self._ids = ids
        self.ledgers: dict[int, Ledger] = {}
        # Ledger ids in order and the global index of each ledger's first entry, for backlog counts.
        self._first_index: list[int] = []
        self._order: list[int] = []
        # Bytes of every entry appended: with ``entries_written`` the average entry size that
        # caps a read at dispatcherMaxReadSizeBytes (Pulsar's managed-ledger entry-size stats).
        self.bytes_written = 0
        self._open_new_ledger()

    def _open_new_ledger(self) -> Ledger:
        ledger = Ledger(self._ids.next())
        start = self._first_index[-1] + len(self.current) if self._first_index else 0
        self.ledgers[ledger.ledger_id] = ledger
        self._order.append(ledger.ledger_id)
        self._first_index.append(start)
        self.current = ledger
        self.current_id = ledger.ledger_id
        return ledger

    def append(
        self, size: Any, publish_ns: Any, key: Any = NO_KEY, batch: Any = 1, deliver_at_ms: Any = 0
    ) -> BoxedPosition:
        """Persist one entry (its fields are ints); returns its position.

        The fields are typed ``Any`` so that a compiled caller hands over the int objects it
        holds: typed ``int``, each would be unboxed at the call and boxed again into a new int
        to be stored.
        """
        ledger = self.current
        fields = ledger.fields
        entry_id = len(fields) // FIELDS
        if entry_id >= self.max_entries_per_ledger:
            ledger = self._open_new_ledger()
            fields = ledger.fields
            entry_id = 0
        # In the order of the field constants; appended one by one, no tuple is built.
        fields.append(size)
        fields.append(publish_ns)
        fields.append(key)
        fields.append(batch)
        fields.append(deliver_at_ms)
        self.bytes_written += size
        return (ledger.boxed_id, entry_id)

    def entries_written(self) -> int:
        """Entries appended to this managed ledger, over all its ledgers."""
        return self._first_index[-1] + len(self.current)

    def ledger(self, ledger_id: int) -> Ledger:
        """The ledger ``ledger_id``; the open one without a lookup (a tail reader's every read)."""
        if ledger_id == self.current_id:
            return self.current
        return self.ledgers[ledger_id]

    # ---- positions ---------------------------------------------------------------------------

    @property
    def first_position(self) -> Position:
        """The position before the first entry, ``(first ledger, -1)``: "nothing acked"."""
        return (self._order[0], -1)

    @property
    def last_position(self) -> Position:
        """The last persisted entry, or ``(current ledger, -1)`` when it holds none yet."""
        ledger = self.current
        return (ledger.ledger_id, len(ledger) - 1)

    def next_position(self, position: Position) -> BoxedPosition:
        """The position after ``position``; at the end of a closed ledger, entry 0 of the next one.

        Past the last entry this is ``(current ledger, n)``: where the next append will land, unless
        that append rolls the ledger over (:meth:`normalize` fixes that up when it happens).
        """
        ledger_id, entry_id = position
        ledger = self.ledger(ledger_id)
        if entry_id + 1 < len(ledger) or ledger is self.current:
            return (ledger.boxed_id, entry_id + 1)
        return (self.ledgers[self._id_after(ledger_id)].boxed_id, 0)

    def normalize(self, position: Position) -> Position:
        """Move a read position that points past the end of a closed ledger to the next ledger."""
        ledger_id, entry_id = position
        if ledger_id != self.current_id and entry_id >= len(self.ledgers[ledger_id]):
            return (self._id_after(ledger_id), 0)
        return position

    def _id_after(self, ledger_id: int) -> int:
        """The id of the ledger that follows the closed ledger ``ledger_id``."""
        return self._order[self._order.index(ledger_id) + 1]

    def index_of(self, position: Position) -> int:
        """Global entry index (0 = the topic's first entry) of ``position``."""
        ledger_id, entry_id = position
        i = bisect.bisect_left(self._order, ledger_id)
        return self._first_index[i] + entry_id

    def entries_after(self, position: Position) -> int:
        """How many persisted entries come after ``position``."""
        ledger = self.current
        total = self._first_index[-1] + len(ledger)
        return total - self.index_of(position) - 1

    def entry_count(self) -> int:
        return self._first_index[-1] + len(self.current)

    def ledger_ids(self) -> Iterator[int]:
        return iter(self._order)
