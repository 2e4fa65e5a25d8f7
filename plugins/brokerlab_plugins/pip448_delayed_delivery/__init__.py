"""PIP-448's topic-level delayed-delivery tracker: one shared index per topic.

Selected with ``delayedDeliveryTrackerFactoryClassName=topic-level`` or the Pulsar class name
``org.apache.pulsar.broker.delayed.InMemoryTopicDelayedDeliveryTrackerFactory``. By default it keeps
the semantics PIP-448 promises (every subscription sees what its own legacy tracker would show);
``sim.pip448.draftSemantics=true`` reproduces the draft implementation and its divergences.
"""

from __future__ import annotations

from collections.abc import Iterator

from brokerlab import DelayedDeliveryTrackerFactoryRecord, Metric, SettingsRecord, hookimpl
from brokerlab_plugins.pip448_delayed_delivery.factory import TopicFactory
from brokerlab_plugins.pip448_delayed_delivery.metrics import METRICS
from brokerlab_plugins.pip448_delayed_delivery.settings import Pip448Settings

__all__ = ["TOPIC_CLASS", "TopicFactory"]

TOPIC_CLASS = "org.apache.pulsar.broker.delayed.InMemoryTopicDelayedDeliveryTrackerFactory"


@hookimpl
def brokerlab_delayed_delivery_tracker_factories() -> Iterator[DelayedDeliveryTrackerFactoryRecord]:
    yield DelayedDeliveryTrackerFactoryRecord(
        name="topic-level",
        aliases=(TOPIC_CLASS,),
        description="PIP-448: one shared index per topic, light per-subscription views",
        factory=TopicFactory.from_context,
    )


@hookimpl
def brokerlab_settings() -> Iterator[SettingsRecord]:
    yield SettingsRecord(
        namespace="pip448",
        model=Pip448Settings,
        read_by=(("delayed_delivery", "topic-level"),),
        description="PIP-448 topic-level delayed-delivery tracker",
    )


@hookimpl
def brokerlab_metrics() -> Iterator[Metric]:
    yield from METRICS
