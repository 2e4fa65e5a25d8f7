"""One simulated broker: its topics, subscriptions, consumers and periodic tasks.

What happens to a published entry is in ``publishing.py`` (and, with closed-loop producers or
writes that take time, on its way there in ``producers.py``), to a dispatched one in
``dispatcher.py``, to a processed one (acknowledgements) in ``settlement.py``, and on a restart or
an unload in ``recovery.py``.

The broker takes validated settings and ready plugin objects; it knows nothing of files, Spark or
the CLI. ``simulation.py`` builds it from a profile, a workload and a seed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from functools import partial
from typing import Any, Final

from brokerlab.broker.arrivals import Backlog, GroupArrivals
from brokerlab.broker.client import ConsumerClient
from brokerlab.broker.consumer import ACK_GROUP_NS, Consumer, ConsumerPolicy
from brokerlab.broker.cursor import Cursor
from brokerlab.broker.dedup import DEDUP_CURSOR, Deduplication
from brokerlab.broker.dispatcher import Dispatcher, count_foreign_tick_changes
from brokerlab.broker.durations import Durations
from brokerlab.broker.events import EventLoop
from brokerlab.broker.ledger import LedgerIds, ManagedLedger
from brokerlab.broker.producers import FlowPublisher, PublishStats
from brokerlab.broker.publishing import Publisher, prefill
from brokerlab.broker.reads import InflightReadsLimiter, PendingReads, Reads, Storage
from brokerlab.broker.recovery import come_up, go_down, hand_over, reload, unacked_messages
from brokerlab.broker.settlement import ProcessQueue
from brokerlab.broker.streams import stream
from brokerlab.protocols import (
    AckStatePersister,
    CursorContainer,
    DelayedDeliveryTracker,
    DelayedDeliveryTrackerFactory,
    EntryCache,
    PersistOutcome,
)
from brokerlab.workloads.model import (
    ConsumerSpec,
    DurationSpec,
    StorageSpec,
    SubscriptionSpec,
    TopicSpec,
    WorkloadSpec,
)

__all__ = ["Broker", "BrokerPlugins", "BrokerTuning", "Counters", "Topic", "percentiles"]

NS: Final = 1_000_000_000
MS: Final = 1_000_000
MIB: Final = 1024 * 1024
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
    storage_read_ops: int = 0
    storage_entries_shared: int = 0
    storage_wait_ns: int = 0
    storage_reads_in_flight_peak: int = 0
    reads_in_flight_peak_bytes: int = 0
    read_permit_wait_ns: int = 0
    read_failures: int = 0
    unavailable_ns: int = 0
    held_entries: int = 0
    topic_moves: int = 0
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
    max_read_bytes: int = 5 * 1024 * 1024
    min_read_batch: int = 1
    read_backoff_initial_ns: int = 15_000 * MS
    read_backoff_max_ns: int = 60_000 * MS
    reads_in_flight_bytes: int = 0
    reads_in_flight_timeout_ns: int = 60_000 * MS
    reads_in_flight_max_line: int = 50_000

    @classmethod
    def from_settings(cls, s: Any) -> BrokerTuning:
        return cls(
            max_read_batch=s.dispatcher_max_read_batch_size,
            max_entries_per_ledger=s.managed_ledger_max_entries_per_ledger,
            backlogged_threshold=s.managed_ledger_cursor_backlogged_threshold,
            expected_read_count_mode=s.cache_eviction_by_expected_read_count,
            cache_eviction_interval_ns=s.cache_eviction_interval_ms * MS,
            cursor_flush_interval_ns=s.managed_ledger_cursor_position_flush_seconds * NS,
            delayed_strict=s.is_delayed_delivery_deliver_at_time_strict,
            track_mark_delete=s.cache_eviction_by_mark_deleted_position,
            batch_index_acks=s.acknowledgment_at_batch_index_level_enabled,
            dedup=s.broker_deduplication_enabled,
            dedup_interval=s.broker_deduplication_entries_interval,
            dedup_max_producers=s.broker_deduplication_max_number_of_producers,
            max_read_bytes=s.dispatcher_max_read_size_bytes,
            min_read_batch=min(s.dispatcher_min_read_batch_size, s.dispatcher_max_read_batch_size),
            read_backoff_initial_ns=s.dispatcher_read_failure_backoff_initial_time_in_ms * MS,
            read_backoff_max_ns=s.dispatcher_read_failure_backoff_max_time_in_ms * MS,
            reads_in_flight_bytes=_reads_in_flight_limit(
                s.managed_ledger_max_reads_in_flight_size_in_mb
            ),
            reads_in_flight_timeout_ns=(
                s.managed_ledger_max_reads_in_flight_permits_acquire_timeout_millis * MS
            ),
            reads_in_flight_max_line=s.managed_ledger_max_reads_in_flight_permits_acquire_queue_size,
        )


def _reads_in_flight_limit(limit_mb: int) -> int:
    """managedLedgerMaxReadsInFlightSizeInMB in bytes (0: no limit). Pulsar only warns when it is
    below one read of dispatcherMaxReadSizeBytes; the limiter then grants such a read the whole
    limit once nothing else is in flight (``InflightReadsLimiter``)."""
    return max(limit_mb, 0) * MIB


@dataclass(frozen=True)
class BrokerPlugins:
    """The plugin objects one simulation uses, built from the profile's choices."""

    cache: EntryCache
    new_cursor_container: Callable[[], CursorContainer]
    tracker_factory: DelayedDeliveryTrackerFactory
    new_persister: Callable[[str], AckStatePersister]


