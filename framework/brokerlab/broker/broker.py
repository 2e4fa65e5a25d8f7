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
from brokerlab.broker.consumer import Consumer, ConsumerPolicy
from brokerlab.broker.cursor import Cursor
from brokerlab.broker.dedup import DEDUP_CURSOR, Deduplication
from brokerlab.broker.dispatcher import Dispatcher, count_foreign_tick_changes
from brokerlab.broker.durations import Durations
from brokerlab.broker.events import EventLoop
from brokerlab.broker.ledger import LedgerIds, ManagedLedger
from brokerlab.broker.producers import FlowPublisher, PublishStats
from brokerlab.broker.publishing import Publisher, prefill
from brokerlab.broker.recovery import reload, unacked_messages
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
    ``Publisher`` publishes to it)."""

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
        # Set when the workload's producers are closed-loop or its writes take time.
        self.publish_stats: PublishStats | None = None
        self._ledger_ids = LedgerIds()
        self._producer_names = 0
        self._end_ns = 0
        self._policies: dict[ConsumerPolicy, ConsumerPolicy] = {}

    # ---- building -----------------------------------------------------------------------------

    def build(self, workload: WorkloadSpec) -> None:
        """Create topics, subscriptions, consumers, producers, events and periodic tasks."""
        self._end_ns = round((workload.duration_s + workload.drain_s) * NS)
        if PublishStats.needed(workload):
            self.publish_stats = PublishStats(workload)
        for spec in workload.topics:
            until_s = spec.publish_until_s
            end_ns = round((until_s if until_s is not None else workload.duration_s) * NS)
            arrivals = GroupArrivals(spec, stream(self.seed, "producer", spec.name), end_ns)
            # Whole entries, as producers write them: the backlog rounds up to full batches.
            backlog = arrivals.backlog(-(-spec.backlog // spec.batch_size))
            topics = [
                self._add_topic(name, spec, i, backlog) for i, name in enumerate(spec.topic_names())
            ]
            if self.publish_stats is None:
                Publisher(self, topics, arrivals).start()
            else:
                writes = Durations(
                    workload.storage.write_latency_ms, stream(self.seed, "write", spec.name)
                )
                FlowPublisher(self, topics, arrivals, writes, self.publish_stats).start()
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
        self.account(dispatcher.persister.created(cursor))
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
                consumer.process = ProcessQueue(self, dispatcher, consumer)
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
        self.set_active(dispatcher, True)
        dispatcher.read_more()

    def _disconnect(self, dispatcher: Dispatcher, consumer: Consumer) -> None:
        if not consumer.connected:
            return
        back = consumer.take_back()
        dispatcher.consumers_changed()
        dispatcher.redeliver(back)
        if not dispatcher.connected:
            self.set_active(dispatcher, False)
        dispatcher.read_more()

    def _set_group(self, group: str | None, connect: bool) -> None:
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
        threshold = self.tuning.backlogged_threshold
        for dispatcher in self.dispatchers:
            if not dispatcher.connected:
                continue
            if self.tuning.expected_read_count_mode:
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
        for dispatcher in self.dispatchers:
            if self.account(dispatcher.persister.flush(dispatcher.cursor)):
                # A write can end a pause (PIP-299 re-reads its cached size only when it persists).
                dispatcher.check_pause()
        for topic in self.topics:
            if topic.dedup is not None:
                self.account(topic.dedup.flush())

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
        reload(self, graceful=False)

    def unload(self) -> None:
        """Every topic is unloaded gracefully and loaded again (a bundle unload, or a broker
        shut down and started): each cursor closes first, persisting its final state (ack-state.md
        §3.7), then recovers what it persisted. In-memory state goes as in a restart."""
        reload(self, graceful=True)

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
        metrics["unacked_at_end"] = sum(unacked_messages(d.cursor) for d in self.dispatchers)
        metrics["dedup_producers_lost"] = sum(t.dedup.lost for t in self.topics if t.dedup)
        metrics["latency_p50_ms"], metrics["latency_p99_ms"] = _percentiles(
            self.latency_ms, (0.5, 0.99)
        )
        metrics["ack_bytes_per_ack"] = c.ack_persisted_bytes / c.acked if c.acked else 0.0
        if self.publish_stats is not None:
            metrics.update(self.publish_stats.metrics())
        return metrics


def _new_tracker(
    factory: DelayedDeliveryTrackerFactory, topic: str, subscription: str, wake: Callable[[], None]
) -> DelayedDeliveryTracker:
    return factory.new_tracker(topic, subscription, wake)


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
