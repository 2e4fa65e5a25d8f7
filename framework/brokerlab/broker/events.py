"""The simulation clock and event queue: virtual time, callbacks in (time, scheduling order)."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable

__all__ = ["EPOCH_MS", "EventLoop", "Timer"]

# Epoch time at simulated time zero; fixed so that runs do not depend on the wall clock.
EPOCH_MS = 1_700_000_000_000
# Bits of a heap key below the time: room for 2**48 scheduled callbacks per run.
SEQ_BITS = 48


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

    Two structures keep that order cheaply (a run with 10,000 topics keeps 10,000 publish events
    in flight and runs two events per message):

    * The heap holds plain ints, ``time << SEQ_BITS | sequence``, which order exactly as the pairs
      ``(time, sequence)`` do and compare faster than tuples; the callbacks wait in a dict under
      the same key.
    * A callback scheduled for the current instant (or the past) skips the heap and goes to a
      FIFO: everything the heap holds for this instant was scheduled before the clock got here, so
      it runs first, and the FIFO keeps the rest in scheduling order. The broker model schedules
      one such callback per dispatch (a consumer starting on what it was given).
    """

    __slots__ = ("_callbacks", "_heap", "_now", "_seq", "_soon", "_timers", "events_run")

    def __init__(self) -> None:
        self._now = 0
        self._seq = 0
        # Keys ``time << SEQ_BITS | sequence`` of future callbacks; the sequence breaks ties in
        # scheduling order. Only heap entries need one: the FIFO is in scheduling order already.
        self._heap: list[int] = []
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._timers: dict[int, Timer] = {}  # the cancellable ones (call_at), by key
        # Callbacks due at ``_now`` that were scheduled at ``_now``, in scheduling order.
        self._soon: deque[tuple[Callable[[], None], Timer | None]] = deque()
        self.events_run = 0

    def now_ns(self) -> int:
        return self._now

    def now_ms(self) -> int:
        return EPOCH_MS + self._now // 1_000_000

    def call_at(self, when_ns: int, callback: Callable[[], None]) -> Timer:
        """Schedule ``callback``; the returned handle can cancel it (the plugin-facing form)."""
        timer = Timer()
        if when_ns <= self._now:
            self._soon.append((callback, timer))
        else:
            self.at(when_ns, callback)
            self._timers[when_ns << SEQ_BITS | self._seq] = timer  # the key at() just used
        return timer

    def at(self, when_ns: int, callback: Callable[[], None]) -> None:
        """Schedule ``callback`` with no handle: the broker model's cheaper form."""
        if when_ns <= self._now:
            self._soon.append((callback, None))
        else:
            self._seq += 1
            key = when_ns << SEQ_BITS | self._seq
            self._callbacks[key] = callback
            heapq.heappush(self._heap, key)

    def soon(self, callback: Callable[[], None]) -> None:
        """Schedule ``callback`` at the current instant, after everything already due now."""
        self._soon.append((callback, None))

    def call_every(self, first_ns: int, period_ns: int, callback: Callable[[], None]) -> None:
        """Run ``callback`` at ``first_ns`` and then every ``period_ns`` (fixed delay)."""

        def tick() -> None:
            callback()
            self.at(self._now + period_ns, tick)

        self.at(first_ns, tick)

    def run_until(self, end_ns: int, progress: Callable[[int], None] | None = None) -> None:
        """Run every callback due up to ``end_ns`` (inclusive), then set the clock to ``end_ns``."""
        heap = self._heap
        soon = self._soon
        pop = heapq.heappop
        popleft = soon.popleft
        take = self._callbacks.pop
        timers = self._timers
        step = max(1, end_ns // 100)
        now = self._now
        # Without a progress callback the next report is due after the last instant this run
        # can reach, so one comparison per callback serves both cases.
        next_report = step if progress is not None else max(now, end_ns) + 1
        report = progress or _unreachable
        events = self.events_run
        # Keys below ``end_key`` are due by ``end_ns``; keys below ``due`` are due ``now``. Only
        # this loop moves the clock, so both stay valid until it does.
        end_key = (end_ns + 1) << SEQ_BITS
        due = (now + 1) << SEQ_BITS
        try:
            while True:
                if heap and heap[0] < due:
                    # Scheduled before the clock reached ``now``: ahead of the FIFO.
                    key = pop(heap)
                    callback = take(key)
                    timer = timers.pop(key, None) if timers else None
                elif soon and now <= end_ns:
                    callback, timer = popleft()
                elif heap and heap[0] < end_key:
                    key = pop(heap)
                    callback = take(key)
                    timer = timers.pop(key, None) if timers else None
                    self._now = now = key >> SEQ_BITS
                    due = (now + 1) << SEQ_BITS
                else:
                    break
                if timer is not None and timer.cancelled:
                    continue
                events += 1
                callback()
                if now >= next_report:
                    report(now)
                    next_report = now + step
        finally:
            self.events_run = events
        self._now = max(self._now, end_ns)


def _unreachable(now: int) -> None:
    raise AssertionError("a run without a progress callback reported progress")
