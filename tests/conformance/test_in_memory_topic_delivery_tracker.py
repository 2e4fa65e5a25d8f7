"""PIP-448's topic-level delayed-delivery tracker: one shared index per topic behind
per-subscription trackers, its pruning by the slowest mark-delete position, its timer and its
life cycle."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from _conformance import UpstreamClass, ready_profile, reexpresses
from _delayed_delivery import FakeTime, Wakes, context, factory_of, profile_named

from brokerlab.protocols import DelayedDeliveryTracker
from brokerlab_plugins.pip448_delayed_delivery.draft import DraftManager
from brokerlab_plugins.pip448_delayed_delivery.factory import TopicFactory
from brokerlab_plugins.pip448_delayed_delivery.manager import TopicManager, TrackerClosedError

UPSTREAM = UpstreamClass(
    name="InMemoryTopicDeliveryTrackerTest",
    area="Delayed delivery",
    repo="apache/pulsar",
    path="pulsar-broker/src/test/java/org/apache/pulsar/broker/delayed/InMemoryTopicDeliveryTrackerTest.java",
    commit="06ea0be755459d9186e0f54b098e7ecc9ed7f8d6",
    methods=(
        "testSingleSubscriptionBasicFlow",
        "testSharedIndexDedupAcrossSubscriptions",
        "testTimerRunTriggersOnlyAvailableSubscriptions",
        "testPauseWithFixedDelays",
        "testDynamicTickTimeUpdateAffectsCutoff",
        "testMinMarkDeleteAcrossSubscriptions",
        "testTimerSchedulingWindowAlignment",
        "testBufferMemoryUsageAndCleanup",
        "testGetScheduledMessagesLimit",
        "testHasMessageAvailableIgnoresMarkDelete",
        "testCrossBucketDuplicatesDedupOnRead",
        "testClearIsNoOp",
        "testMultiSubscriptionCloseDoesNotClear",
        "testBoundaryInputsRejected",
        "testClosedViewThrowsOnOperations",
        "testRescheduleOnEarlierDeliverAt",
        "testEmptyIndexCancelsTimerOnClose",
        "testMemoryGrowthAndPruneShrink",
        "testTimerCancelAndReschedule",
        "testSortedAndDedupScheduled",
        "testGlobalDelayedCountSemantics",
        "testConcurrentAdditionsSameBucket",
        "testConcurrentAdditionsMultipleBucketsAndReads",
    ),
    not_applicable={
        "testConcurrentAdditionsMultipleBucketsAndReads": (
            "a race between an adding thread and a reading thread that moves the shared clock; "
            "its only assertion is a non-negative count. The simulation is single-threaded; "
            "sequential interleavings of adds, reads and mark-deletes are covered by the "
            "differential test against the reference model in tests/unit/"
            "test_pip448_delayed_delivery.py."
        ),
    },
    line="PIP-448 draft (PR #24927)",
    profile="pip448-topic-tracker",
    note=(
        "The tests are written for the draft of PR #24927 (open, commit 06ea0be7). brokerlab "
        "implements the semantics PIP-448 promises (delayed-delivery.md section 0.2): each "
        "subscription sees what its own legacy tracker would, so counts are per subscription, "
        "nothing is handed out twice or to a subscription that did not add it, and buckets keep "
        "the legacy power-of-two precision. Where the draft's assertions follow from its "
        "divergences (section 0.3, D1-D5) the test asserts the promised behaviour as a "
        "documented difference, and a twin test runs the same scenario under "
        "profiles/diagnostics/pip448-draft.conf (sim.pip448.draftSemantics=true) and asserts "
        "what upstream asserts."
    ),
)

DRAFT_PROFILE = "diagnostics/pip448-draft"
MODES = pytest.mark.parametrize("draft", [False, True], ids=["promised", "draft"])


def topic_factory(
    time: FakeTime, tick: int, strict: bool, lookahead: int = 0, *, draft: bool = False
) -> TopicFactory:
    """The PIP-448 factory of the ready profile (or of the draft profile), with the manager
    constructor arguments of one upstream test and the mocked timer of its ``TestEnv``."""
    profile = profile_named(DRAFT_PROFILE) if draft else ready_profile(UPSTREAM)
    ctx = context(profile, time, tick=tick, strict=strict, lookahead=lookahead)
    f = factory_of(ctx)
    assert isinstance(f, TopicFactory) and f.draft is draft
    return f


def subs(f: TopicFactory, *names: str, topic: str = "t") -> list[DelayedDeliveryTracker]:
    return [f.new_tracker(topic, name, Wakes()) for name in names]


def index_positions(f: TopicFactory, topic: str = "t") -> int:
    """The topic's shared-index position count (upstream ``topicDelayedMessages``)."""
    return int(f.managers[topic].figures()["delayed_index_positions"])


