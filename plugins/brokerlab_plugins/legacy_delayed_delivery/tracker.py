"""The legacy per-subscription ``InMemoryDelayedDeliveryTracker`` and its factory (§3, §0.1)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from brokerlab.protocols import Clock, PluginContext, Position, Scheduler
from brokerlab_plugins.legacy_delayed_delivery.buckets import Bucketing, add_cutoff
from brokerlab_plugins.legacy_delayed_delivery.bulk import DelayedBatch
from brokerlab_plugins.legacy_delayed_delivery.index import BucketIndex
from brokerlab_plugins.legacy_delayed_delivery.settings import LegacyDelayedSettings
from brokerlab_plugins.legacy_delayed_delivery.timer import DeliveryTimer, Wheel

__all__ = ["FixedDelayDetector", "LegacyFactory", "LegacyTracker", "TrackerConfig"]


class TrackerConfig:
    """What one tracker needs: tick, strict flag, lookahead, clocks and the timer wheel."""

    __slots__ = ("clock", "lookahead", "old_rule", "scheduler", "strict", "tick_ms", "wheel")

    def __init__(
        self,
        clock: Clock,
        scheduler: Scheduler,
        tick_ms: int,
        strict: bool,
        lookahead: int,
        *,
        wheel: Wheel | None = None,
        old_rule: bool = False,
    ) -> None:
        self.clock = clock
        self.scheduler = scheduler
        self.tick_ms = tick_ms
        self.strict = strict
        self.lookahead = lookahead
        self.wheel = wheel
        self.old_rule = old_rule


class FixedDelayDetector:
    """``highestDeliveryTimeTracked`` / ``messagesHaveFixedDelay`` and the pause rule (§3.9)."""

    __slots__ = ("fixed", "highest")

    def __init__(self) -> None:
        self.highest = 0
        self.fixed = True

    def accepted(self, deliver_at: int, tick_ms: int) -> None:
        if deliver_at < self.highest - tick_ms:
            self.fixed = False  # out of order beyond one tick: not a fixed-delay stream
        self.highest = max(self.highest, deliver_at)

    def accepted_batch(self, batch: DelayedBatch, tick_ms: int) -> None:
        """:meth:`accepted` of every message of ``batch``, in its order."""
        if not batch.keeps_fixed_delay(self.highest, tick_ms):
            self.fixed = False
        self.highest = max(self.highest, batch.max_deliver_at)

    def reset(self) -> None:
        self.highest = 0
        self.fixed = True

    def pause(self, lookahead: int, count: int, available: bool) -> bool:
        return lookahead > 0 and self.fixed and count >= lookahead and not available


class LegacyTracker:
    """One subscription's own index, counters and timer; nothing is shared with other trackers."""

    def __init__(self, config: TrackerConfig, wake: Callable[[], None]) -> None:
        self.clock = config.clock
        self.tick_ms = config.tick_ms
        self.lookahead = config.lookahead
        self.buckets = Bucketing.for_tick(config.tick_ms, config.strict, config.old_rule)
        self.index = BucketIndex()
        self.flags = FixedDelayDetector()
        self.wakeups = 0
        self.closed = False
        self._wake = wake
        self.timer = DeliveryTimer(
            config.clock,
            config.scheduler,
            config.tick_ms,
            self._fired,
            wheel=config.wheel,
            old_base_class=config.old_rule,
        )

    def _fired(self) -> None:
        self.wakeups += 1
        self._wake()

    def _update_timer(self) -> None:
        self.timer.tick_ms = self.tick_ms
        self.timer.update(self.index.count, self.index.first_key())

    def add_message(self, ledger_id: int, entry_id: int, deliver_at_ms: int) -> bool:
        cutoff = add_cutoff(self.clock.now_ms(), self.tick_ms, self.buckets.strict)
        if deliver_at_ms < 0 or deliver_at_ms <= cutoff:
            self.flags.fixed = False  # a message due now breaks fixed-delay mode
            return False
        self.index.add(self.buckets.bucket(deliver_at_ms), ledger_id, entry_id)
        self._update_timer()
        self.flags.accepted(deliver_at_ms, self.tick_ms)
        return True

    def load(self, batch: DelayedBatch) -> None:
        """``add_message`` of every message of ``batch`` at this instant, in one pass per group
        (for benchmarks; see :mod:`.bulk`). Raises ``ValueError`` if any would be refused."""
        batch.check(self.buckets, self.clock.now_ms(), self.tick_ms)
        for g in batch.groups:
            self.index.add_many(g.bucket, g.ledger_id, g.entries, (g.pulsar_bytes, g.heap_bytes))
        self._update_timer()
        self.flags.accepted_batch(batch, self.tick_ms)

    def _bucket_cutoff(self) -> int:
        return self.buckets.bucket_cutoff(self.clock.now_ms(), self.tick_ms)

    def has_message_available(self) -> bool:
        first = self.index.first_key()
        available = first is not None and first <= self._bucket_cutoff()
        if not available:
            self._update_timer()
        return available

    def get_scheduled_messages(self, max_messages: int) -> list[Position]:
        out = self.index.drain(self._bucket_cutoff(), max_messages)
        if not self.index:
            self.flags.reset()  # the only place the fixed-delay flags come back
        self._update_timer()
        return sorted(set(out))

    def number_of_delayed_messages(self) -> int:
        return self.index.count

    def buffer_memory_usage(self) -> int:
        return self.index.pulsar_bytes

    def should_pause_all_deliveries(self) -> bool:
        count = self.index.count
        if not self.flags.pause(self.lookahead, count, False):
            return False  # short-circuit: hasMessageAvailable() (and its timer update) not called
        return not self.has_message_available()

    def reset_tick_time(self, tick_ms: int) -> None:
        self.tick_ms = tick_ms  # the bucket precision stays as constructed

    def mark_delete_moved(self, position: Position) -> None:
        return None  # the legacy tracker does not know the mark-delete position

    def clear(self) -> None:
        self.index.clear()  # flags and timer are left alone

    def close(self) -> None:
        self.closed = True  # the map is left as it is, but nothing uses this tracker any more
        self.timer.cancel()
        self.timer.target = -1


