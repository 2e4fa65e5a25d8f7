"""Where a whole-state cursor write lands: the cursor ledger or the metadata-store node (§3, §6).

The model keeps only what recovery can read back:

* the cursor ledger's last entry (recovery reads the last entry only), its entry count and age
  (rollover, §3.5), and whether it is writable (a recovered ledger is read-only; the first write
  after a restart or a fallback creates a new ledger: a creation entry, then the write itself);
* the metadata-store node: either a pointer to the cursor ledger plus the mark-delete of the last
  ledger switch (used by a rollback, §6.1), or the whole state (``cursorsLedgerId = -1``) after
  a BookKeeper failure (§3.6) or a close to the metadata store (§3.7). Recovery from the node
  drops the batch bitsets, as Pulsar does.

Writes are synchronous: the simulated broker has no in-flight window, so a crash loses exactly the
writes the cadence had not made yet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from brokerlab.protocols import Clock, RecoveredAckState

__all__ = ["CursorStorage", "Encoded", "Written"]

NS = 1_000_000_000
FIRST_CURSOR_LEDGER = 1_000_000


@dataclass(frozen=True)
class Encoded:
    """One serialized write: what it recovers to, its size and what the limits left out."""

    durable: RecoveredAckState
    bytes: int
    ranges_persisted: int
    ranges_dropped: int = 0


@dataclass(frozen=True)
class Written:
    """What one persist call cost, and which encoding became durable."""

    bytes: int
    to_metadata_store: bool
    durable: Encoded


class CursorStorage:
    """One cursor's ledger and metadata-store node."""

    def __init__(
        self,
        clock: Clock,
        frame_limit: int | None,
        max_entries_per_ledger: int,
        rollover_seconds: int,
        start: RecoveredAckState,
    ) -> None:
        self._clock = clock
        self.frame_limit = frame_limit
        self._max_entries = max_entries_per_ledger
        self._rollover_ns = rollover_seconds * NS
        self._mode: Literal["open", "none", "readonly"] = "none"
        self._ledger_id = FIRST_CURSOR_LEDGER - 1
        self._entries = 0
        self._created_ns = 0
        self._last: RecoveredAckState | None = None
        self._node = start
        self._node_holds_state = False
        self._ledger_lost = False
        self.rollovers = 0
        self.metadata_store_writes = 0
        self.oversize_entries = 0
        self.ledger_entries = 0

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

    def persist(
        self, entry: Encoded, fallback: Callable[[], Encoded], pointer: Callable[[int], int]
    ) -> Written:
        """Append ``entry``, creating a ledger first if needed; on an oversize entry, ``fallback``.

        ``pointer(ledger_id)`` is the size of the metadata-store node that points at a new ledger.
        """
        spent = 0
        to_store = False
        if self._mode != "open":
            if not self._fits(entry):
                return self._fall_back(fallback)
            # A new ledger starts with a creation entry holding the last mark-delete entry.
            spent += self._switch(entry, pointer)
            to_store = True
        if not self._fits(entry):
            written = self._fall_back(fallback)
            return Written(spent + written.bytes, True, written.durable)
        spent += self._append(entry)
        if self._entries - 1 >= self._max_entries or (
            self._rollover_ns > 0 and self._clock.now_ns() - self._created_ns >= self._rollover_ns
        ):
            spent += self._switch(entry, pointer)
            self.rollovers += 1
            to_store = True
        return Written(spent, to_store, entry)

    def open(self, entry: Encoded, pointer: Callable[[int], int]) -> Written:
        """The cursor's first write: create its ledger with the initial state."""
        return Written(self._switch(entry, pointer), True, entry)

    def close(
        self, build: Callable[[], Encoded], to_ledger: bool, to_store: Callable[[], Encoded]
    ) -> Written:
        """Graceful close: the final state goes to the writable ledger or to the node (§3.7)."""
        if to_ledger and self._mode == "open":
            entry = build()
            if not self._fits(entry):
                return self._fall_back(to_store)
            spent = self._append(entry)
            self._mode = "readonly"
            return Written(spent, False, entry)
        written = self._fall_back(to_store, oversize=False)
        self._last = None  # the cursor ledger is deleted
        return written

    def lose_ledger(self) -> None:
        """Fault injection: the cursor ledger was deleted or became unreadable (§6.1 rollback)."""
        self._ledger_lost = True

    # ---- recovery -----------------------------------------------------------------------------

    def recover(self) -> tuple[RecoveredAckState, str]:
        """The state a restarted broker reads back, and the path: ledger, store or rollback."""
        if self._node_holds_state:
            node = self._node
            self._mode = "none"
            # The metadata-store path restores no batch bitsets (§6.1 step 2).
            return replace(node, batch_acks={}), "store"
        if self._ledger_lost or self._last is None:
            self._ledger_lost = False
            self._last = None
            self._mode = "none"
            # Rollback: the snapshot's mark-delete, no individual acks, empty properties.
            return RecoveredAckState(self._node.mark_delete), "rollback"
        self._mode = "readonly"
        return self._last, "ledger"

    # ---- internals ----------------------------------------------------------------------------

    def _fits(self, entry: Encoded) -> bool:
        return self.frame_limit is None or entry.bytes <= self.frame_limit

    def _append(self, entry: Encoded) -> int:
        self._entries += 1
        self.ledger_entries += 1
        self._last = entry.durable
        return entry.bytes

    def _switch(self, entry: Encoded, pointer: Callable[[int], int]) -> int:
        """New ledger, full state as its first entry, node points at it, old ledger deleted."""
        self._ledger_id += 1
        self._mode = "open"
        self._entries = 0
        self._created_ns = self._clock.now_ns()
        self._ledger_lost = False
        spent = self._append(entry)
        self._node = RecoveredAckState(entry.durable.mark_delete)
        self._node_holds_state = False
        self.metadata_store_writes += 1
        return spent + pointer(self._ledger_id)

    def _fall_back(self, to_store: Callable[[], Encoded], oversize: bool = True) -> Written:
        """Write the state into the metadata-store node (``cursorsLedgerId = -1``)."""
        encoded = to_store()
        self._node = encoded.durable
        self._node_holds_state = True
        self._mode = "none"
        self.metadata_store_writes += 1
        self.oversize_entries += oversize
        return Written(encoded.bytes, True, encoded)