def index_bytes(f: TopicFactory, topic: str = "t") -> int:
    """The topic's shared-index memory estimate (upstream ``topicBufferMemoryBytes``)."""
    return int(f.managers[topic].figures()["delayed_pulsar_memory_bytes"])


def _basic_flow(time: FakeTime, draft: bool) -> tuple[TopicFactory, DelayedDeliveryTracker]:
    f = topic_factory(time, 100, True, 10, draft=draft)
    (s,) = subs(f, "sub-a")
    assert not s.has_message_available()
    time.set(1000)
    for ledger, entry, at in [(1, 1, 1200), (1, 2, 1300), (2, 1, 1400)]:
        assert s.add_message(ledger, entry, at)
    assert not s.has_message_available()
    assert s.number_of_delayed_messages() == 3
    time.set(1350)
    assert s.has_message_available()
    return f, s


@reexpresses(
    UPSTREAM,
    "testSingleSubscriptionBasicFlow",
    differs=(
        "a read removes what it hands out from the subscription's view, so the subscription's "
        "count drops to 1 at once (the draft keeps reporting 3 until the mark-delete prune, D2); "
        "strict buckets are rounded up to the legacy precision 64 (1216, 1344, 1408), not to "
        "tick multiples. The shared index keeps all 3 positions until the prune, as upstream's "
        "count does. Evidence: delayed-delivery.md sections 0.2 and 0.3."
    ),
)
def test_single_subscription_flow_promised() -> None:
    """Tick 100, strict, lookahead 10: three messages due at 1200, 1300 and 1400. At 1350 the
    first two are due and handed out; the subscription then holds one, the shared index still
    three. After mark-delete (1,2) and the 50 ms prune interval, a read at 1408 hands out the
    third and the index holds one."""
    time = FakeTime()
    f, s = _basic_flow(time, draft=False)
    manager = f.managers["t"]
    assert isinstance(manager, TopicManager)
    assert list(manager.shared.index.buckets.keys()) == [1216, 1344, 1408]
    assert s.get_scheduled_messages(10) == [(1, 1), (1, 2)]
    assert s.number_of_delayed_messages() == 1
    assert index_positions(f) == 3
    s.mark_delete_moved((1, 2))
    time.set(1399)  # the prune of the read at 1350 throttles the next one until 1400
    assert s.get_scheduled_messages(10) == []
    assert index_positions(f) == 3
    time.set(1408)  # (2,1)'s strict bucket
    assert s.get_scheduled_messages(1) == [(2, 1)]
    assert index_positions(f) == 1
    assert s.number_of_delayed_messages() == 0


@reexpresses(UPSTREAM, "testSingleSubscriptionBasicFlow")
def test_single_subscription_flow_draft() -> None:
    """The same flow under the draft's semantics: two positions handed out at 1350 while the
    count stays 3; after mark-delete (1,2) a later read prunes the index down to one."""
    time = FakeTime()
    _f, s = _basic_flow(time, draft=True)
    assert len(s.get_scheduled_messages(10)) == 2
    assert s.number_of_delayed_messages() == 3
    s.mark_delete_moved((1, 2))
    s.get_scheduled_messages(10)
    time.set(1400)  # Awaitility's polling: the prune interval (50 ms) has passed
    s.get_scheduled_messages(1)
    assert s.number_of_delayed_messages() == 1


