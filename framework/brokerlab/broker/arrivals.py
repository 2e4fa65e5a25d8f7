"""What a topic group's producers publish: entry sizes, keys, delays and publish times.

A workload's ``[[topics]]`` table with ``count = n`` is a group of n topics whose producers behave
alike. The group's entries are drawn together, from one random stream, one window of virtual
time at a time, and handed out in publish order (ties in topic order). A run with 10,000 quiet
topics then costs a few numpy calls per window, not a few per topic, and keeps one event in the
loop per group instead of one per topic.

Each topic still publishes a Poisson process of its own rate (or at a constant interval): in a
window of length ``W`` a topic's entry count is Poisson(rate x W) and, given the count, its publish
times are uniform in the window, which is the same process as exponential gaps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from brokerlab.broker.ledger import NO_KEY
from brokerlab.workloads.model import TopicSpec

__all__ = ["Backlog", "Block", "GroupArrivals"]

NS: Final = 1_000_000_000
# About how many entries one window holds: large enough that numpy's per-call cost vanishes,
# small enough that a window's arrays stay a few MB.
WINDOW_ENTRIES: Final = 32_768
# The most entries one block hands out as Python lists. A whole window as lists would be several
# MB of int objects, crowding out of the processor's caches the state of the topics being
# served; the window waits as numpy arrays (8 bytes a value) and is converted a block at a time.
BLOCK_ENTRIES: Final = 1024


@dataclass(frozen=True, slots=True)
class Block:
    """One window's entries in publish order, as parallel lists (plain ints for the hot path)."""

    times_ns: list[int]
    topics: list[int]  # index of the topic in its group
    sizes: list[int]  # bytes of the entry (all messages of a batch)
    keys: list[int]
    delays_ms: list[int]  # 0 for a message without a deliver-at time


@dataclass(frozen=True, slots=True)
class Backlog:
    """The entries each topic holds before time zero: ``sizes[topic][i]`` and ``keys[topic][i]``,
    published ``step_ns`` apart (the arrival interval), the last one ``step_ns`` before zero."""

    sizes: list[list[int]]
    keys: list[list[int]]
    step_ns: int


