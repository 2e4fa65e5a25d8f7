"""Settlement: a consumer processes what it was given, then acknowledges it (or not).

A consumer takes chunks of its receiver queue, each completing after its processing time; a
completed chunk records latencies, acknowledges, negatively acknowledges or leaves holes, hands
flow permits back, tells the ack-state persister, and moves the mark-delete position on, which the
active-cursor container and the delayed-delivery tracker hear of.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Final

from brokerlab.broker.consumer import Consumer, Delivery
from brokerlab.protocols import Position

if TYPE_CHECKING:
    from brokerlab.broker.broker import Broker
    from brokerlab.broker.dispatcher import Dispatcher

__all__ = ["ProcessQueue", "acknowledge", "complete", "process", "start_processing"]

MS: Final = 1_000_000
NS: Final = 1_000_000_000


class ProcessQueue:
    """``process(broker, dispatcher, consumer)`` as a callback: the consumer takes what it holds.

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
        process(self.broker, self.dispatcher, self.consumer)


def start_processing(broker: Broker, dispatcher: Dispatcher, consumer: Consumer) -> None:
    """An idle consumer got something: it starts on it now.

    A rate-limited consumer's chunk completes later, so it can start at once; an unlimited one
    completes at this instant, so it waits for the dispatch that fed it to finish first. A
    consumer with the client model (``client.py``) is never busy: it plans each entry as it
    arrives.
    """
    policy = consumer.policy
    if policy.models_client:
        client = consumer.client
        assert client is not None, "the broker gives a client to every consumer that models one"
        client.arrived()
        return
    consumer.busy = True
    if policy.rate > 0:
        process(broker, dispatcher, consumer)
    else:
        broker.loop.soon(consumer.process)


def process(broker: Broker, dispatcher: Dispatcher, consumer: Consumer) -> None:
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
        complete(broker, dispatcher, consumer, queue, broker.loop.now_ns(), consumer.epoch)
        return
    limit = consumer.chunk_limit
    messages = 0
    taken = 0
    while taken < len(queue) and messages < limit:
        messages += queue[taken][1]
        taken += 1
    chunk = queue[:taken]
    del queue[:taken]
    start = broker.loop.now_ns()
    done = start + round(messages / rate * NS)
    broker.loop.at(
        done, partial(complete, broker, dispatcher, consumer, chunk, start, consumer.epoch)
    )


