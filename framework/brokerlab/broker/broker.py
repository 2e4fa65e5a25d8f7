"""The simulated broker: topics, producers, subscriptions, consumers and periodic tasks.

The broker takes validated settings and ready plugin objects; it knows nothing of files, Spark or
the CLI. ``simulation.py`` builds it from a profile, a workload and a seed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from functools import partial
from typing import Any, Final

from brokerlab.broker.arrivals import Backlog, Block, GroupArrivals
from brokerlab.broker.consumer import Consumer, ConsumerPolicy, Delivery
from brokerlab.broker.cursor import Cursor
from brokerlab.broker.dedup import DEDUP_CURSOR, Deduplication
from brokerlab.broker.dispatcher import Dispatcher, count_foreign_tick_changes
from brokerlab.broker.events import EventLoop
from brokerlab.broker.ledger import BATCH, LedgerIds, ManagedLedger
from brokerlab.broker.streams import stream
from brokerlab.protocols import (
    AckStatePersister,
    CursorContainer,
    DelayedDeliveryTracker,
    DelayedDeliveryTrackerFactory,
    EntryCache,
    PersistOutcome,
    Position,
    RecoveredAckState,
)
from brokerlab.workloads.model import SubscriptionSpec, TopicSpec, WorkloadSpec

__all__ = ["Broker", "BrokerPlugins", "BrokerTuning", "Counters", "Topic"]

NS: Final = 1_000_000_000
MS: Final = 1_000_000
# Pulsar's statsUpdateFrequencyInSecs: how often cursors are re-checked for being active.
STATS_INTERVAL_NS: Final = 60 * NS
SAMPLE_INTERVAL_NS: Final = NS


@dataclass(slots=True)
class Counters:
    """The broker model's own counters (plugins report theirs through ``stats()``)."""

    published: int = 0
    published_entries: int = 0
    delivered: int = 0
    acked: int = 0
    redelivered: int = 0
    redelivered_after_restart: int = 0
    lost: int = 0
    delivered_after_ack: int = 0
    delayed_messages: int = 0
    delayed_early_deliveries: int = 0
    delayed_max_earliness_ms: int = 0
    delayed_duplicate_deliveries: int = 0
    delayed_spurious_available: int = 0
    delayed_foreign_tick_changes: int = 0
    storage_entries_read: int = 0
    storage_bytes_read: int = 0
    dispatch_paused_ns: int = 0
    broker_restarts: int = 0
    ack_persists: int = 0
    ack_persisted_bytes: int = 0
    ack_ranges_dropped: int = 0
    ack_max_ranges: int = 0

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class BrokerTuning:
    """The settings the broker model itself reads (Pulsar keys, resolved)."""

    max_read_batch: int
    max_entries_per_ledger: int
    backlogged_threshold: int
    expected_read_count_mode: bool
    cache_eviction_interval_ns: int
    cursor_flush_interval_ns: int
    delayed_strict: bool
    track_mark_delete: bool
    batch_index_acks: bool = True
    dedup: bool = False
    dedup_interval: int = 1000
    dedup_max_producers: int = 10_000

    @classmethod
    def from_settings(cls, s: Any) -> BrokerTuning:
        return cls(
            max_read_batch=s.dispatcher_max_read_batch_size,
            max_entries_per_ledger=s.managed_ledger_max_entries_per_ledger,
            backlogged_threshold=s.managed_ledger_cursor_backlogged_threshold,
            expected_read_count_mode=s.cache_eviction_by_expected_read_count,
            cache_eviction_interval_ns=s.managed_ledger_cache_eviction_interval_ms * MS,
            cursor_flush_interval_ns=s.managed_ledger_cursor_position_flush_seconds * NS,
            delayed_strict=s.is_delayed_delivery_deliver_at_time_strict,
            track_mark_delete=s.cache_eviction_by_mark_deleted_position,
            batch_index_acks=s.acknowledgment_at_batch_index_level_enabled,
            dedup=s.broker_deduplication_enabled,
            dedup_interval=s.broker_deduplication_entries_interval,
            dedup_max_producers=s.broker_deduplication_max_number_of_producers,
        )


@dataclass(frozen=True)
class BrokerPlugins:
    """The plugin objects one simulation uses, built from the profile's choices."""

    cache: EntryCache
    new_cursor_container: Callable[[], CursorContainer]
    tracker_factory: DelayedDeliveryTrackerFactory
    new_persister: Callable[[str], AckStatePersister]


