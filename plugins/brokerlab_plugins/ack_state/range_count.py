"""Persister (a), Pulsar as merged: count caps on ranges and batch bitsets (§0.1, §4, §5).

* MessageRange form: the lowest ``managedLedgerMaxUnackedRangesToPersist`` ranges are kept; a
  truncating build bumps a counter and logs a WARN once per crossing (re-armed by the first build
  that does not truncate). Batch bitsets have their own cap, counter and WARN.
* Long-array form (``managedLedgerPersistIndividualAckAsLongArray``; in 4.x also the open-cache
  flag): whole ledgers chosen by ``toRanges`` on the *acked-entry* count, with the 4.x or 5.0
  inclusion rule, silently (no counter, no WARN); an empty map falls back to the MessageRange form.
* Pause (``dispatcherPauseOnAckStatePersistentEnabled``): strictly more ranges than the cap.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from brokerlab.protocols import AckState, BatchAck, PluginContext, Position
from brokerlab_plugins.ack_state.forms import range_entry, range_node
from brokerlab_plugins.ack_state.pause import PauseSwitch
from brokerlab_plugins.ack_state.settings import ack_settings
from brokerlab_plugins.ack_state.shapes import Range, Snapshot, ledger_words
from brokerlab_plugins.ack_state.storage import Encoded
from brokerlab_plugins.ack_state.truncation import Release, first_batches, to_ranges
from brokerlab_plugins.ack_state.whole_state import (
    WholeStatePersister,
    store_keeps_batches,
    write_latency,
)
from brokerlab_plugins.ack_state.wire_size import FRAME_PADDING, batches_bytes, long_list_map_bytes

__all__ = ["RangeCountEncoder", "new_range_count_persister"]

log = logging.getLogger(__name__)


class _Crossing:
    """A truncation counter with Pulsar's once-per-crossing WARN."""

    __slots__ = ("armed", "count", "warnings", "what")

    def __init__(self, what: str) -> None:
        self.what = what
        self.count = 0
        self.warnings = 0
        self.armed = True

    def build(self, total: int, limit: int, cursor: str) -> None:
        if total <= max(limit, 0):  # a cap below 0 cuts what 0 cuts: everything, if anything
            self.armed = True
            return
        self.count += 1
        if self.armed:
            self.armed = False
            self.warnings += 1
            log.debug("%s: %d %s exceed the limit %d; truncating", cursor, total, self.what, limit)


class RangeCountEncoder:
    """Encodes one write under the count caps; one per cursor (it keeps the WARN state)."""

    def __init__(
        self,
        max_ranges: int,
        max_batches: int | None,
        long_array: bool,
        release: Release = "4.x",
        cursor: str = "",
    ) -> None:
        self.max_ranges = max_ranges
        self.max_batches = max_batches
        self.long_array = long_array
        self.release = release
        self.cursor = cursor
        self.ranges_cut = _Crossing("ranges")
        self.batches_cut = _Crossing("batch bitsets")
        self.ledgers_dropped = 0
        self.entries_dropped = 0

    def _batches(self, snap: Snapshot) -> dict[Position, BatchAck]:
        if self.max_batches is None:  # batch-index acks off: no bitsets are kept at all
            return {}
        self.batches_cut.build(len(snap.batches), self.max_batches, self.cursor)
        return first_batches(snap.batches, self.max_batches)

    def _kept_ranges(self, snap: Snapshot) -> int:
        self.ranges_cut.build(len(snap.ranges), self.max_ranges, self.cursor)
        return max(0, min(len(snap.ranges), self.max_ranges))

    def entry(self, snap: Snapshot) -> Encoded:
        batches = self._batches(snap)
        if self.long_array:
            encoded = self._long_array(snap, batches)
            if encoded is not None:
                return encoded
        return range_entry(snap, self._kept_ranges(snap), batches)

    def _long_array(self, snap: Snapshot, batches: Mapping[Position, BatchAck]) -> Encoded | None:
        """Field 6, or ``None`` when ``toRanges`` keeps nothing (then field 3 is used)."""
        ledgers = snap.ledgers
        kept = to_ranges(ledgers, self.max_ranges, self.release)
        if not kept:
            return None
        size = snap.position_bytes + batches_bytes(batches)
        ranges: list[Range] = []
        for lid in kept:
            ranges.extend(ledgers[lid].ranges)
            size += long_list_map_bytes(lid, ledger_words(ledgers[lid].ranges))
        dropped = [ledger for lid, ledger in ledgers.items() if ledger.ranges and lid not in kept]
        self.ledgers_dropped += len(dropped)
        self.entries_dropped += sum(ledger.cardinality for ledger in dropped)
        return Encoded(snap, ranges, batches, size)

    def metadata_store(self, snap: Snapshot, now_ms: int) -> Encoded:
        # The metadata-store threshold never truncates; the range cap does (§3.6, §12 item 5).
        return range_node(snap, self._kept_ranges(snap), self._batches(snap), now_ms)

    def close_to_ledger(self) -> bool:
        return self.max_ranges > 0

    def over_limit(self, state: AckState) -> bool:
        # The live count, not a cached one; the long-array cap is ignored here (§4.3 quirk).
        return state.range_count() > self.max_ranges

    def stats(self) -> Mapping[str, float]:
        return {
            "ack_truncations": self.ranges_cut.count,
            "ack_batch_truncations": self.batches_cut.count,
            "ack_ledgers_dropped": self.ledgers_dropped,
            "ack_entries_dropped": self.entries_dropped,
        }


def long_array_enabled(context: PluginContext, release: Release) -> bool:
    """4.x needs the open-cache range set too; 5.0 removed that flag (§2.4)."""
    s = context.settings
    if release == "5.0":
        return bool(s.managed_ledger_persist_individual_ack_as_long_array)
    return bool(
        s.managed_ledger_persist_individual_ack_as_long_array
        and s.managed_ledger_unacked_ranges_open_cache_set_enabled
    )


def batch_cap(context: PluginContext) -> int | None:
    """Batch bitsets persisted at most; ``None`` when batch-index acks are off (none tracked)."""
    s = context.settings
    if not s.acknowledgment_at_batch_index_level_enabled:
        return None
    return int(s.managed_ledger_max_batch_deleted_index_to_persist)


def frame_limit(context: PluginContext) -> int:
    """Largest cursor-ledger entry BookKeeper accepts (§2.5)."""
    return int(context.settings.max_message_size) + FRAME_PADDING


def new_range_count_persister(context: PluginContext, cursor: str) -> WholeStatePersister:
    s = context.settings
    release = ack_settings(context).pulsar_release
    encoder = RangeCountEncoder(
        s.managed_ledger_max_unacked_ranges_to_persist,
        batch_cap(context),
        long_array_enabled(context, release),
        release,
        cursor,
    )
    pause = PauseSwitch(broker=s.dispatcher_pause_on_ack_state_persistent_enabled)
    return WholeStatePersister(
        context.clock,
        s,
        encoder,
        pause,
        frame_limit(context),
        write_latency(context, cursor),
        store_keeps_batches(context),
    )
