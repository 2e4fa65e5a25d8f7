"""A subscription's dispatcher: reads entries through the cache and hands them to consumers.

It follows Pulsar's persistent dispatchers: it reads in batches of at most
``dispatcherMaxReadBatchSize`` entries and never more messages than the consumers have permits for;
it reads the replay queue (redeliveries, Key_Shared entries whose consumer is blocked) before new
entries; delayed messages go to the delayed-delivery tracker and come back when due; it skips new
reads while the ack-state persister asks for a pause or the tracker's fixed-delay rule says so.
Delayed delivery and the pause are Shared and Key_Shared features: Pulsar's single-active-consumer
dispatcher (Exclusive, Failover) has no tracker and dispatches a delayed message at once. Reads are
synchronous unless reads take time (``reads.py``): then a read is an operation under way, and
the dispatcher issues no other until it completes, as Pulsar's dispatchers wait for their pending
read. Normal reads are capped at ``dispatcherMaxReadSizeBytes`` over the topic's average entry
size.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable
from functools import partial
from itertools import accumulate
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from brokerlab.broker.consumer import Consumer
from brokerlab.broker.cursor import Cursor
from brokerlab.broker.ledger import (
    BATCH,
    DELIVER_AT_MS,
    FIELDS,
    KEY,
    NO_KEY,
    PUBLISH_NS,
    SIZE,
    BoxedPosition,
    Ledger,
)
from brokerlab.broker.reads import Backoff, ReadOp, Reads, contiguous_runs
from brokerlab.broker.replay import ReplayQueue
from brokerlab.broker.settlement import ProcessQueue, start_processing
from brokerlab.broker.streams import stream
from brokerlab.protocols import (
    AckStatePersister,
    DelayedDeliveryTracker,
    Position,
)

if TYPE_CHECKING:
    from brokerlab.broker.broker import Broker, Topic

__all__ = ["Dispatcher", "count_foreign_tick_changes"]

# Pulsar's keySharedLookAheadMsgInReplayThresholdPerSubscription default: new reads stop while the
# replay queue of a Key_Shared subscription holds this many entries.
KEY_SHARED_LOOKAHEAD: Final = 10_000

MULTI_CONSUMER: Final = ("Shared", "Key_Shared")

# Where a dispatched entry came from.
NEW: Final = 0
REPLAY: Final = 1
DELAYED: Final = 2

# The deliver-at time Pulsar's dispatcher passes for a message that has none: always refused.
NOT_DELAYED: Final = -1


class Dispatcher:
    """Dispatches one subscription's entries. The broker model's hot path lives here."""

    # Slots, not a __dict__: one memory access less per attribute, which shows when 10,000
    # dispatchers take turns and none of them stays in the processor's caches.
    __slots__ = (
        "_backoff",
        "_key_shared",
        "_multi",
        "_new_tracker",
        "_pending",
        "_reading",
        "_rng",
        "_rr",
        "_shared",
        "_tracks_read",
        "active",
        "broker",
        "connected",
        "consumers",
        "cursor",
        "delayed_outstanding",
        "first_connected",
        "kind",
        "name",
        "next_in_topic",
        "own_tick_ms",
        "paused_since",
        "persister",
        "read_batch",
        "reads",
        "reconnect_after_outage",
        "replay",
        "restart_acked",
        "restart_forgotten",
        "restart_owed",
        "restart_unacked",
        "tick_seen",
        "topic",
        "topic_name",
        "tracker",
        "tracking",
        "waiting",
    )

    def __init__(
        self,
        broker: Broker,
        topic: Topic,
        name: str,
        kind: str,
        cursor: Cursor,
        persister: AckStatePersister,
        new_tracker: Callable[[Callable[[], None]], DelayedDeliveryTracker],
    ) -> None:
        # What every read and dispatch reads comes first. Compiled, attributes are laid out in
        # the order they are first assigned here, so these share two or three cache lines
        # instead of spreading over five; with 10,000 topics taking turns each line is a miss.
        self.broker = broker
        self.topic = topic
        self.cursor = cursor
        # The topic's next subscription (see ``Topic.first_dispatcher``).
        self.next_in_topic: Dispatcher | None = None
        # The connected consumers in order; a tuple (its items on its own cache line), read on
        # every read and dispatch of a multi-consumer subscription.
        self.connected: tuple[Consumer, ...] = ()
        # Its first item (None: nobody is connected): all an Exclusive or Failover subscription
        # reads, here on the dispatcher's own line rather than in the tuple, one more object.
        self.first_connected: Consumer | None = None
        self.replay: ReplayQueue[Consumer] = ReplayQueue()
        self.tracker: DelayedDeliveryTracker | None = None
        self._reading = False
        # The read under way when reads take time (``reads.py``); None between reads.
        self._pending: ReadOp | None = None
        self.waiting = False
        self.active = False
        self._multi = kind in MULTI_CONSUMER
        self._key_shared = kind == "Key_Shared"
        self._shared = kind == "Shared"
        self._tracks_read = not broker.tuning.track_mark_delete
        # Whether a message with a deliver-at time reached the tracker yet: Pulsar creates the
        # tracker then, and from then on offers it every new message (see ``_dispatch_range``).
        self.tracking = False
        # Whether a restart set below holds anything: one flag read per dispatch, so that a
        # broker that never restarted does not look into its sets on every read.
        self.restart_owed = False
        self.paused_since: int | None = None
        self.topic_name = topic.name
        # The rest is read less often.
        self.name = name
        self.kind = kind
        self.persister = persister
        self.consumers: list[Consumer] = []
        self.delayed_outstanding: dict[Position, int] = {}
        self.restart_acked: set[Position] = set()
        # Dispatched before a restart and not acknowledged (consumers held them, or they waited
        # to go out again): dispatched after it, they count as redelivered.
        self.restart_unacked: set[Position] = set()
        # Acked indexes of a partly acknowledged batch whose bitset the restart lost: the entry
        # goes out whole again, so they count as redelivered after the restart (§6.2).
        self.restart_forgotten: dict[Position, int] = {}
        self._rng: np.random.Generator | None = None
        self._rr = 0
        self._new_tracker = new_tracker
        self.tick_seen = 0
        self.own_tick_ms = 0
        # Entries per read: dispatcherMaxReadBatchSize, down to dispatcherMinReadBatchSize after
        # a failed read and doubling back with each successful one, as Pulsar's dispatchers do.
        self.read_batch = broker.tuning.max_read_batch
        self.reads: Reads | None = broker.reads
        self._backoff: Backoff | None = None
        # The consumers to connect when the topic is available again (``recovery.go_down``).
        self.reconnect_after_outage: list[Consumer] = []
        self._open_tracker()

    # ---- wiring -------------------------------------------------------------------------------

    @property
    def rng(self) -> np.random.Generator:
        """The consumers' decisions (ack holes, negative acks); created on first use."""
        if self._rng is None:
            self._rng = stream(self.broker.seed, "consumers", self.topic.name, self.name)
        return self._rng

    def wake(self) -> None:
        """Ask for a read at the current instant (timers, flow permits, new entries)."""
        self.broker.loop.at(self.broker.loop.now_ns(), self.read_more)

    def move_to(self, broker: Broker) -> None:
        """The topic was handed over to ``broker`` (closed: no read under way): read through its
        cache and read path from now on, with a tracker of its factory when the subscription
        opens again."""
        self.broker = broker
        self.reads = broker.reads
        self._new_tracker = broker.tracker_maker(self.topic_name, self.name)
        self._backoff = None
        self.read_batch = broker.tuning.max_read_batch
        self.active = False  # the old broker's cursor container went with it
        for consumer in self.consumers:
            consumer.process = ProcessQueue(broker, self, consumer)
            if consumer.client is not None:
                consumer.client.broker = broker

    def _open_tracker(self) -> None:
        """A new tracker, and its tick as seen. Only a multi-consumer subscription has one, as in
        Pulsar."""
        if self._multi:
            self.tracker = self._new_tracker(self.wake)
            self.tick_seen = self.own_tick_ms = self.tracker.tick_ms

    def reset_tracker(self) -> None:
        self.delayed_outstanding.clear()
        self.tracking = False
        if self.tracker is not None:
            self.tracker.close()
        self._open_tracker()

    def tracked_position(self) -> BoxedPosition:
        """What the active-cursor container orders this cursor by: the read position, or the
        mark-delete position with ``cacheEvictionByMarkDeletedPosition``."""
        if self.broker.tuning.track_mark_delete:
            return self.cursor.md
        return self.cursor.read_position

    def consumers_changed(self) -> None:
        """A consumer connected or left: refresh the connected list and Key_Shared ownership."""
        self.connected = connected = tuple([c for c in self.consumers if c.connected])
        self.first_connected = connected[0] if connected else None
        if self.kind == "Key_Shared":
            self.replay.reassign(self._owner_of_key)

    def _owner_of_key(self, key: int) -> Consumer | None:
        consumers = self.connected
        if not consumers:
            return None
        return consumers[(key if key != NO_KEY else 0) % len(consumers)]

    # ---- reading ------------------------------------------------------------------------------

    def read_more(self) -> None:
        """Read and dispatch until permits, entries or reasons to read run out."""
        if self._reading:
            return
        replay = self.replay
        if self.waiting and not replay.size:
            tracker = self.tracker
            if tracker is None or not tracker.has_message_available():
                return  # caught up: the next publish wakes us
        self._reading = True
        try:
            tried_replay = tracker_empty = False
            max_read_batch = self.read_batch
            multi = self._multi
            while True:
                # The permits of the connected consumers (a multi-consumer subscription sums
                # the positive ones); computed inline: this loop runs for every read.
                if multi:
                    budget = 0
                    for c in self.connected:
                        if c.permits > 0:
                            budget += c.permits
                else:
                    first = self.first_connected
                    budget = first.permits if first is not None else 0
                if budget <= 0:
                    return
                limit = max_read_batch if max_read_batch < budget else budget
                if replay.size and not tried_replay:
                    tried_replay = True
                    if self._read_replay(limit):
                        tried_replay = False
                        continue
                    if self._pending is not None:
                        return  # its storage read completes later
                tracker = self.tracker  # None: a single-active-consumer subscription
                if tracker is not None and not tracker_empty and tracker.has_message_available():
                    due = tracker.get_scheduled_messages(limit)
                    if not due:
                        self.broker.counters.delayed_spurious_available += 1
                    # Only a return that dispatched something earns another question; a tracker
                    # that keeps returning acknowledged positions must not spin this loop.
                    if due and self._read_positions(due, from_tracker=True):
                        continue
                    if self._pending is not None:
                        return
                    tracker_empty = True
                if self.paused_since is not None or (
                    tracker is not None and tracker.should_pause_all_deliveries()
                ):
                    return
                if self._key_shared and len(replay) >= KEY_SHARED_LOOKAHEAD:
                    return
                if self.waiting or not self._read_new(limit, budget):
                    return
        finally:
            # A read under way keeps the dispatcher reading until it completes.
            self._reading = self._pending is not None

    def _read_new(self, limit: int, budget: int) -> bool:
        """One normal read from the cursor's read position; False when there is nothing to read."""
        ml = self.topic.ledger
        cursor = self.cursor
        position: Position = cursor.read_position
        ledger_id, first = position
        if ledger_id != ml.current_id:
            ledger_id, first = ml.normalize(position)
        ledger = ml.ledger(ledger_id)
        end = len(ledger)
        # The range count first: on the cursor's own line, it spares a look into the acked map
        # (one more cold object) when nothing is acknowledged out of order, the usual case.
        acked = cursor.acked.get(ledger.boxed_id) if cursor.range_count() else None
        if acked is not None:
            # The cursor skips acknowledged entries at the start of a read, as Pulsar's does.
            while first in acked:
                first += 1
        if first >= end:
            if first != position[1] or ledger_id != position[0]:
                cursor.read_position = (ledger.boxed_id, first)  # moved over acks or a rollover
            self.waiting = True
            return False
        stop = min(end, first + limit)
        last = first
        if stop - first > 1:
            # dispatcherMaxReadSizeBytes over the topic's average entry size, one entry at least
            # (a read of one entry, a tailing reader's usual, never needs the cap).
            written = ml.bytes_written
            cap = self.broker.max_read_bytes * ml.entries_written() // written
            if cap < stop - first:
                stop = first + (cap if cap > 1 else 1)
        if stop - first > 1:
            # The longest run whose messages fit the permits, one entry at least: a bisection of
            # the running sums (ascending: every entry holds a message) rather than a Python loop
            # over up to dispatcherMaxReadBatchSize entries.
            fits = bisect_right(list(accumulate(ledger.column(BATCH, first, stop))), budget)
            last = first + max(fits, 1) - 1
        if self.reads is not None:
            return self._start_read(ReadOp(self, NEW, [(ledger, first, last)])) >= 0
        self._fetch(ledger, first, last)
        self._new_entries_read(ledger, first, last)
        return True

    def _new_entries_read(self, ledger: Ledger, first: int, last: int) -> int:
        """A normal read of ``first..last`` is complete: the cursor's read position moves past
        it (the container hears of it), and the entries go to consumers."""
        cursor = self.cursor
        read_position = cursor.read_position = (ledger.boxed_id, last + 1)
        if last + 1 == len(ledger) and ledger is self.topic.ledger.current:
            self.waiting = True
        if self.active and self._tracks_read:
            self.topic.cursors.update(cursor.name, read_position)
            self.broker.cache_cursors_changed(self.topic_name)
        return self._dispatch_range(ledger, first, last, NEW)

    def _fetch(self, ledger: Ledger, first: int, last: int) -> None:
        """Read ``first..last`` of one ledger through the cache, counting storage reads."""
        topic = self.topic_name
        ledger_id = ledger.boxed_id
        broker = self.broker
        misses = broker.cache_read(topic, ledger_id, first, last, self.cursor.name)
        if misses:
            counters = broker.counters
            if len(misses) == last - first + 1:
                # Every entry missed: misses are ids of first..last in order (the protocol's
                # promise), so a slice gives their sizes.
                miss_sizes = ledger.column(SIZE, first, last + 1)
                counters.storage_read_ops += 1
            else:
                miss_sizes = [ledger.field(e, SIZE) for e in misses]
                counters.storage_read_ops += len(contiguous_runs(misses))
            counters.storage_entries_read += len(misses)
            # A loop, not sum(): compiled, sum is a call through the builtins module.
            total = 0
            for size in miss_sizes:
                total += size
            counters.storage_bytes_read += total
            broker.cache_storage_read(topic, ledger_id, misses, miss_sizes, self.cursor.name)

    def _read_replay(self, limit: int) -> bool:
        """Read the lowest replay positions a consumer can take now; whether any was dispatched.

        For Key_Shared a position is read only while its key's consumer has permits left, one
        per entry (Pulsar's ``ReplayPositionFilter``): a blocked key is not read again until its
        consumer can take it, and a consumer with a few permits gets a few of its positions read,
        not a whole batch that would go straight back to the replay queue.
        """
        if self.kind != "Key_Shared":
            chosen = self.replay.first(limit)
        else:
            ready = [(c, c.permits) for c in self.connected if c.permits > 0]
            chosen = self.replay.first_owned_by(ready, limit)
        return bool(chosen) and self._read_positions(chosen, from_tracker=False) > 0

    def _read_positions(self, positions: Iterable[Position], *, from_tracker: bool) -> int:
        """Read given positions (replay or due delayed messages), grouped in contiguous runs."""
        if self.reads is not None:
            return max(0, self._start_read(self._runs_of(positions, from_tracker)))
        dispatched = 0
        run: list[Position] = []
        for pos in sorted(positions):
            if run and (pos[0] != run[-1][0] or pos[1] != run[-1][1] + 1):
                dispatched += self._read_run(run, from_tracker)
                run = []
            run.append(pos)
        if run:
            dispatched += self._read_run(run, from_tracker)
        return dispatched

    def _read_run(self, run: list[Position], from_tracker: bool) -> int:
        ledger_id, first = run[0]
        last = run[-1][1]
        ledger = self.topic.ledger.ledger(ledger_id)
        self._fetch(ledger, first, last)
        if from_tracker:
            self._check_delayed_returns(run)
        return self._dispatch_range(ledger, first, last, DELAYED if from_tracker else REPLAY)

    # ---- reads that take time (reads.py) --------------------------------------------------------

    def _runs_of(self, positions: Iterable[Position], from_tracker: bool) -> ReadOp:
        """A read of ``positions`` (replay or due delayed messages) in contiguous runs."""
        ml = self.topic.ledger
        runs: list[tuple[Ledger, int, int]] = []
        for ledger_id, entry_id in sorted(positions):
            if runs:
                ledger, first, last = runs[-1]
                if ledger.ledger_id == ledger_id and last + 1 == entry_id:
                    runs[-1] = (ledger, first, entry_id)
                    continue
            runs.append((ml.ledger(ledger_id), entry_id, entry_id))
        return ReadOp(self, DELAYED if from_tracker else REPLAY, runs)

    def _start_read(self, op: ReadOp) -> int:
        """Start ``op`` from :meth:`read_more`: the entries it dispatched if it completed at once
        (every entry in the cache, permits to spare), or -1 while it is under way."""
        reads = self.reads
        assert reads is not None
        loop = self.broker.loop
        op.started_ns = loop.now_ns()
        limiter = reads.limiter
        if limiter is not None:
            granted = limiter.acquire(op, reads.estimate(self.topic_name, op.entries()))
            if granted is None:
                self._pending = op  # waits in the limiter's line
                return -1
            if not granted:
                # The line is full: the read fails, through the executor as in Pulsar.
                self._pending = op
                loop.soon(partial(self.read_failed, op))
                return -1
        self._fetch_op(op)
        if op.waiting:
            self._pending = op
            return -1
        return self._finish_op(op)

    def _fetch_op(self, op: ReadOp) -> None:
        """Look up ``op``'s runs in the cache; send what missed to storage."""
        reads = self.reads
        assert reads is not None
        broker = self.broker
        topic = self.topic_name
        reader = self.cursor.name
        for ledger, first, last in op.runs:
            misses = broker.cache_read(topic, ledger.boxed_id, first, last, reader)
            if not misses:
                continue
            # One storage read per contiguous run of misses: a BookKeeper read is a range.
            runs = [misses] if len(misses) == last - first + 1 else contiguous_runs(misses)
            for run in runs:
                op.waiting += 1
                reads.pending.read(
                    ledger,
                    run,
                    partial(self._cache_fill, op, ledger),
                    partial(self._storage_arrived, op),
                )

    def _cache_fill(self, op: ReadOp, ledger: Ledger, entry_ids: list[int]) -> None:
        """Entries ``op`` read from storage itself go into the cache, as its reader decides."""
        if op.cancelled:
            return  # the topic closed meanwhile: the cache they were read for is gone
        sizes = [ledger.field(e, SIZE) for e in entry_ids]
        self.broker.cache_storage_read(
            self.topic_name, ledger.boxed_id, entry_ids, sizes, self.cursor.name
        )

    def _storage_arrived(self, op: ReadOp) -> None:
        op.waiting -= 1
        if op.waiting:
            return
        if op.cancelled:
            self._release(op)
            return
        self._complete_pending(op)

    def permits_granted(self, op: ReadOp) -> None:
        """The in-flight limiter let ``op`` through after it waited in line."""
        if op.cancelled:
            self._release(op)
            return
        self._fetch_op(op)
        if not op.waiting:
            self._complete_pending(op)

    def _complete_pending(self, op: ReadOp) -> None:
        self._pending = None
        self._finish_op(op)
        self._reading = False
        self.read_more()

    def _finish_op(self, op: ReadOp) -> int:
        """``op``'s entries are here: hand them to consumers, then give its permits back."""
        broker = self.broker
        broker.counters.storage_wait_ns += broker.loop.now_ns() - op.started_ns
        reads = self.reads
        assert reads is not None
        if reads.limiter is not None:
            # As Pulsar's cache: the next estimate uses the size of this read's first entry.
            ledger, first, _ = op.runs[0]
            reads.estimated_entry_size[self.topic_name] = ledger.field(first, SIZE)
        most = broker.tuning.max_read_batch
        if self.read_batch < most:
            self.read_batch = min(self.read_batch * 2, most)
        if self._backoff is not None:
            self._backoff.reduce_to_half()
        dispatched = self._dispatch_op(op)
        self._release(op)
        return dispatched

    def _release(self, op: ReadOp) -> None:
        reads = self.reads
        if reads is not None and reads.limiter is not None and op.permits:
            reads.limiter.release(op)

    def _dispatch_op(self, op: ReadOp) -> int:
        if op.source == NEW:
            ledger, first, last = op.runs[0]
            return self._new_entries_read(ledger, first, last)
        dispatched = 0
        for ledger, first, last in op.runs:
            if op.source == DELAYED:
                boxed_id = ledger.boxed_id
                self._check_delayed_returns([(boxed_id, e) for e in range(first, last + 1)])
            dispatched += self._dispatch_range(ledger, first, last, op.source)
        return dispatched

    def read_failed(self, op: ReadOp) -> None:
        """``op`` failed (the in-flight limiter timed it out or had no room in line): as Pulsar's
        dispatchers, back off, and read one entry at a time until reads succeed again. Due delayed
        messages wait in the replay queue, as Pulsar keeps them among its redeliveries."""
        if op.cancelled:
            return
        broker = self.broker
        self._pending = None
        self._reading = False
        broker.counters.read_failures += 1
        self.read_batch = broker.tuning.min_read_batch
        if op.source == DELAYED:
            for ledger, first, last in op.runs:
                for entry_id in range(first, last + 1):
                    self._defer((ledger.boxed_id, entry_id), ledger.field(entry_id, KEY))
        backoff = self._backoff
        if backoff is None:
            t = broker.tuning
            backoff = self._backoff = Backoff(t.read_backoff_initial_ns, t.read_backoff_max_ns)
        loop = broker.loop
        loop.at(loop.now_ns() + backoff.next_ns(), self.read_more)

    def cancel_read(self) -> None:
        """The topic closes (a restart or an unload): drop the read under way. What it read is
        dropped when it arrives, and the permits it holds go back then (or, still in the
        limiter's line, once it is served)."""
        op = self._pending
        if op is not None:
            op.cancelled = True
            self._pending = None
        self._reading = False

    # ---- dispatching --------------------------------------------------------------------------

    def _dispatch_range(self, ledger: Ledger, first: int, last: int, source: int) -> int:
        """Hand entries ``first..last`` of ``ledger`` to consumers; returns how many were
        dispatched."""
        ledger_id = ledger.ledger_id
        boxed_id = ledger.boxed_id
        cursor = self.cursor
        acked = cursor.acked.get(boxed_id) if cursor.range_count() else None
        # ``(ledger_id, entry_id) <= cursor.md`` as one int comparison: the ledger is fixed here.
        md: Position = cursor.md
        md_ledger, md_entry = md
        if ledger_id != md_ledger:
            md_entry = last if ledger_id < md_ledger else -1
        stop = last + 1
        broker = self.broker
        counters = broker.counters
        released = broker.cache_released
        topic = self.topic_name
        # As objects: what the receiver queue keeps goes in as the ledger holds it. Compiled, an
        # item of a list[int] is unboxed, and storing it boxes it again into a new int.
        fields: list[Any] = ledger.fields
        tracker = self.tracker
        key_shared = self._key_shared
        shared = self._shared
        # Exclusive and Failover hand everything to the first connected consumer.
        only = self.first_connected
        replay = self.replay
        # The restart sets are read only when one holds something: they sit on a cache line
        # of their own, which a quiet topic's dispatch need not touch.
        restart_owed = self.restart_owed
        # Batch-index acks the broker knows of: with acknowledgmentAtBatchIndexLevelEnabled=false
        # only the client tracks them, and a batch goes out whole again.
        partial_acks = cursor.batch_acks() if broker.batch_index_acks else None
        dispatched = 0
        delivered = 0
        new = source == NEW
        replayed = source == REPLAY
        tracking = self.tracking
        for entry_id in range(first, stop):
            # ``Any``, not ``Position``: compiled, a typed pair is kept unboxed and boxed again
            # into a new tuple at each use below (the cache, the receiver queue, the pending map);
            # as an object it is built once and shared.
            pos: Any = (boxed_id, entry_id)
            released(topic, pos)
            if entry_id <= md_entry or (acked is not None and entry_id in acked):
                # Acknowledged entries are filtered out, whatever handed them back.
                if replayed:
                    replay.discard(pos)
                continue
            base = entry_id * FIELDS
            deliver_at: int = fields[base + DELIVER_AT_MS]
            if new and tracker is not None and (deliver_at or tracking):
                # As Pulsar's dispatcher: once a delayed message reached the tracker, every new
                # message goes through ``addMessage``, the ones without a deliver-at time (-1) or
                # already due too. The tracker refuses them, and a refusal is what ends its
                # fixed-delay mode (delayed-delivery.md §3.9), so they must reach it.
                if not tracking:
                    tracking = self.tracking = True
                if tracker.add_message(ledger_id, entry_id, deliver_at or NOT_DELAYED):
                    counters.delayed_messages += 1
                    self.delayed_outstanding[pos] = self.delayed_outstanding.get(pos, 0) + 1
                    continue
            messages: int = fields[base + BATCH]
            if partial_acks:
                partial = partial_acks.get(pos)
                if partial is not None:
                    # A partly acknowledged batch goes out with its ackSet and the client skips
                    # the acked indexes (ack-state.md §6.2): only the others are delivered.
                    messages = partial.unacked.bit_count()
            key = fields[base + KEY]
            publish_ns = fields[base + PUBLISH_NS]
            # A consumer with any permit left takes a whole entry, as in Pulsar, whose permits go
            # negative then: a batch larger than what is left must not wait (nor starve when it
            # is larger than the receiver queue).
            if key_shared:
                target = self._owner_of_key(key)
                # A new entry of a key that already waits in the replay queue waits behind it.
                if target is None or target.permits <= 0 or (not replayed and replay.has_key(key)):
                    self._defer(pos, key)
                    continue
            elif shared:
                target = self._next_shared(self.connected)
                if target is None:
                    self._defer(pos, key)
                    continue
            else:
                target = only
                if target is None:
                    self._defer(pos, key)
                    continue
            if replayed and replay.discard(pos):
                counters.redelivered += messages
            target.permits -= messages
            target.queue.append((pos, messages, publish_ns, key))
            target.pending[pos] = messages
            delivered += messages
            if restart_owed:
                restart_acked = self.restart_acked
                restart_unacked = self.restart_unacked
                restart_forgotten = self.restart_forgotten
                if restart_acked and pos in restart_acked:
                    restart_acked.discard(pos)
                    counters.redelivered_after_restart += messages
                elif restart_unacked and pos in restart_unacked:
                    restart_unacked.discard(pos)
                    forgotten = restart_forgotten.pop(pos, 0) if restart_forgotten else 0
                    counters.redelivered += messages - forgotten
                    counters.redelivered_after_restart += forgotten
            dispatched += 1
            if not target.busy:
                start_processing(broker, self, target)
        # Nothing in the loop reads the counter: one addition instead of one per entry.
        counters.delivered += delivered
        if restart_owed and not self.restart_acked and not self.restart_unacked:
            self.restart_owed = False
        return dispatched

    def _next_shared(self, consumers: tuple[Consumer, ...]) -> Consumer | None:
        """The next consumer in round-robin order with a permit (Pulsar's ``isConsumerAvailable``:
        permits > 0, whatever the size of the entry)."""
        n = len(consumers)
        for i in range(n):
            c = consumers[(self._rr + i) % n]
            if c.permits > 0:
                self._rr = (self._rr + i + 1) % n
                return c
        return None

    def _queue(self, pos: Position, key: int, *, redelivery: bool) -> None:
        owner = self._owner_of_key(key) if self.kind == "Key_Shared" else None
        if self.replay.add(pos, key, owner, redelivery=redelivery):
            # One more read of this entry is now expected (PIP-430's replay increment).
            self.broker.cache.replayed(self.topic.name, pos)

    def _defer(self, pos: Position, key: int) -> None:
        """No consumer can take ``pos`` now; it waits in the replay queue (not a redelivery)."""
        self._queue(pos, key, redelivery=False)

    def redeliver(self, positions: Iterable[Position]) -> None:
        """Put dispatched positions back (negative acks, a consumer that left)."""
        cursor = self.cursor
        ledgers = self.topic.ledger.ledgers
        for pos in positions:
            if not cursor.is_acked(*pos):
                self._queue(pos, ledgers[pos[0]].field(pos[1], KEY), redelivery=True)

    # ---- delayed-delivery checks ----------------------------------------------------------------

    def _check_delayed_returns(self, run: list[Position]) -> None:
        """Early and duplicate returns, measured by the dispatcher so no tracker can hide them."""
        broker = self.broker
        counters = broker.counters
        now_ms = broker.loop.now_ms()
        # This subscription's own tick (the configured one, or its last reset): a legacy tracker
        # with that tick may return a message up to one tick early in non-strict mode.
        allowance = 0 if broker.delayed_strict else self.own_tick_ms
        ledgers = self.topic.ledger.ledgers
        outstanding = self.delayed_outstanding
        for pos in run:
            left = outstanding.get(pos, 0)
            if left <= 0:
                counters.delayed_duplicate_deliveries += 1
            elif left == 1:
                del outstanding[pos]
            else:
                outstanding[pos] = left - 1
            earliness = ledgers[pos[0]].field(pos[1], DELIVER_AT_MS) - allowance - now_ms
            if earliness > 0:
                counters.delayed_early_deliveries += 1
                counters.delayed_max_earliness_ms = max(
                    counters.delayed_max_earliness_ms, earliness
                )

    def reset_tick_time(self, tick_ms: int) -> None:
        """Give this subscription's tracker a new tick (Pulsar's dispatcher passes the topic's).

        Only this call may change this subscription's tick: a change it makes to another
        subscription's tick, or one seen before it, counts as a foreign tick change (D4).
        """
        tracker = self.tracker
        if tracker is None:
            return  # no tracker, no tick (Exclusive, Failover)
        count_foreign_tick_changes(self.topic.dispatchers)
        tracker.reset_tick_time(tick_ms)
        self.own_tick_ms = tick_ms
        self.tick_seen = tracker.tick_ms
        count_foreign_tick_changes(self.topic.dispatchers)

    # ---- pause --------------------------------------------------------------------------------

    def check_pause(self) -> None:
        """Re-evaluate the ack-state pause after acknowledgements (multi-consumer only)."""
        if not self._multi:
            return
        pause = self.persister.should_pause_dispatch(self.cursor)
        now = self.broker.loop.now_ns()
        if pause and self.paused_since is None:
            self.paused_since = now
        elif not pause and self.paused_since is not None:
            self.end_pause(now)
            self.wake()

    def end_pause(self, now: int) -> None:
        """Count a pause in progress up to ``now`` and end it (a resume, a restart, the end)."""
        if self.paused_since is not None:
            self.broker.counters.dispatch_paused_ns += now - self.paused_since
            self.paused_since = None


def count_foreign_tick_changes(dispatchers: Iterable[Dispatcher]) -> None:
    """Count each subscription whose tracker's tick moved since it was last seen, then see it.

    The dispatchers call this around every tick reset they make, and the broker at the end of
    a run, so a tick that moved without a reset for its own subscription is counted once per
    move (``delayed_foreign_tick_changes``).
    """
    for dispatcher in dispatchers:
        if dispatcher.tracker is None:
            continue
        tick = dispatcher.tracker.tick_ms
        if tick != dispatcher.tick_seen:
            dispatcher.tick_seen = tick
            dispatcher.broker.counters.delayed_foreign_tick_changes += 1
