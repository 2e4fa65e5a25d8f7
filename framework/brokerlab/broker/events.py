"""The simulation clock and event queue: virtual time, callbacks in (time, scheduling order)."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any, Final

__all__ = ["EPOCH_MS", "Callback", "EventLoop", "Timer"]

# Epoch time at simulated time zero; fixed so that runs do not depend on the wall clock.
EPOCH_MS: Final = 1_700_000_000_000

Callback = Callable[[], None]

# Final: compiled, a Final module name is a constant; a name imported from heapq would be looked
# up in the module's dict on every scheduled callback.
_heappush: Final = heapq.heappush
_heappop: Final = heapq.heappop


class Timer:
    """A cancellable scheduled callback (``call_at``'s handle); ``cancel()`` makes the loop skip
    it. The loop schedules the handle itself, so only cancellable callbacks carry one."""

    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callback) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class EventLoop:
    """Virtual clock plus a queue of callbacks; satisfies the ``Clock`` and ``Scheduler`` protocols.

    Callbacks scheduled for the same instant run in the order they were scheduled, which together
    with seeded random streams makes every run a pure function of its inputs.

    Two structures keep that order cheaply (the broker model runs about two events per message,
    a topic group's publisher one of them):

    * A heap of the future instants that have callbacks, each instant once, and per instant its
      callback, or a list of its callbacks in scheduling order once it has more than one (most
      instants have one: a publish). Instants are nanoseconds, which stay machine integers when
      compiled (a run would need 146 years to leave them).
    * A callback scheduled for the current instant (or the past) goes to a FIFO instead:
      everything the heap holds for this instant was scheduled before the clock got here, so it
      runs first, and the FIFO keeps the rest in scheduling order. The broker model schedules one
      such callback per dispatch (a consumer starting on what it was given). The FIFO is a list
      read from ``_soon_head`` and emptied whenever it is read to the end: compiled, a list is
      indexed and appended natively, where a deque's methods are Python calls.
    """

    __slots__ = ("_at", "_instants", "_now", "_soon", "_soon_head", "events_run")

    def __init__(self) -> None:
        self._now = 0
        self._instants: list[int] = []  # heap of the future instants in ``_at``
        # Instant -> its callback, or its callbacks in scheduling order (a cancellable one as its
        # Timer). A callback is never a list, so the two cannot be confused.
        self._at: dict[int, Callback | Timer | list[Callback | Timer]] = {}
        # Callbacks due at ``_now`` that were scheduled at ``_now``, in scheduling order, from
        # ``_soon_head`` on (those before it have run).
        self._soon: list[Callback | Timer] = []
        self._soon_head = 0
        self.events_run = 0

    def now_ns(self) -> int:
        return self._now

    def now_ms(self) -> int:
        return EPOCH_MS + self._now // 1_000_000

    def call_at(self, when_ns: int, callback: Callback) -> Timer:
        """Schedule ``callback``; the returned handle can cancel it (the plugin-facing form)."""
        timer = Timer(callback)
        self._schedule(when_ns, timer)
        return timer

    def at(self, when_ns: int, callback: Callback) -> None:
        """Schedule ``callback`` with no handle: the broker model's cheaper form."""
        self._schedule(when_ns, callback)

    def _schedule(self, when_ns: int, item: Callback | Timer) -> None:
        if when_ns <= self._now:
            self._soon.append(item)
            return
        # Boxed once: compiled, each use of the machine integer below would box it again.
        when: Any = when_ns
        waiting = self._at.get(when)
        if waiting is None:
            self._at[when] = item
            _heappush(self._instants, when)
        elif isinstance(waiting, list):
            waiting.append(item)
        else:
            self._at[when] = [waiting, item]

    def soon(self, callback: Callback) -> None:
        """Schedule ``callback`` at the current instant, after everything already due now."""
        self._soon.append(callback)

    def call_every(self, first_ns: int, period_ns: int, callback: Callback) -> None:
        """Run ``callback`` at ``first_ns`` and then every ``period_ns`` (fixed delay)."""

        def tick() -> None:
            callback()
            self.at(self._now + period_ns, tick)

        self.at(first_ns, tick)

    def run_until(self, end_ns: int, progress: Callable[[int], None] | None = None) -> None:
        """Run every callback due up to ``end_ns`` (inclusive), then set the clock to ``end_ns``."""
        instants = self._instants
        soon = self._soon
        head = self._soon_head
        if head == len(soon) and (not instants or instants[0] > end_ns):
            # Nothing due (a trace replay asks before every request): only the clock moves.
            if end_ns > self._now:
                self._now = end_ns
            return
        at = self._at
        now = self._now
        step = max(1, end_ns // 100)
        # Without a progress callback the next report is due after the last instant this run
        # can reach, so one comparison per callback serves both cases.
        next_report = step if progress is not None else max(now, end_ns) + 1
        report = progress or _unreachable
        events = self.events_run
        batch: list[Callback | Timer] = []  # the callbacks of instant ``now`` from the heap
        index = 0
        try:
            while True:
                if index < len(batch):
                    # Scheduled before the clock reached ``now``: ahead of the FIFO.
                    item = batch[index]
                    index += 1
                elif head < len(soon) and now <= end_ns:
                    item = soon[head]
                    head += 1
                    if head == len(soon):
                        soon.clear()
                        head = 0
                elif instants and instants[0] <= end_ns:
                    # The heap's own int object as the key: ``now`` is a machine integer,
                    # which each use as a key would box into a new int.
                    when: Any = _heappop(instants)
                    self._now = now = when
                    # Indexing and del are C operations compiled; dict.pop is a method call.
                    due = at[when]
                    del at[when]
                    if isinstance(due, list):
                        batch = due
                        index = 0
                        continue
                    item = due  # the instant's only callback
                else:
                    break
                if isinstance(item, Timer):
                    if item.cancelled:
                        continue
                    item = item.callback
                events += 1
                item()
                if now >= next_report:
                    report(now)
                    next_report = now + step
        finally:
            self.events_run = events
            self._soon_head = head
            if index < len(batch):
                # A callback raised: what remains of its instant stays scheduled.
                at[now] = batch[index:]
                _heappush(instants, now)
        self._now = max(self._now, end_ns)


def _unreachable(now: int) -> None:
    raise AssertionError("a run without a progress callback reported progress")
