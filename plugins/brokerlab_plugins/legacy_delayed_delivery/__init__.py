"""Pulsar's legacy per-subscription delayed-delivery tracker (``InMemoryDelayedDeliveryTracker``).

Selected with ``delayedDeliveryTrackerFactoryClassName=in-memory`` or the Pulsar class name. The
bucketing, index, memory models and timer modules here are shared with the PIP-448 plugin.
"""

from __future__ import annotations

from collections.abc import Iterator

from brokerlab import DelayedDeliveryTrackerFactoryRecord, SettingsRecord, hookimpl
from brokerlab_plugins.legacy_delayed_delivery.settings import LegacyDelayedSettings
from brokerlab_plugins.legacy_delayed_delivery.tracker import LegacyFactory

__all__ = ["LEGACY_CLASS", "LegacyFactory"]

LEGACY_CLASS = "org.apache.pulsar.broker.delayed.InMemoryDelayedDeliveryTrackerFactory"


@hookimpl
def brokerlab_delayed_delivery_tracker_factories() -> Iterator[DelayedDeliveryTrackerFactoryRecord]:
    yield DelayedDeliveryTrackerFactoryRecord(
        name="in-memory",
        aliases=(LEGACY_CLASS,),
        description="One bucketed Roaring-bitmap index per subscription (Pulsar's legacy tracker)",
        factory=LegacyFactory.from_context,
    )


@hookimpl
def brokerlab_settings() -> Iterator[SettingsRecord]:
    yield SettingsRecord(
        namespace="legacyDelayed",
        model=LegacyDelayedSettings,
        read_by=(("delayed_delivery", "in-memory"),),
        description="Legacy delayed-delivery tracker",
    )
