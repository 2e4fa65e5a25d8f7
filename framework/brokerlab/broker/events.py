"""The simulation clock and event queue: virtual time, callbacks in (time, scheduling order)."""

from __future__ import annotations

import heapq
from collections.abc import Callable

__all__ = ["EPOCH_MS", "EventLoop", "Timer"]

# Epoch time at simulated time zero; fixed so that runs do not depend on the wall clock.
EPOCH_MS = 1_700_000_000_000


class Timer:
    """A scheduled callback's handle; ``cancel()`` makes the loop skip it."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class EventLoop:
    """Virtual clock plus a heap of timers; satisfies the ``Clock`` and ``Scheduler`` protocols.

    Callbacks scheduled for the same instant run in the order they were scheduled, which together
    with seeded random streams makes every run a pure function of its inputs.
    """

    __slots__ = ("_heap", "_now", "_seq", "events_run")

    def __init__(self) -> None:
        self._now = 0
        self._seq = 0
        # (time, sequence, callback, timer or None); the sequence breaks ties in schedule order.
        self._heap: list[tuple[int, int, Callable[[], None], Timer | None]] = []
        self.events_run = 0

    def now_ns(self) -> int:
        return self._now

    def now_ms(self) -> int:
        return EPOCH_MS + self._now // 1_000_000

    def call_at(self, when_ns: int, callback: Callable[[], None]) -> Timer:
        """Schedule ``callback``; the returned handle can cancel it (the plugin-facing form)."""
        timer = Timer()
        self._seq += 1
        heapq.heappush(self._heap, (max(when_ns, self._now), self._seq, callback, timer))
        return timer

    def at(self, when_ns: int, callback: Callable[[], None]) -> None:
        """Schedule ``callback`` with no handle: the broker model's cheaper form."""
        self._seq += 1
        heapq.heappush(self._heap, (max(when_ns, self._now), self._seq, callback, None))

    def call_every(self, first_ns: int, period_ns: int, callback: Callable[[], None]) -> None:
        """Run ``callback`` at ``first_ns`` and then every ``period_ns`` (fixed delay)."""

        def tick() -> None:
            callback()
            self.at(self._now + period_ns, tick)

        self.at(first_ns, tick)

    def run_until(self, end_ns: int, progress: Callable[[int], None] | None = None) -> None:
        """Run every callback due up to ``end_ns`` (inclusive), then set the clock to ``end_ns``."""
        heap = self._heap
        pop = heapq.heappop
        step = max(1, end_ns // 100)
        next_report = step
        while heap and heap[0][0] <= end_ns:
            when, _, callback, timer = pop(heap)
            if timer is not None and timer.cancelled:
                continue
            self._now = when
            self.events_run += 1
            callback()
            if progress is not None and when >= next_report:
                progress(when)
                next_report = when + step
        self._now = max(self._now, end_ns)