@MODES
@reexpresses(UPSTREAM, "testSharedIndexDedupAcrossSubscriptions")
def test_the_same_message_from_two_subscriptions_is_indexed_once(draft: bool) -> None:
    """Tick 1, strict: subscriptions a and b both add (10,20) for 2000 ms; each reports one
    delayed message and the topic's shared index holds one position."""
    time = FakeTime(ms=1000)
    f = topic_factory(time, 1, True, draft=draft)
    a, b = subs(f, "sub-a", "sub-b")
    assert a.add_message(10, 20, 2000)
    assert b.add_message(10, 20, 2000)
    assert a.number_of_delayed_messages() == 1
    assert b.number_of_delayed_messages() == 1
    assert index_positions(f) == 1


def _two_subscriptions_due_at_600(draft: bool) -> tuple[FakeTime, TopicFactory, Wakes, Wakes]:
    time = FakeTime()
    f = topic_factory(time, 100, True, draft=draft)
    wa, wb = Wakes(), Wakes()
    a, b = f.new_tracker("t", "sub-a", wa), f.new_tracker("t", "sub-b", wb)
    assert a.add_message(1, 1, 500)
    assert b.add_message(1, 2, 500)
    assert not a.has_message_available()
    assert not b.has_message_available()
    time.set(600)
    a.mark_delete_moved((0, 0))  # a's message is after its mark-delete: visible
    b.mark_delete_moved((1, 5))  # b's message is before its mark-delete: acknowledged
    return time, f, wa, wb


@reexpresses(
    UPSTREAM,
    "testTimerRunTriggersOnlyAvailableSubscriptions",
    differs=(
        "each subscription keeps the timer its own legacy tracker would have, and a mark-delete "
        "update does not touch it (delayed-delivery.md section 0.2, 'Timer', and the "
        "clarification on scenario 19): b is woken too, and its read returns nothing because it "
        "discarded its message at the mark-delete. The draft wakes only subscriptions with a "
        "visible message."
    ),
)
def test_timer_wakes_each_subscription_by_its_own_rule_promised() -> None:
    """Tick 100, strict: a and b each add one message due at 500 (bucket 512); at 600 a's
    mark-delete is before its message and b's after. The firing wakes both, and b's read is
    empty."""
    time, f, wa, wb = _two_subscriptions_due_at_600(draft=False)
    time.run_due()
    assert (wa.count, wb.count) == (1, 1)
    b = f.new_tracker("t", "sub-b", wb)
    assert b.get_scheduled_messages(10) == []


@reexpresses(UPSTREAM, "testTimerRunTriggersOnlyAvailableSubscriptions")
def test_timer_wakes_only_subscriptions_with_a_visible_message_draft() -> None:
    """Under the draft's semantics a manager firing at 600 wakes a once and b not at all."""
    _time, f, wa, wb = _two_subscriptions_due_at_600(draft=True)
    manager = f.managers["t"]
    assert isinstance(manager, DraftManager)
    manager._run()
    assert (wa.count, wb.count) == (1, 0)


@MODES
@reexpresses(UPSTREAM, "testPauseWithFixedDelays")
def test_in_order_messages_pause_reading_until_one_is_due(draft: bool) -> None:
    """Tick 10, strict, lookahead 5: five messages due at 100..500 ms in order pause reading;
    at 501 ms messages are due, and the pause is lifted."""
    time = FakeTime()
    f = topic_factory(time, 10, True, 5, draft=draft)
    (s,) = subs(f, "sub-a")
    for i in range(1, 6):
        assert s.add_message(i, i, i * 100)
    assert s.should_pause_all_deliveries()
    time.set(501)
    assert not s.should_pause_all_deliveries()


