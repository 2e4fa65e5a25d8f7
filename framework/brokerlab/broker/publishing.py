"""Publishing: producers' entries reach their topics' managed ledgers, the cache and the readers.

A topic group's :class:`Publisher` replays its arrival process in time order; :func:`publish`
persists one entry, caches it and wakes the subscriptions that had caught up; :func:`prefill`
writes a backlog published before the run starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brokerlab.broker.arrivals import Backlog, Block, GroupArrivals

if TYPE_CHECKING:
    from brokerlab.broker.broker import Broker, Topic

__all__ = ["Publisher", "prefill", "publish"]


class Publisher:
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
            topic = topics[block.topics[i]]
            publish(
                topic.broker,
                topic,
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


def prefill(broker: Broker, topic: Topic, batch: int, backlog: Backlog, index: int) -> None:
    """Write the topic's backlog, published before time zero."""
    ml = topic.ledger
    sizes, keys, step = backlog.sizes[index], backlog.keys[index], backlog.step_ns
    entries = len(sizes)
    for i in range(entries):
        pos = ml.append(sizes[i], -(entries - i) * step, keys[i], batch, 0)
        if topic.dedup is not None:
            broker.account(topic.dedup.persisted(pos))
    broker.counters.published += entries * batch
    broker.counters.published_entries += entries


def publish(
    broker: Broker, topic: Topic, size: Any, now: int, key: Any, batch: int, deliver_at_ms: int
) -> None:
    """A producer's entry reaches ``topic`` at ``now``: persist it, cache it, wake readers.

    ``size`` and ``key`` are ints, passed on as the objects the caller holds (see
    ``ManagedLedger.append``). While the topic is unavailable the producer holds the entry
    (``Topic.held``); it is persisted when the topic is back, keeping ``now`` as its send time.
    """
    held = topic.held
    if held is not None:
        held.append((size, now, key, batch, deliver_at_ms))
        return
    pos = topic.ledger.append(size, now, key, batch, deliver_at_ms)
    if topic.dedup is not None:
        broker.account(topic.dedup.persisted(pos))
    counters = broker.counters
    counters.published += batch
    counters.published_entries += 1
    broker.cache_insert(topic.name, pos, size)
    dispatcher = topic.first_dispatcher
    while dispatcher is not None:
        if dispatcher.waiting:
            dispatcher.waiting = False
            dispatcher.read_more()
        dispatcher = dispatcher.next_in_topic
