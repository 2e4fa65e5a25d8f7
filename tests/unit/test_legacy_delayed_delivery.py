"""The legacy ``InMemoryDelayedDeliveryTracker`` plugin's building blocks, and the mocked clock and
timer the PIP-448 unit tests share.

Scenarios 1-16 of delayed-delivery.md §6 (upstream ``AbstractDeliveryTrackerTest`` and
``InMemoryDeliveryTrackerTest``) live in ``tests/conformance``, run against both plugins.
"""

from __future__ import annotations

import pytest
from delayed_support import FakeTime, Wakes

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
    for i in range(1, 101):  # 100 messages, each delayed by 10 ms more than the last
        assert t.add_message(i, i, i * 10)
    assert not t.should_pause_all_deliveries()
