"""Recovery: what a broker restart or a topic unload keeps, loses and sends out again.

In-memory state goes (the entry cache's ledgers, the replay queues, the delayed-delivery trackers,
what consumers held); each cursor recovers what its ack-state persister persisted, and the
comparison with what the consumers had really acknowledged says what goes out again and what would
be claimed without ever being acknowledged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from brokerlab.broker.consumer import Consumer
from brokerlab.broker.cursor import Cursor
from brokerlab.broker.dispatcher import count_foreign_tick_changes
from brokerlab.broker.ledger import BATCH
from brokerlab.broker.publishing import publish
from brokerlab.protocols import Position, RecoveredAckState

if TYPE_CHECKING:
    from brokerlab.broker.broker import Broker, Topic
    from brokerlab.broker.dispatcher import Dispatcher

__all__ = [
    "come_up",
    "go_down",
    "hand_over",
    "load_topics",
    "reload",
    "unacked_messages",
    "unload_topics",
]


def reload(broker: Broker, graceful: bool) -> None:
    """A restart or an unload with no outage: each subscription closes and opens again at once."""
    _close_topics(broker, graceful)
    for dispatcher in broker.dispatchers:
        _open_dispatcher(broker, dispatcher, _close_dispatcher(broker, dispatcher, graceful))
    _open_topics(broker)


def go_down(broker: Broker, graceful: bool) -> None:
    """The broker's topics become unavailable until :func:`come_up`: every subscription closes
    (its consumers are disconnected, its cursor persists or loses its state), and producers hold
    what they send (``Topic.held``)."""
    _close_topics(broker, graceful)
    for dispatcher in broker.dispatchers:
        dispatcher.reconnect_after_outage = _close_dispatcher(broker, dispatcher, graceful)
    for topic in broker.topics:
        topic.held = []
    broker.down_since = broker.loop.now_ns()


def come_up(broker: Broker) -> None:
    """The topics are available again on the same broker: see :func:`_reopen`."""
    _outage_over(broker)
    _reopen(broker, list(broker.topics))


def hand_over(broker: Broker, owners: list[tuple[Topic, Broker]]) -> None:
    """The outage of ``broker`` (down, see :func:`go_down`) ends with its topics on other
    brokers: each topic moves to its new owner, with that broker's cache (cold), cursor container
    and delayed-delivery trackers, and opens there (:func:`_reopen`)."""
    _outage_over(broker)
    for topic, owner in owners:
        _move(topic, broker, owner)
    for owner in dict.fromkeys(owner for _, owner in owners):
        _reopen(owner, [topic for topic, o in owners if o is owner])


def unload_topics(broker: Broker, topics: list[Topic], back_ns: int) -> None:
    """An unload of ``topics`` (one namespace bundle) from ``broker``, which stays up: each
    closes gracefully, as in :func:`go_down` (consumers disconnected, cursors persisting their
    final state), and stays unavailable, producers holding what they send, until
    :func:`load_topics` at ``back_ns`` (the unavailable time is counted now, up to the end of
    the run)."""
    for topic in topics:
        _close_topic(broker, topic, True)
    for topic in topics:
        for dispatcher in topic.dispatchers:
            dispatcher.reconnect_after_outage = _close_dispatcher(broker, dispatcher, True)
        topic.held = []
    until = min(back_ns, broker.end_ns)
    broker.counters.unavailable_ns += (until - broker.loop.now_ns()) * len(topics)


def load_topics(old: Broker, topics: list[Topic], new: Broker) -> None:
    """The end of :func:`unload_topics`: ``topics`` move to ``new`` and open there with its cold
    cache (:func:`_reopen`); with ``new`` the broker they were unloaded from, they open again
    where they were, moving nowhere."""
    if new is not old:
        for topic in topics:
            _move(topic, old, new)
    _reopen(new, topics)


def _outage_over(broker: Broker) -> None:
    broker.counters.unavailable_ns += (broker.loop.now_ns() - broker.down_since) * len(
        broker.topics
    )
    broker.down_since = -1


def _move(topic: Topic, old: Broker, new: Broker) -> None:
    old.hand_over_persister_stats(topic, new)
    old.topics.remove(topic)
    for dispatcher in topic.dispatchers:
        old.dispatchers.remove(dispatcher)
        dispatcher.move_to(new)
    new.topics.append(topic)
    new.dispatchers.extend(topic.dispatchers)
    topic.broker = new
    topic.cursors = new.plugins.new_cursor_container()
    new.counters.topic_moves += 1


def _reopen(broker: Broker, topics: list[Topic]) -> None:
    """``topics`` are available again on ``broker``: cursors recover what was persisted, the
    consumers that were connected (or were to connect meanwhile) reconnect, caches start cold,
    and producers send what they held, in order, each entry keeping the time it was first
    sent."""
    for topic in topics:
        for dispatcher in topic.dispatchers:
            consumers = dispatcher.reconnect_after_outage
            dispatcher.reconnect_after_outage = []
            _open_dispatcher(broker, dispatcher, consumers)
    for topic in topics:
        broker.cache.open_ledger(topic.name, topic.cursors)
    for topic in topics:
        for dispatcher in topic.dispatchers:
            dispatcher.wake()
    counters = broker.counters
    for topic in topics:
        held = topic.held
        topic.held = None
        if held:
            counters.held_entries += len(held)
            for size, sent_ns, key, batch, deliver_at_ms in held:
                publish(broker, topic, size, sent_ns, key, batch, deliver_at_ms)
        if topic.resume_producers is not None:
            topic.resume_producers()


def _close_topics(broker: Broker, graceful: bool) -> None:
    for topic in broker.topics:
        _close_topic(broker, topic, graceful)


def _close_topic(broker: Broker, topic: Topic, graceful: bool) -> None:
    """Drop what ``broker`` holds in memory for ``topic``: its cache entries and the storage
    reads waiting for its ledgers; deduplication (on) reloads from its snapshot."""
    broker.cache.close_ledger(topic.name)
    reads = broker.reads
    if reads is not None:
        reads.pending.forget(list(topic.ledger.ledgers))
    if topic.dedup is not None:
        broker.account(topic.dedup.reload(graceful))


def _close_dispatcher(broker: Broker, dispatcher: Dispatcher, graceful: bool) -> list[Consumer]:
    """Close one subscription: its consumers are disconnected (returned: they reconnect when it
    opens again) and its cursor persists its final state (an unload) or loses what it had not
    persisted (a crash)."""
    dispatcher.cancel_read()
    cursor = dispatcher.cursor
    was_connected = [c for c in dispatcher.consumers if c.connected]
    # What was dispatched and not acknowledged goes out again after the restart. A set
    # an earlier restart left is kept: those positions have not gone out again yet.
    unacked = dispatcher.restart_unacked
    unacked.update(dispatcher.replay.redeliveries())
    for consumer in was_connected:
        unacked.update(consumer.take_back())
    if graceful:
        broker.account(dispatcher.persister.close(cursor))
    else:
        dispatcher.persister.crash()
    return was_connected


def _open_dispatcher(broker: Broker, dispatcher: Dispatcher, consumers: list[Consumer]) -> None:
    """Open one subscription again: its cursor recovers, ``consumers`` reconnect."""
    cursor = dispatcher.cursor
    recovered = dispatcher.persister.recover()
    _compare_recovery(broker, dispatcher, recovered)
    cursor.restore(recovered)
    dispatcher.replay.clear()
    count_foreign_tick_changes((dispatcher,))
    dispatcher.reset_tracker()
    dispatcher.end_pause(broker.loop.now_ns())  # the pause lasted until the broker went down
    dispatcher.waiting = False
    if dispatcher.active:
        dispatcher.active = False
        dispatcher.topic.cursors.remove(cursor.name)
    for consumer in consumers:
        consumer.connect()
    dispatcher.consumers_changed()
    if consumers:
        broker.set_active(dispatcher, True)


def _open_topics(broker: Broker) -> None:
    for topic in broker.topics:
        broker.cache.open_ledger(topic.name, topic.cursors)
    for dispatcher in broker.dispatchers:
        dispatcher.wake()


def _compare_recovery(broker: Broker, dispatcher: Dispatcher, recovered: RecoveredAckState) -> None:
    """Count what the restart will redeliver, and any claim of an ack that never happened."""
    truth = dispatcher.cursor
    claimed = Cursor("recovered", truth.ledger, recovered.mark_delete)
    claimed.restore(recovered)
    lost = 0
    for pos in _positions_claimed_beyond(claimed, truth):
        lost += truth.ledger.ledgers[pos[0]].field(pos[1], BATCH)
    broker.counters.lost += lost
    # Added to, not replaced: an ack an earlier restart forgot is not in ``truth`` (the state
    # that restart recovered) and, until its entry goes out again, still owes its count.
    dispatcher.restart_acked.update(_positions_claimed_beyond(truth, claimed))
    # Kept across restarts, as restart_unacked is: an entry not yet sent again still owes them.
    forgotten = dispatcher.restart_forgotten
    for pos, count in _batch_indexes_forgotten(truth, recovered).items():
        forgotten[pos] = forgotten.get(pos, 0) + count
    dispatcher.restart_owed = bool(dispatcher.restart_acked or dispatcher.restart_unacked)


def _positions_after(cursor: Cursor) -> Iterator[Position]:
    ml = cursor.ledger
    pos = ml.normalize(ml.next_position(cursor.md))
    last = ml.last_position
    while pos <= last:
        yield pos
        pos = ml.normalize(ml.next_position(pos))


def unacked_messages(cursor: Cursor) -> int:
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
