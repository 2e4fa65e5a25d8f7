"""Producers with flow control, and entries persisted when their writes complete.

A workload whose storage writes take time (``storage.write_latency_ms``) or whose producers are
closed-loop (a topic's ``max_pending_messages``) publishes through :class:`FlowPublisher`s, one per
topic group, in place of the open-loop :class:`~brokerlab.broker.publishing.Publisher`; every
other workload never reaches this module.

* A topic's arrivals go to its ``producers`` in turn, one entry each (round robin over every
  arrival, whether it is then sent, waits or is rejected).
* A producer sends an entry of ``batch_size`` messages when its pending messages (sent, not yet
  persisted) leave room for all of them, as the Java client takes one permit per message and
  gives a batch's permits back when the batch is acknowledged. Otherwise, with
  ``block_if_queue_full``, the entry waits, and so does every later entry of that producer (its
  application thread is blocked in ``send``): they go out in order as permits come back. Without
  it the send fails at once and the entry's messages are rejected.
* A sent entry's write takes a draw of ``write_latency_ms``. A topic's entries are persisted in
  the order they were sent, each when its own write and every earlier one have completed:
  BookKeeper acknowledges a ledger's adds in entry order (``LedgerHandle`` completes pending adds
  from the head of its queue only), and the managed ledger completes its pending ``OpAddEntry``
  in the same order. Persisting is :func:`~brokerlab.broker.publishing.publish` (append, cache,
  wake readers); the entry keeps its send time, from which end-to-end latency counts.
* Producers stop at the end of their publishing period: entries still waiting behind a full
  queue then are never sent. A deliver-at time counts from the arrival (the application builds
  the message before it blocks in ``send``).
* While the topic is unavailable (an outage) a producer is disconnected: what it sends stays
  pending in its queue, still holding its permits, and goes out when the topic is back (the
  client resends its pending messages on reconnecting), keeping its send time. A write that
  completes during the outage reaches the storage, but its producer hears of it only when the
  topic is back, so its permits stay taken until then.

Not modelled: the network between producer and broker, the client's memory limit, send timeouts,
and the duplicate a resend makes of a write that had reached the storage before a crash.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Final

from brokerlab.broker.arrivals import Block, GroupArrivals
from brokerlab.broker.durations import Durations
from brokerlab.broker.publishing import publish
from brokerlab.workloads.model import WorkloadSpec

if TYPE_CHECKING:
    from brokerlab.broker.broker import Broker, Topic

__all__ = ["FlowPublisher", "Producer", "PublishStats", "TopicWriter"]

NS: Final = 1_000_000_000
US: Final = 1_000
MS: Final = 1_000_000

# An entry waiting for room in its producer's queue: size, key, deliver-at time (ms, 0 for none).
Waiting = tuple[int, int, int]


class PublishStats:
    """What a workload's flow-controlled publishers measure, summed over topics."""

    __slots__ = ("blocked_ns", "latency_us", "offered", "period_ns", "persisted", "rejected")

    def __init__(self, workload: WorkloadSpec) -> None:
        # The publishing period: until the last producer stops.
        until = [
            workload.duration_s if t.publish_until_s is None else t.publish_until_s
            for t in workload.topics
        ]
        self.period_ns = round(max(until) * NS)
        self.offered = 0
        self.persisted = 0
        self.rejected = 0
        self.blocked_ns = 0
        # Publish latency (send to persisted) in whole microseconds -> messages.
        self.latency_us: dict[int, int] = {}

    @staticmethod
    def needed(workload: WorkloadSpec) -> bool:
        """Whether ``workload`` publishes through flow-controlled publishers at all."""
        return workload.storage.writes_take_time or any(t.closed_loop for t in workload.topics)

    def record(self, latency_ns: int, messages: int) -> None:
        """``messages`` persisted ``latency_ns`` after they were sent."""
        self.persisted += messages
        key = latency_ns // US
        self.latency_us[key] = self.latency_us.get(key, 0) + messages

    def metrics(self) -> dict[str, float]:
        """The metrics registered as reported with closed-loop producers or a write latency."""
        period_s = self.period_ns / NS
        return {
            "publish_offered": self.offered,
            "publish_rejected": self.rejected,
            "publish_rate_achieved": self.persisted / period_s if period_s else 0.0,
            "publish_latency_p50_ms": _percentile(self.latency_us, 0.5) / 1000,
            "publish_latency_p99_ms": _percentile(self.latency_us, 0.99) / 1000,
            "producer_blocked_ms": self.blocked_ns / MS,
        }


