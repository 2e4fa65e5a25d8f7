"""Shared fixtures of the delayed-delivery conformance modules: a mocked clock and timer, and
trackers built from a ready profile the way the simulation builds them (``from_context``).

The upstream tests mock ``Clock`` and Netty's ``Timer``; :class:`FakeTime` is both, and keeps
the scheduled tasks visible so a test can check when a timer is armed, as the Java tests inspect
their ``tasks`` map. Each scenario overrides only what the upstream test passes to the tracker's
constructor (tick, strict flag, lookahead); everything else comes from the profile.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from _conformance import ROOT

import brokerlab
from brokerlab.profiles.loader import Profile
from brokerlab.protocols import DelayedDeliveryTracker, PluginContext
from brokerlab_plugins.legacy_delayed_delivery.timer import DeliveryTimer
from brokerlab_plugins.legacy_delayed_delivery.tracker import LegacyFactory
from brokerlab_plugins.pip448_delayed_delivery.factory import TopicFactory

NS = 1_000_000

PIP448_PROFILE = "pip448-topic-tracker"


@functools.cache
def profile_named(name: str) -> Profile:
    """A ready profile by name (``profiles/<name>.conf``), loaded in strict mode once."""
    return brokerlab.load_profile(ROOT / "profiles" / f"{name}.conf", mode="strict")


@dataclass
class Task:
    """One scheduled timer callback; cancelling it takes it off the visible task list."""

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
    """A mocked clock (``now_ns`` = ``now_ms`` x 1e6) and a scheduler whose tasks are visible."""

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
        """The live (armed, not cancelled, not yet run) tasks."""
        return [t for t in self.scheduled if not t.cancelled]

    def fire_times(self) -> list[int]:
        """When each live task fires, in ms, in time order."""
        return sorted(t.at_ms for t in self.tasks())

    def set(self, ms: int) -> None:
        """Move the clock without running anything (``clockTime.set`` in the Java tests)."""
        self.ms = ms

    def advance(self, ms: int) -> None:
        """Move the clock to ``ms``, running due tasks in time order as the event loop does."""
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
    """A dispatcher's ``readMoreEntriesAsync``: counts how often the tracker asked for a read."""

    count: int = 0

    def __call__(self) -> None:
        self.count += 1


def context(
    profile: Profile,
    time: FakeTime,
    *,
    tick: int | None = None,
    strict: bool | None = None,
    lookahead: int | None = None,
    wheel: bool = False,
    **plugin: Any,
) -> PluginContext:
    """The plugin context of ``profile`` on ``time``, with the constructor arguments of one
    upstream test (tick, strict, lookahead) and the timer wheel switched as the test needs:
    off (exact times) where upstream mocks the timer, on where it runs a real wheel."""
    updates: dict[str, Any] = {}
    if tick is not None:
        updates["delayed_delivery_tick_time_millis"] = tick
    if strict is not None:
        updates["is_delayed_delivery_deliver_at_time_strict"] = strict
    if lookahead is not None:
        updates["delayed_delivery_fixed_delay_detection_lookahead"] = lookahead
    own = dict(profile.plugin_settings)
    own["legacyDelayed"] = own["legacyDelayed"].model_copy(update={"timer_wheel": wheel})
    own["pip448"] = own["pip448"].model_copy(update={"timer_wheel": wheel, **plugin})
    return PluginContext(
        settings=profile.settings.model_copy(update=updates),
        clock=time,
        scheduler=time,
        rng=np.random.default_rng(0),
        plugin_settings=own,
    )


def factory_of(ctx: PluginContext) -> LegacyFactory | TopicFactory:
    """The factory the profile selects, built as the simulation builds it."""
    name = str(ctx.settings.delayed_delivery_tracker_factory_class_name)
    if name.endswith("InMemoryTopicDelayedDeliveryTrackerFactory"):
        return TopicFactory.from_context(ctx)
    assert name.endswith("InMemoryDelayedDeliveryTrackerFactory"), name
    return LegacyFactory.from_context(ctx)


def tracker(
    profile: Profile, time: FakeTime, **options: Any
) -> tuple[DelayedDeliveryTracker, Wakes]:
    """One subscription's tracker from ``profile``'s factory, and its dispatcher's read count."""
    wakes = Wakes()
    return factory_of(context(profile, time, **options)).new_tracker("t", "s", wakes), wakes


def timer_of(t: object) -> DeliveryTimer:
    """The delivery timer behind a legacy tracker or a PIP-448 subscription's view."""
    view = getattr(t, "view", t)
    timer = getattr(view, "timer", None)
    assert isinstance(timer, DeliveryTimer)
    return timer