@MODES
@reexpresses(UPSTREAM, "testDynamicTickTimeUpdateAffectsCutoff")
def test_a_smaller_tick_lowers_the_cutoff(draft: bool) -> None:
    """Tick 100, not strict, at 1000 ms: a message due at 1050 is within the tick and refused;
    after the tick is reset to 10 the same message is accepted and counted."""
    time = FakeTime(ms=1000)
    f = topic_factory(time, 100, False, draft=draft)
    (s,) = subs(f, "sub-a")
    assert not s.add_message(1, 1, 1050)
    assert s.number_of_delayed_messages() == 0
    s.reset_tick_time(10)
    assert s.add_message(1, 1, 1050)
    assert s.number_of_delayed_messages() == 1


def _min_mark_delete(
    draft: bool,
) -> tuple[FakeTime, TopicFactory, DelayedDeliveryTracker, DelayedDeliveryTracker]:
    time = FakeTime()
    f = topic_factory(time, 1, True, draft=draft)
    a, b = subs(f, "sub-a", "sub-b")
    for ledger, entry in [(1, 1), (1, 2), (2, 1)]:
        assert a.add_message(ledger, entry, 100)
    assert a.number_of_delayed_messages() == 3
    a.mark_delete_moved((0, 0))
    b.mark_delete_moved((10, 10))
    time.set(200)
    b.get_scheduled_messages(10)  # a read by b tries a prune; a's mark-delete blocks it
    assert a.number_of_delayed_messages() == 3
    assert index_positions(f) == 3
    a.mark_delete_moved((1, 2))
    return time, f, a, b


@reexpresses(
    UPSTREAM,
    "testMinMarkDeleteAcrossSubscriptions",
    differs=(
        "the count a subscription reports is its own (delayed-delivery.md section 0.2): a's "
        "mark-delete at (1,2) discards its two acknowledged messages at once, and a's read "
        "hands out the third, so a reports 0 where the draft reports the topic-wide 1. The "
        "shared index follows upstream's count: 3 while a's mark-delete is behind, 1 after "
        "the prune."
    ),
)
def test_pruning_waits_for_the_slowest_mark_delete_promised() -> None:
    """Tick 1, strict: a adds three messages due at 100; a's mark-delete (0,0) is behind them,
    b's (10,10) beyond. b's read at 200 prunes nothing. When a's mark-delete reaches (1,2), a
    holds one message and its read prunes the index down to that one."""
    time, f, a, _b = _min_mark_delete(draft=False)
    assert a.number_of_delayed_messages() == 1
    time.set(205)  # b's read at 200 pruned; tick 1 makes the interval 5 ms
    assert a.get_scheduled_messages(10) == [(2, 1)]
    assert index_positions(f) == 1
    assert a.number_of_delayed_messages() == 0


@reexpresses(UPSTREAM, "testMinMarkDeleteAcrossSubscriptions")
def test_pruning_waits_for_the_slowest_mark_delete_draft() -> None:
    """Under the draft's semantics a's count stays 3 until its mark-delete moves, and reads
    after the prune interval bring it to 1."""
    time, _f, a, _b = _min_mark_delete(draft=True)
    a.get_scheduled_messages(10)  # throttled: b's read pruned (nothing) at this instant
    time.set(250)
    a.get_scheduled_messages(1)
    assert a.number_of_delayed_messages() == 1


@reexpresses(
    UPSTREAM,
    "testTimerSchedulingWindowAlignment",
    differs=(
        "the legacy timer rule applies per subscription (delayed-delivery.md section 3.8): a "
        "first bucket that is already due arms no timer, because the dispatcher's next read "
        "picks it up; the draft arms one that fires at once. The tick spacing after a firing "
        "(no timer before 11000) is the same."
    ),
)
def test_timer_spacing_and_past_due_buckets_promised() -> None:
    """Tick 1000, strict: after a firing at 10000 a message due at 10001 (bucket 10240) waits
    for 11000. That timer fires; with the clock at 20000 and nothing read yet, a new message
    finds the first bucket already due and no timer is armed."""
    time = FakeTime(ms=10_000)
    f = topic_factory(time, 1000, True)
    (s,) = subs(f, "sub-a")
    s.view.timer.run(object())  # type: ignore[attr-defined]
    assert s.add_message(1, 1, 10_001)
    assert time.fire_times() == [11_000]
    time.advance(11_000)  # the firing asks for a read; the dispatcher has not read yet
    time.set(20_000)
    assert s.add_message(1, 2, 20_005)
    assert time.tasks() == []


