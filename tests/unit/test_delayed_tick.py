"""``DelayedDeliveryTracker.tick_ms`` and the broker's ``delayed_foreign_tick_changes`` (D4).

Divergence D4 of delayed-delivery.md §0.3: in the draft of PR #24927 a ``resetTickTime`` on one
subscription sets the tick of every subscription of the topic. The dispatcher, not the tracker,
counts it: around every tick reset it makes, and at the end of a run, it reads each tracker's
``tick_ms`` and counts every move that no reset of that subscription's own made.
"""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokerlab import load_profile
from brokerlab.broker.broker import Broker
from brokerlab.broker.dispatcher import Dispatcher
from brokerlab.broker.events import EventLoop
from brokerlab.broker.simulator import wire_broker
from brokerlab.host import PluginHost
from brokerlab.workloads import parse_workload

TICK = 1000
BASE = [
    "sim.entryCache=disabled",
    "sim.ackStatePersister=unlimited",
    f"delayedDeliveryTickTimeMillis={TICK}",
]
TRACKERS = {
    "legacy": ["delayedDeliveryTrackerFactoryClassName=in-memory"],
    "pip448": ["delayedDeliveryTrackerFactoryClassName=topic-level"],
    "draft": [
        "delayedDeliveryTrackerFactoryClassName=topic-level",
        "sim.pip448.draftSemantics=true",
    ],
    "disabled": ["delayedDeliveryEnabled=false"],
}
WORKLOAD = parse_workload(
    textwrap.dedent(
        """
        name = "ticks"
        duration_s = 1
        [[topics]]
        name = "orders"
        rate = 10
        [[topics.subscriptions]]
        name = "s"
        count = 3
        type = "Shared"
        [[topics.subscriptions.consumers]]
        [[topics]]
        name = "audit"
        rate = 10
        [[topics.subscriptions]]
        name = "s"
        type = "Shared"
        [[topics.subscriptions.consumers]]
        """
    ),
    "ticks.toml",
)
HOST = PluginHost()


def broker(kind: str) -> Broker:
    """The broker model wired as a simulation wires it, built but not run."""
    profile = load_profile(None, [*BASE, *TRACKERS[kind]], host=HOST)
    b = wire_broker(profile, HOST.resolve(profile), EventLoop(), 0)
    b.build(WORKLOAD)
    return b


def subscriptions(b: Broker) -> tuple[list[Dispatcher], Dispatcher]:
    """The three subscriptions of ``orders`` and the one of ``audit``."""
    orders, audit = b.topics
    return orders.dispatchers, audit.dispatchers[0]


def ticks(b: Broker) -> list[int]:
    return [d.tracker.tick_ms for d in b.dispatchers]


def foreign(b: Broker) -> int:
    return int(b.finish()["delayed_foreign_tick_changes"])


@pytest.mark.parametrize("kind", list(TRACKERS))
def test_the_tick_starts_at_the_configured_one(kind: str) -> None:
    assert ticks(broker(kind)) == [0 if kind == "disabled" else TICK] * 4


@pytest.mark.parametrize("kind", list(TRACKERS))
def test_d4_another_subscriptions_tick_change_shows_only_in_the_draft(kind: str) -> None:
    b = broker(kind)
    (a, s1, _), other_topic = subscriptions(b)
    a.reset_tick_time(32)
    own = 0 if kind == "disabled" else 32
    if kind == "draft":
        # The manager-wide tick: s1 and s2 moved without a call of their own (D4).
        assert ticks(b) == [32, 32, 32, TICK]
        assert b.counters.delayed_foreign_tick_changes == 2
    else:
        assert ticks(b) == [own, *[own if kind == "disabled" else TICK] * 3]
        assert b.counters.delayed_foreign_tick_changes == 0
    s1.reset_tick_time(32)  # s1's own reset to the tick it already shows: nothing foreign
    s1.reset_tick_time(64)  # in the draft a and s2 move again
    other_topic.reset_tick_time(500)  # another topic's manager: never reaches these
    assert foreign(b) == (4 if kind == "draft" else 0)


def test_a_tick_moved_outside_any_reset_is_counted_at_the_end() -> None:
    """A tick that changes behind the dispatcher's back (here: a call that bypasses it) is seen
    when the broker finishes the run."""
    b = broker("legacy")
    (a, _, _), _ = subscriptions(b)
    a.tracker.reset_tick_time(5)
    assert b.counters.delayed_foreign_tick_changes == 0
    assert foreign(b) == 1


def test_a_tick_moved_behind_the_dispatchers_back_is_not_hidden_by_a_later_own_reset() -> None:
    b = broker("legacy")
    (a, _, _), _ = subscriptions(b)
    a.tracker.reset_tick_time(5)
    a.reset_tick_time(32)  # its own change; the move to 5 before it was not
    assert foreign(b) == 1


def test_a_restart_gives_fresh_trackers_and_counts_nothing() -> None:
    b = broker("draft")
    (a, _, _), _ = subscriptions(b)
    a.reset_tick_time(32)
    b.restart()  # new handles; reused draft contexts keep the manager's tick
    assert foreign(b) == 2


resets = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from([1, 10, 32, 100, TICK])), max_size=12
)


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(list(TRACKERS)), calls=resets)
def test_foreign_changes_match_a_reference_model(kind: str, calls: list[tuple[int, int]]) -> None:
    """Random resets on four subscriptions of two topics. The promised trackers keep every tick
    per subscription (the last own reset) and count nothing; the draft's count follows a model of
    a manager-wide tick: a reset to a new value moves every other subscription of the topic that
    showed another tick."""
    b = broker(kind)
    topic_of = [0, 0, 0, 1]
    shown = [0 if kind == "disabled" else TICK] * 4
    manager = [TICK, TICK]
    expected = 0
    for index, tick in calls:
        b.dispatchers[index].reset_tick_time(tick)
        if kind == "draft":
            topic = topic_of[index]
            if tick != manager[topic]:
                manager[topic] = tick
                for other in range(4):
                    if topic_of[other] == topic:
                        expected += other != index and shown[other] != tick
                        shown[other] = tick
        elif kind != "disabled":
            shown[index] = tick
        assert ticks(b) == shown
    assert foreign(b) == expected
    if kind != "draft":
        assert expected == 0
