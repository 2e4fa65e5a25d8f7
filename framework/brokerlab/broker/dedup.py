"""A topic's deduplication cursor ``pulsar.dedup`` (ack-state.md §7, §6.3 cause 6, scenario 37).

With ``brokerDeduplicationEnabled``, the broker keeps each producer's highest persisted sequence
id in memory and, every ``brokerDeduplicationEntriesInterval`` persisted entries, snapshots them
into a durable cursor: a mark-delete at the entry just persisted, whose properties map producer
names to sequence ids, at most ``brokerDeduplicationMaxNumberOfProducers`` of them. The cursor
never acknowledges individually, and its writes go through the profile's ack-state persister like
any cursor's (rate limiter, flush, size, limits). After a restart or an unload the broker reloads
the snapshot the persister recovers and replays the entries after its mark-delete position; a
producer found in neither has lost its sequence id, so a resend of its last messages would be
accepted as new (``dedup_producers_lost``).

brokerlab's choices where Pulsar leaves room [brokerlab model]:

* A topic's ``producers`` publish in turn, one entry each, and a producer's sequence ids count its
  messages from 0, so an entry's producer and highest sequence id follow from its index in the
  topic; nothing is stored per entry.
* Over the cap the snapshot keeps the producers in the order the broker learnt them (first
  publish; after a reload, the recovered snapshot, then the replay). Pulsar keeps whichever its
  hash map iterates first.
* Snapshots follow the entry interval only; the timer of newer versions
  (``brokerDeduplicationSnapshotFrequencyInSeconds``) is not modelled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import islice
from typing import Final

from brokerlab.broker.ledger import ManagedLedger
from brokerlab.protocols import AckStatePersister, BatchAck, PersistOutcome, Position

__all__ = ["DEDUP_CURSOR", "DedupCursor", "Deduplication"]

DEDUP_CURSOR: Final = "pulsar.dedup"


class DedupCursor:
    """The dedup cursor's ack state as a persister sees it: a mark-delete and its properties."""

    __slots__ = ("md", "properties")

    def __init__(self, start: Position) -> None:
        self.md = start
        self.properties: dict[str, int] = {}

    @property
    def mark_delete(self) -> Position:
        return self.md

    def acked_ranges(self) -> Sequence[tuple[Position, Position]]:
        return ()

    def range_count(self) -> int:
        return 0

    def batch_acks(self) -> Mapping[Position, BatchAck]:
        return {}

    def subscription_properties(self) -> Mapping[str, str]:
        return {}

    def mark_delete_properties(self) -> Mapping[str, int]:
        return self.properties


class Deduplication:
    """``MessageDeduplication`` of one topic: the producers' sequence ids and their snapshots."""

    def __init__(
        self,
        ledger: ManagedLedger,
        producers: Sequence[str],
        batch_size: int,
        persister: AckStatePersister,
        interval: int,
        max_producers: int,
    ) -> None:
        self.ledger = ledger
        self.producers = tuple(producers)
        self.batch_size = batch_size
        self.persister = persister
        self.interval = interval
        self.max_producers = max_producers
        # The cursor opens at the topic's end, as a new cursor does.
        self.cursor = DedupCursor(ledger.last_position)
        self.highest: dict[str, int] = {}
        self.since_snapshot = 0
        self.snapshots = 0
        self.lost = 0

    def producer_of(self, index: int) -> tuple[str, int]:
        """The producer of the topic's ``index``-th entry and the entry's highest sequence id."""
        turns = len(self.producers)
        return self.producers[index % turns], (index // turns + 1) * self.batch_size - 1

    # ---- the broker's calls -------------------------------------------------------------------

    def created(self) -> PersistOutcome | None:
        return self.persister.created(self.cursor)

    def persisted(self, position: Position) -> PersistOutcome | None:
        """An entry was persisted at ``position`` (the last one); every ``interval`` of them, a
        snapshot goes to the cursor. Returns the write it made, if any."""
        name, seq = self.producer_of(self.ledger.entry_count() - 1)
        self.highest[name] = seq
        self.since_snapshot += 1
        if self.since_snapshot < self.interval:
            return None
        self.since_snapshot = 0
        return self.snapshot(position)

    def snapshot(self, position: Position) -> PersistOutcome | None:
        """``asyncMarkDelete(position, {producer: seq})`` with at most ``max_producers``."""
        self.snapshots += 1
        self.cursor.md = position
        # Pulsar adds producers while the snapshot holds fewer than the cap: none below 1.
        cap = max(0, self.max_producers)
        self.cursor.properties = dict(islice(self.highest.items(), cap))
        return self.persister.acked(self.cursor, [position[0]])

    def flush(self) -> PersistOutcome | None:
        return self.persister.flush(self.cursor)

    def reload(self, graceful: bool) -> PersistOutcome | None:
        """A restart (``graceful=False``: the broker died) or an unload (the cursor closes first).

        Recovery reads the snapshot back and replays every entry after its mark-delete position;
        each producer whose sequence id is then missing or older than before counts as lost.
        Returns the close write of an unload, if any.
        """
        outcome = None
        if graceful:
            outcome = self.persister.close(self.cursor)
        else:
            self.persister.crash()
        recovered = self.persister.recover()
        known = dict(recovered.mark_delete_properties)
        ledger = self.ledger
        for index in range(ledger.index_of(recovered.mark_delete) + 1, ledger.entry_count()):
            name, seq = self.producer_of(index)
            if seq > known.get(name, -1):
                known[name] = seq
        self.lost += sum(1 for name, seq in self.highest.items() if known.get(name, -1) < seq)
        self.highest = known
        self.cursor.md = recovered.mark_delete
        self.cursor.properties = dict(recovered.mark_delete_properties)
        self.since_snapshot = 0
        return outcome
