"""The scenarios every Pulsar delayed-delivery tracker shares: accepting and refusing messages
against the tick and strict cutoffs, draining due messages, and when the delivery timer fires."""

from __future__ import annotations

import pytest
from _conformance import UpstreamClass, ready_profile, reexpresses
from _delayed_delivery import PIP448_PROFILE, FakeTime, Wakes, profile_named, timer_of, tracker

from brokerlab.protocols import DelayedDeliveryTracker
from brokerlab_plugins.legacy_delayed_delivery.tracker import LegacyTracker

UPSTREAM = UpstreamClass(
    name="AbstractDeliveryTrackerTest",
    area="Delayed delivery",
    repo="apache/pulsar",
    path="pulsar-broker/src/test/java/org/apache/pulsar/broker/delayed/AbstractDeliveryTrackerTest.java",
    commit="103df67e7d7b9b4630502fdd43cdb69ddde80ffc",
    methods=(
        "test",
        "testWithTimer",
        "testAddWithinTickTime",
        "testAddMessageWithStrictDelay",
        "testAddMessageWithDeliverAtTimeAfterNowBeforeTickTimeFrequencyWithStrict",
        "testAddMessageWithDeliverAtTimeAfterNowAfterTickTimeFrequencyWithStrict",
        "testAddMessageWithDeliverAtTimeAfterFullTickTimeWithStrict",
    ),
    line="master",
    profile="pulsar-4.2",
    note=(
        "An abstract class: upstream runs these methods through its subclasses' data providers. "
        "They are re-expressed against the legacy tracker with the constructor arguments "
        "InMemoryDeliveryTrackerTest's provider gives each method (Denovo1998/pulsar @ 4deb7ef3), "
        "and, as delayed-delivery.md section 0.2 requires, against the PIP-448 plugin with one "
        "subscription (profile pip448-topic-tracker). The bucket tracker's subclass is not "
        "modelled."
    ),
)

KINDS = pytest.mark.parametrize("kind", ["legacy", "pip448-one-subscription"])


def make(kind: str, time: FakeTime, **options: object) -> tuple[DelayedDeliveryTracker, Wakes]:
    """The tracker of ``kind`` and its dispatcher's read counter."""
    profile = ready_profile(UPSTREAM) if kind == "legacy" else profile_named(PIP448_PROFILE)
    t, wakes = tracker(profile, time, **options)
    if kind == "legacy":
        assert isinstance(t, LegacyTracker) and not t.buckets.previous_rule
    return t, wakes


@KINDS
@reexpresses(UPSTREAM, "test")
def test_due_messages_are_handed_out_and_removed(kind: str) -> None:
    """Tick 1, not strict: five messages due at 10-50 ms are accepted and none is due at 0. At
    15 ms a message due at 10 is refused (already within the tick), one message is due and
    handed out; at 60 ms reads of 1 and 3 drain the other four and the tracker is empty."""
    time = FakeTime(ms=0)
    t, _ = make(kind, time, tick=1, strict=False)
    assert not t.has_message_available()
    for ledger, entry, at in [(1, 2, 20), (2, 1, 10), (3, 3, 30), (4, 5, 50), (5, 4, 40)]:
        assert t.add_message(ledger, entry, at)
    assert not t.has_message_available()
    assert t.number_of_delayed_messages() == 5
    assert t.get_scheduled_messages(10) == []
    time.set(15)
    assert not t.add_message(6, 6, 10)
    assert t.number_of_delayed_messages() == 5
    assert t.has_message_available()
    assert t.get_scheduled_messages(10) == [(2, 1)]
    time.set(60)
    assert t.number_of_delayed_messages() == 4
    assert t.has_message_available()
    assert len(t.get_scheduled_messages(1)) == 1
    assert t.number_of_delayed_messages() == 3
    assert t.has_message_available()
    assert len(t.get_scheduled_messages(3)) == 3
    assert t.number_of_delayed_messages() == 0
    assert not t.has_message_available()
    assert t.get_scheduled_messages(10) == []


