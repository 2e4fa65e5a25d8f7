"""Pulsar's legacy per-subscription delayed-delivery tracker: fixed-delay pausing, strict-mode
timing with rounded-up buckets, stale timer firings, draining order and partial drains."""

from __future__ import annotations

import pytest
from _conformance import UpstreamClass, ready_profile, reexpresses
from _delayed_delivery import PIP448_PROFILE, FakeTime, profile_named, timer_of, tracker

from brokerlab.protocols import DelayedDeliveryTracker
from brokerlab_plugins.legacy_delayed_delivery.tracker import LegacyTracker

UPSTREAM = UpstreamClass(
    name="InMemoryDeliveryTrackerTest",
    area="Delayed delivery",
    repo="Denovo1998/pulsar",
    path="pulsar-broker/src/test/java/org/apache/pulsar/broker/delayed/InMemoryDeliveryTrackerTest.java",
    commit="4deb7ef3af8f525d7234ae05016f1fc6dc363e20",
    methods=(
        "testWithFixedDelays",
        "testWithMixedDelays",
        "testWithNoDelays",
        "testClose",
        "testStrictModeNeverDeliversEarlyAndKeepsTimerArmed",
        "testStaleTimerTriggerDoesNotClearNewerTimer",
        "testDelaySequence",
        "testAddMultipleMessagesSameWindow",
        "testGetScheduledMessagesWithMaxMessagesSmallerThanBucket",
    ),
    line="master",
    profile="pulsar-4.2",
    note=(
        "The newest file (with the issue #25996 tests) is read from the Denovo1998/pulsar fork: "
        "the index holds the same test methods on apache/pulsar master but not their commit. "
        "The methods inherited from AbstractDeliveryTrackerTest are in "
        "test_abstract_delivery_tracker.py. Every scenario runs against the legacy tracker the "
        "ready profile selects and, as delayed-delivery.md section 0.2 requires, against the "
        "PIP-448 plugin with one subscription (profile pip448-topic-tracker)."
    ),
)

KINDS = pytest.mark.parametrize("kind", ["legacy", "pip448-one-subscription"])


def make(kind: str, time: FakeTime, **options: object) -> DelayedDeliveryTracker:
    """The tracker of ``kind`` with the constructor arguments of one upstream test."""
    profile = ready_profile(UPSTREAM) if kind == "legacy" else profile_named(PIP448_PROFILE)
    t, _ = tracker(profile, time, **options)
    if kind == "legacy":
        # The ready profile runs the legacy tracker with its newest rules (#25996 fix).
        assert isinstance(t, LegacyTracker) and not t.buckets.previous_rule
    return t


def _hundred_in_order(t: DelayedDeliveryTracker) -> None:
    """Messages 1..100 at 10 ms steps: a fixed-delay stream; pausing starts at the 100th."""
    assert not t.has_message_available()
    for i in range(1, 6):
        assert t.add_message(i, i, i * 10)
    assert not t.has_message_available()
    assert t.number_of_delayed_messages() == 5
    assert not t.should_pause_all_deliveries()  # 5 buffered, lookahead 100
    for i in range(6, 101):
        assert t.add_message(i, i, i * 10)
    assert t.should_pause_all_deliveries()


@KINDS
@reexpresses(UPSTREAM, "testWithFixedDelays")
def test_fixed_delays_pause_reading_until_the_buffer_is_due(kind: str) -> None:
    """Tick 8, strict, lookahead 100: a hundred in-order messages pause reading; once the clock
    reaches the last one (1000 ms, bucket 1000) one read drains all hundred and lifts the pause,
    and the tracker stays empty and unpaused."""
    time = FakeTime(ms=0)
    t = make(kind, time, tick=8, strict=True, lookahead=100)
    _hundred_in_order(t)
    time.set(1000)
    assert len(t.get_scheduled_messages(100)) == 100
    assert not t.should_pause_all_deliveries()
    assert t.get_scheduled_messages(100) == []
    assert not t.should_pause_all_deliveries()


@KINDS
@reexpresses(UPSTREAM, "testWithMixedDelays")
def test_an_out_of_order_message_ends_the_fixed_delay_pause(kind: str) -> None:
    """After the hundred in-order messages, one due at 5 ms (more than a tick before the highest,
    1000 ms) is accepted but shows the stream is not fixed-delay: the pause is lifted."""
    time = FakeTime(ms=0)
    t = make(kind, time, tick=8, strict=True, lookahead=100)
    _hundred_in_order(t)
    assert t.add_message(5, 6, 5)
    assert not t.should_pause_all_deliveries()


@KINDS
@reexpresses(UPSTREAM, "testWithNoDelays")
def test_a_message_without_delay_ends_the_fixed_delay_pause(kind: str) -> None:
    """After the hundred in-order messages, one without a delay (deliverAt -1) is refused for
    immediate dispatch, and that too lifts the pause."""
    time = FakeTime(ms=0)
    t = make(kind, time, tick=8, strict=True, lookahead=100)
    _hundred_in_order(t)
    assert not t.add_message(5, 6, -1)
    assert not t.should_pause_all_deliveries()


