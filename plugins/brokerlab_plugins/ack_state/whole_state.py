"""The persister Pulsar ships: the whole state in one entry per write, on the mark-delete cadence.

What differs between the unlimited baseline, the range-count limits (§0.1) and the PIP-299 byte
limit (§0.2) is only how one write is encoded (what is kept, how many bytes) and when dispatch
pauses; that is an :class:`Encoder`. Cadence (§3.4), the cursor ledger and metadata-store paths
(§3.5 to §3.7, §6) and the write-amplification accounting (§0.4) are shared here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final, Protocol

from brokerlab.protocols import AckState, Clock, PersistOutcome, PluginContext, RecoveredAckState
from brokerlab_plugins.ack_state.cadence import MarkDeleteRateLimiter
from brokerlab_plugins.ack_state.pause import PauseSwitch
from brokerlab_plugins.ack_state.settings import ack_settings
from brokerlab_plugins.ack_state.shapes import LedgerState, Snapshot
from brokerlab_plugins.ack_state.storage import CursorStorage, Encoded
from brokerlab_plugins.ack_state.wire_size import managed_cursor_info_bytes

__all__ = [
    "Encoder",
    "StorageLimits",
    "WholeStatePersister",
    "store_keeps_batches",
    "write_latency",
]

_NO_PROPERTIES: Final[Mapping[str, int]] = {}


def store_keeps_batches(context: PluginContext) -> bool:
    """Whether recovery from the metadata store restores batch bitsets: on Pulsar's master line
    (``sim.ackState.pulsarRelease=5.0``, PR #26474), not on 4.x."""
    return ack_settings(context).pulsar_release == "5.0"


def write_latency(context: PluginContext, cursor: str) -> Callable[[], int] | None:
    """How long each of ``cursor``'s storage writes takes (``None``: durable at once)."""
    writes = context.storage_write_ns
    return None if writes is None else writes(cursor)


class Encoder(Protocol):
    """How one persister serializes and truncates a write, and when it asks for a pause."""

    def entry(self, snap: Snapshot) -> Encoded:
        """The cursor-ledger entry (PositionInfo)."""

    def metadata_store(self, snap: Snapshot, now_ms: int) -> Encoded:
        """The metadata-store node holding the state (``cursorsLedgerId = -1``)."""

    def close_to_ledger(self) -> bool:
        """Whether a close may go to the ledger at all (Pulsar: a range cap above 0)."""

    def over_limit(self, state: AckState) -> bool:
        """The pause predicate, consulted only while the pause switch is on."""

    def stats(self) -> Mapping[str, float]: ...


class StorageLimits(Protocol):
    """The broker settings the shared machinery reads (a subset of ``BrokerSettings``)."""

    managed_ledger_default_mark_delete_rate_limit: float
    managed_ledger_cursor_max_entries_per_ledger: int
    managed_ledger_cursor_rollover_time_in_seconds: int
    max_message_size: int

    @property
    def unacked_ranges_to_persist_in_metadata_store(self) -> int: ...


class WholeStatePersister:
    """One durable cursor's writes: cadence, storage paths and accounting around an encoder."""

    def __init__(
        self,
        clock: Clock,
        settings: StorageLimits,
        encoder: Encoder,
        pause: PauseSwitch | None = None,
        frame_limit: int | None = None,
        write_ns: Callable[[], int] | None = None,
        store_keeps_batches: bool = False,
    ) -> None:
        self._clock = clock
        self.encoder = encoder
        self.pause = pause or PauseSwitch(broker=False)
        self._limiter = MarkDeleteRateLimiter(
            settings.managed_ledger_default_mark_delete_rate_limit, clock.now_ns()
        )
        self._store_threshold = settings.unacked_ranges_to_persist_in_metadata_store
        self.storage = CursorStorage(
            clock,
            frame_limit,
            settings.managed_ledger_cursor_max_entries_per_ledger,
            settings.managed_ledger_cursor_rollover_time_in_seconds,
            RecoveredAckState(mark_delete=(-1, -1)),
            self,
            write_ns,
            store_keeps_batches,
        )
        self._dirty = False
        self._cursor_properties: Mapping[str, str] = {}
        self._persisted: Mapping[int, LedgerState] = {}
        self._changed_bytes = 0
        self.recovery_path = ""
        # The cursor's last mark-delete entry (position, properties): a new ledger starts with it.
        self._last_entry: tuple[Any, Mapping[str, int]] = ((-1, -1), _NO_PROPERTIES)

    # ---- AckStatePersister --------------------------------------------------------------------

    def created(self, state: AckState) -> PersistOutcome | None:
        snap = Snapshot.of(state)
        self._last_entry = (snap.mark_delete, snap.properties)
        return self._outcome(snap, self.storage.open(snap))

    def acked(self, state: AckState, changed_ledgers: Sequence[int]) -> PersistOutcome | None:
        now = self._clock.now_ns()
        if self._limiter.try_acquire(now):
            return self._persist(state, now)
        self._dirty = True  # the periodic flush writes it
        # Pulsar still records a throttled mark-delete as the cursor's last one.
        properties = state.mark_delete_properties()
        live: Any = state  # the cursor's own position object, not a re-boxed copy
        self._last_entry = (live.mark_delete, dict(properties) if properties else _NO_PROPERTIES)
        return None

    def flush(self, state: AckState) -> PersistOutcome | None:
        return self._persist(state, self._clock.now_ns()) if self._dirty else None

    def close(self, state: AckState) -> PersistOutcome | None:
        snap = Snapshot.of(state)
        to_ledger = (
            self.storage.ledger_writable
            and self.encoder.close_to_ledger()
            and state.range_count() > self._store_threshold
        )
        return self._outcome(
            snap, self.storage.close(snap, lambda: self.encoder.entry(snap), to_ledger)
        )

    def crash(self) -> None:
        self._dirty = False
        self.storage.crash(self._clock.now_ns())

    def recover(self) -> RecoveredAckState:
        state, self.recovery_path = self.storage.recover()
        self._persisted = {}
        self._last_entry = (state.mark_delete, state.mark_delete_properties)
        # Subscription properties live in the metadata store and come back on every path.
        return replace(state, subscription_properties=dict(self._cursor_properties))

    def should_pause_dispatch(self, state: AckState) -> bool:
        # A disabled switch answers at once, without sizing the state (Pulsar #22729).
        return self.pause.enabled and self.encoder.over_limit(state)

    def stats(self) -> Mapping[str, float]:
        s = self.storage
        return {
            "ack_changed_bytes": self._changed_bytes,
            "ack_metadata_store_writes": s.metadata_store_writes,
            "ack_oversize_entries": s.oversize_entries,
            "ack_cursor_ledger_rollovers": s.rollovers,
            **self.encoder.stats(),
            # Reported only where writes take time, so that other runs keep their metrics.
            **({"ack_writes_lost_in_flight": s.writes_lost_in_flight} if s.takes_time else {}),
        }

    # ---- MetadataNodes (asked by the storage only when it writes the node) ---------------------

    def state_node(self, snap: Snapshot) -> Encoded:
        return self.encoder.metadata_store(snap, self._clock.now_ms())

    def creation_entry(self, snap: Snapshot) -> Encoded:
        mark_delete, properties = self._last_entry
        last = Snapshot(mark_delete, snap.ranges, snap.batches, properties, snap.cursor_properties)
        return self.encoder.entry(last)

    def pointer_bytes(self, snap: Snapshot, ledger_id: int) -> int:
        return managed_cursor_info_bytes(
            ledger_id,
            snap.mark_delete,
            properties=snap.properties,
            cursor_properties=snap.cursor_properties,
            last_active_ms=self._clock.now_ms(),
        )

    # ---- internals ----------------------------------------------------------------------------

    def _persist(self, state: AckState, now_ns: int) -> PersistOutcome:
        snap = Snapshot.of(state)
        outcome = self.storage.persist(self.encoder.entry(snap), now_ns)
        self._last_entry = (snap.mark_delete, snap.properties)
        return self._outcome(snap, outcome)

    def _outcome(self, snap: Snapshot, outcome: PersistOutcome) -> PersistOutcome:
        """Account one successful write: changed bytes since the previous one, dirtiness."""
        self._cursor_properties = snap.cursor_properties
        ledgers = snap.ledgers
        changed: Collection[int] = ()
        if ledgers:  # only a ledger the state still has can count as changed
            previous = self._persisted
            changed = [lid for lid, ledger in ledgers.items() if previous.get(lid) != ledger]
        self._changed_bytes += snap.changed_bytes(changed)
        self._persisted = ledgers
        self._dirty = False
        return outcome
