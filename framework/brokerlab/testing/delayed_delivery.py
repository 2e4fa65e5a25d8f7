"""Contract for delayed-delivery tracker factories: never early, once per subscription, isolated.

:class:`DelayedBench` builds a factory as a simulation of a profile would and plays the
dispatchers: a tracker's ``wake`` schedules a read at the current instant, and that read asks
``has_message_available`` / ``get_scheduled_messages`` as the broker's dispatcher does.
:class:`DeliveryLog` checks every hand-back as it happens.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from brokerlab.host import PluginHost
from brokerlab.profiles import Profile
from brokerlab.protocols import DelayedDeliveryTracker, DelayedDeliveryTrackerFactory, Position
from brokerlab.records import DelayedDeliveryTrackerFactoryRecord
from brokerlab.testing._common import (
    MS,
    Simulate,
    build_context,
    check_simulation,
    check_stats,
    examples,
)

__all__ = [
    "DelayedBench",
    "DelayedDeliveryContract",
    "DeliveryLog",
    "Subscription",
    "play_fixed_scenario",
    "tracker_overrides",
]

Subscription = tuple[str, str]
"""``(topic, subscription)``: one tracker."""


class DeliveryLog:
    """What each subscription's tracker accepted, and a check of everything it hands back.

    A hand-back holds at most the ``max_messages`` asked for. A position handed back must have
    been accepted by *that* subscription's tracker, at most as many times as it was accepted, and
    not before its deliver-at time (strict mode) or more than
    one tick before it (otherwise). A message a tracker refuses is dispatched at once, so a refusal
    is held to the same rule, unless ``refusals_are_early`` is false (delivery switched off).
    """

    def __init__(self, tick_ms: int, strict: bool, *, refusals_are_early: bool = True) -> None:
        self.allowance = 0 if strict else tick_ms
        self.refusals_are_early = refusals_are_early
        self.accepted: Counter[tuple[Subscription, Position]] = Counter()
        self.returned: Counter[tuple[Subscription, Position]] = Counter()
        self.deliver_at: dict[tuple[Subscription, Position], int] = {}

    def added(
        self, sub: Subscription, position: Position, deliver_at_ms: int, now_ms: int, held: bool
    ) -> None:
        if not held:
            assert not self.refusals_are_early or deliver_at_ms - self.allowance <= now_ms, (
                f"{sub}: {position} due at {deliver_at_ms} was refused (dispatched at once) at "
                f"{now_ms}: early"
            )
            return
        key = (sub, position)
        self.accepted[key] += 1
        self.deliver_at[key] = min(self.deliver_at.get(key, deliver_at_ms), deliver_at_ms)

    def handed_back(
        self,
        sub: Subscription,
        positions: Sequence[Position],
        now_ms: int,
        max_messages: int | None = None,
    ) -> None:
        assert max_messages is None or len(positions) <= max_messages, (
            f"{sub} asked for up to {max_messages} messages and got {len(positions)}"
        )
        for position in positions:
            key = (sub, position)
            self.returned[key] += 1
            assert self.accepted[key] > 0, f"{sub} got {position}, never added to it"
            assert self.returned[key] <= self.accepted[key], (
                f"{sub} got {position} {self.returned[key]} times, added {self.accepted[key]}"
            )
            due = self.deliver_at[key]
            assert due - self.allowance <= now_ms, (
                f"{sub} got {position} at {now_ms}, due at {due}: early"
            )

    def undelivered(self, sub: Subscription, mark_delete: Position | None) -> list[Position]:
        """Positions accepted for ``sub`` after ``mark_delete`` and never handed back."""
        return sorted(
            pos
            for (s, pos), count in self.accepted.items()
            if s == sub
            and count
            and self.returned[(s, pos)] == 0
            and (mark_delete is None or pos > mark_delete)
        )


def tracker_overrides(tracker: str, *, strict: bool, tick_ms: int) -> dict[str, str]:
    """``--set`` values that select ``tracker`` with the given strictness and tick."""
    return {
        "delayedDeliveryEnabled": "true",
        "delayedDeliveryTrackerFactoryClassName": tracker,
        "isDelayedDeliveryDeliverAtTimeStrict": "true" if strict else "false",
        "delayedDeliveryTickTimeMillis": str(tick_ms),
    }


class DelayedBench:
    """The tracker factory of ``profile`` with dispatchers that read when woken.

    ``delays_messages=False`` is for a factory that switches delayed delivery off: its refusals
    are then not counted as early deliveries.
    """

    def __init__(
        self, host: PluginHost, profile: Profile, seed: int = 0, *, delays_messages: bool = True
    ) -> None:
        name = (
            str(profile.get("delayedDeliveryTrackerFactoryClassName"))
            if profile.get("delayedDeliveryEnabled")
            else "disabled"
        )
        self.record: DelayedDeliveryTrackerFactoryRecord = host.select(
            "delayed_delivery", name, key="delayedDeliveryTrackerFactoryClassName"
        ).record
        self.context, self.loop = build_context(host, profile, seed)
        self.factory: DelayedDeliveryTrackerFactory = self.record.factory(self.context)
        self.tick_ms = int(profile.get("delayedDeliveryTickTimeMillis"))
        strict = bool(profile.get("isDelayedDeliveryDeliverAtTimeStrict"))
        self.log = DeliveryLog(self.tick_ms, strict, refusals_are_early=delays_messages)
        self.trackers: dict[Subscription, DelayedDeliveryTracker] = {}
        self.marks: dict[Subscription, Position] = {}
        self.wakes: Counter[Subscription] = Counter()

    def now_ms(self) -> int:
        return self.loop.now_ms()

    def subscribe(self, sub: Subscription) -> DelayedDeliveryTracker:
        """The tracker of ``sub``, created on first use with a waking dispatcher."""
        tracker = self.trackers.get(sub)
        if tracker is None:

            def wake() -> None:
                self.wakes[sub] += 1
                self.loop.call_at(self.loop.now_ns(), lambda: self.dispatch(sub))

            tracker = self.trackers[sub] = self.factory.new_tracker(sub[0], sub[1], wake)
        return tracker

    def add(self, sub: Subscription, position: Position, delay_ms: int) -> bool:
        deliver_at = self.now_ms() + delay_ms
        held = self.subscribe(sub).add_message(position[0], position[1], deliver_at)
        self.log.added(sub, position, deliver_at, self.now_ms(), held)
        return held

    def dispatch(self, sub: Subscription, limit: int = 100) -> None:
        """What a woken dispatcher does: read what is available until nothing is."""
        tracker = self.subscribe(sub)
        while tracker.has_message_available():
            due = tracker.get_scheduled_messages(limit)
            self.log.handed_back(sub, due, self.now_ms(), limit)
            if not due:
                break

    def read(self, sub: Subscription, limit: int) -> list[Position]:
        """A read for another reason (flow permits): ask for due messages directly."""
        due = self.subscribe(sub).get_scheduled_messages(limit)
        self.log.handed_back(sub, due, self.now_ms(), limit)
        return due

    def mark_delete(self, sub: Subscription, position: Position) -> None:
        """Move ``sub``'s mark-delete forward (never back) and tell its tracker."""
        if sub not in self.marks or position > self.marks[sub]:
            self.marks[sub] = position
            self.subscribe(sub).mark_delete_moved(position)

    def advance(self, ms: int) -> None:
        self.loop.run_until(self.loop.now_ns() + ms * MS)

    def close(self) -> None:
        for tracker in self.trackers.values():
            tracker.close()
        self.factory.close()