def _percentile(hist: dict[int, int], q: float) -> int:
    """The smallest key with at least a share ``q`` of the weight at or below it (0 if empty)."""
    total = sum(hist.values())
    running = 0
    for key in sorted(hist):
        running += hist[key]
        if running >= q * total:
            return key
    return 0


class Producer:
    """One producer of a topic: its messages pending and the entries waiting to be sent."""

    __slots__ = ("blocked_since", "pending", "waiting")

    def __init__(self) -> None:
        self.pending = 0  # messages sent and not yet persisted
        self.waiting: deque[Waiting] = deque()  # non-empty only while blocked
        self.blocked_since = 0


# A sent entry on its way to storage: its producer, size, send time, key, deliver-at time (ms).
Sent = tuple[Producer, int, int, int, int]


class TopicWriter:
    """A topic's producers and its writes in flight, completed in the order they were sent."""

    __slots__ = (
        "complete",
        "in_flight",
        "last_done_ns",
        "producers",
        "resend",
        "topic",
        "turn",
        "unconfirmed",
    )

    def __init__(self, publisher: FlowPublisher, topic: Topic, producers: int) -> None:
        self.topic = topic
        self.producers = [Producer() for _ in range(producers)]
        self.turn = 0  # the producer the next arrival goes to
        # Sent entries not yet persisted.
        self.in_flight: deque[Sent] = deque()
        # When the last write sent completes: a later one never completes before it.
        self.last_done_ns = 0
        self.complete = lambda: publisher.complete(self)  # one per topic, scheduled per write
        # While the topic is unavailable: entries sent meanwhile (to write when it is back), and
        # writes completed meanwhile whose producers are not told yet (producer, send time).
        self.resend: deque[Sent] = deque()
        self.unconfirmed: list[tuple[Producer, int]] = []
        topic.resume_producers = lambda: publisher.resume(self)

    def next_producer(self) -> Producer:
        producer = self.producers[self.turn]
        self.turn = (self.turn + 1) % len(self.producers)
        return producer


