"""A progress bar on the driver: cells finished of the matrix, and an estimate of time left.

On a terminal the bar redraws in place; elsewhere (CI logs, pipes) it prints one line each time
the count changes by a wave, so logs stay short.
"""

from __future__ import annotations

import threading
import time
from typing import TextIO

__all__ = ["MatrixProgress"]


class MatrixProgress:
    """Counts finished cells (monotonically) out of ``total``; ``resumed`` were done before."""

    def __init__(
        self,
        stream: TextIO,
        total: int,
        resumed: int = 0,
        line_every: int = 1,
        *,
        note: str = "",
    ) -> None:
        self.stream = stream
        self.note = note  # the resource estimate, shown with the bar
        self.total = total
        self.resumed = resumed
        self.done = resumed
        self.line_every = max(1, line_every)
        self.started = time.monotonic()
        self.tty = stream.isatty()
        self._printed = resumed
        self._lock = threading.Lock()

    def update(self, done_now: int) -> None:
        """Cells finished in this run so far (a poll; lower values than before are ignored)."""
        with self._lock:
            done = min(self.total, self.resumed + done_now)
            if done <= self.done and self.done != self.resumed:
                return
            self.done = max(self.done, done)
            if self.tty:
                self.stream.write("\r" + self._text())
                self.stream.flush()
            elif self.done != self._printed and (
                self.done - self._printed >= self.line_every or self.done == self.total
            ):
                self.stream.write(self._text() + "\n")
                self.stream.flush()
                self._printed = self.done

    def _text(self) -> str:
        elapsed = time.monotonic() - self.started
        fresh = self.done - self.resumed
        left = (self.total - self.done) * elapsed / fresh if fresh else float("nan")
        fraction = self.done / self.total if self.total else 1.0
        bar = "#" * int(fraction * 30) + "." * (30 - int(fraction * 30))
        eta = "--" if left != left else f"{left:.0f}s"  # NaN until the first cell is done
        note = f"  ({self.note})" if self.note else ""
        return f"cells [{bar}] {self.done}/{self.total}  {elapsed:.0f}s elapsed, ~{eta} left{note}"

    def close(self) -> None:
        """End the bar's line."""
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
