"""The legacy ``InMemoryDelayedDeliveryTracker`` plugin: scenarios 1-16 of delayed-delivery.md §6.

Under PIP-448's normative contract (§0.2) the same scenarios must hold for the topic-level plugin
with one subscription, so every scenario runs against both (``kind``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from brokerlab import load_profile
from brokerlab.protocols import DelayedDeliveryTracker
from brokerlab_plugins.legacy_delayed_delivery.buckets import Bucketing
from brokerlab_plugins.legacy_delayed_delivery.index import BucketIndex
from brokerlab_plugins.legacy_delayed_delivery.sizing import PORTABLE
from brokerlab_plugins.legacy_delayed_delivery.timer import DeliveryTimer, Wheel
from brokerlab_plugins.legacy_delayed_delivery.tracker import LegacyFactory, TrackerConfig
from brokerlab_plugins.pip448_delayed_delivery.factory import TopicFactory
from brokerlab_plugins.pip448_delayed_delivery.manager import PruneRules

NS = 1_000_000


@dataclass
class Task:
    when_ns: int
    callback: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True

    @property
    def at_ms(self) -> int:
        return self.when_ns // NS


@dataclass
class FakeTime:
    """A mocked clock (ms, with ns = ms * 1e6) and a scheduler whose tasks tests can inspect."""

    ms: int = 0
    scheduled: list[Task] = field(default_factory=list)

    def now_ms(self) -> int:
        return self.ms

    def now_ns(self) -> int:
        return self.ms * NS

    def call_at(self, when_ns: int, callback: Callable[[], None]) -> Task:
        task = Task(max(when_ns, self.now_ns()), callback)
        self.scheduled.append(task)
        return task

    def tasks(self) -> list[Task]:
        return [t for t in self.scheduled if not t.cancelled]

    def set(self, ms: int) -> None:
        """Move the clock without running anything."""
        self.ms = ms

    def advance(self, ms: int) -> None:
        """Move the clock to ``ms``, running due tasks in time order (as the event loop does)."""
        while True:
            due = [t for t in self.tasks() if t.when_ns <= ms * NS]
            if not due:
                break
            task = min(due, key=lambda t: t.when_ns)
            self.ms = max(self.ms, task.at_ms)
            task.cancelled = True
            task.callback()
        self.ms = ms

    def run_due(self) -> None:
        self.advance(self.ms)


@dataclass
class Wakes:
    count: int = 0

    def __call__(self) -> None:
        self.count += 1


def config(
    time: FakeTime, tick: int, strict: bool, lookahead: int = 0, **kw: bool
) -> TrackerConfig:
    wheel = Wheel(0, tick) if kw.pop("wheel", False) else None
    return TrackerConfig(time, time, tick, strict, lookahead, wheel=wheel, **kw)


def make(
    kind: str, time: FakeTime, tick: int, strict: bool, lookahead: int = 0, **kw: bool
) -> tuple[DelayedDeliveryTracker, Wakes]:
    """A tracker of ``kind``: the legacy one, or PIP-448 with a single subscription."""
    wakes = Wakes()
    cfg = config(time, tick, strict, lookahead, **kw)
    factory: LegacyFactory | TopicFactory
    if kind == "legacy":
        factory = LegacyFactory(cfg)
    else:
        factory = TopicFactory(cfg, PruneRules(tick, 0, 0.5), 0)
    return factory.new_tracker("t", "s", wakes), wakes


def timer_of(tracker: object) -> DeliveryTimer:
    view = getattr(tracker, "view", tracker)
    timer = getattr(view, "timer", None)
    assert isinstance(timer, DeliveryTimer)
    return timer


KINDS = pytest.mark.parametrize("kind", ["legacy", "pip448"])


# ---- building blocks ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tick", "precision"),
    [(1, 1), (8, 8), (100, 64), (256, 256), (500, 256), (1000, 512), (1024, 1024)],
)
def test_precision_is_largest_power_of_two_at_most_tick(tick: int, precision: int) -> None:
    assert Bucketing.for_tick(tick, False).precision == precision


def test_strict_rounds_up_and_previous_rule_rounds_down() -> None:
    assert Bucketing.for_tick(1000, True).bucket(10001) == 10240
    assert Bucketing.for_tick(1000, False).bucket(10001) == 9728
    assert Bucketing.for_tick(1000, True, previous_rule=True).bucket(10001) == 9728


def test_portable_size_model_matches_pyroaring_serialization() -> None:
    index = BucketIndex()
    for entry in [1, 5, 70_000, 70_001, 3]:
        index.add(0, 7, entry)
    bitmap = index.bitmap(0, 7)
    assert bitmap is not None
    assert index.pulsar_bytes == PORTABLE.size(bitmap) == len(bitmap.serialize())


def test_previous_rounding_rule_delivers_early_in_strict_mode() -> None:
    """Issue #25996: the old rule rounds down, so strict mode hands out up to precision-1 early."""
    time = FakeTime(ms=0)
    cfg = config(time, 1000, True, old_rule=True)
    old = LegacyFactory(cfg).new_tracker("t", "s", Wakes())
    new = LegacyFactory(config(time, 1000, True)).new_tracker("t", "s", Wakes())
    for t in (old, new):
        assert t.add_message(1, 1, 10_001)
    time.set(9_728)
    assert old.get_scheduled_messages(10) == [(1, 1)]  # 273 ms early
    assert new.get_scheduled_messages(10) == []


