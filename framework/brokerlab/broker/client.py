"""The client side of a consumer whose messages take time: receiver queue, flow permits, ack groups.

A consumer whose workload gives it a ``service_time_ms`` or an ``ack_group_ms`` is modelled as
Pulsar's Java client runs it (checked against ``pulsar-client``'s ``ConsumerImpl`` and
``PersistentAcknowledgmentsGroupingTracker``):

* The broker pushes entries into the receiver queue while the consumer has permits. The
  application takes one message at a time and processes it for its service time (a draw per
  message, at least ``1 / rate`` when a rate is set), so messages wait in the queue behind the
  ones before them and lag grows whenever the draws outrun the arrivals.
* Taking a message from the queue counts one permit towards the next flow request
  (``messageProcessed`` -> ``increaseAvailablePermits``); once at least half the receiver queue
  has been counted (``receiverQueueRefillThreshold = receiverQueueSize / 2``) all of it goes back
  to the broker in one flow request and the count starts again.
* A processed message is acknowledged into the grouping tracker, which sends what it holds on a
  fixed-delay timer every ``acknowledgmentGroupTime`` from the consumer's creation (default
  100 ms), at once when it holds ``maxAcknowledgmentGroupSize`` (1,000) entries, and with every
  acknowledgement when the group time is 0. The broker (cursor, ack-state persister, mark-delete,
  the cache's view of readers) hears of acknowledgements only then. A cumulative acknowledgement
  is only ever sent with the timer, as in the client. A consumer that closes flushes the tracker
  first (``close`` -> ``flush``).

No event is scheduled per message: when an entry reaches the receiver queue its messages' take
and completion instants follow from the service-time draws (the n-th draw of a consumer is the
same however its messages arrive), and only flow requests and flushes become events.

Simplifications: a message's latency is recorded when its acknowledgement is flushed (the value
is measured to the end of its processing), so a run's last group is not counted, as a chunk in
progress is not in the chunked model. A negative acknowledgement is decided at the flush and
its redelivery delay counted from there. When the connection goes (the consumer leaves, the
broker restarts or unloads its topics) the application drops what it held, acknowledgements not
yet sent included, and starts afresh on what is redelivered; Pulsar's client would finish the
message in hand and send those acknowledgements on its new connection, discarding the duplicates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from brokerlab.broker.consumer import Consumer, Delivery
from brokerlab.broker.durations import Durations
from brokerlab.broker.settlement import acknowledge

if TYPE_CHECKING:
    from brokerlab.broker.broker import Broker
    from brokerlab.broker.dispatcher import Dispatcher

__all__ = ["MAX_ACK_GROUP_SIZE", "ConsumerClient"]

MS: Final = 1_000_000
# The Java client's maxAcknowledgmentGroupSize default: a group this many entries large is sent
# at once, without waiting for the timer.
MAX_ACK_GROUP_SIZE: Final = 1000


class Processed:
    """An entry the application has taken or will take, with when its last message is done."""

    __slots__ = ("delivery", "done_ns", "latencies_ms")

    def __init__(self, done_ns: int, delivery: Delivery, latencies_ms: list[int]) -> None:
        self.done_ns = done_ns
        self.delivery = delivery
        # Per message: from its publish to the end of its processing, in whole milliseconds.
        self.latencies_ms = latencies_ms


class ConsumerClient:
    """One consumer's client: its application's timeline, its flow requests and its ack group."""

    __slots__ = (
        "_ack_group_ns",
        "_available",
        "_flow_due",
        "_flows",
        "_flows_head",
        "_flush_due",
        "_free_ns",
        "_group_size",
        "_min_ns",
        "_processed",
        "_processed_head",
        "_service",
        "_threshold",
        "_tick_origin_ns",
        "broker",
        "consumer",
        "dispatcher",
    )

    def __init__(
        self, broker: Broker, dispatcher: Dispatcher, consumer: Consumer, service: Durations
    ) -> None:
        policy = consumer.policy
        self.broker = broker
        self.dispatcher = dispatcher
        self.consumer = consumer
        self._service = service
        # A rate caps the consumer as before: no message takes less than 1 / rate.
        self._min_ns = round(1_000_000_000 / policy.rate) if policy.rate > 0 else 0
        self._ack_group_ns = policy.ack_group_ns
        # Java's refill threshold is receiverQueueSize / 2; a queue of 1 gives every permit back
        # at once (the client's loop sends whenever the count reaches the threshold, here 0).
        self._threshold = max(1, policy.receiver_queue_size // 2)
        # The client sends its cumulative acknowledgement with the timer only.
        self._group_size = 0 if policy.cumulative else MAX_ACK_GROUP_SIZE
        self._tick_origin_ns = 0
        self._free_ns = 0  # when the application is done with what it has taken
        self._available = 0  # permits counted towards the next flow request
        # Flow requests still to come, (instant, permits), in time order from ``_flows_head``.
        self._flows: list[tuple[int, int]] = []
        self._flows_head = 0
        # Entries taken or to be taken, in completion order from ``_processed_head``: those done
        # by now wait in the ack group, the others are still being processed.
        self._processed: list[Processed] = []
        self._processed_head = 0
        # The instants of the flow and flush events scheduled (-1: none); an event whose instant
        # is no longer the one wanted was superseded and does nothing.
        self._flow_due = -1
        self._flush_due = -1

    # ---- the connection ------------------------------------------------------------------------

    def subscribed(self) -> None:
        """A new subscription of this consumer: the grouping timer starts now."""
        self._tick_origin_ns = self.broker.loop.now_ns()

    def forget(self) -> None:
        """The connection went: what the application held and unsent acks go with it.

        The consumer's epoch has moved on, so events scheduled for the old connection do
        nothing.
        """
        self._free_ns = 0
        self._available = 0
        self._flows.clear()
        self._flows_head = 0
        self._processed.clear()
        self._processed_head = 0
        self._flow_due = -1
        self._flush_due = -1

    def close(self) -> None:
        """The consumer closes: the tracker sends what it holds first, as the client's does."""
        self._flush_done(self.broker.loop.now_ns())

    # ---- the application -----------------------------------------------------------------------

    def arrived(self) -> None:
        """The dispatcher put entries into the receiver queue: plan their processing.

        The application takes them after everything before them, one message at a time; each
        take counts a permit, and each message takes one service-time draw.
        """
        consumer = self.consumer
        queue = consumer.queue
        if not queue:
            return
        now = self.broker.loop.now_ns()
        service = self._service
        min_ns = self._min_ns
        threshold = self._threshold
        available = self._available
        flows = self._flows
        flows_before = len(flows) - self._flows_head
        processed = self._processed
        idle_before = len(processed) == self._processed_head
        t = self._free_ns if self._free_ns > now else now
        for delivery in queue:
            messages = delivery[1]
            publish_ns = delivery[2]
            latencies: list[int] = []
            for _ in range(messages):
                available += 1
                if available >= threshold:
                    flows.append((t, available))
                    available = 0
                d = service.next_ns()
                t += d if d > min_ns else min_ns
                latencies.append((t - publish_ns) // MS)
            processed.append(Processed(t, delivery, latencies))
        queue.clear()
        self._free_ns = t
        self._available = available
        if flows_before == 0 and len(flows) > self._flows_head:
            self._schedule_flow()
        if idle_before or self._group_size:
            self._schedule_flush()

    # ---- flow requests -------------------------------------------------------------------------

    def _schedule_flow(self) -> None:
        due = self._flows[self._flows_head][0]
        self._flow_due = due
        loop = self.broker.loop
        loop.at(due, ConnectionEvent(self.flow, self.consumer, self.consumer.epoch, due))

    def flow(self, due: int) -> None:
        """Flow requests due by now reach the broker, which reads more for this consumer."""
        if due != self._flow_due:
            return
        self._flow_due = -1
        now = self.broker.loop.now_ns()
        flows = self._flows
        head = self._flows_head
        permits = 0
        while head < len(flows) and flows[head][0] <= now:
            permits += flows[head][1]
            head += 1
        if head == len(flows):
            flows.clear()
            head = 0
        self._flows_head = head
        self.consumer.permits += permits
        if head < len(flows):
            self._schedule_flow()
        self.dispatcher.read_more()

    # ---- acknowledgement groups ------------------------------------------------------------------

    def _next_flush(self) -> int:
        """When the tracker next sends something (-1: it holds nothing and nothing is coming)."""
        processed = self._processed
        head = self._processed_head
        if head == len(processed):
            return -1
        first_done = processed[head].done_ns
        group = self._ack_group_ns
        if group == 0:
            return first_done
        # The timer's first run is one group time after the subscription.
        origin = self._tick_origin_ns
        ticks = max(1, -(-(first_done - origin) // group))
        due = origin + ticks * group
        size = self._group_size
        if size and len(processed) - head >= size:
            full = processed[head + size - 1].done_ns
            if full < due:
                due = full
        return due

    def _schedule_flush(self) -> None:
        due = self._next_flush()
        if due < 0 or (0 <= self._flush_due <= due):
            return  # nothing to send, or an event at or before ``due`` will look again
        self._flush_due = due
        self.broker.loop.at(
            due, ConnectionEvent(self.flush, self.consumer, self.consumer.epoch, due)
        )

    def flush(self, due: int) -> None:
        """The tracker sends the acknowledgements of what was processed by now."""
        if due != self._flush_due:
            return
        self._flush_due = -1
        self._flush_done(self.broker.loop.now_ns())
        self._schedule_flush()

    def _flush_done(self, now: int) -> None:
        processed = self._processed
        head = self._processed_head
        end = head
        while end < len(processed) and processed[end].done_ns <= now:
            end += 1
        if end == head:
            return
        hist = self.broker.latency_ms
        entries: list[Delivery] = []
        for item in processed[head:end]:
            entries.append(item.delivery)
            for latency in item.latencies_ms:
                hist[latency] = hist.get(latency, 0) + 1
        if end == len(processed):
            processed.clear()
            end = 0
        self._processed_head = end
        acknowledge(self.broker, self.dispatcher, self.consumer, entries)


class ConnectionEvent:
    """``action(due)`` (the client's ``flow`` or ``flush``) for the connection of ``epoch``, as
    one small callable: an event scheduled for a connection that has gone does nothing."""

    __slots__ = ("action", "consumer", "due", "epoch")

    def __init__(
        self, action: Callable[[int], None], consumer: Consumer, epoch: int, due: int
    ) -> None:
        self.action = action
        self.consumer = consumer
        self.epoch = epoch
        self.due = due

    def __call__(self) -> None:
        if self.consumer.epoch == self.epoch:
            self.action(self.due)
