"""Persister (b), PIP-299 as proposed: one byte budget for the cursor metadata (§0.2).

Subscription properties, then the producers' last sequence ids, are counted first and never cut;
the individual acks (ranges and batch bitsets, lowest first) get what is left of
``managedLedgerMaxAckStateInBytesToPersist``. The range-count caps do not apply. The full,
untruncated size is cached at every write (``cursorMetadataSizeInMemoryBytes``) and is what the
pause compares with the limit, so pause and resume lag the live state by up to one write.
"""

from __future__ import annotations

from collections.abc import Mapping

from brokerlab.protocols import AckState, BatchAck, PluginContext, Position
from brokerlab_plugins.ack_state.forms import range_entry, range_node
from brokerlab_plugins.ack_state.pause import PauseSwitch
from brokerlab_plugins.ack_state.range_count import frame_limit, long_array_enabled
from brokerlab_plugins.ack_state.settings import ack_settings
from brokerlab_plugins.ack_state.shapes import LedgerState, Snapshot, ledger_words
from brokerlab_plugins.ack_state.storage import Encoded
from brokerlab_plugins.ack_state.truncation import walk_budget, walk_ledgers_budget
from brokerlab_plugins.ack_state.whole_state import (
    WholeStatePersister,
    store_keeps_batches,
    write_latency,
)
from brokerlab_plugins.ack_state.wire_size import batches_bytes, long_list_map_bytes, ranges_bytes

__all__ = ["ByteLimitEncoder", "new_pip299_persister"]


class ByteLimitEncoder:
    """Encodes one write under the byte budget and caches the full metadata size."""

    def __init__(self, limit: int, long_array: bool, batch_index: bool = True) -> None:
        self.limit = limit
        self.long_array = long_array
        self.batch_index = batch_index
        self.cached_size = 0
        """``cursorMetadataSizeInMemoryBytes``: the full size at the last write."""
        self.bytes_dropped = 0
        self._last_dropped = 0
        self._last_snap: Snapshot | None = None

    def _batches(self, snap: Snapshot) -> Mapping[Position, BatchAck]:
        return snap.batches if self.batch_index else {}

    def _fixed(self, snap: Snapshot) -> int:
        """Header + subscription properties + producers' sequence ids: never truncated."""
        return snap.position_bytes + snap.cursor_properties_bytes

    def _acks_full(self, snap: Snapshot, long_array: bool) -> int:
        """All individual acks in the form this write uses (before the cut)."""
        batches = batches_bytes(self._batches(snap))
        if long_array:
            return batches + sum(
                long_list_map_bytes(lid, ledger_words(ledger.ranges))
                for lid, ledger in snap.ledgers.items()
                if ledger.ranges
            )
        return batches + ranges_bytes(snap.ranges)

    def _cut(self, snap: Snapshot) -> tuple[int, Mapping[Position, BatchAck], int]:
        """MessageRange walk: (ranges kept, batches kept, bytes kept) within the budget."""
        budget = self.limit - self._fixed(snap)
        return walk_budget(snap.ranges, self._batches(snap), budget)

    def entry(self, snap: Snapshot) -> Encoded:
        budget = self.limit - self._fixed(snap)
        if self.long_array and snap.ranges:
            ledgers = snap.ledgers
            if not self.batch_index:
                ledgers = {lid: LedgerState(ledger.ranges) for lid, ledger in ledgers.items()}
            kept, kept_batches, used = walk_ledgers_budget(ledgers, budget)
            if kept:  # else not even the first ledger fits: the MessageRange walk instead
                self._cache(snap, used, long_array=True)
                ranges = [r for lid in kept for r in ledgers[lid].ranges]
                return Encoded(snap, ranges, kept_batches, snap.position_bytes + used)
        kept_ranges, batches, used = self._cut(snap)
        self._cache(snap, used, long_array=False)
        return range_entry(snap, kept_ranges, batches)

    def _cache(self, snap: Snapshot, used: int, long_array: bool) -> None:
        full = self._acks_full(snap, long_array)
        self.cached_size = self._fixed(snap) + full
        self._last_dropped = full - used
        self._last_snap = snap
        self.bytes_dropped += full - used

    def metadata_store(self, snap: Snapshot, now_ms: int) -> Encoded:
        # A node replaces the entry just built for the same state: count its cut once.
        if self._last_snap is snap:
            self.bytes_dropped -= self._last_dropped
        kept_ranges, batches, used = self._cut(snap)
        self._cache(snap, used, long_array=False)
        return range_node(snap, kept_ranges, batches, now_ms)

    def close_to_ledger(self) -> bool:
        return True  # the range-count cap plays no part with this persister

    def over_limit(self, state: AckState) -> bool:
        return self.cached_size >= self.limit

    def stats(self) -> Mapping[str, float]:
        return {"ack_bytes_dropped": self.bytes_dropped}


def new_pip299_persister(context: PluginContext, cursor: str) -> WholeStatePersister:
    s = context.settings
    encoder = ByteLimitEncoder(
        s.managed_ledger_max_ack_state_in_bytes_to_persist,
        long_array_enabled(context, ack_settings(context).pulsar_release),
        s.acknowledgment_at_batch_index_level_enabled,
    )
    pause = PauseSwitch(broker=s.dispatcher_pause_on_ack_persistent_state_enabled)
    return WholeStatePersister(
        context.clock,
        s,
        encoder,
        pause,
        frame_limit(context),
        write_latency(context, cursor),
        store_keeps_batches(context),
    )
