"""Delayed delivery switched off (``delayedDeliveryEnabled=false``): nothing is ever held back."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from brokerlab.protocols import Position


class NoDelayedDeliveryTracker:
    """Refuses every message, so the dispatcher sends it at once, deliver-at time or not."""

    @property
    def tick_ms(self) -> int:
        return 0  # no cutoff, no timer: nothing has a tick, and resetTickTime changes nothing

    def add_message(self, ledger_id: int, entry_id: int, deliver_at_ms: int) -> bool:
        return False

    def has_message_available(self) -> bool:
        return False

    def get_scheduled_messages(self, max_messages: int) -> list[Position]:
        return []

    def number_of_delayed_messages(self) -> int:
        return 0

    def buffer_memory_usage(self) -> int:
        return 0

    def should_pause_all_deliveries(self) -> bool:
        return False

    def reset_tick_time(self, tick_ms: int) -> None:
        return None

    def mark_delete_moved(self, position: Position) -> None:
        return None

    def clear(self) -> None:
        return None

    def close(self) -> None:
        return None


class NoDelayedDeliveryFactory:
    """Hands out trackers that hold nothing; they share nothing, so one instance serves all."""

    _tracker = NoDelayedDeliveryTracker()

    def new_tracker(
        self, topic: str, subscription: str, wake: Callable[[], None]
    ) -> NoDelayedDeliveryTracker:
        return self._tracker

    def stats(self) -> Mapping[str, float]:
        return {"delayed_index_bytes": 0, "delayed_index_positions": 0}

    def close(self) -> None:
        return None
