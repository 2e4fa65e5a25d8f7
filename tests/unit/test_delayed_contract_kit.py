"""The delayed-delivery contract kit catches a tracker that never wakes its dispatcher."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from brokerlab import DelayedDeliveryTrackerFactoryRecord, hookimpl, load_profile
from brokerlab.host import PluginHost
from brokerlab.protocols import DelayedDeliveryTracker, DelayedDeliveryTrackerFactory
from brokerlab.testing.delayed_delivery import DelayedDeliveryContract


class SilentFactory:
    """The legacy tracker with its dispatcher's wake-up cut off: it holds and hands back
    messages correctly, but only when someone else reads."""

    def __init__(self, inner: DelayedDeliveryTrackerFactory) -> None:
        self.inner = inner

    def new_tracker(
        self, topic: str, subscription: str, wake: Callable[[], None]
    ) -> DelayedDeliveryTracker:
        return self.inner.new_tracker(topic, subscription, lambda: None)

    def stats(self) -> Mapping[str, float]:
        return self.inner.stats()

    def close(self) -> None:
        self.inner.close()


class SilentPlugin:
    def __init__(self, legacy: DelayedDeliveryTrackerFactoryRecord) -> None:
        self.legacy = legacy

    @hookimpl
    def brokerlab_delayed_delivery_tracker_factories(
        self,
    ) -> Iterator[DelayedDeliveryTrackerFactoryRecord]:
        legacy = self.legacy
        yield DelayedDeliveryTrackerFactoryRecord(
            name="silent",
            description="never wakes its dispatcher",
            factory=lambda context: SilentFactory(legacy.factory(context)),
        )


def run_wake_test(name: str) -> None:
    legacy = PluginHost().select("delayed_delivery", "in-memory").record
    host = PluginHost(plugins={"silent": SilentPlugin(legacy)})
    profile = load_profile(None, ["delayedDeliveryEnabled=true"], host=host)
    contract: Any = DelayedDeliveryContract()
    contract.test_wakes_its_dispatcher_when_messages_come_due(
        brokerlab_host=host,
        brokerlab_profile=profile,
        delayed_delivery_tracker_factory=name,
        delays_messages=True,
    )


def test_the_kit_passes_the_legacy_tracker() -> None:
    run_wake_test("in-memory")


def test_the_kit_fails_a_tracker_that_never_wakes_its_dispatcher() -> None:
    with pytest.raises(AssertionError, match=r"never delivered \[.*woken 0 times"):
        run_wake_test("silent")
