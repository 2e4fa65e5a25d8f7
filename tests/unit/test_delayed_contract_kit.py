"""The delayed-delivery contract kit catches a tracker that never wakes its dispatcher, one that
forgets a message after the mark-delete position and one that hands back more than asked."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

import pytest

from brokerlab import DelayedDeliveryTrackerFactoryRecord, hookimpl, load_profile
from brokerlab.host import PluginHost
from brokerlab.protocols import DelayedDeliveryTracker, DelayedDeliveryTrackerFactory, Position
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


class Wrapped:
    """A tracker that passes everything to ``inner`` but what a subclass overrides."""

    def __init__(self, inner: DelayedDeliveryTracker) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class MarkDeleteOneTooFar(Wrapped):
    """Told the mark-delete one entry too far: forgets the first message after the real
    mark-delete position, which is not acknowledged."""

    def mark_delete_moved(self, position: Position) -> None:
        self.inner.mark_delete_moved((position[0], position[1] + 1))


class Unbounded(Wrapped):
    """Hands back every due message whatever the limit."""

    def get_scheduled_messages(self, max_messages: int) -> list[Position]:
        return self.inner.get_scheduled_messages(1 << 30)


class WrappingFactory(SilentFactory):
    def __init__(self, inner: DelayedDeliveryTrackerFactory, wrap: type[Wrapped]) -> None:
        super().__init__(inner)
        self.wrap = wrap

    def new_tracker(
        self, topic: str, subscription: str, wake: Callable[[], None]
    ) -> DelayedDeliveryTracker:
        tracker = self.wrap(self.inner.new_tracker(topic, subscription, wake))
        return cast("DelayedDeliveryTracker", tracker)


class MutantPlugin:
    def __init__(
        self, name: str, base: DelayedDeliveryTrackerFactoryRecord, wrap: type[Wrapped]
    ) -> None:
        self.name, self.base, self.wrap = name, base, wrap

    @hookimpl
    def brokerlab_delayed_delivery_tracker_factories(
        self,
    ) -> Iterator[DelayedDeliveryTrackerFactoryRecord]:
        base, wrap = self.base, self.wrap
        yield DelayedDeliveryTrackerFactoryRecord(
            name=self.name,
            description="a mutant",
            factory=lambda context: WrappingFactory(base.factory(context), wrap),
        )


def run_random_test(name: str, base: str, wrap: type[Wrapped]) -> None:
    record = PluginHost().select("delayed_delivery", base).record
    host = PluginHost(plugins={"mutant": MutantPlugin(name, record, wrap)})
    profile = load_profile(None, ["delayedDeliveryEnabled=true"], host=host)
    contract: Any = DelayedDeliveryContract()
    contract.examples = 10
    contract.test_never_early_once_per_subscription_and_isolated(
        brokerlab_host=host,
        brokerlab_profile=profile,
        delayed_delivery_tracker_factory=name,
        delays_messages=True,
    )


def test_the_kit_fails_a_tracker_that_forgets_a_message_after_the_mark_delete() -> None:
    with pytest.raises(AssertionError, match=r"never got \[\(1, 3\)\]"):
        run_random_test("one-too-far", "topic-level", MarkDeleteOneTooFar)


def test_the_kit_fails_a_tracker_that_hands_back_more_than_asked() -> None:
    with pytest.raises(AssertionError, match=r"asked for up to \d+ messages and got \d+"):
        run_random_test("unbounded", "in-memory", Unbounded)