@reexpresses(UPSTREAM, "testTimerSchedulingWindowAlignment")
def test_timer_spacing_and_past_due_buckets_draft() -> None:
    """Under the draft's semantics the first timer fires no earlier than 11000, and with the
    first bucket (10000) past at 20000 a new message arms a timer for exactly 20000."""
    time = FakeTime(ms=10_000)
    f = topic_factory(time, 1000, True, draft=True)
    (s,) = subs(f, "sub-a")
    manager = f.managers["t"]
    assert isinstance(manager, DraftManager)
    manager._run()
    assert s.add_message(1, 1, 10_001)
    assert time.tasks() and min(time.fire_times()) >= 11_000
    for task in time.tasks():
        task.cancel()  # upstream clears its task map; the manager still holds the timeout
    time.set(20_000)
    assert s.add_message(1, 2, 20_005)
    assert time.fire_times() == [20_000]


@MODES
@reexpresses(UPSTREAM, "testBufferMemoryUsageAndCleanup")
def test_closing_the_last_subscription_frees_the_index(draft: bool) -> None:
    """Tick 1, strict: one message makes the memory estimate positive; closing the only
    subscription empties the topic's index: no positions, no bytes."""
    time = FakeTime()
    f = topic_factory(time, 1, True, draft=draft)
    (s,) = subs(f, "sub-a")
    assert s.add_message(1, 1, 10)
    assert s.buffer_memory_usage() > 0
    manager = f.managers["t"]
    s.close()
    assert manager.figures()["delayed_index_positions"] == 0
    assert manager.figures()["delayed_pulsar_memory_bytes"] == 0


@MODES
@reexpresses(UPSTREAM, "testGetScheduledMessagesLimit")
def test_a_read_returns_at_most_the_limit_in_position_order(draft: bool) -> None:
    """Tick 1, strict: ten entries of ledger 1 due at 1001; a read of 3 at 2000 returns the
    three lowest, in ascending order."""
    time = FakeTime(ms=1000)
    f = topic_factory(time, 1, True, draft=draft)
    (s,) = subs(f, "sub")
    for i in range(10):
        assert s.add_message(1, i, 1001)
    time.set(2000)
    assert s.get_scheduled_messages(3) == [(1, 0), (1, 1), (1, 2)]


def _acknowledged_due_message(draft: bool) -> DelayedDeliveryTracker:
    time = FakeTime(ms=900)
    f = topic_factory(time, 100, True, draft=draft)
    (s,) = subs(f, "s")
    assert s.add_message(1, 1, 1000)
    time.set(1000)
    s.mark_delete_moved((1, 1))
    return s


@reexpresses(
    UPSTREAM,
    "testHasMessageAvailableIgnoresMarkDelete",
    differs=(
        "availability answers for what the subscription would actually be handed "
        "(delayed-delivery.md section 0.2): the message is acknowledged by the mark-delete and "
        "its strict bucket (1024) is not due at 1000, so the answer is false; the draft says "
        "true while its read returns nothing (D3, section 0.3)."
    ),
)
def test_an_acknowledged_message_is_not_available_promised() -> None:
    """Tick 100, strict: a message due at 1000, and at 1000 a mark-delete covering it: nothing
    is available and a read is empty."""
    s = _acknowledged_due_message(draft=False)
    assert not s.has_message_available()
    assert s.get_scheduled_messages(10) == []


