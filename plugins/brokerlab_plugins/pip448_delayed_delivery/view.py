"""One subscription's lightweight view of the shared index (§0.2, "per-subscription state").

The view holds only what the normative contract needs: the positions this subscription added and
was not yet handed (a position bitmap per ledger, its bucket implied by the shared index; pairs of
ambiguous positions explicitly), its mark-delete position, tick, flags and timer. Adds at or before
its own mark-delete position are kept privately, since pruning may drop them from the shared index.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from pyroaring import BitMap

from brokerlab.protocols import Position
from brokerlab_plugins.legacy_delayed_delivery.buckets import Bucketing, add_cutoff
from brokerlab_plugins.legacy_delayed_delivery.bulk import DelayedBatch
from brokerlab_plugins.legacy_delayed_delivery.index import BucketIndex
from brokerlab_plugins.legacy_delayed_delivery.sizing import heap_bytes
from brokerlab_plugins.legacy_delayed_delivery.timer import DeliveryTimer
from brokerlab_plugins.legacy_delayed_delivery.tracker import FixedDelayDetector
from brokerlab_plugins.pip448_delayed_delivery.shared_index import (
    SharedIndex,
    discard_at_or_before,
)

if TYPE_CHECKING:
    from brokerlab_plugins.pip448_delayed_delivery.manager import TopicManager

__all__ = ["NOTHING", "SubscriptionView"]

NOTHING = 1 << 64  # a bucket key above any real one
STATE_BYTES = 400  # the view object, its timer, flags and dict slot


class SubscriptionView:
    """Per-subscription state and the tracker operations, answered from the shared index."""

    def __init__(self, manager: TopicManager, name: str, wake: Callable[[], None]) -> None:
        config = manager.config
        self.manager = manager
        self.shared: SharedIndex = manager.shared
        self.name = name
        self.wake = wake
        self.clock = config.clock
        self.tick_ms = config.tick_ms
        self.lookahead = config.lookahead
        # Precision fixed by the manager; strict flag and tick are this subscription's.
        self.buckets = Bucketing(manager.bits, config.strict)
        self.mark_delete: Position | None = None
        self.pending: dict[int, BitMap] = {}
        self.explicit = BucketIndex()
        self.private = BucketIndex()
        self.count = 0
        self.first = NOTHING  # no shared pending pair below this bucket key
        self.flags = FixedDelayDetector()
        self.wakeups = 0
        self.timer = DeliveryTimer(
            config.clock, manager.mux, config.tick_ms, self._fired, wheel=config.wheel
        )

    def _fired(self) -> None:
        self.wakeups += 1
        self.wake()

    # ---- visibility ---------------------------------------------------------------------------

    def _visible(self, bucket: int, ledger_id: int, entries: BitMap) -> BitMap:
        """The entries of one shared (bucket, ledger) bitmap that this view holds."""
        mine = self.pending.get(ledger_id)
        out = entries & mine if mine is not None else BitMap()
        multi = self.shared.multi.get(ledger_id)
        if multi is not None and out:
            out -= multi  # ambiguous positions count only through explicit pairs
        pinned = self.explicit.bitmap(bucket, ledger_id)
        if pinned is not None:
            out |= pinned
        return out

    def _shared_first(self) -> int | None:
        if self.count == self.private.count:
            self.first = NOTHING
            return None
        for key, ledgers in self.shared.index.items(self.first):
            for ledger_id, entries in ledgers.items():
                if self._visible(key, ledger_id, entries):
                    self.first = key  # buckets below hold nothing of ours: skip them next time
                    return int(key)
        self.first = NOTHING
        return None

    def first_key(self) -> int | None:
        """This view's smallest bucket key (the legacy ``firstBucketKey``)."""
        shared = self._shared_first()
        private = self.private.first_key()
        if shared is None:
            return private
        return shared if private is None else min(shared, private)

    def _bucket_cutoff(self) -> int:
        return self.buckets.bucket_cutoff(self.clock.now_ms(), self.tick_ms)

    def has_visible_due(self) -> bool:
        first = self.first_key()
        return first is not None and first <= self._bucket_cutoff()

    def update_timer(self) -> None:
        self.timer.tick_ms = self.tick_ms
        self.timer.update(self.count, self.first_key())

    # ---- tracker operations ---------------------------------------------------------------------

    def add_message(self, ledger_id: int, entry_id: int, deliver_at_ms: int) -> bool:
        cutoff = add_cutoff(self.clock.now_ms(), self.tick_ms, self.buckets.strict)
        if deliver_at_ms < 0 or deliver_at_ms <= cutoff:
            self.flags.fixed = False
            return False
        bucket = self.buckets.bucket(deliver_at_ms)
        md = self.mark_delete
        if md is not None and (ledger_id, entry_id) <= md:
            new = self.private.add(bucket, ledger_id, entry_id)
        else:
            self.manager.add_shared(bucket, ledger_id, entry_id)
            if self.shared.is_multi(ledger_id, entry_id):
                new = self.explicit.add(bucket, ledger_id, entry_id)
            else:
                pending = self.pending.get(ledger_id)
                if pending is None:
                    pending = self.pending[ledger_id] = BitMap()
                new = entry_id not in pending
                pending.add(entry_id)
            self.first = min(self.first, bucket)
        if new:
            self.count += 1
        self.update_timer()
        self.flags.accepted(deliver_at_ms, self.tick_ms)
        return True

    def load(self, batch: DelayedBatch) -> None:
        """``add_message`` of every message of ``batch`` at this instant, one union per group
        where it can (for benchmarks; see ``legacy_delayed_delivery.bulk``)."""
        batch.check(self.buckets, self.clock.now_ms(), self.tick_ms)
        md = self.mark_delete
        for g in batch.groups:
            ledger_id, entries = g.ledger_id, g.entries
            sizes: tuple[int, int] | None = (g.pulsar_bytes, g.heap_bytes)
            if md is not None and ledger_id <= md[0]:
                # Adds at or before our mark-delete are kept privately, as add_message does.
                kept = entries if ledger_id < md[0] else entries & BitMap(range(md[1] + 1))
                if kept:
                    self.count += self.private.add_many(g.bucket, ledger_id, kept)
                    entries, sizes = entries - kept, None
                if not entries:
                    continue
            self.manager.add_shared_many(g.bucket, ledger_id, entries, sizes)
            multi = self.shared.multi.get(ledger_id)
            ambiguous = entries & multi if multi is not None else None
            if ambiguous:
                for entry_id in ambiguous:
                    self.count += self.explicit.add(g.bucket, ledger_id, entry_id)
                entries = entries - ambiguous
            if entries:
                pending = self.pending.get(ledger_id)
                if pending is None:
                    pending = self.pending[ledger_id] = BitMap()
                before = len(pending)
                pending |= entries
                self.count += len(pending) - before
            self.first = min(self.first, g.bucket)
        self.update_timer()
        self.flags.accepted_batch(batch, self.tick_ms)

    def pin(self, bucket: int, ledger_id: int, entry_id: int) -> None:
        """The position became ambiguous: keep our pending copy as an explicit pair."""
        pending = self.pending.get(ledger_id)
        if pending is not None and entry_id in pending:
            pending.remove(entry_id)
            if not pending:
                del self.pending[ledger_id]
            self.explicit.add(bucket, ledger_id, entry_id)

    def has_message_available(self) -> bool:
        available = self.has_visible_due()
        if not available:
            self.update_timer()
        return available

    def _due_buckets(self, cutoff: int) -> Iterator[int]:
        shared = self.shared.index.buckets.irange(minimum=self.first, maximum=cutoff)
        # A copy: draining a private bucket deletes it while this generator is still running,
        # and a live irange over a changing SortedDict skips keys or fails.
        private = list(self.private.buckets.irange(maximum=cutoff))
        last = None
        for key in heapq.merge(shared, private):
            if key != last:
                last = key
                yield int(key)

    def get_scheduled_messages(self, max_messages: int) -> list[Position]:
        cutoff = self._bucket_cutoff()
        remaining = max_messages
        out: list[Position] = []
        if self.count:
            shared = self.shared.index.buckets
            for key in self._due_buckets(cutoff):
                ledgers: dict[int, BitMap] = shared.get(key, {})
                mine: dict[int, BitMap] = self.private.buckets.get(key, {})
                for ledger_id in sorted(ledgers.keys() | mine.keys()):
                    held = ledgers.get(ledger_id)
                    chosen = BitMap() if held is None else self._visible(key, ledger_id, held)
                    kept = mine.get(ledger_id)
                    if kept is not None:
                        chosen |= kept
                    if not chosen:
                        continue
                    if len(chosen) > remaining:
                        chosen = chosen[:remaining]
                    self._handed(key, ledger_id, chosen)
                    out.extend((ledger_id, e) for e in chosen)
                    remaining -= len(chosen)
                    if remaining <= 0:
                        break
                if remaining <= 0:
                    break
        if self.count == 0:
            self.flags.reset()
        self.update_timer()
        self.manager.maybe_prune()
        return sorted(set(out))

    def _handed(self, bucket: int, ledger_id: int, chosen: BitMap) -> None:
        pending = self.pending.get(ledger_id)
        if pending is not None:
            pending.difference_update(chosen)
            if not pending:
                del self.pending[ledger_id]
        self.explicit.take(bucket, ledger_id, chosen)
        self.private.take(bucket, ledger_id, chosen)
        self.count -= len(chosen)

    def mark_delete_moved(self, position: Position) -> None:
        """R_S's extra operation: forget held positions <= md (flags and timer untouched)."""
        if self.mark_delete is not None and position <= self.mark_delete:
            return
        self.mark_delete = position
        gone = discard_at_or_before(self.pending, position)
        gone += self.explicit.remove_at_or_before(position)
        gone += self.private.remove_at_or_before(position)
        self.count -= gone

    def should_pause_all_deliveries(self) -> bool:
        if not self.flags.pause(self.lookahead, self.count, False):
            return False
        return not self.has_message_available()

    def clear(self) -> None:
        self.pending.clear()
        self.explicit.clear()
        self.private.clear()
        self.count = 0
        self.first = NOTHING

    def state_bytes(self) -> int:
        """Real bytes of this view (kept apart from the shared index, §0.2)."""
        return (
            STATE_BYTES
            + heap_bytes(self.pending)
            + self.explicit.heap_bytes
            + self.private.heap_bytes
        )
