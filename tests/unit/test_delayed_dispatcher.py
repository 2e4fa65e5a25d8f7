"""How the broker's dispatcher drives a delayed-delivery tracker, and what it measures of it.

* Pulsar's dispatcher offers every new message to the tracker once one delayed message reached it
  (``-1`` for a message without a deliver-at time). The refusal of such a message is what ends the
  fixed-delay mode of delayed-delivery.md §3.9, so the pause must not outlive it.
* ``delayed_early_deliveries`` allows one tick in non-strict mode: the subscription's own tick, the
  one its legacy reference tracker R_S has (§0.2, §0.4), not the configured one.
"""

from __future__ import annotations

import textwrap

import pytest

from brokerlab import load_profile
from brokerlab.broker.broker import Broker, Topic
from brokerlab.broker.events import EventLoop
from brokerlab.broker.publishing import publish as publish_entry
from brokerlab.broker.simulator import wire_broker
from brokerlab.host import PluginHost
from brokerlab.workloads import parse_workload

NS = 1_000_000_000
TRACKERS = pytest.mark.parametrize("tracker", ["in-memory", "topic-level"])
# One Shared subscription with one consumer; the producer is all but silent, so the test
# publishes every message itself.
WORKLOAD = parse_workload(
    textwrap.dedent(
        """
        name = "one-shared"
        duration_s = 1
        [[topics]]
        name = "t"
        rate = 0.001
        [[topics.subscriptions]]
        name = "s"
        type = "Shared"
        [[topics.subscriptions.consumers]]
        """
    ),
    "one-shared.toml",
)
HOST = PluginHost()


def broker(tracker: str, *extra: str) -> tuple[Broker, EventLoop, Topic]:
    """The broker model with its consumer connected, at time zero."""
    settings = [
        "sim.entryCache=disabled",
        "sim.ackStatePersister=unlimited",
        f"delayedDeliveryTrackerFactoryClassName={tracker}",
        *extra,
    ]
    profile = load_profile(None, settings, host=HOST)
    loop = EventLoop()
    b = wire_broker(profile, HOST.resolve(profile), loop, 0)
    b.build(WORKLOAD)
    loop.run_until(0)
    return b, loop, b.topics[0]


def publish(b: Broker, loop: EventLoop, topic: Topic, delay_ms: int | None) -> None:
    """One message, delayed by ``delay_ms`` (``None``: no deliver-at time)."""
    deliver_at = 0 if delay_ms is None else loop.now_ms() + delay_ms
    publish_entry(b, topic, 100, loop.now_ns(), 0, 1, deliver_at)


@TRACKERS
@pytest.mark.parametrize("interleaved", [None, -1], ids=["not-delayed", "already-due"])
def test_a_refused_message_ends_fixed_delay_mode(tracker: str, interleaved: int | None) -> None:
    """Delayed, refused, delayed, delayed (lookahead 3): the refused message ended fixed-delay
    mode, so a last, undelayed message is read and delivered at once, not paused for 10 s."""
    b, loop, topic = broker(
        tracker,
        "delayedDeliveryFixedDelayDetectionLookahead=3",
        "isDelayedDeliveryDeliverAtTimeStrict=true",
    )
    for delay in (10_000, interleaved, 10_001, 10_002, None):
        publish(b, loop, topic, delay)
    loop.run_until(NS)
    dispatcher = topic.dispatchers[0]
    assert dispatcher.tracker is not None
    assert b.counters.delayed_messages == 3
    assert not dispatcher.tracker.should_pause_all_deliveries()
    assert b.counters.delivered == 2


@TRACKERS
def test_messages_before_the_first_delayed_one_do_not_reach_the_tracker(tracker: str) -> None:
    """Pulsar creates the tracker at the first delayed message: earlier undelayed messages cannot
    end a fixed-delay mode that starts after them."""
    b, loop, topic = broker(
        tracker,
        "delayedDeliveryFixedDelayDetectionLookahead=3",
        "isDelayedDeliveryDeliverAtTimeStrict=true",
    )
    for delay in (None, 10_000, 10_001, 10_002):
        publish(b, loop, topic, delay)
    loop.run_until(NS)
    tracker_ = topic.dispatchers[0].tracker
    assert tracker_ is not None
    assert tracker_.should_pause_all_deliveries()


@TRACKERS
def test_early_deliveries_allow_the_subscriptions_own_tick(tracker: str) -> None:
    """Tick 1000, reset to 4000 for the subscription (non-strict): a message due in 4.5 s may go
    out from 0.5 s on, as a legacy tracker with tick 4000 hands it out. A read at 1 s gets it,
    3.5 s before its deliver-at time but within the subscription's tick: not early."""
    b, loop, topic = broker(tracker, "delayedDeliveryTickTimeMillis=1000")
    topic.dispatchers[0].reset_tick_time(4000)
    publish(b, loop, topic, 4500)
    loop.run_until(NS)
    publish(b, loop, topic, None)  # wakes the dispatcher: it reads the tracker first
    loop.run_until(NS + 1)
    assert b.counters.delivered == 2
    assert b.counters.delayed_early_deliveries == 0
    assert b.counters.delayed_max_earliness_ms == 0