class Topic:
    """A topic: its managed ledger, active-cursor container and subscriptions (its group's
    ``_Publisher`` publishes to it)."""

    __slots__ = ("cursors", "dedup", "dispatchers", "first_dispatcher", "ledger", "name")

    def __init__(self, name: str, ledger: ManagedLedger, cursors: CursorContainer) -> None:
        self.name = name
        self.ledger = ledger
        # The subscriptions' dispatchers in order, also chained from the first through
        # ``Dispatcher.next_in_topic``: every publish walks the chain, which starts on this
        # object's own cache line, where the tuple would be one more object to fetch.
        self.first_dispatcher: Dispatcher | None = None
        self.cursors = cursors
        self.dispatchers: tuple[Dispatcher, ...] = ()
        self.dedup: Deduplication | None = None


class _Publisher:
    """Publishes a topic group's entries in time order: one event per instant that has any.

    Every entry due at an instant is published before anything those publishes cause, as if each
    topic's producer had its own event scheduled ahead of time.
    """

    __slots__ = ("_arrivals", "_index", "_publish", "batch_size", "block", "broker", "topics")

    def __init__(self, broker: Broker, topics: list[Topic], arrivals: GroupArrivals) -> None:
        self.broker = broker
        self.topics = topics
        self.batch_size = arrivals.spec.batch_size
        self._arrivals = arrivals
        self.block: Block | None = None
        self._index = 0
        self._publish = self.publish  # bound once: it reschedules itself

    def start(self) -> None:
        """Schedule the first publish (once, after the group's topics exist)."""
        block = self._next_block()
        if block is not None:
            self.broker.loop.at(block.times_ns[0], self._publish)

    def _next_block(self) -> Block | None:
        self.block = block = self._arrivals.next_block()
        self._index = 0
        return block

    def publish(self) -> None:
        broker = self.broker
        loop = broker.loop
        now = loop.now_ns()
        now_ms = loop.now_ms()
        block = self.block
        assert block is not None
        i = self._index
        topics = self.topics
        batch = self.batch_size
        # The block's sizes and keys as the objects it holds, handed on as they are (see
        # ``ManagedLedger.append``).
        sizes: list[Any] = block.sizes
        keys: list[Any] = block.keys
        while True:
            delay_ms = block.delays_ms[i]
            broker.publish(
                topics[block.topics[i]],
                sizes[i],
                now,
                keys[i],
                batch,
                now_ms + delay_ms if delay_ms else 0,
            )
            i += 1
            if i == len(block.times_ns):
                next_block = self._next_block()
                if next_block is None:
                    return
                block, i = next_block, 0
                sizes, keys = next_block.sizes, next_block.keys
            if block.times_ns[i] != now:
                break
        self._index = i
        loop.at(block.times_ns[i], self._publish)


class _ProcessQueue:
    """``broker._process(dispatcher, consumer)`` as a callback: the consumer takes what it holds.

    A ``partial`` would do, as three objects (itself, its argument tuple, its keyword dict); this
    is one. It runs on every dispatch, and with 10,000 topics taking turns each object it reads
    is likely a cache miss.
    """

    __slots__ = ("broker", "consumer", "dispatcher")

    def __init__(self, broker: Broker, dispatcher: Dispatcher, consumer: Consumer) -> None:
        self.broker = broker
        self.dispatcher = dispatcher
        self.consumer = consumer

    def __call__(self) -> None:
        self.broker._process(self.dispatcher, self.consumer)


