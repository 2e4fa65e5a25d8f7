"""A topic's manager: the shared index, the subscription views, one timer and pruning (§0.2)."""

from __future__ import annotations

import math
from collections.abc import Callable

from pyroaring import BitMap

from brokerlab.protocols import Position
from brokerlab_plugins.legacy_delayed_delivery.buckets import precision_bits
from brokerlab_plugins.legacy_delayed_delivery.bulk import DelayedBatch
from brokerlab_plugins.legacy_delayed_delivery.timer import TimerMux
from brokerlab_plugins.legacy_delayed_delivery.tracker import TrackerConfig
from brokerlab_plugins.pip448_delayed_delivery.proxy import ClosableProxy, TrackerClosedError
from brokerlab_plugins.pip448_delayed_delivery.shared_index import SharedIndex
from brokerlab_plugins.pip448_delayed_delivery.view import SubscriptionView

__all__ = ["PruneRules", "TopicManager", "TrackerClosedError", "TrackerProxy"]

NS_PER_MS = 1_000_000


class PruneRules:
    """When to prune: the minimum interval (adaptive when 0) and the timer's eligible ratio."""

    __slots__ = ("interval_ns", "ratio")

    def __init__(self, tick_ms: int, min_interval_ms: int, ratio: float) -> None:
        interval = min_interval_ms if min_interval_ms > 0 else min(max(tick_ms, 5), 50)
        self.interval_ns = interval * NS_PER_MS
        ratio = 0.5 if math.isnan(ratio) else ratio
        self.ratio = min(max(ratio, 0.0), 1.0)

    def threshold(self, registered: int) -> int:
        return max(1, math.ceil(registered * self.ratio))


class TopicManager:
    """One per topic: every subscription's view reads the same :class:`SharedIndex`."""

    def __init__(
        self,
        topic: str,
        config: TrackerConfig,
        prune: PruneRules,
        on_empty: Callable[[TopicManager], None],
    ) -> None:
        self.topic = topic
        self.config = config
        self.bits = precision_bits(config.tick_ms)  # fixed for the manager's life
        self.prune_rules = prune
        self.shared = SharedIndex()
        self.views: dict[str, SubscriptionView] = {}
        self.mux = TimerMux(config.clock, config.scheduler, self._after_timer)
        self.prunes = 0
        self.retired_wakeups = 0
        self._last_prune_ns: int | None = None
        self._on_empty = on_empty

    # ---- lifecycle ----------------------------------------------------------------------------

    def create_or_get(self, subscription: str, wake: Callable[[], None]) -> TrackerProxy:
        """A new proxy on each call; an existing subscription context is reused (new wake)."""
        view = self.views.get(subscription)
        if view is None:
            view = self.views[subscription] = SubscriptionView(self, subscription, wake)
        else:
            view.wake = wake
        return TrackerProxy(self, view)

    def unregister(self, view: SubscriptionView) -> None:
        if self.views.get(view.name) is not view:
            return
        del self.views[view.name]
        view.timer.cancel()
        self.retired_wakeups += view.wakeups
        if not self.views:
            self.close()
            self._on_empty(self)

    def close(self) -> None:
        """Cancel the timer and forget everything (the last unregister, or factory close)."""
        self.mux.cancel_all()
        for view in self.views.values():
            view.timer.cancel()
            self.retired_wakeups += view.wakeups
        self.views.clear()
        self.shared.clear()

    # ---- shared index -------------------------------------------------------------------------

    def add_shared(self, bucket: int, ledger_id: int, entry_id: int) -> None:
        pinned = self.shared.add(bucket, ledger_id, entry_id)
        if pinned is not None:
            for view in self.views.values():
                view.pin(pinned, ledger_id, entry_id)

    def add_shared_many(
        self, bucket: int, ledger_id: int, entries: BitMap, sizes: tuple[int, int] | None
    ) -> None:
        """:meth:`add_shared` of every entry of one (bucket, ledger), in one union where it can."""
        for entry_id in self.shared.add_many(bucket, ledger_id, entries, sizes):
            self.add_shared(bucket, ledger_id, entry_id)

    def min_mark_delete(self) -> Position | None:
        marks = [v.mark_delete for v in self.views.values()]
        if not marks or any(m is None for m in marks):
            return None  # a subscription without a mark-delete position blocks pruning
        return min(m for m in marks if m is not None)

    def maybe_prune(self) -> None:
        """Prune pairs every subscription mark-deleted, at most once per minimum interval."""
        now = self.config.clock.now_ns()
        last = self._last_prune_ns
        if last is not None and now - last < self.prune_rules.interval_ns:
            return
        self._last_prune_ns = now
        floor = self.min_mark_delete()
        if floor is not None and self.shared.prune(floor):
            self.prunes += 1

    def _after_timer(self) -> None:
        if not self.views or not self.shared.index:
            return
        eligible = sum(1 for v in self.views.values() if v.has_visible_due())
        if eligible >= self.prune_rules.threshold(len(self.views)):
            self.maybe_prune()

    # ---- figures ------------------------------------------------------------------------------

    def has_views(self) -> bool:
        return bool(self.views)

    def figures(self) -> dict[str, float]:
        """Current gauges and cumulative counters of this topic, by metric name."""
        return {
            "delayed_index_bytes": self.shared.heap_bytes(),
            "delayed_subscription_state_bytes": self.state_bytes(),
            "delayed_index_positions": self.shared.index.count,
            "delayed_pulsar_memory_bytes": self.shared.index.pulsar_bytes,
            "delayed_prunes": self.prunes,
            "delayed_timer_wakeups": self.wakeups(),
        }

    def wakeups(self) -> int:
        return self.retired_wakeups + sum(v.wakeups for v in self.views.values())

    def state_bytes(self) -> int:
        return sum(v.state_bytes() for v in self.views.values())


class TrackerProxy(ClosableProxy["TopicManager", SubscriptionView]):
    """A dispatcher's thin proxy (``InMemoryTopicDelayedDeliveryTracker``)."""

    __slots__ = ()

    @property
    def view(self) -> SubscriptionView:
        return self._state

    def add_message(self, ledger_id: int, entry_id: int, deliver_at_ms: int) -> bool:
        return self._live().add_message(ledger_id, entry_id, deliver_at_ms)

    def has_message_available(self) -> bool:
        return self._live().has_message_available()

    def get_scheduled_messages(self, max_messages: int) -> list[Position]:
        return self._live().get_scheduled_messages(max_messages)

    @property
    def tick_ms(self) -> int:
        return self._live().tick_ms

    def load(self, batch: DelayedBatch) -> None:
        """Bulk ``add_message`` for benchmarks (:meth:`SubscriptionView.load`)."""
        self._live().load(batch)

    def number_of_delayed_messages(self) -> int:
        return self._live().count

    def buffer_memory_usage(self) -> int:
        """The topic's shared-index estimate (one copy per topic: the PIP's claim)."""
        self._live()
        return self.manager.shared.index.pulsar_bytes

    def should_pause_all_deliveries(self) -> bool:
        return self._live().should_pause_all_deliveries()

    def reset_tick_time(self, tick_ms: int) -> None:
        self._live().tick_ms = tick_ms  # this subscription only; the precision stays

    def mark_delete_moved(self, position: Position) -> None:
        self._live().mark_delete_moved(position)

    def clear(self) -> None:
        self._live().clear()
