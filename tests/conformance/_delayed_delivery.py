"""Shared fixtures of the delayed-delivery conformance modules: a mocked clock and timer, and
trackers built from a ready profile the way the simulation builds them (``from_context``).

The upstream tests mock ``Clock`` and Netty's ``Timer``; :class:`FakeTime` is both, and keeps
the scheduled tasks visible so a test can check when a timer is armed, as the Java tests inspect
their ``tasks`` map. Each scenario overrides only what the upstream test passes to the tracker's
constructor (tick, strict flag, lookahead); everything else comes from the profile.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from _conformance import ROOT
from delayed_support import FakeTime, Wakes

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