class Broker:
    """One simulated broker serving the topics of a workload."""

    def __init__(
        self, tuning: BrokerTuning, plugins: BrokerPlugins, loop: EventLoop, seed: int
    ) -> None:
        self.tuning = tuning
        self.plugins = plugins
        self.loop = loop
        self.seed = seed
        self.cache = cache = plugins.cache
        # The cache's methods every publish, read and acknowledgement calls, bound once for the
        # whole broker (the dispatchers call them through it): shared, each stays in the
        # processor's cache, where a bound copy per dispatcher would be one more cold object per
        # call with 10,000 topics taking turns.
        self.cache_insert = cache.insert
        self.cache_read = cache.read
        self.cache_storage_read = cache.storage_read
        self.cache_released = cache.released
        self.cache_cursors_changed = cache.cursors_changed
        self.max_read_batch = tuning.max_read_batch
        self.delayed_strict = tuning.delayed_strict
        self.batch_index_acks = tuning.batch_index_acks
        self.counters = Counters()
        self.latency_ms: dict[int, int] = {}
        self.topics: list[Topic] = []
        self.dispatchers: list[Dispatcher] = []
        self.peaks: dict[str, float] = {}
        self._ledger_ids = LedgerIds()
        self._producer_names = 0
        self._end_ns = 0
        self._policies: dict[ConsumerPolicy, ConsumerPolicy] = {}

    # ---- building -----------------------------------------------------------------------------

    def build(self, workload: WorkloadSpec) -> None:
        """Create topics, subscriptions, consumers, producers, events and periodic tasks."""
        self._end_ns = round((workload.duration_s + workload.drain_s) * NS)
        for spec in workload.topics:
            until_s = spec.publish_until_s
            end_ns = round((until_s if until_s is not None else workload.duration_s) * NS)
            arrivals = GroupArrivals(spec, stream(self.seed, "producer", spec.name), end_ns)
            # Whole entries, as producers write them: the backlog rounds up to full batches.
            backlog = arrivals.backlog(-(-spec.backlog // spec.batch_size))
            topics = [
                self._add_topic(name, spec, i, backlog) for i, name in enumerate(spec.topic_names())
            ]
            _Publisher(self, topics, arrivals).start()
        for event in workload.events:
            at = round(event.at_s * NS)
            if event.kind == "restart":
                self.loop.at(at, self.restart)
            elif event.kind == "unload":
                self.loop.at(at, self.unload)
            else:
                connect = event.kind == "reconnect"
                self.loop.at(at, partial(self._set_group, event.group, connect))
        t = self.tuning
        self.loop.call_every(
            t.cache_eviction_interval_ns, t.cache_eviction_interval_ns, self.cache.evict_expired
        )
        self.loop.call_every(
            t.cursor_flush_interval_ns, t.cursor_flush_interval_ns, self._flush_cursors
        )
        self.loop.call_every(STATS_INTERVAL_NS, STATS_INTERVAL_NS, self._check_active_cursors)
        self.loop.call_every(0, SAMPLE_INTERVAL_NS, self._sample)

    def _add_topic(self, name: str, spec: TopicSpec, index: int, backlog: Backlog) -> Topic:
        ledger = ManagedLedger(name, self._ledger_ids, self.tuning.max_entries_per_ledger)
        topic = Topic(name, ledger, self.plugins.new_cursor_container())
        self.topics.append(topic)
        if self.tuning.dedup:
            topic.dedup = self._new_dedup(topic, spec)
        self._prefill(topic, spec.batch_size, backlog, index)
        self.cache.open_ledger(name, topic.cursors)
        for sub_spec in spec.subscriptions:
            for sub_name in sub_spec.subscription_names():
                self._add_subscription(topic, sub_name, sub_spec)
        return topic

    def _prefill(self, topic: Topic, batch: int, backlog: Backlog, index: int) -> None:
        """Write the topic's backlog, published before time zero."""
        ml = topic.ledger
        sizes, keys, step = backlog.sizes[index], backlog.keys[index], backlog.step_ns
        entries = len(sizes)
        for i in range(entries):
            pos = ml.append(sizes[i], -(entries - i) * step, keys[i], batch, 0)
            if topic.dedup is not None:
                self._account(topic.dedup.persisted(pos))
        self.counters.published += entries * batch
        self.counters.published_entries += entries

    def publish(
        self, topic: Topic, size: Any, now: int, key: Any, batch: int, deliver_at_ms: int
    ) -> None:
        """A producer's entry reaches ``topic`` at ``now``: persist it, cache it, wake readers.

        ``size`` and ``key`` are ints, passed on as the objects the caller holds (see
        ``ManagedLedger.append``).
        """
        pos = topic.ledger.append(size, now, key, batch, deliver_at_ms)
        if topic.dedup is not None:
            self._account(topic.dedup.persisted(pos))
        counters = self.counters
        counters.published += batch
        counters.published_entries += 1
        self.cache_insert(topic.name, pos, size)
        dispatcher = topic.first_dispatcher
        while dispatcher is not None:
            if dispatcher.waiting:
                dispatcher.waiting = False
                dispatcher.read_more()
            dispatcher = dispatcher.next_in_topic

    def _new_dedup(self, topic: Topic, spec: TopicSpec) -> Deduplication:
        """The topic's ``pulsar.dedup`` cursor; producer names as a broker gives them."""
        first = self._producer_names
        self._producer_names += spec.producers
        names = [f"standalone-0-{n}" for n in range(first, first + spec.producers)]
        t = self.tuning
        dedup = Deduplication(
            topic.ledger,
            names,
            spec.batch_size,
            self.plugins.new_persister(f"{topic.name}/{DEDUP_CURSOR}"),
            t.dedup_interval,
            t.dedup_max_producers,
        )
        self._account(dedup.created())
        return dedup

    def persisters(self) -> Iterator[AckStatePersister]:
        """Every durable cursor's persister: the subscriptions', then the dedup cursors'."""
        for dispatcher in self.dispatchers:
            yield dispatcher.persister
        for topic in self.topics:
            if topic.dedup is not None:
                yield topic.dedup.persister

    def _add_subscription(self, topic: Topic, name: str, spec: SubscriptionSpec) -> None:
        ml = topic.ledger
        start = ml.first_position if spec.initial_position == "earliest" else ml.last_position
        cursor = Cursor(name, ml, start)
        factory = self.plugins.tracker_factory
        dispatcher = Dispatcher(
            self,
            topic,
            name,
            spec.type,
            cursor,
            self.plugins.new_persister(f"{topic.name}/{name}"),
            partial(_new_tracker, factory, topic.name, name),
        )
        if topic.dispatchers:
            topic.dispatchers[-1].next_in_topic = dispatcher
        else:
            topic.first_dispatcher = dispatcher
        topic.dispatchers = (*topic.dispatchers, dispatcher)
        self.dispatchers.append(dispatcher)
        self._account(dispatcher.persister.created(cursor))
        index = 0
        for c_spec in spec.consumers:
            policy = ConsumerPolicy(
                rate=c_spec.rate,
                receiver_queue_size=c_spec.receiver_queue_size,
                cumulative=c_spec.ack == "cumulative",
                ack_hole_probability=c_spec.ack_hole_probability,
                nack_probability=c_spec.nack_probability,
                nack_delay_ns=c_spec.nack_redelivery_delay_ms * MS,
            )
            # One object per distinct policy: every dispatch reads it, and 10,000 copies of
            # one policy would each cost a cache miss.
            policy = self._policies.setdefault(policy, policy)
            for k in range(c_spec.count):
                consumer = Consumer(f"{name}/{c_spec.name}-{k}", index, policy, c_spec.group)
                consumer.process = _ProcessQueue(self, dispatcher, consumer)
                index += 1
                dispatcher.consumers.append(consumer)
                self.loop.at(
                    round(c_spec.connect_at_s * NS),
                    partial(self._connect, dispatcher, consumer),
                )
                if c_spec.disconnect_at_s is not None:
                    self.loop.at(
                        round(c_spec.disconnect_at_s * NS),
                        partial(self._disconnect, dispatcher, consumer),
                    )

    # ---- consumers ----------------------------------------------------------------------------

    def _connect(self, dispatcher: Dispatcher, consumer: Consumer) -> None:
        if consumer.connected:
            return
        consumer.connect()
        dispatcher.consumers_changed()
        self._set_active(dispatcher, True)
        dispatcher.read_more()

    def _disconnect(self, dispatcher: Dispatcher, consumer: Consumer) -> None:
        if not consumer.connected:
            return
        back = consumer.take_back()
        dispatcher.consumers_changed()
        dispatcher.redeliver(back)
        if not dispatcher.connected:
            self._set_active(dispatcher, False)
        dispatcher.read_more()

    def _set_group(self, group: str | None, connect: bool) -> None:
        for dispatcher in self.dispatchers:
            for consumer in dispatcher.consumers:
                if consumer.group == group:
                    if connect:
                        self._connect(dispatcher, consumer)
                    else:
                        self._disconnect(dispatcher, consumer)

    def _set_active(self, dispatcher: Dispatcher, active: bool) -> None:
        if dispatcher.active == active:
            return
        dispatcher.active = active
        cursors = dispatcher.topic.cursors
        if active:
            cursors.add(dispatcher.cursor.name, dispatcher.tracked_position())
        else:
            cursors.remove(dispatcher.cursor.name)
        self.cache.cursors_changed(dispatcher.topic.name)

    def _check_active_cursors(self) -> None:
        """Pulsar's periodic check: a cursor with a large backlog stops counting as active."""
        threshold = self.tuning.backlogged_threshold
        for dispatcher in self.dispatchers:
            if not dispatcher.connected:
                continue
            if self.tuning.expected_read_count_mode:
                self._set_active(dispatcher, True)
            else:
                # Pulsar counts the entries not read yet (getNumberOfEntries), not the backlog
                # from the mark-delete position: dispatched, unacknowledged entries do not count.
                self._set_active(dispatcher, dispatcher.cursor.unread_entries() < threshold)

    def start_processing(self, dispatcher: Dispatcher, consumer: Consumer) -> None:
        """An idle consumer got something: it starts on it now.

        A rate-limited consumer's chunk completes later, so it can start at once; an unlimited one
        completes at this instant, so it waits for the dispatch that fed it to finish first.
        """
        consumer.busy = True
        if consumer.policy.rate > 0:
            self._process(dispatcher, consumer)
        else:
            self.loop.soon(consumer.process)

    def _process(self, dispatcher: Dispatcher, consumer: Consumer) -> None:
        """Take the next chunk of the receiver queue and schedule its completion.

        A chunk is what the consumer processes within one acknowledgement group (100 ms) and at
        most half its receiver queue, after which the client returns flow permits.
        """
        queue = consumer.queue
        if not consumer.connected or not queue:
            consumer.busy = False
            return
        rate = consumer.policy.rate
        if rate <= 0:
            # Unlimited: the whole queue is processed at this instant (the list itself is the
            # chunk; the consumer gets a new one).
            consumer.queue = []
            self._complete(dispatcher, consumer, queue, self.loop.now_ns(), consumer.epoch)
            return
        limit = consumer.chunk_limit
        messages = 0
        taken = 0
        while taken < len(queue) and messages < limit:
            messages += queue[taken][1]
            taken += 1
        chunk = queue[:taken]
        del queue[:taken]
        start = self.loop.now_ns()
        done = start + round(messages / rate * NS)
        self.loop.at(
            done, partial(self._complete, dispatcher, consumer, chunk, start, consumer.epoch)
        )

    def _complete(
        self,
        dispatcher: Dispatcher,
        consumer: Consumer,
        chunk: list[Delivery],
        start: int,
        epoch: int,
    ) -> None:
        """A chunk was processed: record latency, ack, nack or leave holes; return permits."""
        if consumer.epoch != epoch:
            return  # the consumer left meanwhile; what it held was handed back
        cursor = dispatcher.cursor
        changed: set[int] = set()
        md_before: Position = cursor.md
        nacked: list[Position] | None = None
        if not consumer.acks_each:
            nacked = []
            done_messages = self._settle_each(dispatcher, consumer, chunk, start, changed, nacked)
        else:
            # The common case: every entry is acknowledged individually. _settle_each's loop
            # without its branches, counting into locals (nothing reads the counters meanwhile).
            hist = self.latency_ms
            per_message_ns = consumer.per_message_ns
            done_messages = 0
            pending = consumer.pending
            # Positions untyped: unpacked as a typed pair, each would be boxed again into a new
            # tuple for the pending map (see ``BoxedPosition``).
            items: list[tuple[Any, int, int, Any]] = chunk
            for pos, messages, publish_ns, _key in items:
                done_messages += messages
                if per_message_ns:
                    latency = int((start + done_messages * per_message_ns - publish_ns) // MS)
                else:
                    # The same value as the float expression, which is exact below 2**53 ns.
                    latency = (start - publish_ns) // MS
                # Boxed once for both uses. ``hist.get`` unbound: compiled, it is a C primitive,
                # a bound copy a Python call.
                bucket: Any = latency
                hist[bucket] = hist.get(bucket, 0) + messages
                # ``in`` and ``del`` are C operations compiled; ``pending.pop`` would build a bound
                # method and call it through Python on every delivery.
                if pos in pending:
                    del pending[pos]
            # The acknowledgements in the same order; the pending set and the histogram above do
            # not depend on them.
            acked_messages, after_ack_messages = cursor.ack_each(chunk, changed)
            counters = self.counters
            counters.acked += acked_messages
            counters.delivered_after_ack += after_ack_messages
        consumer.permits += done_messages
        if changed:
            # Usually one ledger: taking it costs far less than sorting.
            ledgers = [changed.pop()] if len(changed) == 1 else sorted(changed)
            md_after: Position = cursor.md
            # Field by field: compiled, ``!=`` on the pairs would box both into new tuples.
            moved = md_after[0] != md_before[0] or md_after[1] != md_before[1]
            self._after_ack(dispatcher, ledgers, moved)
        if nacked:
            self.loop.at(
                self.loop.now_ns() + consumer.policy.nack_delay_ns,
                partial(self._redeliver_nacked, dispatcher, consumer, consumer.epoch, nacked),
            )
        if consumer.queue:
            self._process(dispatcher, consumer)
        else:
            consumer.busy = False
        dispatcher.read_more()

    def _settle_each(
        self,
        dispatcher: Dispatcher,
        consumer: Consumer,
        chunk: list[Delivery],
        start: int,
        changed: set[int],
        nacked: list[Position],
    ) -> int:
        """:meth:`_complete`'s loop with negative acks, ack holes or cumulative acks; returns the
        messages in ``chunk``."""
        policy = consumer.policy
        counters = self.counters
        cursor = dispatcher.cursor
        pending = consumer.pending
        hist = self.latency_ms
        per_message_ns = consumer.per_message_ns
        p_nack = policy.nack_probability
        p_drop = p_nack + policy.ack_hole_probability
        draws: list[float] | None = None
        if p_drop > 0:
            draws = dispatcher.rng.random(len(chunk)).tolist()
        cumulative_to: Position | None = None
        done_messages = 0
        cumulative = policy.cumulative
        for i, (pos, messages, publish_ns, _key) in enumerate(chunk):
            done_messages += messages
            latency = int((start + done_messages * per_message_ns - publish_ns) // MS)
            hist[latency] = hist.get(latency, 0) + messages
            if draws is not None and draws[i] < p_drop:
                if draws[i] < p_nack:
                    nacked.append(pos)  # still pending until the client asks for it again
                elif messages > 1:
                    # One message of the batch is never acknowledged: a partial batch ack. It is
                    # one of the ``messages`` delivered: the whole batch, or for a batch
                    # redelivered with its ackSet only the indexes still unacked.
                    nth = int(draws[i] / p_drop * messages) % messages
                    size = cursor.batch_size(pos)
                    hole = 1 << nth if messages == size else cursor.unacked_index(pos, nth)
                    cursor.ack_batch_partially(pos, size, hole)
                    counters.acked += messages - 1
                continue
            if cumulative:
                cumulative_to = pos
                continue
            pending.pop(pos, None)
            if cursor.ack(*pos):
                counters.acked += messages
                changed.add(pos[0])
            else:
                # The same position reached two consumers and the other one acked it first.
                counters.delivered_after_ack += messages
        if cumulative_to is not None:
            counters.acked += sum(
                pending.pop(p) for p in [p for p in pending if p <= cumulative_to]
            )
            cursor.ack_cumulative(cumulative_to)
            changed.add(cumulative_to[0])
        return done_messages

    def _after_ack(self, dispatcher: Dispatcher, changed: list[int], md_moved: bool) -> None:
        cursor = dispatcher.cursor
        ranges = cursor.range_count()
        if ranges > self.counters.ack_max_ranges:
            self.counters.ack_max_ranges = ranges
        self._account(dispatcher.persister.acked(cursor, changed))
        if md_moved:
            # Only a moved mark-delete concerns the container and the tracker.
            if self.tuning.track_mark_delete and dispatcher.active:
                dispatcher.topic.cursors.update(cursor.name, cursor.md)
                self.cache_cursors_changed(dispatcher.topic_name)
            if dispatcher.tracker is not None:
                dispatcher.tracker.mark_delete_moved(cursor.md)
        dispatcher.check_pause()

    def _redeliver_nacked(
        self, dispatcher: Dispatcher, consumer: Consumer, epoch: int, nacked: list[Position]
    ) -> None:
        """The client asks for its negatively acknowledged messages again, after the delay.

        As Pulsar's broker does, only the positions still pending on the consumer go back: not
        one a cumulative ack covered meanwhile. A consumer that left (or a broker that restarted)
        since the nack handed everything back already, and its new connection starts afresh
        (simplified: Pulsar's client would still ask, and drop its own copy of what comes back).
        """
        if consumer.epoch != epoch:
            return
        pending = consumer.pending
        back = [pos for pos in nacked if pending.pop(pos, None) is not None]
        if back:
            dispatcher.redeliver(back)
            dispatcher.read_more()

    def _account(self, outcome: PersistOutcome | None) -> bool:
        """Count one cursor write; returns whether there was one."""
        if outcome is None:
            return False
        self.counters.ack_persists += 1
        self.counters.ack_persisted_bytes += outcome.bytes_written
        self.counters.ack_ranges_dropped += outcome.ranges_dropped
        return True

    # ---- periodic tasks -----------------------------------------------------------------------

    def _flush_cursors(self) -> None:
        for dispatcher in self.dispatchers:
            if self._account(dispatcher.persister.flush(dispatcher.cursor)):
                # A write can end a pause (PIP-299 re-reads its cached size only when it persists).
                dispatcher.check_pause()
        for topic in self.topics:
            if topic.dedup is not None:
                self._account(topic.dedup.flush())

    def _sample(self) -> None:
        """Peaks of gauges that plugins report as current values."""
        peaks = self.peaks
        for name, value in self.plugins.tracker_factory.stats().items():
            if value > peaks.get(name, 0):
                peaks[name] = value
        size = self.cache.size_bytes()
        if size > peaks.get("cache_peak_bytes", 0):
            peaks["cache_peak_bytes"] = size

    # ---- restart ------------------------------------------------------------------------------

    def restart(self) -> None:
        """A broker crash and restart: in-memory state goes; cursors recover what was persisted."""
        self.counters.broker_restarts += 1
        self._reload(graceful=False)

    def unload(self) -> None:
        """Every topic is unloaded gracefully and loaded again (a bundle unload, or a broker
        shut down and started): each cursor closes first, persisting its final state (ack-state.md
        §3.7), then recovers what it persisted. In-memory state goes as in a restart."""
        self._reload(graceful=True)

    def _reload(self, graceful: bool) -> None:
        for topic in self.topics:
            self.cache.close_ledger(topic.name)
            if topic.dedup is not None:
                self._account(topic.dedup.reload(graceful))
        for dispatcher in self.dispatchers:
            cursor = dispatcher.cursor
            was_connected = [c for c in dispatcher.consumers if c.connected]
            # What was dispatched and not acknowledged goes out again after the restart. A set
            # an earlier restart left is kept: those positions have not gone out again yet.
            unacked = dispatcher.restart_unacked
            unacked.update(dispatcher.replay.redeliveries())
            for consumer in was_connected:
                unacked.update(consumer.take_back())
            if graceful:
                self._account(dispatcher.persister.close(cursor))
            else:
                dispatcher.persister.crash()
            recovered = dispatcher.persister.recover()
            self._compare_recovery(dispatcher, recovered)
            cursor.restore(recovered)
            dispatcher.replay.clear()
            count_foreign_tick_changes((dispatcher,))
            dispatcher.reset_tracker()
            dispatcher.end_pause(self.loop.now_ns())  # the pause lasted until the broker went down
            dispatcher.waiting = False
            if dispatcher.active:
                dispatcher.active = False
                dispatcher.topic.cursors.remove(cursor.name)
            for consumer in was_connected:
                consumer.connect()
            dispatcher.consumers_changed()
            if was_connected:
                self._set_active(dispatcher, True)
        for topic in self.topics:
            self.cache.open_ledger(topic.name, topic.cursors)
        for dispatcher in self.dispatchers:
            dispatcher.wake()

    def _compare_recovery(self, dispatcher: Dispatcher, recovered: RecoveredAckState) -> None:
        """Count what the restart will redeliver, and any claim of an ack that never happened."""
        truth = dispatcher.cursor
        claimed = Cursor("recovered", truth.ledger, recovered.mark_delete)
        claimed.restore(recovered)
        lost = 0
        for pos in _positions_claimed_beyond(claimed, truth):
            lost += truth.ledger.ledgers[pos[0]].field(pos[1], BATCH)
        self.counters.lost += lost
        # Added to, not replaced: an ack an earlier restart forgot is not in ``truth`` (the state
        # that restart recovered) and, until its entry goes out again, still owes its count.
        dispatcher.restart_acked.update(_positions_claimed_beyond(truth, claimed))
        # Kept across restarts, as restart_unacked is: an entry not yet sent again still owes them.
        forgotten = dispatcher.restart_forgotten
        for pos, count in _batch_indexes_forgotten(truth, recovered).items():
            forgotten[pos] = forgotten.get(pos, 0) + count
        dispatcher.restart_owed = bool(dispatcher.restart_acked or dispatcher.restart_unacked)

    # ---- running ------------------------------------------------------------------------------

    @property
    def end_ns(self) -> int:
        return self._end_ns

    def finish(self) -> dict[str, float]:
        """Close out paused time and compute the broker's metrics."""
        now = self.loop.now_ns()
        c = self.counters
        count_foreign_tick_changes(self.dispatchers)
        for dispatcher in self.dispatchers:
            dispatcher.end_pause(now)
        metrics: dict[str, float] = {
            k: v for k, v in c.as_dict().items() if k not in ("dispatch_paused_ns",)
        }
        metrics["dispatch_paused_ms"] = c.dispatch_paused_ns / MS
        metrics["unacked_at_end"] = sum(_unacked_messages(d.cursor) for d in self.dispatchers)
        metrics["dedup_producers_lost"] = sum(t.dedup.lost for t in self.topics if t.dedup)
        metrics["latency_p50_ms"], metrics["latency_p99_ms"] = _percentiles(
            self.latency_ms, (0.5, 0.99)
        )
        metrics["ack_bytes_per_ack"] = c.ack_persisted_bytes / c.acked if c.acked else 0.0
        return metrics


def _new_tracker(
    factory: DelayedDeliveryTrackerFactory, topic: str, subscription: str, wake: Callable[[], None]
) -> DelayedDeliveryTracker:
    return factory.new_tracker(topic, subscription, wake)


def _positions_after(cursor: Cursor) -> Iterator[Position]:
    ml = cursor.ledger
    pos = ml.normalize(ml.next_position(cursor.md))
    last = ml.last_position
    while pos <= last:
        yield pos
        pos = ml.normalize(ml.next_position(pos))


def _unacked_messages(cursor: Cursor) -> int:
    """Messages after the mark-delete that ``cursor`` has not acknowledged.

    A partly acknowledged batch counts only its unacked indexes: the others were acknowledged
    (and counted in ``acked``), so counting the whole entry would count them twice.
    """
    ledgers = cursor.ledger.ledgers
    partial = cursor.batch_acks()
    unacked = 0
    for pos in _positions_after(cursor):
        if cursor.is_acked(*pos):
            continue
        ack = partial.get(pos)
        unacked += ledgers[pos[0]].field(pos[1], BATCH) if ack is None else ack.unacked.bit_count()
    return unacked


def _positions_claimed_beyond(claimer: Cursor, reference: Cursor) -> Iterator[Position]:
    """Positions ``claimer`` holds as acknowledged that ``reference`` does not."""
    ml = reference.ledger
    if claimer.md > reference.md:
        pos = ml.normalize(ml.next_position(reference.md))
        while pos <= claimer.md:
            if not reference.is_acked(*pos):
                yield pos
            pos = ml.normalize(ml.next_position(pos))
    for ledger_id, entries in claimer.acked.items():
        for entry_id in entries:
            if not reference.is_acked(ledger_id, entry_id):
                yield (ledger_id, entry_id)


def _batch_indexes_forgotten(truth: Cursor, recovered: RecoveredAckState) -> dict[Position, int]:
    """Per partly acknowledged batch, the acked indexes ``recovered`` no longer holds.

    A batch entry recovered without its bitset comes back whole, acked indexes included; one
    recovered with it comes back with its ackSet and the client skips them (ack-state.md §6.2).
    """
    kept = recovered.batch_acks
    out: dict[Position, int] = {}
    for pos, ack in truth.batch_acks().items():
        back = kept.get(pos)
        unacked = back.unacked if back is not None else (1 << ack.batch_size) - 1
        count = (unacked & ~ack.unacked).bit_count()
        if count:
            out[pos] = count
    return out


def _percentiles(hist: dict[int, int], qs: tuple[float, ...]) -> tuple[float, ...]:
    total = sum(hist.values())
    if not total:
        return tuple(0.0 for _ in qs)
    out: list[float] = []
    keys = sorted(hist)
    for q in qs:
        target = q * total
        running = 0
        for k in keys:
            running += hist[k]
            if running >= target:
                out.append(float(k))
                break
    return tuple(out)