@reexpresses(UPSTREAM, "testHasMessageAvailableIgnoresMarkDelete")
def test_availability_ignores_the_mark_delete_draft() -> None:
    """Under the draft's semantics the same subscription is told a message is available, and
    its read returns nothing."""
    s = _acknowledged_due_message(draft=True)
    assert s.has_message_available()
    assert s.get_scheduled_messages(10) == []


def _cross_bucket(draft: bool) -> tuple[TopicFactory, list[DelayedDeliveryTracker], int]:
    time = FakeTime(ms=1000)
    f = topic_factory(time, 256, True, draft=draft)
    s1, s2 = subs(f, "s1", "s2")
    assert s1.add_message(9, 9, 1023)
    before = index_bytes(f)
    s2.reset_tick_time(32)
    assert s2.add_message(9, 9, 1023)
    time.set(2000)
    assert s1.get_scheduled_messages(10) == [(9, 9)]
    return f, [s1, s2], before


@reexpresses(
    UPSTREAM,
    "testCrossBucketDuplicatesDedupOnRead",
    differs=(
        "a tick reset changes only the calling subscription's cutoff, never the bucket "
        "precision (delayed-delivery.md section 0.2, 'Shared index'): both adds land in the "
        "same strict bucket (1024), so the index holds one position and its memory does not "
        "grow, where the draft re-buckets with the new tick for every subscription and stores "
        "the position twice (D4)."
    ),
)
def test_a_tick_reset_does_not_duplicate_the_index_promised() -> None:
    """Tick 256, strict: s1 adds (9,9) for 1023; s2 resets its tick to 32 and adds it too.
    At 2000 s1 and s2 are each handed (9,9) once; the index holds one position and the same
    bytes as before s2's add."""
    f, (s1, s2), before = _cross_bucket(draft=False)
    assert index_positions(f) == 1
    assert index_bytes(f) == before
    assert s2.get_scheduled_messages(10) == [(9, 9)]
    assert s1.get_scheduled_messages(10) == s2.get_scheduled_messages(10) == []
    assert s1.tick_ms == 256


@reexpresses(UPSTREAM, "testCrossBucketDuplicatesDedupOnRead")
def test_cross_bucket_duplicates_are_read_once_draft() -> None:
    """Under the draft's semantics s1's read returns (9,9) once although the index holds it in
    two buckets, and the index memory grew with s2's add."""
    f, _subs, before = _cross_bucket(draft=True)
    assert index_positions(f) >= 1
    assert index_bytes(f) > before


@MODES
@reexpresses(UPSTREAM, "testClearIsNoOp")
def test_clear_leaves_the_shared_index(draft: bool) -> None:
    """Tick 1, strict: after one add, a subscription's clear leaves the topic's index count
    unchanged (brokerlab empties only that subscription's view)."""
    time = FakeTime()
    f = topic_factory(time, 1, True, draft=draft)
    (s,) = subs(f, "s")
    assert s.add_message(1, 1, 10)
    before = index_positions(f)
    s.clear()
    assert index_positions(f) == before == 1


def _close_one_of_two(draft: bool) -> tuple[FakeTime, TopicFactory, DelayedDeliveryTracker]:
    time = FakeTime()
    f = topic_factory(time, 1, True, draft=draft)
    s1, s2 = subs(f, "s1", "s2")
    assert s1.add_message(1, 1, 10)
    assert index_positions(f) > 0
    s1.close()
    assert index_positions(f) > 0
    time.set(20)
    return time, f, s2


@reexpresses(
    UPSTREAM,
    "testMultiSubscriptionCloseDoesNotClear",
    differs=(
        "subscriptions are isolated (delayed-delivery.md section 0.2): s2 never added (1,1), "
        "so its read is empty, where the draft hands s2 every position after its mark-delete "
        "whoever added it (D5). Closing s1 keeps the index, and closing s2 empties it, as "
        "upstream asserts."
    ),
)
def test_closing_one_subscription_keeps_the_index_promised() -> None:
    """Tick 1, strict: s1 adds a message and closes; the index still holds it, s2's read at
    20 is empty, and closing s2 empties the index."""
    _time, f, s2 = _close_one_of_two(draft=False)
    manager = f.managers["t"]
    assert s2.get_scheduled_messages(10) == []
    s2.close()
    assert manager.figures()["delayed_index_positions"] == 0


