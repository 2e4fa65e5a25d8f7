"""Where a whole-state cursor write lands: the cursor ledger or the metadata-store node (§3, §6).

The model keeps only what recovery can read back:

* the cursor ledger's last entry (recovery reads the last entry only), its entry count and age
  (rollover, §3.5), and whether it is writable. A cursor has no ledger until its first write
  (Pulsar creates it lazily, PR #16389); a recovered ledger is read-only. The first write with no
  writable ledger creates one: a creation entry, then the write itself. The creation entry and
  the node hold the cursor's last mark-delete entry before this write (Pulsar's
  ``lastMarkDeleteEntry``, with the current individual acks), not the write's own mark-delete,
  so a ledger lost afterwards rolls back to what was acknowledged before (§6.1);
* the metadata-store node: either a pointer to the cursor ledger plus that mark-delete (used by a
  rollback, §6.1), or the whole state (``cursorsLedgerId = -1``) at the cursor's creation, after
  a BookKeeper failure (§3.6) or a close to the metadata store (§3.7). Recovery from the node
  drops the batch bitsets on the 4.x line, as Pulsar does.

A write is durable when the storage says so: at once, or, when the workload gives storage writes a
latency (``PluginContext.storage_write_ns``), that long after it was made and never before the
cursor's earlier writes. A crash loses the acknowledgements the cadence had not written yet and
the writes still in flight (spec §6.3, source 1): recovery reads what the last durable write left
(a ledger switch and the write after it count as one write). The cursor's creation (the
metadata-store node with its initial position) and a graceful close complete before the broker
goes on, so neither is ever in flight at a crash.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final, Literal, Protocol

from brokerlab.protocols import BatchAck, Clock, PersistOutcome, Position, RecoveredAckState
from brokerlab_plugins.ack_state.shapes import Range, Snapshot, recovered

__all__ = ["CursorStorage", "Encoded", "MetadataNodes"]

NS: Final = 1_000_000_000
MS: Final = 1_000_000
FIRST_CURSOR_LEDGER: Final = 1_000_000


class Encoded:
    """One serialized write of a snapshot: what it keeps and its size.

    It holds the kept parts, not the state they recover to: a restart reads back one write only
    (the ledger's last entry or the node), so :attr:`durable` is built when that happens. The parts
    are never mutated after the write (a snapshot is a copy), so the result is the same.
    """

    # A plain slotted class, not a frozen dataclass: one is built per write, and a frozen
    # dataclass's __init__ pays an object.__setattr__ call per field (CPython 3.11).
    __slots__ = ("batches", "bytes", "ranges", "ranges_dropped", "ranges_persisted", "snap")

    def __init__(
        self,
        snap: Snapshot,
        ranges: Sequence[Range],
        batches: Mapping[Position, BatchAck],
        size: int,
    ) -> None:
        self.snap = snap
        self.ranges = ranges
        """The ranges kept: the snapshot's lowest ones, or whole ledgers in the long-array form."""
        self.batches = batches
        """The batch bitsets this write keeps; a restart restores them from a ledger entry, and
        from a node only where ``store_keeps_batches`` (the master line)."""
        self.bytes = size
        self.ranges_persisted = len(ranges)
        self.ranges_dropped = len(snap.ranges) - len(ranges)
        """Ranges of the snapshot the limits left out."""

    @property
    def mark_delete(self) -> Position:
        mark_delete: Position = self.snap.mark_delete
        return mark_delete

    @property
    def durable(self) -> RecoveredAckState:
        """What a restart reads back (ranges clipped to after the mark-delete)."""
        snap = self.snap
        return recovered(snap.mark_delete, self.ranges, self.batches, snap.properties)


class MetadataNodes(Protocol):
    """The metadata-store node a persister writes, asked for only when the storage writes one."""

    def state_node(self, snap: Snapshot) -> Encoded:
        """The node holding the state itself (``cursorsLedgerId = -1``)."""

    def pointer_bytes(self, snap: Snapshot, ledger_id: int) -> int:
        """Size of the node pointing at the new cursor ledger ``ledger_id`` (no ranges)."""

    def creation_entry(self, snap: Snapshot) -> Encoded:
        """A new ledger's first entry when ``snap`` is written with no writable ledger: the last
        mark-delete entry before it, with ``snap``'s individual acks."""


_OUTCOMES_KEPT: Final = 4096
_outcomes: dict[tuple[int, int, int, bool], PersistOutcome] = {}
"""``PersistOutcome(bytes, persisted, dropped, to_store)``, one shared instance per value.

An outcome is a frozen value and most writes repeat one of a few (an empty state, whose size
follows the mark-delete's varint widths); sharing them skips the frozen dataclass __init__. A
plain dict, not ``lru_cache``: the first few thousand values stay, and the lookup is one hash.
"""
_plain_outcomes: dict[int, PersistOutcome] = {}
"""The same for the usual write, one ledger entry with no ranges: keyed by its size alone, an int
hashes in a fraction of the time a tuple takes."""


def _landed(entry: Encoded, spent: int, to_store: bool) -> PersistOutcome:
    """A storage operation that made ``entry`` durable at a cost of ``spent`` bytes."""
    persisted, dropped = entry.ranges_persisted, entry.ranges_dropped
    plain = not to_store and not persisted and not dropped
    outcome = (
        _plain_outcomes.get(spent)
        if plain
        else _outcomes.get((spent, persisted, dropped, to_store))
    )
    if outcome is None:
        outcome = PersistOutcome(spent, persisted, dropped, to_store)
        if plain:
            if len(_plain_outcomes) < _OUTCOMES_KEPT:
                _plain_outcomes[spent] = outcome
        elif len(_outcomes) < _OUTCOMES_KEPT:
            _outcomes[(spent, persisted, dropped, to_store)] = outcome
    return outcome


_RecoveryView = tuple[
    Any, Sequence[Range], Mapping[Position, BatchAck], Mapping[str, int], RecoveredAckState, bool
]
"""What recovery reads: the ledger's last entry (mark-delete, ranges, batches, properties), the
node, and whether the node holds the state."""


class CursorStorage:
    """One cursor's ledger and metadata-store node; ``nodes`` encodes the node's contents.

    ``write_ns`` draws how long one write takes to become durable (``None``: at once).
    ``store_keeps_batches``: recovery from the metadata-store node restores its batch bitsets, as
    Pulsar's master line does (PR #26474); the 4.x line drops them (§6.1 step 2).
    """

    def __init__(
        self,
        clock: Clock,
        frame_limit: int | None,
        max_entries_per_ledger: int,
        rollover_seconds: int,
        start: RecoveredAckState,
        nodes: MetadataNodes,
        write_ns: Callable[[], int] | None = None,
        store_keeps_batches: bool = False,
    ) -> None:
        # What every write reads comes first (compiled, attributes are laid out in this order,
        # and these then share two cache lines).
        self._mode: Literal["open", "none", "readonly"] = "none"
        self.frame_limit = frame_limit
        self._entries = 0
        self.ledger_entries = 0
        self._max_entries = max_entries_per_ledger
        # Pulsar's shouldCloseLedger multiplies the seconds by 1000 in a Java int (it wraps
        # above 2147483 s) and compares whole milliseconds.
        self._rollover_ms = _java_int(rollover_seconds * 1000)
        self._created_ns = 0
        # The last entry's parts, not the Encoded: they stay until the next write, when an
        # encoding, its snapshot or even a tuple of them would be freed long out of the
        # processor's caches (a broker writes thousands of cursors in turn). ``None``: no entry.
        # The snapshot's object as it is (a position, or None), never re-boxed (see Snapshot).
        self._last_mark_delete: Any = None
        self._last_ranges: Sequence[Range] = ()
        self._last_batches: Mapping[Position, BatchAck] = {}
        self._last_properties: Mapping[str, int] = {}
        self._clock = clock
        self._nodes = nodes
        self._ledger_id = FIRST_CURSOR_LEDGER - 1
        self._node = start
        self._node_holds_state = False
        self._ledger_lost = False
        self.rollovers = 0
        self.metadata_store_writes = 0
        self.oversize_entries = 0
        # Writes in flight (only with a write latency): when each becomes durable, and what
        # recovery reads once it is; and what it reads if every one of them is lost.
        self._write_ns = write_ns
        self._in_flight: deque[tuple[int, _RecoveryView]] = deque()
        self._durable_view: _RecoveryView | None = None
        self._last_done_ns = 0
        self.writes_lost_in_flight = 0
        self._store_keeps_batches = store_keeps_batches

    # ---- queries ------------------------------------------------------------------------------

    @property
    def ledger_writable(self) -> bool:
        return self._mode == "open"

    @property
    def node_holds_state(self) -> bool:
        """Whether the metadata-store node carries the state (``cursorsLedgerId = -1``)."""
        return self._node_holds_state

    @property
    def cursor_ledger_id(self) -> int:
        return self._ledger_id

    def next_cursor_ledger_id(self) -> int:
        return self._ledger_id + 1

    # ---- writes -------------------------------------------------------------------------------

    @property
    def takes_time(self) -> bool:
        """Whether writes are in flight for a while before they are durable."""
        return self._write_ns is not None

    def persist(self, entry: Encoded, now_ns: int) -> PersistOutcome:
        """Append ``entry`` at ``now_ns``, creating a ledger first if needed; if oversize, write
        the node. With a write latency the write is in flight until it completes."""
        if self._write_ns is None:
            return self._persist(entry, now_ns)
        self._settle(now_ns)
        if not self._in_flight:
            self._durable_view = self._view()
        outcome = self._persist(entry, now_ns)
        done = max(now_ns + self._write_ns(), self._last_done_ns)
        self._last_done_ns = done
        self._in_flight.append((done, self._view()))
        return outcome

    def _persist(self, entry: Encoded, now_ns: int) -> PersistOutcome:
        spent = 0
        to_store = False
        if self._mode != "open":
            if not self._fits(entry):
                node = self._fall_back(entry.snap)
                return _landed(node, node.bytes, True)
            spent += self._switch(self._nodes.creation_entry(entry.snap))
            to_store = True
        if not self._fits(entry):
            node = self._fall_back(entry.snap)
            return _landed(node, spent + node.bytes, True)
        spent += self._append(entry)
        if (
            self._entries - 1 >= self._max_entries
            or now_ns // MS - self._created_ns // MS > self._rollover_ms
        ):
            spent += self._switch(entry)
            self.rollovers += 1
            to_store = True
        return _landed(entry, spent, to_store)

    def open(self, snap: Snapshot) -> PersistOutcome:
        """The cursor's creation: the node holds its initial state; no ledger yet."""
        node = self._fall_back(snap, oversize=False)
        return _landed(node, node.bytes, True)

    def close(
        self, snap: Snapshot, build: Callable[[], Encoded], to_ledger: bool
    ) -> PersistOutcome:
        """Graceful close: the final state goes to the writable ledger or to the node (§3.7).

        ``build`` encodes the ledger entry, called only if the ledger path is taken. The close
        completes after every write in flight, so all of them are durable.
        """
        self._in_flight.clear()
        if to_ledger and self._mode == "open":
            entry = build()
            if not self._fits(entry):
                node = self._fall_back(snap)
                return _landed(node, node.bytes, True)
            spent = self._append(entry)
            self._mode = "readonly"
            return _landed(entry, spent, False)
        node = self._fall_back(snap, oversize=False)
        self._last_mark_delete = None  # the cursor ledger is deleted
        return _landed(node, node.bytes, True)

    def crash(self, now_ns: int) -> None:
        """The broker died at ``now_ns``: the writes still in flight never complete."""
        self._settle(now_ns)
        if self._in_flight:
            self.writes_lost_in_flight += len(self._in_flight)
            self._in_flight.clear()
            assert self._durable_view is not None
            self._restore(self._durable_view)

    def lose_ledger(self) -> None:
        """Fault injection: the cursor ledger was deleted or became unreadable (§6.1 rollback)."""
        self._ledger_lost = True

    # ---- recovery -----------------------------------------------------------------------------

    def recover(self) -> tuple[RecoveredAckState, str]:
        """The state a restarted broker reads back, and the path: ledger, store or rollback."""
        if self._node_holds_state:
            node = self._node
            self._mode = "none"
            if self._store_keeps_batches:
                return node, "store"
            # The 4.x metadata-store path restores no batch bitsets (§6.1 step 2).
            return replace(node, batch_acks={}), "store"
        last = self._last_mark_delete
        if self._ledger_lost or last is None:
            self._ledger_lost = False
            self._last_mark_delete = None
            self._mode = "none"
            # Rollback: the snapshot's mark-delete, no individual acks, empty properties.
            return RecoveredAckState(self._node.mark_delete), "rollback"
        self._mode = "readonly"
        return recovered(
            last, self._last_ranges, self._last_batches, self._last_properties
        ), "ledger"

    # ---- internals ----------------------------------------------------------------------------

    def _settle(self, now_ns: int) -> None:
        """Writes completed by ``now_ns`` leave the in-flight queue, the last one durable."""
        in_flight = self._in_flight
        while in_flight and in_flight[0][0] <= now_ns:
            self._durable_view = in_flight.popleft()[1]

    def _view(self) -> _RecoveryView:
        return (
            self._last_mark_delete,
            self._last_ranges,
            self._last_batches,
            self._last_properties,
            self._node,
            self._node_holds_state,
        )

    def _restore(self, view: _RecoveryView) -> None:
        (
            self._last_mark_delete,
            self._last_ranges,
            self._last_batches,
            self._last_properties,
            self._node,
            self._node_holds_state,
        ) = view

    def _fits(self, entry: Encoded) -> bool:
        return self.frame_limit is None or entry.bytes <= self.frame_limit

    def _append(self, entry: Encoded) -> int:
        self._entries += 1
        self.ledger_entries += 1
        snap = entry.snap
        self._last_mark_delete = snap.mark_delete
        self._last_ranges = entry.ranges
        self._last_batches = entry.batches
        self._last_properties = snap.properties
        return entry.bytes

    def _switch(self, entry: Encoded) -> int:
        """New ledger with ``entry`` first, the node points at it, the old ledger is deleted."""
        self._ledger_id += 1
        self._mode = "open"
        self._entries = 0
        self._created_ns = self._clock.now_ns()
        self._ledger_lost = False
        spent = self._append(entry)
        self._node = RecoveredAckState(entry.mark_delete)
        self._node_holds_state = False
        self.metadata_store_writes += 1
        return spent + self._nodes.pointer_bytes(entry.snap, self._ledger_id)

    def _fall_back(self, snap: Snapshot, oversize: bool = True) -> Encoded:
        """Write the state into the metadata-store node (``cursorsLedgerId = -1``)."""
        encoded = self._nodes.state_node(snap)
        self._node = encoded.durable
        self._node_holds_state = True
        self._mode = "none"
        self.metadata_store_writes += 1
        self.oversize_entries += oversize
        return encoded


def _java_int(value: int) -> int:
    """``value`` as a Java int computes it: wrapped into 32 bits."""
    return (value + 2**31) % 2**32 - 2**31
