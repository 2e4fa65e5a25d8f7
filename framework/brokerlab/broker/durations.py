"""Durations drawn from a workload's :class:`~brokerlab.workloads.DurationSpec`, in nanoseconds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import numpy as np

from brokerlab.broker.streams import stream
from brokerlab.workloads.model import DurationSpec

__all__ = ["Durations", "write_latencies"]

MS: Final = 1_000_000
# Draws are made this many at a time: one numpy call per block rather than one per operation.
BLOCK: Final = 256


class Durations:
    """Successive draws of one duration, each in whole nanoseconds.

    A fixed duration never touches its random stream, so adding one changes no other draw; any
    other kind draws from ``rng`` (a stream of its own, see ``streams.py``) in blocks, so the
    n-th draw is the same however the draws are spread over the run.
    """

    __slots__ = ("_block", "_index", "_rng", "_spec", "fixed_ns")

    def __init__(self, spec: DurationSpec, rng: np.random.Generator) -> None:
        self._spec = spec
        self._rng = rng
        # Set for a fixed duration (the common case, and the only one that draws nothing).
        self.fixed_ns: int | None = round(spec.value * MS) if spec.kind == "fixed" else None
        self._block: list[int] = []
        self._index = 0

    def next_ns(self) -> int:
        """The next draw."""
        if self.fixed_ns is not None:
            return self.fixed_ns
        if self._index == len(self._block):
            self._block = self._draw(BLOCK)
            self._index = 0
        value = self._block[self._index]
        self._index += 1
        return value

    def total_ns(self, n: int) -> int:
        """The sum of the next ``n`` draws."""
        if self.fixed_ns is not None:
            return self.fixed_ns * n
        total = 0
        for _ in range(n):
            total += self.next_ns()
        return total

    def _draw(self, n: int) -> list[int]:
        spec, rng = self._spec, self._rng
        if spec.kind == "exponential":
            ms = rng.exponential(spec.mean, size=n)
        elif spec.kind == "lognormal":
            ms = np.minimum(rng.lognormal(np.log(spec.median), spec.sigma, size=n), spec.max)
        else:
            values = np.asarray(spec.values, dtype=np.float64)
            weights = np.asarray(spec.weights or [1.0] * len(spec.values), dtype=np.float64)
            ms = values[rng.choice(len(values), size=n, p=weights / weights.sum())]
        ns: list[int] = np.rint(ms * MS).astype(np.int64).tolist()
        return ns


def write_latencies(spec: DurationSpec, seed: int) -> Callable[[str], Callable[[], int]] | None:
    """``PluginContext.storage_write_ns`` for storage writes that take ``spec``: each writer
    draws from a stream of its own, so one writer's writes never shift another's draws."""
    if spec.is_zero:
        return None

    def for_writer(name: str) -> Callable[[], int]:
        return Durations(spec, stream(seed, "storage", "write", name)).next_ns

    return for_writer
