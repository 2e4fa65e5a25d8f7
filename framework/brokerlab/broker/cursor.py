"""A durable cursor: read position, mark-delete position and the individually acknowledged set.

The cursor is the broker's truth about what a subscription acknowledged. Persisters see it through
the read-only :class:`~brokerlab.protocols.AckState` protocol, which this class satisfies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from operator import itemgetter
from typing import Any, Final

from brokerlab.broker.consumer import Delivery
from brokerlab.broker.ledger import BATCH, BoxedPosition, ManagedLedger
from brokerlab.protocols import BatchAck, Position, RecoveredAckState

__all__ = ["Cursor", "runs"]


_NO_PROPERTIES: Final[Mapping[str, int]] = {}
"""The mark-delete properties of every cursor (the model sets none); shared and read-only."""


def _at_or_before(a: Position, b: Position) -> bool:
    """``a <= b`` for positions, field by field: compiled, the tuple operator would first box
    both pairs into new tuples (the cursor compares positions on every acknowledgement)."""
    return a[0] < b[0] or (a[0] == b[0] and a[1] <= b[1])


def runs(entry_ids: Iterable[int]) -> list[tuple[int, int]]:
    """Maximal runs of consecutive ids as ``(first, last)`` pairs, ascending."""
    out: list[tuple[int, int]] = []
    for e in sorted(entry_ids):
        if out and e == out[-1][1] + 1:
            out[-1] = (out[-1][0], e)
        else:
            out.append((e, e))
    return out


class Cursor:
    """Acknowledgement state of one subscription on one managed ledger.

    ``acked`` maps a ledger id to the entry ids acknowledged individually after the mark-delete
    position; the range count (Pulsar's ``IDM.size()``: runs of consecutive entries, per ledger) is
    kept up to date on every change rather than recomputed.
    """

    __slots__ = (
        "_batch",
        "_properties",
        "_ranges",
        "acked",
        "ledger",
        "md",
        "name",
        "read_position",
    )

    def __init__(self, name: str, ledger: ManagedLedger, start: Position) -> None:
        self.name = name
        self.ledger = ledger
        # Both boxed: read on every dispatch and acknowledgement, and by the persister and the
        # cursor container on every write, each reader shares the tuple (see ``BoxedPosition``).
        self.md: BoxedPosition = start
        self.read_position: BoxedPosition = ledger.next_position(start)
        self.acked: dict[int, set[int]] = {}
        self._ranges = 0
        self._batch: dict[Position, BatchAck] = {}
        self._properties: dict[str, str] = {}

    # ---- AckState ----------------------------------------------------------------------------

    @property
    def mark_delete(self) -> BoxedPosition:
        return self.md

    def range_count(self) -> int:
        return self._ranges

    def acked_ranges(self) -> Sequence[tuple[Position, Position]]:
        if not self.acked:
            return ()  # the usual answer when a persister asks, on every write: no allocation
        return [
            ((ledger_id, first - 1), (ledger_id, last))
            for ledger_id in sorted(self.acked)
            for first, last in runs(self.acked[ledger_id])
        ]

    def batch_acks(self) -> Mapping[Position, BatchAck]:
        return self._batch

    def subscription_properties(self) -> Mapping[str, str]:
        return self._properties

    def mark_delete_properties(self) -> Mapping[str, int]:
        return _NO_PROPERTIES

    # ---- queries -----------------------------------------------------------------------------

    def is_acked(self, ledger_id: int, entry_id: int) -> bool:
        if _at_or_before((ledger_id, entry_id), self.md):
            return True
        s = self.acked.get(ledger_id)
        return s is not None and entry_id in s

    def acked_count(self) -> int:
        """Entries acknowledged individually after the mark-delete position."""
        return sum(len(s) for s in self.acked.values())

    def unread_entries(self) -> int:
        """Entries from the read position on not yet acknowledged: Pulsar's
        ``ManagedCursor.getNumberOfEntries()``, which the broker's backlogged-cursor check
        compares with ``managedLedgerCursorBackloggedThreshold`` (spec §3.4). Unlike the backlog
        from the mark-delete position it leaves out what was dispatched and not acknowledged yet."""
        ml = self.ledger
        read_position: Position = self.read_position
        read_ledger, read_entry = read_position
        count = ml.entry_count() - ml.index_of(read_position)
        for ledger_id, entry_ids in self.acked.items():
            if ledger_id > read_ledger:
                count -= len(entry_ids)
            elif ledger_id == read_ledger:
                count -= sum(1 for e in entry_ids if e >= read_entry)
        return max(count, 0)

    # ---- changes -----------------------------------------------------------------------------

    def ack(self, ledger_id: int, entry_id: int) -> bool:
        """Acknowledge one entry individually; returns whether it was not acknowledged before."""
        md: Position = self.md
        md_ledger, md_entry = md
        if entry_id == md_entry + 1 and ledger_id == md_ledger and not self._ranges:
            # The common in-order case with no acks ahead (in any ledger): the mark-delete moves
            # by one and nothing else changes.
            md = self.md = (ledger_id, entry_id)
            if self._batch:
                self._batch.pop(md, None)
            if _at_or_before(self.read_position, md):
                self.read_position = self.ledger.next_position(md)
            return True
        if _at_or_before((ledger_id, entry_id), self.md):
            return False
        s = self.acked.get(ledger_id)
        if s is None:
            s = self.acked[ledger_id] = set()
        elif entry_id in s:
            return False
        s.add(entry_id)
        self._batch.pop((ledger_id, entry_id), None)
        self._ranges += 1 - ((entry_id - 1) in s) - ((entry_id + 1) in s)
        if (ledger_id == md_ledger and entry_id == md_entry + 1) or (
            entry_id == 0 and self.ledger.next_position(self.md) == (ledger_id, 0)
        ):
            self._advance_mark_delete()
        return True

    def ack_each(self, deliveries: list[Delivery], changed: set[int]) -> tuple[int, int]:
        """:meth:`ack` for each ``(position, messages, ...)`` in order, adding the ledgers whose
        state changed to ``changed``; returns the messages newly acknowledged and those that were
        acknowledged already.

        The same result as calling :meth:`ack` in a loop. A run of in-order acknowledgements with
        nothing acknowledged ahead (a consumer keeping up, the common case) only advances a local
        mark-delete, stored once when the run ends: the read position then moves as it would have
        step by step, since each step lands where the previous one would have sent it. The
        mark-delete position is then the last such delivery's own position tuple.
        """
        acked_messages = repeated_messages = 0
        md: Position = self.md
        md_ledger, md_entry = md
        # No range: nothing acknowledged ahead (read on this object, not in the acked map).
        in_order = not self._ranges and not self._batch
        # Positions untyped: they stay the tuples the deliveries hold (``BoxedPosition``).
        items: list[tuple[Any, int, int, Any]] = deliveries
        n = len(items)
        if in_order and n > 1:
            # A consumer keeping up acknowledges exactly the entries after the mark-delete, in
            # order: checked and counted by C loops, it is one move of the mark-delete.
            following = zip(
                repeat(md_ledger, n), range(md_entry + 1, md_entry + 1 + n), strict=True
            )
            if list(map(itemgetter(0), items)) == list(following):
                last = items[-1][0]
                self._moved_to(last)
                changed.add(last[0])
                return sum(map(itemgetter(1), items)), 0
        run: BoxedPosition = None  # where the mark-delete moved in order, not stored yet
        for pos, messages, _publish_ns, _key in items:
            position: Position = pos
            ledger_id, entry_id = position
            if in_order and entry_id == md_entry + 1 and ledger_id == md_ledger:
                md_entry = entry_id
                run = pos
                acked_messages += messages
                continue
            if run is not None:
                self._moved_to(run)
                changed.add(run[0])
                run = None
            if self.ack(ledger_id, entry_id):
                acked_messages += messages
                changed.add(pos[0])
            else:
                repeated_messages += messages
            md = self.md
            md_ledger, md_entry = md
            in_order = not self._ranges and not self._batch
        if run is not None:
            self._moved_to(run)
            changed.add(run[0])
        return acked_messages, repeated_messages

    def _moved_to(self, md: BoxedPosition) -> None:
        """The mark-delete moved in order to ``md`` (nothing acknowledged ahead of it)."""
        self.md = md
        position: Position = md
        if _at_or_before(self.read_position, position):
            self.read_position = self.ledger.next_position(position)

    def batch_size(self, position: Position) -> int:
        """Messages in the entry at ``position``."""
        return self.ledger.ledgers[position[0]].field(position[1], BATCH)

    def unacked_index(self, position: Position, nth: int) -> int:
        """The mask of the ``nth`` (from 0) index of a batch entry not acknowledged yet.

        With no partial ack that is index ``nth`` itself; a partly acknowledged batch counts only
        the indexes its bitset leaves unacked, the ones a redelivery hands the client.
        """
        partial = self._batch.get(position)
        if partial is None:
            return 1 << nth
        unacked = partial.unacked
        for _ in range(nth):
            unacked &= unacked - 1  # drop the lowest set bit
        return unacked & -unacked

    def ack_batch_partially(self, position: Position, batch_size: int, unacked_mask: int) -> None:
        """Some indexes of a batch entry were acked; the bits set in ``unacked_mask`` were not."""
        if not self.is_acked(*position):
            self._batch[position] = BatchAck(batch_size, unacked_mask)

    def ack_cumulative(self, position: Position) -> int:
        """Acknowledge everything up to ``position``; returns how many entries were newly acked."""
        if position <= self.md:
            return 0
        newly = self.ledger.index_of(position) - self.ledger.index_of(self.md)
        for ledger_id in [lid for lid in self.acked if lid <= position[0]]:
            s = self.acked[ledger_id]
            below = {e for e in s if (ledger_id, e) <= position}
            newly -= len(below)
            self._ranges -= len(runs(s)) - len(runs(s - below))
            s -= below
            if not s:
                del self.acked[ledger_id]
        for pos in [p for p in self._batch if p <= position]:
            del self._batch[pos]
        self.md = position
        self._advance_mark_delete()
        return newly

    def _advance_mark_delete(self) -> None:
        """Move the mark-delete over acknowledged entries that now follow it directly."""
        ledger = self.ledger
        nxt = ledger.next_position(self.md)
        while True:
            s = self.acked.get(nxt[0])
            if s is None or nxt[1] not in s:
                break
            # The whole run starting at ``nxt`` is consumed: one range fewer.
            ledger_id, entry_id = nxt
            while entry_id in s:
                s.discard(entry_id)
                entry_id += 1
            self._ranges -= 1
            if not s:
                del self.acked[ledger_id]
            self.md = (ledger_id, entry_id - 1)
            nxt = ledger.next_position(self.md)
        if _at_or_before(self.read_position, self.md):
            self.read_position = nxt

    def restore(self, state: RecoveredAckState) -> None:
        """Replace the whole state with what a persister recovered (after a restart).

        A range that spans ledgers is split over the managed ledger's ledgers, as Pulsar's
        recovery does (spec §6.1 step 4): the lower ledger from after its lower entry to its end,
        each ledger between whole, the upper ledger up to its upper entry.
        """
        self.md = state.mark_delete
        self.acked = {}
        self._ranges = 0
        ledgers = self.ledger.ledgers
        for (ledger_id, lower), (upper_ledger, upper) in state.acked_ranges:
            if upper_ledger == ledger_id:
                self._restore_run(ledger_id, lower + 1, upper + 1)
                continue
            for lid in self.ledger.ledger_ids():
                if ledger_id <= lid <= upper_ledger:
                    first = lower + 1 if lid == ledger_id else 0
                    end = upper + 1 if lid == upper_ledger else len(ledgers[lid])
                    self._restore_run(lid, first, end)
        for s in self.acked.values():
            self._ranges += len(runs(s))
        self._batch = dict(state.batch_acks)
        self.read_position = self.ledger.next_position(self.md)
        self._advance_mark_delete()
        self.read_position = self.ledger.next_position(self.md)

    def _restore_run(self, ledger_id: int, first: int, end: int) -> None:
        """Entries ``first`` to ``end - 1`` of ``ledger_id`` were recovered as acked.

        Those at or before the mark-delete are implied by it and not kept: Pulsar drops them from
        the range set (``removeAtMost``) whenever the mark-delete is set, so none outlives it.
        """
        md: Position = self.md
        md_ledger, md_entry = md
        if ledger_id < md_ledger:
            return
        if ledger_id == md_ledger:
            first = max(first, md_entry + 1)
        if first < end:
            self.acked.setdefault(ledger_id, set()).update(range(first, end))

    def snapshot(self) -> RecoveredAckState:
        """The true state, in the form a perfect persister would recover it."""
        return RecoveredAckState(
            mark_delete=self.md,
            acked_ranges=tuple(self.acked_ranges()),
            batch_acks=dict(self._batch),
        )