class Topic:
    """A topic: its managed ledger, active-cursor container and subscriptions (its group's
    ``Publisher`` publishes to it)."""

    __slots__ = (
        "broker",
        "cursors",
        "dedup",
        "dispatchers",
        "first_dispatcher",
        "held",
        "ledger",
        "name",
        "resume_producers",
    )

    def __init__(self, name: str, ledger: ManagedLedger, cursors: CursorContainer) -> None:
        self.name = name
        # The broker that owns the topic (a cluster's brokers hand topics over).
        self.broker: Broker
        self.ledger = ledger
        # The subscriptions' dispatchers in order, also chained from the first through
        # ``Dispatcher.next_in_topic``: every publish walks the chain, which starts on this
        # object's own cache line, where the tuple would be one more object to fetch.
        self.first_dispatcher: Dispatcher | None = None
        self.cursors = cursors
        self.dispatchers: tuple[Dispatcher, ...] = ()
        self.dedup: Deduplication | None = None
        # While the topic is unavailable (its broker is down, or its bundle is being unloaded):
        # what producers send meanwhile, as (size, sent_ns, key, batch, deliver_at_ms), persisted
        # in order when it is back. Not None exactly while the topic is unavailable.
        self.held: list[tuple[int, int, int, int, int]] | None = None
        # Set by flow-controlled producers: called when the topic is available again.
        self.resume_producers: Callable[[], None] | None = None


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
        self.max_read_bytes = tuning.max_read_bytes
        # The read path when reads take time (``reads.py``); None: reads are synchronous.
        self.reads: Reads | None = None
        self.delayed_strict = tuning.delayed_strict
        self.batch_index_acks = tuning.batch_index_acks
        self.counters = Counters()
        self.latency_ms: dict[int, int] = {}
        self.topics: list[Topic] = []
        self.dispatchers: list[Dispatcher] = []
        self.peaks: dict[str, float] = {}
        # Set when the workload's producers are closed-loop or its writes take time.
        self.publish_stats: PublishStats | None = None
        self._ledger_ids = LedgerIds()
        self._producer_names = 0
        self._end_ns = 0
        self._policies: dict[ConsumerPolicy, ConsumerPolicy] = {}
        # When the broker went down for an outage (``recovery.go_down``); -1 while it is up.
        self.down_since = -1
        # A persister's stats count from its cursor's creation, and a cursor moves with its topic:
        # what its persisters had counted when a topic left this broker (added) or arrived here
        # (subtracted), so that each broker reports what its cursors did while it owned them.
        self.moved_persister_stats: dict[str, float] = {}

    # ---- building -----------------------------------------------------------------------------

    def build(self, workload: WorkloadSpec) -> None:
        """Create topics, subscriptions, consumers, producers, events and periodic tasks."""
        self.prepare(workload)
        self.add_topics(workload, lambda name: self)
        self._schedule_events(workload)
        self.start_periodic_tasks()

    def prepare(self, workload: WorkloadSpec, storage: Storage | None = None) -> None:
        """What the broker needs before its first topic: the run's end and its read path
        (reading from ``storage``, the bookies a cluster's brokers share, when given)."""
        self._end_ns = round((workload.duration_s + workload.drain_s) * NS)
        self.reads = self._new_reads(workload.storage, storage)
        if PublishStats.needed(workload):
            self.publish_stats = PublishStats(workload)

    def add_topics(self, workload: WorkloadSpec, owner: Callable[[str], Broker]) -> None:
        """Create every topic of ``workload`` on the broker ``owner`` names for it, with its
        subscriptions and consumers, and start each topic group's producers."""
        for spec in workload.topics:
            until_s = spec.publish_until_s
            end_ns = round((until_s if until_s is not None else workload.duration_s) * NS)
            arrivals = GroupArrivals(spec, stream(self.seed, "producer", spec.name), end_ns)
            # Whole entries, as producers write them: the backlog rounds up to full batches.
            backlog = arrivals.backlog(-(-spec.backlog_per_topic // spec.batch_size))
            topics = [
                owner(name)._add_topic(name, spec, i, backlog)
                for i, name in enumerate(spec.topic_names())
            ]
            if self.publish_stats is None:
                Publisher(self, topics, arrivals).start()
            else:
                writes = Durations(
                    workload.storage.write_latency_ms, stream(self.seed, "write", spec.name)
                )
                FlowPublisher(self, topics, arrivals, writes, self.publish_stats).start()

    def _schedule_events(self, workload: WorkloadSpec) -> None:
        """The workload's events on this broker alone; the unload of one topic's bundle is the
        placement's (``Cluster``), which the simulator schedules with one broker too."""
        for event in workload.events:
            if event.topic is not None:
                continue
            at = round(event.at_s * NS)
            if event.kind in ("restart", "unload") and event.outage_s > 0:
                graceful = event.kind == "unload"
                self.loop.at(at, partial(self.go_down, graceful))
                self.loop.at(at + round(event.outage_s * NS), self.come_up)
            elif event.kind == "restart":
                self.loop.at(at, self.restart)
            elif event.kind == "unload":
                self.loop.at(at, self.unload)
            else:
                connect = event.kind == "reconnect"
                self.loop.at(at, partial(self.set_group, event.group, connect))

    def start_periodic_tasks(self) -> None:
        """Cache eviction, cursor flushes, the active-cursor check and sampling, as Pulsar runs
        them."""
        t = self.tuning
        self.loop.call_every(
            t.cache_eviction_interval_ns, t.cache_eviction_interval_ns, self.cache.evict_expired
        )
        self.loop.call_every(
            t.cursor_flush_interval_ns, t.cursor_flush_interval_ns, self._flush_cursors
        )
        self.loop.call_every(STATS_INTERVAL_NS, STATS_INTERVAL_NS, self._check_active_cursors)
        self.loop.call_every(0, SAMPLE_INTERVAL_NS, self._sample)

    def _new_reads(self, spec: StorageSpec, storage: Storage | None) -> Reads | None:
        """The read path of ``reads.py`` when reads take time or their bytes in flight are
        limited; None (synchronous reads) otherwise."""
        t = self.tuning
        if not spec.reads_take_time and not t.reads_in_flight_bytes:
            return None
        limiter = None
        if t.reads_in_flight_bytes:
            limiter = InflightReadsLimiter(
                t.reads_in_flight_bytes,
                t.reads_in_flight_timeout_ns,
                t.reads_in_flight_max_line,
                self.loop,
                self.counters,
            )
        if storage is None:
            storage = Storage(spec, self.seed)
        pending = PendingReads(storage, self.loop, self.counters)
        return Reads(pending, limiter)

    def _add_topic(self, name: str, spec: TopicSpec, index: int, backlog: Backlog) -> Topic:
        ledger = ManagedLedger(name, self._ledger_ids, self.tuning.max_entries_per_ledger)
        topic = Topic(name, ledger, self.plugins.new_cursor_container())
        topic.broker = self
        self.topics.append(topic)
        if self.tuning.dedup:
            topic.dedup = self._new_dedup(topic, spec)
        prefill(self, topic, spec.batch_size, backlog, index)
        self.cache.open_ledger(name, topic.cursors)
        for sub_spec in spec.subscriptions:
            for sub_name in sub_spec.subscription_names():
                self._add_subscription(topic, sub_name, sub_spec)
        return topic

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
        self.account(dedup.created())
        return dedup

    def persisters(self) -> Iterator[AckStatePersister]:
        """Every durable cursor's persister: the subscriptions', then the dedup cursors'."""
        for dispatcher in self.dispatchers:
            yield dispatcher.persister
        for topic in self.topics:
            if topic.dedup is not None:
                yield topic.dedup.persister

    def hand_over_persister_stats(self, topic: Topic, new: Broker) -> None:
        """``topic`` moves from this broker to ``new``: what its persisters counted so far is
        this broker's (see ``moved_persister_stats``)."""
        persisters = [d.persister for d in topic.dispatchers]
        if topic.dedup is not None:
            persisters.append(topic.dedup.persister)
        left, arrived = self.moved_persister_stats, new.moved_persister_stats
        for persister in persisters:
            for name, value in persister.stats().items():
                left[name] = left.get(name, 0) + value
                arrived[name] = arrived.get(name, 0) - value

    def tracker_maker(
        self, topic: str, subscription: str
    ) -> Callable[[Callable[[], None]], DelayedDeliveryTracker]:
        """How a subscription of this broker gets a new delayed-delivery tracker."""
        return partial(_new_tracker, self.plugins.tracker_factory, topic, subscription)

    def _add_subscription(self, topic: Topic, name: str, spec: SubscriptionSpec) -> None:
        ml = topic.ledger
        start = ml.first_position if spec.initial_position == "earliest" else ml.last_position
        cursor = Cursor(name, ml, start)
        dispatcher = Dispatcher(
            self,
            topic,
            name,
            spec.type,
            cursor,
            self.plugins.new_persister(f"{topic.name}/{name}"),
            self.tracker_maker(topic.name, name),
        )
        if topic.dispatchers:
            topic.dispatchers[-1].next_in_topic = dispatcher
        else:
            topic.first_dispatcher = dispatcher
        topic.dispatchers = (*topic.dispatchers, dispatcher)
        self.dispatchers.append(dispatcher)
        self.account(dispatcher.persister.created(cursor))
        index = 0
        for c_spec in spec.consumers:
            policy = _policy(c_spec)
            # One object per distinct policy: every dispatch reads it, and 10,000 copies of
            # one policy would each cost a cache miss.
            policy = self._policies.setdefault(policy, policy)
            for k in range(c_spec.count):
                consumer = Consumer(f"{name}/{c_spec.name}-{k}", index, policy, c_spec.group)
                consumer.process = ProcessQueue(self, dispatcher, consumer)
                if policy.models_client:
                    consumer.client = self._new_client(dispatcher, consumer)
                index += 1
                dispatcher.consumers.append(consumer)
                self.loop.at(
                    round(c_spec.connect_at_s * NS),
                    partial(_connect, dispatcher, consumer),
                )
                if c_spec.disconnect_at_s is not None:
                    self.loop.at(
                        round(c_spec.disconnect_at_s * NS),
                        partial(_disconnect, dispatcher, consumer),
                    )

    def _new_client(self, dispatcher: Dispatcher, consumer: Consumer) -> ConsumerClient:
        """The client model of ``consumer``, with its own stream of service-time draws."""
        spec = consumer.policy.service_time or DurationSpec()
        rng = stream(self.seed, "service", dispatcher.topic_name, consumer.name)
        return ConsumerClient(self, dispatcher, consumer, Durations(spec, rng))

    # ---- consumers ----------------------------------------------------------------------------

    def _connect(self, dispatcher: Dispatcher, consumer: Consumer) -> None:
        if dispatcher.topic.held is not None:
            # The topic is unavailable (its broker is down, or its bundle is being unloaded):
            # the consumer connects once it is back.
            if consumer not in dispatcher.reconnect_after_outage:
                dispatcher.reconnect_after_outage.append(consumer)
            return
        if consumer.connected:
            return
        if consumer.client is not None:
            consumer.client.subscribed()
        consumer.connect()
        dispatcher.consumers_changed()
        self.set_active(dispatcher, True)
        dispatcher.read_more()

    def _disconnect(self, dispatcher: Dispatcher, consumer: Consumer) -> None:
        if dispatcher.topic.held is not None:
            if consumer in dispatcher.reconnect_after_outage:
                dispatcher.reconnect_after_outage.remove(consumer)
            return
        if not consumer.connected:
            return
        if consumer.client is not None:
            consumer.client.close()
        back = consumer.take_back()
        dispatcher.consumers_changed()
        dispatcher.redeliver(back)
        if not dispatcher.connected:
            self.set_active(dispatcher, False)
        dispatcher.read_more()

    def set_group(self, group: str | None, connect: bool) -> None:
        """Every consumer of ``group`` on this broker leaves or comes back."""
        for dispatcher in self.dispatchers:
            for consumer in dispatcher.consumers:
                if consumer.group == group:
                    if connect:
                        self._connect(dispatcher, consumer)
                    else:
                        self._disconnect(dispatcher, consumer)

    def set_active(self, dispatcher: Dispatcher, active: bool) -> None:
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
        if self.down_since >= 0:
            return
        threshold = self.tuning.backlogged_threshold
        for dispatcher in self.dispatchers:
            if not dispatcher.connected or dispatcher.topic.held is not None:
                continue  # no consumer, or closed while its bundle is unloaded
            if self.tuning.expected_read_count_mode or threshold < 0:  # -1: never backlogged
                self.set_active(dispatcher, True)
            else:
                # Pulsar counts the entries not read yet (getNumberOfEntries), not the backlog
                # from the mark-delete position: dispatched, unacknowledged entries do not count.
                self.set_active(dispatcher, dispatcher.cursor.unread_entries() < threshold)

    def account(self, outcome: PersistOutcome | None) -> bool:
        """Count one cursor write; returns whether there was one."""
        if outcome is None:
            return False
        self.counters.ack_persists += 1
        self.counters.ack_persisted_bytes += outcome.bytes_written
        self.counters.ack_ranges_dropped += outcome.ranges_dropped
        return True

    # ---- periodic tasks -----------------------------------------------------------------------

    def _flush_cursors(self) -> None:
        if self.down_since >= 0:
            return  # nothing runs on a broker that is down
        for dispatcher in self.dispatchers:
            if dispatcher.topic.held is not None:
                continue  # closed while its bundle is unloaded: its close persisted the state
            if self.account(dispatcher.persister.flush(dispatcher.cursor)):
                # A write can end a pause (PIP-299 re-reads its cached size only when it persists).
                dispatcher.check_pause()
        for topic in self.topics:
            if topic.dedup is not None and topic.held is None:
                self.account(topic.dedup.flush())

    def _sample(self) -> None:
        """Peaks of gauges that plugins report as current values."""
        peaks = self.peaks
        # The first sample counts even when it is 0: a gauge reported 0 all along peaked at 0.
        for name, value in self.plugins.tracker_factory.stats().items():
            if name not in peaks or value > peaks[name]:
                peaks[name] = value
        size = self.cache.size_bytes()
        if "cache_peak_bytes" not in peaks or size > peaks["cache_peak_bytes"]:
            peaks["cache_peak_bytes"] = size

    # ---- restart ------------------------------------------------------------------------------

    def restart(self) -> None:
        """A broker crash and restart: in-memory state goes; cursors recover what was persisted."""
        self.counters.broker_restarts += 1
        reload(self, graceful=False)

    def unload(self) -> None:
        """Every topic is unloaded gracefully and loaded again (a bundle unload, or a broker
        shut down and started): each cursor closes first, persisting its final state (ack-state.md
        §3.7), then recovers what it persisted. In-memory state goes as in a restart."""
        reload(self, graceful=True)

    def go_down(self, graceful: bool) -> None:
        """The start of an outage: a crash (or, ``graceful``, a shutdown that unloads every topic
        first); the topics stay unavailable until :meth:`come_up`."""
        if not graceful:
            self.counters.broker_restarts += 1
        go_down(self, graceful)

    def come_up(self) -> None:
        """The end of an outage: the topics are loaded again, with cold caches."""
        come_up(self)

    def hand_over(self, owners: list[tuple[Topic, Broker]]) -> None:
        """The end of an outage in a cluster: each topic opens on its new owner."""
        hand_over(self, owners)

    def share_ledger_ids(self, other: Broker) -> None:
        """Take ledger ids from ``other``'s sequence: the brokers of a cluster write to one
        BookKeeper, whose ledger ids are unique across them."""
        self._ledger_ids = other._ledger_ids

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
        if self.down_since >= 0:  # an outage that lasts past the end of the run
            c.unavailable_ns += (now - self.down_since) * len(self.topics)
            self.down_since = now
        metrics: dict[str, float] = {k: v for k, v in c.as_dict().items() if not k.endswith("_ns")}
        metrics["dispatch_paused_ms"] = c.dispatch_paused_ns / MS
        metrics["storage_wait_ms"] = c.storage_wait_ns / MS
        metrics["read_permit_wait_ms"] = c.read_permit_wait_ns / MS
        metrics["unavailable_ms"] = c.unavailable_ns / MS
        metrics["unacked_at_end"] = sum(unacked_messages(d.cursor) for d in self.dispatchers)
        metrics["dedup_producers_lost"] = sum(t.dedup.lost for t in self.topics if t.dedup)
        metrics["latency_p50_ms"], metrics["latency_p99_ms"] = percentiles(
            self.latency_ms, (0.5, 0.99)
        )
        metrics["ack_bytes_per_ack"] = c.ack_persisted_bytes / c.acked if c.acked else 0.0
        if self.publish_stats is not None:
            metrics.update(self.publish_stats.metrics())
        return metrics


def _policy(spec: ConsumerSpec) -> ConsumerPolicy:
    """What ``spec``'s consumers do with each message."""
    group_ms = spec.ack_group_ms
    return ConsumerPolicy(
        rate=spec.rate,
        receiver_queue_size=spec.receiver_queue_size,
        cumulative=spec.ack == "cumulative",
        ack_hole_probability=spec.ack_hole_probability,
        nack_probability=spec.nack_probability,
        nack_delay_ns=spec.nack_redelivery_delay_ms * MS,
        models_client=spec.models_client,
        service_time=spec.service_time_ms,
        ack_group_ns=ACK_GROUP_NS if group_ms is None else round(group_ms * MS),
    )


def _connect(dispatcher: Dispatcher, consumer: Consumer) -> None:
    """A consumer's connect event, on whichever broker owns its topic by then."""
    dispatcher.broker._connect(dispatcher, consumer)


def _disconnect(dispatcher: Dispatcher, consumer: Consumer) -> None:
    dispatcher.broker._disconnect(dispatcher, consumer)


def _new_tracker(
    factory: DelayedDeliveryTrackerFactory, topic: str, subscription: str, wake: Callable[[], None]
) -> DelayedDeliveryTracker:
    return factory.new_tracker(topic, subscription, wake)


def percentiles(hist: dict[int, int], qs: tuple[float, ...]) -> tuple[float, ...]:
    """The smallest key of ``hist`` (value -> count) with at least a share ``q`` of the counts at
    or below it, for each ``q`` of ``qs``; exact on a sum of histograms, as a cluster's is."""
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
