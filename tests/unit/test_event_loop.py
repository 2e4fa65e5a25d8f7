"""The event loop runs callbacks in (time, scheduling order), however it stores them.

The loop keeps future callbacks in an int-keyed heap and callbacks for the current instant in a
FIFO; a plain heap of ``(time, sequence)`` pairs is the reference it must match exactly.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable

import pytest

from brokerlab.broker.events import EventLoop


class _ReferenceLoop:
    """The obvious implementation: every callback in one heap of (time, sequence)."""

    def __init__(self) -> None:
        self.now = 0
        self.seq = 0
        self.heap: list[tuple[int, int, Callable[[], None], list[bool]]] = []
        self.events_run = 0

    def at(self, when: int, callback: Callable[[], None]) -> list[bool]:
        cancelled = [False]
        self.seq += 1
        heapq.heappush(self.heap, (max(when, self.now), self.seq, callback, cancelled))
        return cancelled

    def run_until(self, end: int) -> None:
        while self.heap and self.heap[0][0] <= end:
            when, _, callback, cancelled = heapq.heappop(self.heap)
            if cancelled[0]:
                continue
            self.now = when
            self.events_run += 1
            callback()
        self.now = max(self.now, end)


def _script(seed: int) -> list[tuple[str, int]]:
    """What each callback does when it runs: schedule children at offsets, or cancel one."""
    rng = random.Random(seed)
    actions: list[tuple[str, int]] = []
    for _ in range(3000):
        r = rng.random()
        if r < 0.3:
            actions.append(("now", 0))
        elif r < 0.4:
            actions.append(("past", rng.randint(1, 50)))
        elif r < 0.5:
            actions.append(("cancel", rng.randint(0, 10_000)))
        elif r < 0.6:
            actions.append(("none", 0))
        else:
            actions.append(("future", rng.choice([1, 2, 5, 10, 100, 1000, 100_000])))
    return actions


def _drive(loop: EventLoop | _ReferenceLoop, seed: int, slices: list[int]) -> list[tuple[int, int]]:
    """Run one random scenario; returns ``(callback id, time)`` in execution order."""
    actions = _script(seed)
    order: list[tuple[int, int]] = []
    cancellers: list[Callable[[], None]] = []
    counter = [0]

    def now() -> int:
        return loop.now if isinstance(loop, _ReferenceLoop) else loop.now_ns()

    def schedule(when: int, cancellable: bool) -> None:
        ident = counter[0]
        counter[0] += 1

        def callback() -> None:
            order.append((ident, now()))
            kind, value = actions[ident % len(actions)]
            if counter[0] > 20_000:
                return
            if kind == "now":
                schedule(now(), ident % 3 == 0)
            elif kind == "past":
                schedule(now() - value, ident % 2 == 0)
            elif kind == "future":
                schedule(now() + value, ident % 5 == 0)
                schedule(now() + value, False)
            elif kind == "cancel" and cancellers:
                cancellers[value % len(cancellers)]()

        if isinstance(loop, _ReferenceLoop):
            flag = loop.at(when, callback)
            if cancellable:
                cancellers.append(lambda: flag.__setitem__(0, True))
        elif cancellable:
            cancellers.append(loop.call_at(when, callback).cancel)
        else:
            loop.at(when, callback)

    for i in range(40):
        schedule(i % 7 * 10, i % 4 == 0)
    for end in slices:
        loop.run_until(end)
        # Between slices, schedule at the clock's instant from outside any callback.
        schedule(now(), False)
    return order


@pytest.mark.parametrize("seed", range(6))
def test_event_loop_matches_a_plain_heap(seed: int) -> None:
    slices = [0, 5, 5, 60, 1000, 1001, 50_000, 10**6, 10**7]
    new, reference = EventLoop(), _ReferenceLoop()
    assert _drive(new, seed, slices) == _drive(reference, seed, slices)
    assert new.events_run == reference.events_run
    assert new.now_ns() == reference.now


def test_soon_runs_after_everything_due_now() -> None:
    loop = EventLoop()
    ran: list[str] = []
    loop.at(10, lambda: ran.append("a"))

    def b() -> None:
        ran.append("b")
        loop.soon(lambda: ran.append("d"))
        loop.at(10, lambda: ran.append("e"))

    loop.at(10, b)
    loop.at(10, lambda: ran.append("c"))
    loop.at(11, lambda: ran.append("f"))
    loop.run_until(10)
    assert ran == ["a", "b", "c", "d", "e"]
    loop.run_until(11)
    assert ran[-1] == "f"


def test_run_until_before_now_runs_nothing() -> None:
    loop = EventLoop()
    loop.run_until(100)
    ran: list[int] = []
    loop.at(0, lambda: ran.append(1))  # in the past: due at 100
    loop.run_until(50)
    assert ran == [] and loop.now_ns() == 100
    loop.run_until(100)
    assert ran == [1]


def test_a_raising_callback_leaves_the_rest_of_its_instant_scheduled() -> None:
    loop = EventLoop()
    ran: list[str] = []

    def fail() -> None:
        ran.append("b")
        raise RuntimeError("boom")

    loop.at(10, lambda: ran.append("a"))
    loop.at(10, fail)
    loop.at(10, lambda: ran.append("c"))
    loop.call_at(10, lambda: ran.append("d"))
    loop.at(20, lambda: ran.append("e"))
    with pytest.raises(RuntimeError, match="boom"):
        loop.run_until(30)
    assert ran == ["a", "b"] and loop.now_ns() == 10
    loop.run_until(30)
    assert ran == ["a", "b", "c", "d", "e"] and loop.now_ns() == 30


def test_soon_from_outside_a_callback_runs_on_the_next_run_until() -> None:
    loop = EventLoop()
    ran: list[int] = []
    loop.run_until(5)
    loop.soon(lambda: ran.append(loop.now_ns()))
    loop.run_until(5)  # the clock stays: only what is due now runs
    assert ran == [5]
    loop.run_until(5)
    assert ran == [5] and loop.events_run == 1


def test_run_until_with_nothing_due_only_moves_the_clock() -> None:
    loop = EventLoop()
    ran: list[int] = []
    loop.at(100, lambda: ran.append(loop.now_ns()))
    for end in (10, 20, 20, 99):
        loop.run_until(end)
        assert loop.now_ns() == end and ran == []
    assert loop.events_run == 0
    loop.at(99, lambda: ran.append(-loop.now_ns()))  # the current instant: runs on the next call
    loop.run_until(99)
    loop.run_until(100)
    assert ran == [-99, 100] and loop.events_run == 2