@KINDS
@reexpresses(UPSTREAM, "testWithTimer")
def test_one_timer_follows_the_earliest_message(kind: str) -> None:
    """Tick 1, not strict, mocked timer: adds at 20, 10 and 30 ms keep a single timer, moved to
    10 ms by the earlier message and left there by the later one. A cancelled firing asks for
    no read; a live one asks for exactly one."""
    time = FakeTime(ms=0)
    t, wakes = make(kind, time, tick=1, strict=False)
    assert time.tasks() == []
    assert t.add_message(2, 2, 20)
    assert time.fire_times() == [20]
    assert t.add_message(1, 1, 10)
    assert time.fire_times() == [10]
    assert t.add_message(3, 3, 30)
    assert time.fire_times() == [10]
    time.set(15)
    timer_of(t).run(None)  # a cancelled timeout runs nothing
    assert wakes.count == 0
    time.run_due()
    assert wakes.count == 1


@KINDS
@reexpresses(UPSTREAM, "testAddWithinTickTime")
def test_messages_due_within_the_tick_are_refused(kind: str) -> None:
    """Tick 100, not strict, at 0 ms: the cutoff is 100 ms, so messages due at 10, 99 and
    exactly 100 go out at once (refused) while 101 and 200 are tracked."""
    time = FakeTime(ms=0)
    t, _ = make(kind, time, tick=100, strict=False)
    accepted = [t.add_message(i, i, at) for i, at in enumerate([10, 99, 100, 101, 200], 1)]
    assert accepted == [False, False, False, True, True]
    assert t.number_of_delayed_messages() == 2


@KINDS
@reexpresses(UPSTREAM, "testAddMessageWithStrictDelay")
def test_strict_mode_refuses_only_what_is_due_now(kind: str) -> None:
    """Tick 1, strict, at 10 ms: messages due at 9 and 10 are refused, 11 is tracked and is not
    yet available."""
    time = FakeTime(ms=10)
    t, _ = make(kind, time, tick=1, strict=True)
    assert not t.add_message(1, 1, 9)
    assert not t.add_message(4, 4, 10)
    assert t.add_message(1, 1, 11)
    assert t.number_of_delayed_messages() == 1
    assert not t.has_message_available()


@KINDS
@reexpresses(UPSTREAM, "testAddMessageWithDeliverAtTimeAfterNowBeforeTickTimeFrequencyWithStrict")
def test_the_timer_waits_a_tick_after_the_last_firing(kind: str) -> None:
    """Tick 1000, strict, on the timer wheel: a firing at 10000 ms asks for one read. A message
    due at 10001 (bucket 10240) would fire after 240 ms, but firings are at least a tick apart:
    no read at 10600, the second one at 11000."""
    time = FakeTime(ms=10_000)
    t, wakes = make(kind, time, tick=1000, strict=True, wheel=True)
    timer_of(t).run(object())
    assert wakes.count == 1
    assert t.add_message(1, 1, 10_001)
    time.advance(10_600)
    assert wakes.count == 1
    time.advance(10_999)
    assert wakes.count == 1
    time.advance(11_000)
    assert wakes.count == 2


@KINDS
@reexpresses(UPSTREAM, "testAddMessageWithDeliverAtTimeAfterNowAfterTickTimeFrequencyWithStrict")
def test_without_a_recent_firing_the_deliver_at_time_sets_the_timer(kind: str) -> None:
    """Tick 1, strict, at 500000 ms with no earlier firing: a message due 5 ms later arms the
    timer for exactly then, and its firing asks for a read."""
    time = FakeTime(ms=500_000)
    t, wakes = make(kind, time, tick=1, strict=True)
    assert t.add_message(1, 1, 500_005)
    assert time.fire_times() == [500_005]
    time.advance(500_004)
    assert wakes.count == 0
    time.advance(500_005)
    assert wakes.count == 1


@KINDS
@reexpresses(UPSTREAM, "testAddMessageWithDeliverAtTimeAfterFullTickTimeWithStrict")
def test_a_message_more_than_a_tick_away_fires_at_its_rounded_up_bucket(kind: str) -> None:
    """Tick 500, strict (precision 256): a message due at 2000 ms sits in bucket 2048; the timer
    fires there, not earlier, and asks for a read."""
    time = FakeTime(ms=0)
    t, wakes = make(kind, time, tick=500, strict=True)
    assert t.add_message(1, 1, 2000)
    assert time.fire_times() == [2048]
    time.advance(2047)
    assert wakes.count == 0
    time.advance(2048)
    assert wakes.count == 1