@reexpresses(UPSTREAM, "testMultiSubscriptionCloseDoesNotClear")
def test_closing_one_subscription_keeps_the_index_draft() -> None:
    """Under the draft's semantics s2's read at 20 returns s1's message, and closing s2
    empties the index."""
    _time, f, s2 = _close_one_of_two(draft=True)
    manager = f.managers["t"]
    assert s2.get_scheduled_messages(10) != []
    s2.close()
    assert manager.figures()["delayed_index_positions"] == 0


@MODES
@reexpresses(UPSTREAM, "testBoundaryInputsRejected")
def test_negative_and_already_due_deliver_at_times_are_refused(draft: bool) -> None:
    """Tick 100 at 1000 ms: strict refuses -1 and 1000 (due now); non-strict refuses 1100
    (within the tick)."""
    time = FakeTime(ms=1000)
    (strict,) = subs(topic_factory(time, 100, True, draft=draft), "s")
    assert not strict.add_message(1, 1, -1)
    assert not strict.add_message(1, 2, 1000)
    strict.close()
    (lenient,) = subs(topic_factory(time, 100, False, draft=draft), "s")
    assert not lenient.add_message(1, 3, 1100)
    lenient.close()


@MODES
@reexpresses(UPSTREAM, "testClosedViewThrowsOnOperations")
def test_a_closed_tracker_refuses_every_operation(draft: bool) -> None:
    """After close, adding, asking for availability, reading and clearing each raise
    brokerlab's closed-tracker error (Pulsar's IllegalStateException); close again is fine."""
    time = FakeTime()
    (s,) = subs(topic_factory(time, 1, True, draft=draft), "s")
    s.close()
    calls: list[Callable[[], object]] = [
        lambda: s.add_message(1, 1, 10),
        s.has_message_available,
        lambda: s.get_scheduled_messages(1),
        s.clear,
    ]
    for call in calls:
        with pytest.raises(TrackerClosedError):
            call()
    s.close()


@MODES
@reexpresses(UPSTREAM, "testRescheduleOnEarlierDeliverAt")
def test_an_earlier_message_moves_the_single_timer(draft: bool) -> None:
    """Tick 1, strict: a message due at 10 arms the timer for 10; one due at 5 moves it to 5,
    still one timer."""
    time = FakeTime()
    (s,) = subs(topic_factory(time, 1, True, draft=draft), "s")
    assert s.add_message(1, 1, 10)
    assert time.fire_times() == [10]
    assert s.add_message(1, 2, 5)
    assert time.fire_times() == [5]


@MODES
@reexpresses(UPSTREAM, "testEmptyIndexCancelsTimerOnClose")
def test_closing_the_last_subscription_cancels_the_timer(draft: bool) -> None:
    """Tick 100, strict: a message due at 1000 arms a timer; closing the only subscription
    leaves no timer."""
    time = FakeTime()
    (s,) = subs(topic_factory(time, 100, True, draft=draft), "s")
    assert s.add_message(1, 1, 1000)
    assert time.tasks()
    s.close()
    assert time.tasks() == []


@MODES
@reexpresses(UPSTREAM, "testMemoryGrowthAndPruneShrink")
def test_pruning_shrinks_the_index_memory(draft: bool) -> None:
    """Tick 10, strict: fifty entries of ledger 1 due at 100; at 200 a mark-delete at (1,25)
    and a read prune entries 0-25: the index keeps 24 and uses less memory."""
    time = FakeTime()
    f = topic_factory(time, 10, True, draft=draft)
    (s,) = subs(f, "s")
    for i in range(50):
        assert s.add_message(1, i, 100)
    before = index_bytes(f)
    assert before > 0
    time.set(200)
    s.mark_delete_moved((1, 25))
    s.get_scheduled_messages(100)
    assert index_bytes(f) < before
    assert index_positions(f) == 24


