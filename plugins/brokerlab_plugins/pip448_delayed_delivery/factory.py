"""``InMemoryTopicDelayedDeliveryTrackerFactory``: one cached manager per topic (§0.2 lifecycle)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from brokerlab.protocols import DelayedDeliveryTracker, PluginContext
from brokerlab_plugins.legacy_delayed_delivery.tracker import TrackerConfig, tracker_config
from brokerlab_plugins.pip448_delayed_delivery.draft import DraftManager
from brokerlab_plugins.pip448_delayed_delivery.manager import PruneRules, TopicManager
from brokerlab_plugins.pip448_delayed_delivery.settings import Pip448Settings

__all__ = ["TopicFactory"]

NS_PER_MS = 1_000_000


class _Manager(Protocol):
    topic: str
    prunes: int

    def create_or_get(
        self, subscription: str, wake: Callable[[], None]
    ) -> DelayedDeliveryTracker: ...

    def has_views(self) -> bool: ...

    def close(self) -> None: ...

    def figures(self) -> dict[str, float]: ...


class TopicFactory:
    """Caches one manager per topic; an idle manager goes after ``idle_ms`` (at once if 0)."""

    def __init__(
        self, config: TrackerConfig, prune: PruneRules, idle_ms: int, draft: bool = False
    ) -> None:
        self.config = config
        self.prune = prune
        self.idle_ms = idle_ms
        self.draft = draft
        self.managers: dict[str, _Manager] = {}
        self._retired: dict[str, float] = {"delayed_prunes": 0, "delayed_timer_wakeups": 0}

    @classmethod
    def from_context(cls, context: PluginContext) -> TopicFactory:
        own = context.plugin_settings.get("pip448")
        options = own if isinstance(own, Pip448Settings) else Pip448Settings()
        s = context.settings
        config = tracker_config(context, options.timer_wheel)
        prune = PruneRules(
            config.tick_ms,
            int(s.delayed_delivery_prune_min_interval_millis),
            float(s.delayed_delivery_prune_eligible_ratio),
        )
        idle = int(s.delayed_delivery_topic_manager_idle_millis)
        return cls(config, prune, idle, options.draft_semantics)

    def new_tracker(
        self, topic: str, subscription: str, wake: Callable[[], None]
    ) -> DelayedDeliveryTracker:
        manager = self.managers.get(topic)
        if manager is None:
            manager = self._new_manager(topic)
            self.managers[topic] = manager
        return manager.create_or_get(subscription, wake)

    def _new_manager(self, topic: str) -> _Manager:
        if self.draft:
            return DraftManager(topic, self.config, self.prune, self._on_empty)
        return TopicManager(topic, self.config, self.prune, self._on_empty)

    def _on_empty(self, manager: object) -> None:
        topic = getattr(manager, "topic", "")
        current = self.managers.get(topic)
        if current is None or current is not manager:
            return
        if self.idle_ms <= 0:
            self._remove(topic, current)
            return

        def expire() -> None:
            if self.managers.get(topic) is current and not current.has_views():
                self._remove(topic, current)

        clock = self.config.clock
        self.config.scheduler.call_at(clock.now_ns() + self.idle_ms * NS_PER_MS, expire)

    def _remove(self, topic: str, manager: _Manager) -> None:
        for name, value in manager.figures().items():
            if name in self._retired:
                self._retired[name] += value
        del self.managers[topic]

    def stats(self) -> Mapping[str, float]:
        totals: dict[str, float] = dict.fromkeys(
            (
                "delayed_index_bytes",
                "delayed_subscription_state_bytes",
                "delayed_index_positions",
                "delayed_pulsar_memory_bytes",
            ),
            0,
        )
        totals.update(self._retired)
        for manager in self.managers.values():
            for name, value in manager.figures().items():
                totals[name] = totals.get(name, 0) + value
        return totals

    def close(self) -> None:
        for manager in self.managers.values():
            manager.close()
        self.managers.clear()