@KINDS
@reexpresses(UPSTREAM, "testClose")
def test_close_cancels_the_timer_and_a_late_firing_is_harmless(kind: str) -> None:
    """Tick 1 on a real wheel: a message arms the timer; close cancels it, and a firing that
    races with the close runs without error."""
    time = FakeTime(ms=0)
    t = make(kind, time, tick=1, strict=True, wheel=True)
    t.add_message(1, 1, 10)
    assert time.fire_times() == [10]
    timer = timer_of(t)
    t.close()
    assert time.tasks() == []
    timer.run(object())
    time.advance(100)


@KINDS
@reexpresses(UPSTREAM, "testStrictModeNeverDeliversEarlyAndKeepsTimerArmed")
def test_strict_buckets_round_up_and_the_timer_stays_armed(kind: str) -> None:
    """Tick 1000, strict (precision 512): deliverAt 60400 and 61000 land in buckets 60416 and
    61440. At 60000 nothing is handed out and the one timer (60416) stays armed; it fires at
    60416 and hands out the first message only, then re-arms for 61440, where the second
    follows."""
    time = FakeTime(ms=0)
    t = make(kind, time, tick=1000, strict=True)
    assert t.add_message(1, 1, 60_400)
    assert t.add_message(2, 2, 61_000)
    assert time.fire_times() == [60_416]
    time.set(60_000)
    assert not t.has_message_available()
    assert t.get_scheduled_messages(100) == []
    assert time.fire_times() == [60_416]
    time.advance(60_416)
    assert t.get_scheduled_messages(100) == [(1, 1)]
    assert t.number_of_delayed_messages() == 1
    assert not t.has_message_available()
    assert time.fire_times() == [61_440]
    time.advance(61_440)
    assert t.get_scheduled_messages(100) == [(2, 2)]
    assert t.number_of_delayed_messages() == 0


@KINDS
@reexpresses(UPSTREAM, "testStaleTimerTriggerDoesNotClearNewerTimer")
def test_a_stale_firing_keeps_the_newer_timer(kind: str) -> None:
    """Tick 1000, strict: the timer armed for 61440 is replaced by one for 60416 when an earlier
    message arrives. The replaced timeout firing anyway asks for a read but leaves the armed one
    alone: the next availability check arms nothing new (two timeouts created in all), and the
    armed timer hands out the early message and re-arms for the other."""
    time = FakeTime(ms=0)
    t = make(kind, time, tick=1000, strict=True)
    assert t.add_message(2, 2, 61_000)
    assert time.fire_times() == [61_440]
    assert t.add_message(1, 1, 60_400)
    assert time.fire_times() == [60_416]
    timer = timer_of(t)
    timer.run(object())  # not the armed timeout's token: a stale firing
    assert timer.target == 60_416
    assert not t.has_message_available()
    assert time.fire_times() == [60_416]
    assert timer.scheduled == 2
    time.advance(60_416)
    assert t.get_scheduled_messages(100) == [(1, 1)]
    assert time.fire_times() == [61_440]


@KINDS
@reexpresses(UPSTREAM, "testDelaySequence")
def test_one_message_per_read_comes_out_in_ledger_order(kind: str) -> None:
    """Tick 1, strict: five messages (ledger i, entry i) all due at 1 ms; at 10 ms they are
    available, five are counted, and five reads of one each return ledgers 1 to 5 in order."""
    time = FakeTime(ms=0)
    t = make(kind, time, tick=1, strict=True)
    assert not t.has_message_available()
    for i in range(1, 6):
        assert t.add_message(i, i, 1)
    time.set(10)
    assert t.has_message_available()
    assert t.number_of_delayed_messages() == 5
    assert [t.get_scheduled_messages(1) for _ in range(5)] == [[(i, i)] for i in range(1, 6)]


@KINDS
@reexpresses(UPSTREAM, "testAddMultipleMessagesSameWindow")
def test_the_same_message_added_three_times_is_tracked_once(kind: str) -> None:
    """Tick 1, strict: the same position added three times for 50 ms is accepted each time but
    tracked once, and handed out once at 60 ms."""
    time = FakeTime(ms=0)
    t = make(kind, time, tick=1, strict=True)
    for _ in range(3):
        assert t.add_message(1, 1, 50)
    assert t.number_of_delayed_messages() == 1
    time.set(60)
    assert t.get_scheduled_messages(10) == [(1, 1)]
    assert t.get_scheduled_messages(10) == []


@KINDS
@reexpresses(UPSTREAM, "testGetScheduledMessagesWithMaxMessagesSmallerThanBucket")
def test_reads_smaller_than_a_bucket_drain_it_lowest_first(kind: str) -> None:
    """Tick 1, strict: ledger 1 with entries 0-1 and ledger 2 with entries 0-4, all due at 10.
    Reads of 4, 2 and 10 return the lowest positions not yet handed out, never one twice, and
    the count goes 7, 3, 1, 0."""
    time = FakeTime(ms=0)
    t = make(kind, time, tick=1, strict=True)
    for ledger, entry in [(1, 0), (1, 1)] + [(2, e) for e in range(5)]:
        assert t.add_message(ledger, entry, 10)
    assert t.number_of_delayed_messages() == 7
    time.set(10)
    assert t.get_scheduled_messages(4) == [(1, 0), (1, 1), (2, 0), (2, 1)]
    assert t.number_of_delayed_messages() == 3
    assert t.get_scheduled_messages(2) == [(2, 2), (2, 3)]
    assert t.number_of_delayed_messages() == 1
    assert t.get_scheduled_messages(10) == [(2, 4)]
    assert t.number_of_delayed_messages() == 0
    assert not t.has_message_available()
