"""Persister (c), PIP-81 as designed: one cursor-ledger entry per dirty user ledger, then a marker.

A write (on the usual mark-delete cadence) appends an entry for each user ledger whose ack state
changed since the last complete write, then a marker entry: the mark-delete position, its
properties, a marker LongProperty and the index ``user ledger -> cursor-ledger entry`` of every
ledger that still has state. Recovery reads back to the newest marker; entries written after it
(a flush whose marker failed) are ignored, so their acks are redelivered. A recovered or full
cursor ledger is replaced by a new one holding copies of only the referenced entries plus a
marker. Nothing is ever truncated; a per-ledger entry larger than the BookKeeper frame fails the
flush (the previous marker stays valid and the cursor stays dirty).

With a storage write latency each entry is durable some time after it was appended, in order; a
crash loses the entries still in flight, so a flush whose marker was in flight is recovered from
the previous marker, and a new cursor ledger whose first marker was in flight is never pointed
at: recovery reads the ledger before it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from brokerlab.protocols import (
    AckState,
    Clock,
    PersistOutcome,
    PluginContext,
    Position,
    RecoveredAckState,
)
from brokerlab_plugins.ack_state.cadence import MarkDeleteRateLimiter
from brokerlab_plugins.ack_state.lru import LruLedgers
from brokerlab_plugins.ack_state.range_count import frame_limit
from brokerlab_plugins.ack_state.shapes import LedgerState, Snapshot, recovered
from brokerlab_plugins.ack_state.storage import FIRST_CURSOR_LEDGER
from brokerlab_plugins.ack_state.whole_state import StorageLimits, write_latency
from brokerlab_plugins.ack_state.wire_size import (
    header_bytes,
    long_properties_bytes,
    long_property_bytes,
    managed_cursor_info_bytes,
    nested_position_bytes,
)

__all__ = ["MARKER_PROPERTY", "SplitAckPersister", "marker_bytes", "new_pip81_persister"]

MARKER_PROPERTY: Final = "pulsar.pip81.marker"
"""The LongProperty that marks a marker entry (so the wire protocol is unchanged)."""


def marker_bytes(
    mark_delete: Position, properties: Mapping[str, int], index: Mapping[int, int]
) -> int:
    """Header + properties + the marker property + one (ledger, entry) pair per indexed ledger."""
    size = header_bytes(mark_delete) + long_properties_bytes(properties)
    size += long_property_bytes(MARKER_PROPERTY, 1)
    return size + sum(nested_position_bytes(lid, eid) for lid, eid in index.items())


@dataclass(frozen=True)
class _LedgerEntry:
    """A cursor-ledger entry with one user ledger's state (a PositionInfo with its ranges)."""

    ledger_id: int
    state: LedgerState
    bytes: int


@dataclass(frozen=True)
class _Marker:
    mark_delete: Position
    properties: Mapping[str, int]
    index: Mapping[int, int]
    bytes: int