class LegacyFactory:
    """``InMemoryDelayedDeliveryTrackerFactory``: a new, independent tracker per subscription."""

    def __init__(self, config: TrackerConfig) -> None:
        self.config = config
        self.trackers: list[LegacyTracker] = []

    @classmethod
    def from_context(cls, context: PluginContext) -> LegacyFactory:
        own = context.plugin_settings.get("legacyDelayed")
        options = own if isinstance(own, LegacyDelayedSettings) else LegacyDelayedSettings()
        return cls(tracker_config(context, options.timer_wheel, options.previous_rounding_rule))

    def new_tracker(self, topic: str, subscription: str, wake: Callable[[], None]) -> LegacyTracker:
        tracker = LegacyTracker(self.config, wake)
        self.trackers.append(tracker)
        return tracker

    def stats(self) -> Mapping[str, float]:
        live = [t for t in self.trackers if not t.closed]
        return {
            "delayed_index_bytes": sum(t.index.heap_bytes for t in live),
            "delayed_pulsar_memory_bytes": sum(t.index.pulsar_bytes for t in live),
            "delayed_index_positions": sum(t.index.count for t in live),
            "delayed_timer_wakeups": sum(t.wakeups for t in self.trackers),
        }

    def close(self) -> None:
        for tracker in self.trackers:
            tracker.close()


def tracker_config(context: PluginContext, wheel: bool, old_rule: bool = False) -> TrackerConfig:
    """A :class:`TrackerConfig` from the broker settings (shared with the PIP-448 plugin)."""
    s = context.settings
    tick = int(s.delayed_delivery_tick_time_millis)
    return TrackerConfig(
        context.clock,
        context.scheduler,
        tick,
        bool(s.is_delayed_delivery_deliver_at_time_strict),
        int(s.delayed_delivery_fixed_delay_detection_lookahead),
        wheel=Wheel(context.clock.now_ms(), tick) if wheel else None,
        old_rule=old_rule,
    )