def _strict_bench(
    host: PluginHost, profile: Profile, tracker: str, delays_messages: bool
) -> DelayedBench:
    """A bench of ``tracker`` in strict mode with a 100 ms tick (the fixed scenarios' setting)."""
    strict = profile.with_overrides(tracker_overrides(tracker, strict=True, tick_ms=100))
    return DelayedBench(host, strict, delays_messages=delays_messages)


def play_fixed_scenario(bench: DelayedBench) -> None:
    """Two subscriptions of one topic; five messages, due 150-154 ms apart from now, added to
    the first only; both read every 25 ms for 400 ms. Raises AssertionError on an early,
    duplicate or foreign hand-back, or when a message is never delivered."""
    a, b = ("t", "a"), ("t", "b")
    bench.subscribe(b)
    for e in range(5):
        bench.add(a, (1, e), 150 + e)
    for _ in range(16):
        bench.advance(25)
        bench.read(a, 100)
        bench.read(b, 100)
    assert bench.log.undelivered(a, None) == [], "messages never delivered"


_SUBS: tuple[Subscription, ...] = (("t0", "s0"), ("t0", "s1"), ("t1", "s0"), ("t1", "s1"))
_OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"),
            st.integers(0, 3),
            st.integers(1, 3),
            st.integers(0, 12),
            st.integers(-5, 3000),
        ),
        st.tuples(st.just("read"), st.integers(0, 3), st.integers(1, 6)),
        st.tuples(st.just("advance"), st.integers(0, 1200)),
        st.tuples(st.just("md"), st.integers(0, 3), st.integers(1, 3), st.integers(0, 12)),
    ),
    max_size=60,
)


