"""The tracker timer of §3.8 on the simulation scheduler, and a multiplexer for shared timers.

:class:`DeliveryTimer` is one tracker's timer with Pulsar's rules (bucket key as target, one timer,
at most one firing per tick, no timer for a bucket already due; optionally the older base class
behind issue #25996). :class:`TimerMux` lets many of them share one scheduler timer, which is how
the PIP-448 manager keeps "one timer per manager" while each subscription keeps legacy timing.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass

from brokerlab.protocols import Clock, Scheduler, TimerHandle

__all__ = ["DeliveryTimer", "TimerMux", "Wheel"]

NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class Wheel:
    """Netty's HashedWheelTimer granularity: a timeout fires on the first wheel tick at or after
    its deadline; ticks are counted from the wheel's start (spec §0.5, alignment unverified)."""

    start_ms: int
    tick_ms: int

    def round_up(self, fire_ms: int) -> int:
        if self.tick_ms <= 1:
            return fire_ms
        ticks = -(-(fire_ms - self.start_ms) // self.tick_ms)
        return self.start_ms + max(ticks, 0) * self.tick_ms


class DeliveryTimer:
    """One tracker's timer (``AbstractDelayedDeliveryTracker``): ``update`` after the tracker's
    state changed, and ``on_fire`` (the dispatcher's read request) when it runs."""

    __slots__ = (
        "_clock",
        "_handle",
        "_scheduler",
        "_token",
        "last_tick_run",
        "old_base_class",
        "on_fire",
        "scheduled",
        "target",
        "tick_ms",
        "wheel",
    )

    def __init__(
        self,
        clock: Clock,
        scheduler: Scheduler,
        tick_ms: int,
        on_fire: Callable[[], None],
        *,
        wheel: Wheel | None = None,
        old_base_class: bool = False,
    ) -> None:
        self._clock = clock
        self._scheduler = scheduler
        self.tick_ms = tick_ms
        self.on_fire = on_fire
        self.wheel = wheel
        self.old_base_class = old_base_class
        self._handle: TimerHandle | None = None
        self._token: object | None = None
        self.target = -1
        self.last_tick_run = 0
        self.scheduled = 0  # number of timeouts created (tests compare with newTimeout calls)

    @property
    def armed(self) -> bool:
        return self._handle is not None

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = None
        self._token = None

    def update(self, count: int, first_key: int | None) -> None:
        """Re-arm for the first bucket (``updateTimer``)."""
        if count == 0 or first_key is None:
            self.cancel()
            self.target = -1
            return
        if first_key == self.target:
            return  # already armed for this bucket
        self.cancel()
        now = self._clock.now_ms()
        delay = first_key - now
        if self.old_base_class:
            # The older base class returned on delay < 0 and kept the stale target (#25996).
            if delay < 0:
                return
        else:
            self.target = -1
            if delay <= 0:
                return  # already due: the dispatcher's next read picks it up
        wait = max(delay, self.last_tick_run + self.tick_ms - now)
        self.target = first_key
        self._schedule(now, wait)

    def _schedule(self, now_ms: int, wait_ms: int) -> None:
        fire_ms = now_ms + wait_ms
        if self.wheel is not None:
            fire_ms = self.wheel.round_up(fire_ms)
        token = object()
        self._token = token
        self.scheduled += 1
        when = self._clock.now_ns() + (fire_ms - now_ms) * NS_PER_MS
        self._handle = self._scheduler.call_at(when, lambda: self.run(token))

    def run(self, token: object | None) -> None:
        """A timeout fired; ``token`` tells whether it is the armed one or a stale one."""
        if token is None:
            return  # a cancelled timeout never runs
        self.last_tick_run = self._clock.now_ms()
        if token is self._token:
            # Only the armed timeout clears the state; a stale one must not drop a newer timer.
            self.target = -1
            self._handle = None
            self._token = None
        self.on_fire()


class _MuxHandle:
    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: int, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class TimerMux:
    """A :class:`Scheduler` that keeps any number of timers on one real scheduler timer.

    ``after_fire`` runs once after each real firing, once every due timer ran (the PIP-448
    manager's eligible-ratio prune check).
    """

    def __init__(
        self,
        clock: Clock,
        scheduler: Scheduler,
        after_fire: Callable[[], None] | None = None,
    ) -> None:
        self._clock = clock
        self._scheduler = scheduler
        self._after_fire = after_fire
        self._heap: list[tuple[int, int, _MuxHandle]] = []
        self._seq = 0
        self._armed: tuple[int, TimerHandle] | None = None

    def call_at(self, when_ns: int, callback: Callable[[], None]) -> TimerHandle:
        handle = _MuxHandle(when_ns, callback)
        self._seq += 1
        heapq.heappush(self._heap, (when_ns, self._seq, handle))
        self._rearm()
        return handle

    def pending(self) -> int:
        """Live timers multiplexed here."""
        return sum(1 for _, _, h in self._heap if not h.cancelled)

    def real_timers(self) -> int:
        """Scheduler timers this mux holds (0 or 1)."""
        return 0 if self._armed is None else 1

    def cancel_all(self) -> None:
        for _, _, handle in self._heap:
            handle.cancel()
        self._heap.clear()
        if self._armed is not None:
            self._armed[1].cancel()
            self._armed = None

    def _rearm(self) -> None:
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
        if not heap:
            if self._armed is not None:
                self._armed[1].cancel()
                self._armed = None
            return
        first = heap[0][0]
        if self._armed is not None:
            if self._armed[0] <= first:
                return  # the real timer fires first anyway; the firing re-arms
            self._armed[1].cancel()
        self._armed = (first, self._scheduler.call_at(first, self._fire))

    def _fire(self) -> None:
        self._armed = None
        now = self._clock.now_ns()
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, _, handle = heapq.heappop(heap)
            if not handle.cancelled:
                handle.cancelled = True
                handle.callback()
        if self._after_fire is not None:
            self._after_fire()
        self._rearm()