# ---- spec scenarios 1-16 -----------------------------------------------------------------------


@KINDS
def test_scenario_01_basic(kind: str) -> None:
    time = FakeTime(ms=0)
    t, _ = make(kind, time, 1, False)
    for ledger, entry, at in [(1, 2, 20), (2, 1, 10), (3, 3, 30), (4, 5, 50), (5, 4, 40)]:
        assert t.add_message(ledger, entry, at)
    assert not t.has_message_available()
    assert t.number_of_delayed_messages() == 5
    assert t.get_scheduled_messages(10) == []
    time.set(15)
    assert not t.add_message(6, 6, 10)
    assert t.number_of_delayed_messages() == 5
    assert t.has_message_available()
    assert len(t.get_scheduled_messages(10)) == 1
    time.set(60)
    assert t.number_of_delayed_messages() == 4
    assert len(t.get_scheduled_messages(1)) == 1
    assert t.number_of_delayed_messages() == 3
    assert len(t.get_scheduled_messages(3)) == 3
    assert t.number_of_delayed_messages() == 0
    assert not t.has_message_available()
    assert t.get_scheduled_messages(10) == []


@KINDS
def test_scenario_02_with_timer(kind: str) -> None:
    time = FakeTime(ms=0)
    t, wakes = make(kind, time, 1, False)
    t.add_message(2, 2, 20)
    assert [task.at_ms for task in time.tasks()] == [20]
    t.add_message(1, 1, 10)
    assert [task.at_ms for task in time.tasks()] == [10]
    t.add_message(3, 3, 30)
    assert [task.at_ms for task in time.tasks()] == [10]
    time.set(15)
    timer_of(t).run(None)  # a cancelled Timeout runs nothing
    assert wakes.count == 0
    time.run_due()
    assert wakes.count == 1


@KINDS
def test_scenario_03_add_within_tick_time(kind: str) -> None:
    time = FakeTime(ms=0)
    t, _ = make(kind, time, 100, False)
    assert [t.add_message(1, i, at) for i, at in enumerate([10, 99, 100, 101, 200])] == [
        False,
        False,
        False,
        True,
        True,
    ]
    assert t.number_of_delayed_messages() == 2


@KINDS
def test_scenario_04_add_message_with_strict_delay(kind: str) -> None:
    time = FakeTime(ms=10)
    t, _ = make(kind, time, 1, True)
    assert [t.add_message(1, i, at) for i, at in enumerate([9, 10, 11])] == [False, False, True]
    assert t.number_of_delayed_messages() == 1
    assert not t.has_message_available()