class FlowPublisher:
    """Replays a topic group's arrivals through its producers' queues and the storage's writes."""

    def __init__(
        self,
        broker: Broker,
        topics: list[Topic],
        arrivals: GroupArrivals,
        writes: Durations,
        stats: PublishStats,
    ) -> None:
        spec = arrivals.spec
        self.broker = broker
        self.loop = broker.loop
        self.batch = spec.batch_size
        self.max_pending = spec.max_pending_messages  # None: open-loop
        self.block = spec.block_if_queue_full
        self.end_ns = arrivals.end_ns
        self.writes = writes
        self.stats = stats
        self.writers = [TopicWriter(self, topic, spec.producers) for topic in topics]
        self._arrivals = arrivals
        self._block: Block | None = None  # the arrivals being replayed, from ``_index`` on
        self._index = 0

    def start(self) -> None:
        """Schedule the first arrival and, for blocking producers, the end of publishing."""
        self._block = block = self._arrivals.next_block()
        if block is None:
            return
        if self.block:
            # Scheduled first, so it runs before any write that completes at the same instant.
            self.loop.at(self.end_ns, self._stop)
        self.loop.at(block.times_ns[0], self._arrive)

    def _arrive(self) -> None:
        """Offer every entry due now (in publish order), then schedule the next instant."""
        now = self.loop.now_ns()
        now_ms = self.loop.now_ms()
        block = self._block
        i = self._index
        assert block is not None
        while True:
            delay_ms = block.delays_ms[i]
            self.offer(
                self.writers[block.topics[i]],
                block.sizes[i],
                block.keys[i],
                now_ms + delay_ms if delay_ms else 0,
            )
            i += 1
            if i == len(block.times_ns):
                self._block = block = self._arrivals.next_block()
                i = 0
                if block is None:
                    return
            if block.times_ns[i] != now:
                break
        self._index = i
        self.loop.at(block.times_ns[i], self._arrive)

    def offer(self, writer: TopicWriter, size: int, key: int, deliver_at_ms: int) -> None:
        """An arrival for ``writer``'s topic: send it, queue it behind a full queue or reject it."""
        batch = self.batch
        self.stats.offered += batch
        producer = writer.next_producer()
        limit = self.max_pending
        if limit is None or (not producer.waiting and producer.pending + batch <= limit):
            self.send(writer, producer, size, key, deliver_at_ms)
        elif self.block:
            if not producer.waiting:
                producer.blocked_since = self.loop.now_ns()
            producer.waiting.append((size, key, deliver_at_ms))
        else:
            self.stats.rejected += batch

    def send(
        self, writer: TopicWriter, producer: Producer, size: int, key: int, deliver_at_ms: int
    ) -> None:
        """``producer`` sends an entry now; it is persisted when its write and the earlier ones
        of the topic have completed. While the topic is unavailable it waits to be resent."""
        now = self.loop.now_ns()
        producer.pending += self.batch
        if writer.topic.held is not None:
            writer.resend.append((producer, size, now, key, deliver_at_ms))
            return
        self._write(writer, producer, size, now, key, deliver_at_ms)

    def _write(
        self,
        writer: TopicWriter,
        producer: Producer,
        size: int,
        sent_ns: int,
        key: int,
        deliver_at_ms: int,
    ) -> None:
        """Start the storage write of an entry ``producer`` sent at ``sent_ns``."""
        now = self.loop.now_ns()
        done = max(now + self.writes.next_ns(), writer.last_done_ns)
        writer.last_done_ns = done
        if done == now and not writer.in_flight:
            # Persisted at once (a zero write time): nothing earlier to wait for. The caller sees
            # the permits come back; no waiting entry needs sending from here.
            self._persist(writer, producer, size, sent_ns, key, deliver_at_ms)
            return
        writer.in_flight.append((producer, size, sent_ns, key, deliver_at_ms))
        self.loop.at(done, writer.complete)

    def complete(self, writer: TopicWriter) -> None:
        """The oldest write in flight of ``writer``'s topic has completed: persist it, and let its
        producer send what was waiting for the permits it gives back."""
        producer, size, sent_ns, key, deliver_at_ms = writer.in_flight.popleft()
        told = self._persist(writer, producer, size, sent_ns, key, deliver_at_ms)
        if told and producer.waiting and self.loop.now_ns() < self.end_ns:
            self._unblock(writer, producer)

    def _persist(
        self,
        writer: TopicWriter,
        producer: Producer,
        size: int,
        sent_ns: int,
        key: int,
        deliver_at_ms: int,
    ) -> bool:
        """The write is durable: publish the entry; returns whether its producer was told (not
        while the topic is unavailable: then the permits come back with the topic)."""
        batch = self.batch
        topic = writer.topic
        publish(topic.broker, topic, size, sent_ns, key, batch, deliver_at_ms)
        if topic.held is not None:
            writer.unconfirmed.append((producer, sent_ns))
            return False
        producer.pending -= batch
        self.stats.record(self.loop.now_ns() - sent_ns, batch)
        return True

    def resume(self, writer: TopicWriter) -> None:
        """The topic is available again: producers hear of the writes completed meanwhile and
        resend what they sent meanwhile, in order; blocked producers send what now fits."""
        now = self.loop.now_ns()
        batch = self.batch
        for producer, sent_ns in writer.unconfirmed:
            producer.pending -= batch
            self.stats.record(now - sent_ns, batch)
        writer.unconfirmed.clear()
        resend, writer.resend = writer.resend, deque()
        for producer, size, sent_ns, key, deliver_at_ms in resend:
            self._write(writer, producer, size, sent_ns, key, deliver_at_ms)
        if now < self.end_ns:
            for producer in writer.producers:
                if producer.waiting:
                    self._unblock(writer, producer)

    def _unblock(self, writer: TopicWriter, producer: Producer) -> None:
        """Send the waiting entries that fit; the producer stays blocked while any is left."""
        waiting = producer.waiting
        limit = self.max_pending
        assert limit is not None
        while waiting and producer.pending + self.batch <= limit:
            size, key, deliver_at_ms = waiting.popleft()
            self.send(writer, producer, size, key, deliver_at_ms)
        if not waiting:
            self.stats.blocked_ns += self.loop.now_ns() - producer.blocked_since

    def _stop(self) -> None:
        """The publishing period ends: blocked producers give up what they were waiting to send."""
        now = self.loop.now_ns()
        for writer in self.writers:
            for producer in writer.producers:
                if producer.waiting:
                    self.stats.blocked_ns += now - producer.blocked_since
                    producer.waiting.clear()