def complete(
    broker: Broker,
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
        done_messages = _settle_each(broker, dispatcher, consumer, chunk, start, changed, nacked)
    else:
        # The common case: every entry is acknowledged individually. _settle_each's loop
        # without its branches, counting into locals (nothing reads the counters meanwhile).
        hist = broker.latency_ms
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
        counters = broker.counters
        counters.acked += acked_messages
        counters.delivered_after_ack += after_ack_messages
    consumer.permits += done_messages
    _settled(broker, dispatcher, consumer, md_before, changed, nacked)
    if consumer.queue:
        process(broker, dispatcher, consumer)
    else:
        consumer.busy = False
    dispatcher.read_more()


def _settle_each(
    broker: Broker,
    dispatcher: Dispatcher,
    consumer: Consumer,
    chunk: list[Delivery],
    start: int,
    changed: set[int],
    nacked: list[Position],
) -> int:
    """:meth:`_complete`'s loop with negative acks, ack holes or cumulative acks; returns the
    messages in ``chunk``."""
    hist = broker.latency_ms
    per_message_ns = consumer.per_message_ns
    done_messages = 0
    for _pos, messages, publish_ns, _key in chunk:
        done_messages += messages
        latency = int((start + done_messages * per_message_ns - publish_ns) // MS)
        hist[latency] = hist.get(latency, 0) + messages
    _decide_each(broker, dispatcher, consumer, chunk, changed, nacked)
    return done_messages


def _decide_each(
    broker: Broker,
    dispatcher: Dispatcher,
    consumer: Consumer,
    chunk: list[Delivery],
    changed: set[int],
    nacked: list[Position],
) -> None:
    """Acknowledge, negatively acknowledge or leave a hole in each entry of ``chunk``, as the
    consumer's policy draws it; ``changed`` gets the ledgers acknowledged in, ``nacked`` the
    positions to redeliver."""
    policy = consumer.policy
    counters = broker.counters
    cursor = dispatcher.cursor
    pending = consumer.pending
    p_nack = policy.nack_probability
    p_drop = p_nack + policy.ack_hole_probability
    draws: list[float] | None = None
    if p_drop > 0:
        draws = dispatcher.rng.random(len(chunk)).tolist()
    cumulative_to: Position | None = None
    cumulative = policy.cumulative
    for i, (pos, messages, _publish_ns, _key) in enumerate(chunk):
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
        counters.acked += sum(pending.pop(p) for p in [p for p in pending if p <= cumulative_to])
        cursor.ack_cumulative(cumulative_to)
        changed.add(cumulative_to[0])


def acknowledge(
    broker: Broker, dispatcher: Dispatcher, consumer: Consumer, entries: list[Delivery]
) -> None:
    """The acknowledgements of processed ``entries`` reach the broker together (a client's
    acknowledgement group, see ``client.py``): ack, nack or leave holes as :func:`complete`
    does, without its latencies and flow permits, which the client accounts for itself."""
    cursor = dispatcher.cursor
    changed: set[int] = set()
    md_before: Position = cursor.md
    nacked: list[Position] = []
    if consumer.acks_each:
        pending = consumer.pending
        for entry in entries:
            pos = entry[0]
            if pos in pending:
                del pending[pos]
        acked_messages, after_ack_messages = cursor.ack_each(entries, changed)
        counters = broker.counters
        counters.acked += acked_messages
        counters.delivered_after_ack += after_ack_messages
    else:
        _decide_each(broker, dispatcher, consumer, entries, changed, nacked)
    _settled(broker, dispatcher, consumer, md_before, changed, nacked)


def _settled(
    broker: Broker,
    dispatcher: Dispatcher,
    consumer: Consumer,
    md_before: Position,
    changed: set[int],
    nacked: list[Position] | None,
) -> None:
    """After a group of acknowledgements: the persister, container and tracker hear of the
    ledgers ``changed`` (and of a mark-delete moved past ``md_before``); negatively acknowledged
    positions go back after the consumer's delay."""
    if changed:
        # Usually one ledger: taking it costs far less than sorting.
        ledgers = [changed.pop()] if len(changed) == 1 else sorted(changed)
        md_after: Position = dispatcher.cursor.md
        # Field by field: compiled, ``!=`` on the pairs would box both into new tuples.
        moved = md_after[0] != md_before[0] or md_after[1] != md_before[1]
        _after_ack(broker, dispatcher, ledgers, moved)
    if nacked:
        broker.loop.at(
            broker.loop.now_ns() + consumer.policy.nack_delay_ns,
            partial(_redeliver_nacked, broker, dispatcher, consumer, consumer.epoch, nacked),
        )


def _after_ack(broker: Broker, dispatcher: Dispatcher, changed: list[int], md_moved: bool) -> None:
    cursor = dispatcher.cursor
    ranges = cursor.range_count()
    if ranges > broker.counters.ack_max_ranges:
        broker.counters.ack_max_ranges = ranges
    broker.account(dispatcher.persister.acked(cursor, changed))
    if md_moved:
        # Only a moved mark-delete concerns the container and the tracker.
        if broker.tuning.track_mark_delete and dispatcher.active:
            dispatcher.topic.cursors.update(cursor.name, cursor.md)
            broker.cache_cursors_changed(dispatcher.topic_name)
        if dispatcher.tracker is not None:
            dispatcher.tracker.mark_delete_moved(cursor.md)
    dispatcher.check_pause()


def _redeliver_nacked(
    broker: Broker, dispatcher: Dispatcher, consumer: Consumer, epoch: int, nacked: list[Position]
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