@KINDS
def test_scenario_05_tick_throttling(kind: str) -> None:
    time = FakeTime(ms=10_000)
    t, wakes = make(kind, time, 1000, True, wheel=True)
    timer_of(t).run(object())  # one run(): lastTickRun = 10000, one read
    assert wakes.count == 1
    assert t.add_message(1, 1, 10_001)  # bucket 10240, delay 240, but one tick since last run
    time.advance(10_600)
    assert wakes.count == 1
    time.advance(11_000)
    assert wakes.count == 2


@KINDS
def test_scenario_06_no_recent_tick(kind: str) -> None:
    time = FakeTime(ms=500_000)
    t, wakes = make(kind, time, 1, True)
    t.add_message(1, 1, 500_005)
    assert [task.at_ms for task in time.tasks()] == [500_005]
    time.advance(500_005)
    assert wakes.count == 1


@KINDS
def test_scenario_07_full_tick(kind: str) -> None:
    time = FakeTime(ms=0)
    t, wakes = make(kind, time, 500, True)
    t.add_message(1, 1, 2000)  # precision 256: bucket 2048
    assert [task.at_ms for task in time.tasks()] == [2048]
    time.advance(2047)
    assert wakes.count == 0
    time.advance(2048)
    assert wakes.count == 1


def _fixed_delays(t: DelayedDeliveryTracker, upto: int) -> None:
    for i in range(1, upto + 1):
        assert t.add_message(i, i, i * 10)


@KINDS
def test_scenario_08_with_fixed_delays(kind: str) -> None:
    time = FakeTime(ms=0)
    t, _ = make(kind, time, 8, True, 100)
    _fixed_delays(t, 5)
    assert not t.should_pause_all_deliveries()
    for i in range(6, 101):
        t.add_message(i, i, i * 10)
    assert t.should_pause_all_deliveries()
    time.set(1000)
    assert len(t.get_scheduled_messages(100)) == 100
    assert not t.should_pause_all_deliveries()
    assert t.get_scheduled_messages(100) == []


@KINDS
@pytest.mark.parametrize("lookahead", ["0", "-1", "-9223372036854775808"])
def test_a_lookahead_of_zero_or_less_never_pauses(kind: str, lookahead: str) -> None:
    """``delayedDeliveryFixedDelayDetectionLookahead`` is a long with no minimum (apache/pulsar
    ``ServiceConfiguration.java`` at 06ea0be755459d9186e0f54b098e7ecc9ed7f8d6), and
    ``shouldPauseAllDeliveries()`` wants ``fixedDelayDetectionLookahead > 0`` (spec
    delayed-delivery.md §3.9): scenario 8's fixed delays never pause at 0 or less."""
    key = "delayedDeliveryFixedDelayDetectionLookahead"
    settings = load_profile(None, [f"{key}={lookahead}"]).settings
    time = FakeTime(ms=0)
    t, _ = make(kind, time, 8, True, settings.delayed_delivery_fixed_delay_detection_lookahead)
    _fixed_delays(t, 100)
    assert not t.should_pause_all_deliveries()


@KINDS
def test_scenario_09_with_mixed_delays(kind: str) -> None:
    time = FakeTime(ms=0)
    t, _ = make(kind, time, 8, True, 100)
    _fixed_delays(t, 100)
    assert t.should_pause_all_deliveries()
    assert t.add_message(5, 6, 5)  # out of order by more than a tick
    assert not t.should_pause_all_deliveries()


@KINDS
def test_scenario_10_with_no_delays(kind: str) -> None:
    time = FakeTime(ms=0)
    t, _ = make(kind, time, 8, True, 100)
    _fixed_delays(t, 100)
    assert t.should_pause_all_deliveries()
    assert not t.add_message(5, 6, -1)
    assert not t.should_pause_all_deliveries()