_LIMITED_READ_LEAVES_A_DUE_BUCKET: list[tuple[Any, ...]] = [
    ("add", 0, 1, 0, 513),
    ("advance", 1226),
    ("add", 0, 1, 1, 1),
    ("advance", 310),
    ("read", 0, 1),
]

_MARK_DELETE_JUST_BEFORE_HELD_MESSAGES: list[tuple[Any, ...]] = [
    ("add", 0, 1, 2, 500),
    ("add", 0, 1, 3, 500),
    ("add", 0, 1, 4, 700),
    ("md", 0, 1, 2),
]
"""The mark-delete moves onto one held message, just before two others: a tracker may forget
(1, 2) but must still deliver (1, 3) and (1, 4), which are not acknowledged."""


class DelayedDeliveryContract:
    """What every delayed-delivery tracker factory must do. Subclass it and name your record::

        class TestMyTracker(DelayedDeliveryContract):
            @pytest.fixture
            def delayed_delivery_tracker_factory(self) -> str:
                return "my-tracker"

    Override the ``delays_messages`` fixture to return ``False`` for a baseline that switches
    delayed delivery off: the suite then checks that it holds nothing.
    """

    examples: ClassVar[int] = 60

    @pytest.fixture
    def delayed_delivery_tracker_factory(self) -> str:
        """The name (or alias) of the tracker-factory record under test (override this)."""
        pytest.fail(
            "override the 'delayed_delivery_tracker_factory' fixture to name the record under test"
        )

    @pytest.fixture
    def delays_messages(self) -> bool:
        """Whether the factory holds messages back at all (``False``: delivery switched off)."""
        return True

    def test_never_early_once_per_subscription_and_isolated(
        self,
        brokerlab_host: PluginHost,
        brokerlab_profile: Profile,
        delayed_delivery_tracker_factory: str,
        delays_messages: bool,
    ) -> None:
        """Random adds, reads, mark-delete moves and time on two topics with two subscriptions
        each. Every hand-back is checked by :class:`DeliveryLog`; at the end, driven by its own
        wake-ups and one catch-up read per dispatcher (a message due when the timer was last
        updated waits for the dispatcher's next read, as in Pulsar), every subscription has
        received every message after its mark-delete and the trackers hold nothing."""
        name = delayed_delivery_tracker_factory

        @examples(self.examples)
        @given(tick=st.sampled_from([1, 10, 100, 1000]), strict=st.booleans(), ops=_OPS)
        # A read limited to one message leaves a due bucket behind with no timer armed.
        @example(tick=1000, strict=True, ops=_LIMITED_READ_LEAVES_A_DUE_BUCKET)
        # mark_delete_moved(p) covers p and what is before it, nothing after.
        @example(tick=100, strict=False, ops=_MARK_DELETE_JUST_BEFORE_HELD_MESSAGES)
        def check(tick: int, strict: bool, ops: list[tuple[Any, ...]]) -> None:
            profile = brokerlab_profile.with_overrides(
                tracker_overrides(name, strict=strict, tick_ms=tick)
            )
            bench = DelayedBench(brokerlab_host, profile, delays_messages=delays_messages)
            for sub in _SUBS:
                bench.subscribe(sub)
            for op in ops:
                if op[0] == "add":
                    held = bench.add(_SUBS[op[1]], (op[2], op[3]), op[4])
                    assert delays_messages or not held, "a switched-off tracker held a message"
                elif op[0] == "read":
                    bench.read(_SUBS[op[1]], op[2])
                elif op[0] == "advance":
                    bench.advance(op[1])
                else:
                    bench.mark_delete(_SUBS[op[1]], (op[2], op[3]))
            bench.advance(3000 + 3 * tick + 1000)
            # The consumers catch up: each dispatcher reads once more. Pulsar arms no timer for a
            # bucket that is already due when the timer is updated (after a read that stopped at
            # its permit limit, say) and relies on the dispatcher's next read; then any later
            # bucket is the timer's again.
            for sub in _SUBS:
                bench.dispatch(sub)
            bench.advance(3000 + 3 * tick + 1000)
            for sub, tracker in bench.trackers.items():
                missing = bench.log.undelivered(sub, bench.marks.get(sub))
                assert missing == [], f"{sub} never got {missing} (woken {bench.wakes[sub]} times)"
                assert tracker.number_of_delayed_messages() == 0, f"{sub} still holds messages"
                assert not tracker.has_message_available()
            check_stats(bench.factory.stats(), "the tracker factory")
            bench.close()

        check()

    def test_wakes_its_dispatcher_when_messages_come_due(
        self,
        brokerlab_host: PluginHost,
        brokerlab_profile: Profile,
        delayed_delivery_tracker_factory: str,
        delays_messages: bool,
    ) -> None:
        """With no read but those its own ``wake`` calls start, every held message is delivered
        once due: the tracker arms a timer (or otherwise wakes the dispatcher) for what it holds.
        The other tests read on their own as well, so they would not notice a silent tracker."""
        bench = _strict_bench(
            brokerlab_host, brokerlab_profile, delayed_delivery_tracker_factory, delays_messages
        )
        sub = ("t", "a")
        delays = (150, 151, 400, 1000, 1001)
        held = [bench.add(sub, (1, entry), delay) for entry, delay in enumerate(delays)]
        assert all(held) if delays_messages else not any(held)
        bench.advance(max(delays) + 2 * bench.tick_ms + 1000)
        missing = bench.log.undelivered(sub, None)
        assert missing == [], f"never delivered {missing}: woken {bench.wakes[sub]} times"
        bench.close()

    def test_fixed_scenario_in_strict_mode(
        self,
        brokerlab_host: PluginHost,
        brokerlab_profile: Profile,
        delayed_delivery_tracker_factory: str,
        delays_messages: bool,
    ) -> None:
        """A fixed two-subscription scenario with reads every 25 ms (no early, duplicate or
        foreign hand-backs); a switched-off factory instead holds nothing."""
        bench = _strict_bench(
            brokerlab_host, brokerlab_profile, delayed_delivery_tracker_factory, delays_messages
        )
        if delays_messages:
            play_fixed_scenario(bench)
        else:
            tracker = bench.subscribe(("t", "a"))
            assert not tracker.add_message(1, 0, bench.now_ms() + 1000)
            assert not tracker.has_message_available()
            assert tracker.number_of_delayed_messages() == 0
            assert tracker.get_scheduled_messages(10) == []
        check_stats(bench.factory.stats(), "the tracker factory")
        bench.close()

    def test_runs_deterministically_in_a_simulation(
        self, simulate: Simulate, delayed_delivery_tracker_factory: str
    ) -> None:
        """The broker runs with this tracker: same seed, same result; no invariant broken."""
        check_simulation(
            simulate,
            {
                "delayedDeliveryEnabled": "true",
                "delayedDeliveryTrackerFactoryClassName": delayed_delivery_tracker_factory,
            },
        )