class GroupArrivals:
    """Draws a topic group's entries; the caller publishes them.

    ``end_ns`` is when the producers stop: no entry is published at or after it. The random
    stream sees the same calls in the same order on every run with the same seed.
    """

    def __init__(self, spec: TopicSpec, rng: np.random.Generator, end_ns: int) -> None:
        self.spec = spec
        self.rng = rng
        self.end_ns = end_ns
        self.count = spec.topic_count
        # Entries per second per topic (a batch of messages is one entry).
        self.entry_rate = spec.rate_per_topic / spec.batch_size
        if spec.keys is not None:
            weights = 1.0 / np.arange(1, spec.keys.count + 1, dtype=float) ** spec.keys.skew
            self._key_p: np.ndarray | None = weights / weights.sum()
        else:
            self._key_p = None
        self._window_start = 0  # where the next window starts (Poisson)
        self._next_tick = 1  # the next constant-arrival instant, in intervals
        # The current window's columns (times, topics, sizes, keys, delays) and how much of it
        # the blocks handed out so far covered.
        self._window: tuple[np.ndarray, ...] = ()
        self._handed_out = 0

    @property
    def interval_ns(self) -> int:
        """The constant arrival interval, at least 1 ns (0 for a group that never publishes)."""
        return max(1, round(NS / self.entry_rate)) if self.entry_rate > 0 else 0

    def backlog(self, entries: int) -> Backlog:
        """``entries`` entries for each topic of the group, published before time zero."""
        n = self.count * entries
        sizes = self._entry_sizes(n).reshape(self.count, entries)
        keys = self._keys(n).reshape(self.count, entries)
        return Backlog(sizes.tolist(), keys.tolist(), max(1, self.interval_ns))

    def next_block(self) -> Block | None:
        """The next entries (at most ``BLOCK_ENTRIES``), or None once the producers have stopped.

        Blocks cut windows, never join them: the random draws are those of whole windows.
        """
        if not self._window or self._handed_out >= len(self._window[0]):
            window = self._next_window()
            if window is None:
                return None
            self._window, self._handed_out = window, 0
        lo = self._handed_out
        hi = self._handed_out = lo + BLOCK_ENTRIES
        times, topics, sizes, keys, delays_ms = self._window
        return Block(
            times[lo:hi].tolist(),
            topics[lo:hi].tolist(),
            sizes[lo:hi].tolist(),
            keys[lo:hi].tolist(),
            delays_ms[lo:hi].tolist(),
        )

    def _next_window(self) -> tuple[np.ndarray, ...] | None:
        """The next window's columns, drawn together, or None once the producers have stopped."""
        if self.entry_rate <= 0:
            return None
        window = (
            self._constant_window() if self.spec.arrival == "constant" else self._poisson_window()
        )
        if window is None:
            return None
        times, topics = window
        n = len(times)
        return (times, topics, self._entry_sizes(n), self._keys(n), self._delays_ms(n))

    # ---- publish times ------------------------------------------------------------------------

    def _poisson_window(self) -> tuple[np.ndarray, np.ndarray] | None:
        rng = self.rng
        per_ns = self.entry_rate / NS
        while self._window_start < self.end_ns:
            start = self._window_start
            length = min(self.end_ns - start, max(1, round(WINDOW_ENTRIES / (self.count * per_ns))))
            self._window_start = start + length
            counts = rng.poisson(per_ns * length, self.count)
            # At least 1 ns: a producer publishes after the run starts, as with an exponential gap.
            times = np.rint(start + rng.random(int(counts.sum())) * length)
            times = np.maximum(1, times).astype(np.int64)
            topics = np.repeat(np.arange(self.count, dtype=np.int64), counts)
            keep = times < self.end_ns  # rounding can reach the end of the last window
            if keep.any():
                order = np.lexsort((topics[keep], times[keep]))
                return times[keep][order], topics[keep][order]
            # A quiet window (a low rate): draw the next one.
        return None

    def _constant_window(self) -> tuple[np.ndarray, np.ndarray] | None:
        interval = self.interval_ns
        last = (self.end_ns - 1) // interval  # the last tick before the end
        first = self._next_tick
        if first > last:
            return None
        ticks = min(last - first + 1, max(1, WINDOW_ENTRIES // self.count))
        self._next_tick = first + ticks
        instants = np.arange(first, first + ticks, dtype=np.int64) * interval
        # Every topic publishes at every instant, in topic order.
        times = np.repeat(instants, self.count)
        topics = np.tile(np.arange(self.count, dtype=np.int64), ticks)
        return times, topics

    # ---- entry contents -----------------------------------------------------------------------

    def _entry_sizes(self, n: int) -> np.ndarray:
        batch = self.spec.batch_size
        sizes = _message_sizes(self.spec, self.rng, n * batch)
        return sizes if batch == 1 else sizes.reshape(n, batch).sum(axis=1)

    def _keys(self, n: int) -> np.ndarray:
        if self._key_p is None:
            return np.full(n, NO_KEY, dtype=np.int64)
        return self.rng.choice(len(self._key_p), size=n, p=self._key_p)

    def _delays_ms(self, n: int) -> np.ndarray:
        out = np.zeros(n, dtype=np.int64)
        if not self.spec.delays:
            return out
        u = self.rng.random(n)
        lower = 0.0
        for d in self.spec.delays:
            chosen = (u >= lower) & (u < lower + d.fraction)
            out[chosen] = self.rng.integers(d.min_ms, d.max_ms + 1, size=int(chosen.sum()))
            lower += d.fraction
        return out


def _message_sizes(spec: TopicSpec, rng: np.random.Generator, n: int) -> np.ndarray:
    m = spec.message_size
    if m.kind == "fixed":
        return np.full(n, m.value, dtype=np.int64)
    if m.kind == "uniform":
        return rng.integers(m.min, m.max + 1, size=n)
    raw = rng.lognormal(np.log(m.median), m.sigma, size=n)
    return np.clip(np.rint(raw), m.min, m.max).astype(np.int64)