class SplitAckPersister:
    """One durable cursor's split ack state: the cursor-ledger log and the in-memory LRU."""

    def __init__(
        self,
        clock: Clock,
        settings: StorageLimits,
        cap: int | None,
        frame: int | None,
        batch_index: bool = True,
        write_ns: Callable[[], int] | None = None,
    ) -> None:
        self._clock = clock
        self._limiter = MarkDeleteRateLimiter(
            settings.managed_ledger_default_mark_delete_rate_limit, clock.now_ns()
        )
        self._max_entries = settings.managed_ledger_cursor_max_entries_per_ledger
        self.frame = frame
        self._batch_index = batch_index
        self.lru = LruLedgers(cap)
        self._log: list[_LedgerEntry | _Marker] = []
        # With a write latency only: when each log entry is durable (ascending), the cursor
        # ledger before the last switch and the index of the new ledger's first marker.
        self._write_ns = write_ns
        self._at_once = False  # the writes being made now are durable at once
        self._done: list[int] = []
        self._last_done_ns = 0
        self._previous: tuple[list[_LedgerEntry | _Marker], list[int]] | None = None
        self._switch_marker = 0
        self.writes_lost_in_flight = 0
        self._readonly = False
        self._cursor_ledger = FIRST_CURSOR_LEDGER - 1
        self._index: dict[int, int] = {}
        self._written: dict[int, LedgerState] = {}
        self._pending: set[int] = set()
        self._dirty = False
        self.fail_next_marker = False
        """Fault injection: the next marker write fails (its flush then counts as failed)."""
        self.changed_bytes = 0
        self.oversize_entries = 0
        self.rollovers = 0
        self.metadata_store_writes = 0
        self.failed_flushes = 0
        self.ledger_entries_written = 0
        self.marker_fallbacks = 0
        self.recovery_path = ""
        self._cursor_properties: Mapping[str, str] = {}

    # ---- AckStatePersister --------------------------------------------------------------------

    def created(self, state: AckState) -> PersistOutcome | None:
        # The cursor exists once its first marker is durable: nothing of it is in flight.
        return self._flush_at_once(state)

    def acked(self, state: AckState, changed_ledgers: Sequence[int]) -> PersistOutcome | None:
        swapped_out: set[int] = set()
        for lid in changed_ledgers:
            self._pending.add(lid)
            written = self._written.get(lid)
            swapped_out.update(
                self.lru.touch(lid, written.bytes if written else 0, lid in self._index)
            )
        # A dirty ledger is written before it leaves memory [inferred in the spec].
        if swapped_out & self._pending or self._limiter.try_acquire(self._clock.now_ns()):
            return self._flush(state)
        self._dirty = True
        return None

    def flush(self, state: AckState) -> PersistOutcome | None:
        return self._flush(state) if self._dirty else None

    def close(self, state: AckState) -> PersistOutcome | None:
        # A close completes once its writes and every earlier one are durable.
        outcome = self._flush_at_once(state)
        if self._write_ns is not None:
            self._done = [0] * len(self._log)
            self._previous = None
        return outcome

    def _flush_at_once(self, state: AckState) -> PersistOutcome:
        self._at_once = True
        try:
            return self._flush(state)
        finally:
            self._at_once = False

    def crash(self) -> None:
        self._dirty = False
        self._pending.clear()
        if self._write_ns is not None:
            self._lose_in_flight(self._clock.now_ns())

    def _lose_in_flight(self, now_ns: int) -> None:
        """Drop the log entries not durable at ``now_ns``; a new cursor ledger whose first
        marker was among them is dropped whole, and the one before it is read instead."""
        kept = bisect_right(self._done, now_ns)
        lost = len(self._log) - kept
        if self._previous is not None and kept <= self._switch_marker:
            self._log, self._done = self._previous
            kept = bisect_right(self._done, now_ns)
            lost += len(self._log) - kept
        self._previous = None
        del self._log[kept:], self._done[kept:]
        self.writes_lost_in_flight += lost

    def recover(self) -> RecoveredAckState:
        """Read back to the newest complete marker; load ledgers newest first up to the cap."""
        log = self._log
        last = max((i for i, e in enumerate(log) if isinstance(e, _Marker)), default=-1)
        if last < len(log) - 1:
            self.marker_fallbacks += 1
            self.recovery_path = "previous marker"
        else:
            self.recovery_path = "marker"
        marker = log[last]
        assert isinstance(marker, _Marker), "created() always writes a marker first"
        self._index = dict(marker.index)
        self._written = {}
        for lid, eid in marker.index.items():
            entry = log[eid]
            assert isinstance(entry, _LedgerEntry)
            self._written[lid] = entry.state
        self._readonly = True
        self._dirty = False
        self.lru.load(
            (lid, self._written[lid].bytes) for lid in sorted(self._written, reverse=True)
        )
        ranges = [r for st in self._written.values() for r in st.ranges]
        batches = {p: b for st in self._written.values() for p, b in st.batches}
        state = recovered(marker.mark_delete, ranges, batches, marker.properties)
        # Subscription properties live in the metadata store, untouched by the cursor ledger.
        return replace(state, subscription_properties=dict(self._cursor_properties))

    def should_pause_dispatch(self, state: AckState) -> bool:
        return False  # PIP-81 persists everything; it has no pause

    def stats(self) -> Mapping[str, float]:
        return {
            "ack_changed_bytes": self.changed_bytes,
            "ack_oversize_entries": self.oversize_entries,
            "ack_cursor_ledger_rollovers": self.rollovers,
            "ack_metadata_store_writes": self.metadata_store_writes,
            "ack_swap_ins": self.lru.swap_ins,
            "ack_swap_outs": self.lru.swap_outs,
            # Reported only where writes take time, so that other runs keep their metrics.
            **(
                {"ack_writes_lost_in_flight": self.writes_lost_in_flight}
                if self._write_ns is not None
                else {}
            ),
        }

    # ---- writes -------------------------------------------------------------------------------

    def _ledgers(self, snap: Snapshot) -> Mapping[int, LedgerState]:
        if self._batch_index:
            return snap.ledgers
        return {lid: LedgerState(st.ranges) for lid, st in snap.ledgers.items() if st.ranges}

    def _flush(self, state: AckState) -> PersistOutcome:
        snap = Snapshot.of(state)
        ledgers = self._ledgers(snap)
        md = snap.mark_delete
        spent = 0
        if self._readonly or not self._log:
            spent += self._switch(snap)
        dirty = [lid for lid, st in ledgers.items() if self._written.get(lid) != st]
        # Ledgers without state (passed by the mark-delete) leave the index.
        index = {lid: eid for lid, eid in self._index.items() if lid in ledgers}
        header = header_bytes(md)
        for lid in dirty:
            entry = _LedgerEntry(lid, ledgers[lid], header + ledgers[lid].bytes)
            if self.frame is not None and entry.bytes > self.frame:
                self.oversize_entries += 1
                return self._failed(spent)
            self._append(entry)
            self.ledger_entries_written += 1
            spent += entry.bytes
            index[lid] = len(self._log) - 1
        if self.fail_next_marker:
            self.fail_next_marker = False
            return self._failed(spent)
        self._cursor_properties = snap.cursor_properties
        marker = _Marker(md, dict(snap.properties), index, marker_bytes(md, snap.properties, index))
        self._append(marker)
        spent += marker.bytes
        self._index = index
        self._written = {lid: ledgers[lid] for lid in index}
        self.changed_bytes += snap.changed_bytes(dirty)
        self._dirty = False
        self._pending.clear()
        self.lru.resize({lid: st.bytes for lid, st in ledgers.items()})
        if len(self._log) - 1 >= self._max_entries:
            spent += self._switch(snap)
            self.rollovers += 1
        return PersistOutcome(spent, len(snap.ranges))

    def _failed(self, spent: int) -> PersistOutcome:
        """Entries went out but no marker: the previous marker stays, the cursor stays dirty."""
        self.failed_flushes += 1
        self._dirty = True
        return PersistOutcome(spent, 0)

    def _switch(self, snap: Snapshot) -> int:
        """A new cursor ledger: copies of the referenced entries, a marker, the node updated."""
        old = self._log
        if self._write_ns is not None:
            self._previous = (old, self._done)
            self._done = []
        self._log = []
        index: dict[int, int] = {}
        spent = 0
        for lid, eid in self._index.items():
            entry = old[eid]
            self._append(entry)
            index[lid] = len(self._log) - 1
            spent += entry.bytes
        previous = self._last_marker(old)
        md = previous.mark_delete if previous else snap.mark_delete
        props = previous.properties if previous else snap.properties
        marker = _Marker(md, props, index, marker_bytes(md, props, index))
        self._append(marker)
        self._switch_marker = len(self._log) - 1
        self._index = index
        self._readonly = False
        self.metadata_store_writes += 1
        self._cursor_ledger += 1
        pointer = managed_cursor_info_bytes(
            self._cursor_ledger,
            md,
            properties=props,
            cursor_properties=snap.cursor_properties,
            last_active_ms=self._clock.now_ms(),
        )
        return spent + marker.bytes + pointer

    def _append(self, entry: _LedgerEntry | _Marker) -> None:
        """Write one cursor-ledger entry: durable now, or after a draw of the write latency and
        never before the entries written earlier."""
        self._log.append(entry)
        write_ns = self._write_ns
        if write_ns is None:
            return  # durable at once: nothing to track
        now = self._clock.now_ns()
        done = now if self._at_once else now + write_ns()
        self._last_done_ns = max(done, self._last_done_ns)
        self._done.append(self._last_done_ns)

    @staticmethod
    def _last_marker(log: list[_LedgerEntry | _Marker]) -> _Marker | None:
        for entry in reversed(log):
            if isinstance(entry, _Marker):
                return entry
        return None


def new_pip81_persister(context: PluginContext, cursor: str) -> SplitAckPersister:
    s = context.settings
    cap = (
        s.max_individual_ack_cache_bytes_per_cursor
        if s.enable_lru_cache_max_unacked_ranges
        else None
    )
    return SplitAckPersister(
        context.clock,
        s,
        cap,
        frame_limit(context),
        s.acknowledgment_at_batch_index_level_enabled,
        write_latency(context, cursor),
    )
