"""The asynchronous size eviction: one event at the current instant, at most one in flight."""

from __future__ import annotations

from collections.abc import Callable

from brokerlab.protocols import Clock, Scheduler

__all__ = ["AsyncEviction"]


class AsyncEviction:
    """Schedules a size eviction after the triggering insert has returned (spec §0.5).

    ``request(task)`` does nothing while an earlier request has not run yet, as Pulsar keeps one
    eviction future in flight.
    """

    __slots__ = ("_clock", "_in_flight", "_scheduler", "requests")

    def __init__(self, clock: Clock, scheduler: Scheduler) -> None:
        self._clock = clock
        self._scheduler = scheduler
        self._in_flight = False
        self.requests = 0

    @property
    def in_flight(self) -> bool:
        return self._in_flight

    def request(self, task: Callable[[], None]) -> None:
        if self._in_flight:
            return
        self._in_flight = True
        self.requests += 1

        def run() -> None:
            try:
                task()
            finally:
                self._in_flight = False

        self._scheduler.call_at(self._clock.now_ns(), run)