@MODES
@reexpresses(UPSTREAM, "testTimerCancelAndReschedule")
def test_a_new_earlier_message_replaces_the_timer(draft: bool) -> None:
    """Tick 10, strict: a message due at 100 arms a timer no earlier than 10; one due at 50
    replaces it: one timer, now for the earlier bucket."""
    time = FakeTime()
    (s,) = subs(topic_factory(time, 10, True, draft=draft), "s")
    assert s.add_message(1, 1, 100)
    assert min(time.fire_times()) >= 10
    first = time.fire_times()
    assert s.add_message(1, 2, 50)
    assert len(time.tasks()) == 1
    assert time.fire_times() < first


@MODES
@reexpresses(UPSTREAM, "testSortedAndDedupScheduled")
def test_a_read_is_sorted_and_without_duplicates(draft: bool) -> None:
    """Tick 1, strict: (2,3), (1,5) and (1,5) again, all due at 10; at 100 one read returns
    (1,5) then (2,3)."""
    time = FakeTime()
    (s,) = subs(topic_factory(time, 1, True, draft=draft), "s")
    for ledger, entry in [(2, 3), (1, 5), (1, 5)]:
        assert s.add_message(ledger, entry, 10)
    time.set(100)
    assert s.get_scheduled_messages(10) == [(1, 5), (2, 3)]


def _hidden_by_mark_delete(draft: bool) -> tuple[TopicFactory, DelayedDeliveryTracker]:
    time = FakeTime()
    f = topic_factory(time, 1, True, draft=draft)
    s1, _s2 = subs(f, "s1", "s2")
    assert s1.add_message(1, 1, 10)
    assert s1.number_of_delayed_messages() == 1
    s1.mark_delete_moved((1, 1))
    time.set(100)
    assert s1.get_scheduled_messages(10) == []
    return f, s1


@reexpresses(
    UPSTREAM,
    "testGlobalDelayedCountSemantics",
    differs=(
        "the count a subscription reports is its own (delayed-delivery.md section 0.2): s1's "
        "mark-delete covers its only message, so s1 reports 0, where the draft reports the "
        "topic-wide 1. The shared index keeps the position (s2 has no mark-delete yet, so "
        "nothing is pruned), which is what upstream's count shows."
    ),
)
def test_a_subscription_counts_only_its_own_messages_promised() -> None:
    """Tick 1, strict: s1 adds a message and mark-deletes it; s2 never sets a mark-delete. At
    100 s1's read is empty and s1 counts 0, while the shared index still holds the position."""
    f, s1 = _hidden_by_mark_delete(draft=False)
    assert s1.number_of_delayed_messages() == 0
    assert index_positions(f) == 1


@reexpresses(UPSTREAM, "testGlobalDelayedCountSemantics")
def test_the_count_is_topic_wide_draft() -> None:
    """Under the draft's semantics s1 keeps counting the unpruned position: 1."""
    _f, s1 = _hidden_by_mark_delete(draft=True)
    assert s1.number_of_delayed_messages() == 1


@MODES
@reexpresses(UPSTREAM, "testConcurrentAdditionsSameBucket")
def test_interleaved_adds_to_one_bucket_are_all_kept(draft: bool) -> None:
    """Tick 1, strict: five producers' adds interleaved (entries base+i of ledger 1, base 0,
    50, ..., 200), all due at 10; at 100 one read of 250 returns all 250 and the index holds
    250 positions. (Upstream uses five threads; the simulation interleaves them.)"""
    time = FakeTime()
    f = topic_factory(time, 1, True, draft=draft)
    (s,) = subs(f, "s")
    for i in range(50):
        for producer in range(5):
            assert s.add_message(1, producer * 50 + i, 10)
    time.set(100)
    assert s.get_scheduled_messages(250) == [(1, e) for e in range(250)]
    assert index_positions(f) == 250
