"""A mocked clock and scheduler for the delayed-delivery tests, unit and conformance alike: tasks
stay visible until they run or are cancelled, and the clock moves only when a test says so.

Imported by both suites (``tests/support`` is on pytest's ``pythonpath``); it holds no tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

NS = 1_000_000


@dataclass
class Task:
    """One scheduled timer callback; cancelling it takes it off the visible task list."""

    when_ns: int
    callback: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True

    @property
    def at_ms(self) -> int:
        return self.when_ns // NS


@dataclass
class FakeTime:
    """A mocked clock (``now_ns`` = ``now_ms`` x 1e6) and a scheduler whose tasks are visible."""

    ms: int = 0
    scheduled: list[Task] = field(default_factory=list)

    def now_ms(self) -> int:
        return self.ms

    def now_ns(self) -> int:
        return self.ms * NS

    def call_at(self, when_ns: int, callback: Callable[[], None]) -> Task:
        task = Task(max(when_ns, self.now_ns()), callback)
        self.scheduled.append(task)
        return task

    def tasks(self) -> list[Task]:
        """The live (armed, not cancelled, not yet run) tasks."""
        return [t for t in self.scheduled if not t.cancelled]

    def fire_times(self) -> list[int]:
        """When each live task fires, in ms, in time order."""
        return sorted(t.at_ms for t in self.tasks())

    def set(self, ms: int) -> None:
        """Move the clock without running anything (``clockTime.set`` in the Java tests)."""
        self.ms = ms

    def advance(self, ms: int) -> None:
        """Move the clock to ``ms``, running due tasks in time order as the event loop does."""
        while True:
            due = [t for t in self.tasks() if t.when_ns <= ms * NS]
            if not due:
                break
            task = min(due, key=lambda t: t.when_ns)
            self.ms = max(self.ms, task.at_ms)
            task.cancelled = True
            task.callback()
        self.ms = ms

    def run_due(self) -> None:
        self.advance(self.ms)


@dataclass
class Wakes:
    """A dispatcher's ``readMoreEntriesAsync``: counts how often the tracker asked for a read."""

    count: int = 0

    def __call__(self) -> None:
        self.count += 1