@KINDS
def test_scenario_11_delay_sequence(kind: str) -> None:
    time = FakeTime(ms=0)
    t, _ = make(kind, time, 1, True)
    for i in range(1, 6):
        t.add_message(i, i, 1)
    time.set(10)
    assert t.has_message_available()
    assert t.number_of_delayed_messages() == 5
    assert [t.get_scheduled_messages(1) for _ in range(5)] == [[(i, i)] for i in range(1, 6)]


@KINDS
def test_scenario_12_strict_mode_never_delivers_early_and_keeps_timer_armed(kind: str) -> None:
    time = FakeTime(ms=0)
    t, wakes = make(kind, time, 1000, True)
    t.add_message(1, 1, 60_400)
    t.add_message(2, 2, 61_000)
    assert [task.at_ms for task in time.tasks()] == [60_416]
    time.set(60_000)
    assert not t.has_message_available()
    assert t.get_scheduled_messages(100) == []
    assert [task.at_ms for task in time.tasks()] == [60_416]
    time.advance(60_416)
    assert wakes.count == 1
    assert t.get_scheduled_messages(100) == [(1, 1)]
    assert t.number_of_delayed_messages() == 1
    assert not t.has_message_available()
    assert [task.at_ms for task in time.tasks()] == [61_440]
    time.advance(61_440)
    assert t.get_scheduled_messages(100) == [(2, 2)]
    assert t.number_of_delayed_messages() == 0


@KINDS
def test_scenario_13_stale_timer_trigger_does_not_clear_newer_timer(kind: str) -> None:
    time = FakeTime(ms=0)
    t, wakes = make(kind, time, 1000, True)
    t.add_message(2, 2, 61_000)
    assert [task.at_ms for task in time.tasks()] == [61_440]
    t.add_message(1, 1, 60_400)
    assert [task.at_ms for task in time.tasks()] == [60_416]
    timer = timer_of(t)
    timer.run(object())  # a stale, uncancelled firing: asks for a read, keeps the armed timer
    assert wakes.count == 1
    assert timer.target == 60_416
    assert not t.has_message_available()
    assert [task.at_ms for task in time.tasks()] == [60_416]
    assert timer.scheduled == 2
    time.advance(60_416)
    assert t.get_scheduled_messages(100) == [(1, 1)]
    assert timer.target == 61_440


@KINDS
def test_scenario_14_add_multiple_messages_same_window(kind: str) -> None:
    time = FakeTime(ms=0)
    t, _ = make(kind, time, 1, True)
    for _ in range(3):
        assert t.add_message(1, 1, 50)
    assert t.number_of_delayed_messages() == 1
    time.set(60)
    assert t.get_scheduled_messages(10) == [(1, 1)]


@KINDS
def test_scenario_15_max_messages_smaller_than_bucket(kind: str) -> None:
    time = FakeTime(ms=0)
    t, _ = make(kind, time, 1, True)
    for pos in [(1, 0), (1, 1)] + [(2, e) for e in range(5)]:
        t.add_message(*pos, 10)
    assert t.number_of_delayed_messages() == 7
    time.set(10)
    assert t.get_scheduled_messages(4) == [(1, 0), (1, 1), (2, 0), (2, 1)]
    assert t.number_of_delayed_messages() == 3
    assert t.get_scheduled_messages(2) == [(2, 2), (2, 3)]
    assert t.number_of_delayed_messages() == 1
    assert t.get_scheduled_messages(10) == [(2, 4)]
    assert t.number_of_delayed_messages() == 0
    assert not t.has_message_available()


@KINDS
def test_scenario_16_close(kind: str) -> None:
    time = FakeTime(ms=0)
    t, _ = make(kind, time, 1, True, wheel=True)
    t.add_message(1, 1, 5)
    timer = timer_of(t)
    t.close()
    assert time.tasks() == []
    timer.run(object())  # a run() racing with close must not throw
    time.advance(100)
