"""An S3-FIFO-style eviction predicate for PIP-430's single removal queue.

S3-FIFO (Yang et al., "FIFO queues are all you need for cache eviction", SOSP 2023) keeps three
FIFOs: a small probationary one (10% of the cache), a main one (90%) and a ghost one that holds
only the keys of entries recently evicted from the small FIFO. Each entry has a 2-bit frequency
counter. An entry evicted from the small FIFO moves to the main FIFO if it was read there, else
it is dropped and remembered in the ghost; an entry found in the ghost on insertion goes straight
to the main FIFO; the main FIFO gives an entry with a non-zero frequency another round (frequency
minus one) and evicts one with zero.

A predicate cannot restructure PIP-430's queue: it only sees the head entry and answers REMOVE,
REQUEUE (move to the tail), STOP or nothing. So both FIFOs are *phases* of entries in the one
queue, kept in this predicate's own table:

* a new entry is *probationary* (small FIFO), or *main* if its position is in the ghost;
* a size pass evicts from the small phase while probationary entries hold at least
  ``smallQueueRatio`` of the cache size (or there are no main entries), else from the main phase;
  a head entry of the other phase is skipped with a REQUEUE that leaves its frequency alone;
* a probationary head read at least ``moveToMainThreshold`` times moves to the main phase
  (REQUEUE); otherwise it is REMOVEd and its position and size enter the ghost;
* a main head with a frequency above zero is REQUEUEd with the frequency minus one; at zero it is
  REMOVEd;
* a time pass only speaks for expired heads (live ones: no decision, so the queue stops there):
  the same phase rules, without the skipping, so a frequently read entry outlives the TTL.

The predicate is deterministic: it draws no random numbers.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from brokerlab import (
    CachedEntryView,
    EvictionDecision,
    EvictionPass,
    PluginContext,
    Position,
)

from brokerlab_s3fifo.settings import NAMESPACE, S3FifoSettings

__all__ = ["MAX_FREQUENCY", "S3FifoPredicate"]

MAX_FREQUENCY = 3
"""Frequencies are 2-bit counters, as in S3-FIFO: reads beyond the third are not counted."""

_REMOVE = EvictionDecision.REMOVE
_REQUEUE = EvictionDecision.REQUEUE
_TIME = EvictionPass.TIME


class _Entry:
    """What the predicate keeps per cached entry: its size, frequency and phase."""

    __slots__ = ("frequency", "main", "size")

    def __init__(self, size: int, main: bool) -> None:
        self.size = size
        self.frequency = 0
        self.main = main


class S3FifoPredicate:
    """Satisfies :class:`~brokerlab.protocols.EvictionPredicate`; one instance per cache.

    ``capacity`` is the cache size in bytes. Counters (``promotions``, ``ghost_hits``,
    ``skips``, ``second_chances``) are kept for tests and reports.
    """

    name = "s3fifo"

    def __init__(self, capacity: int, settings: S3FifoSettings | None = None) -> None:
        settings = settings or S3FifoSettings()
        self.capacity = capacity
        self.small_limit = settings.small_queue_ratio * capacity
        self.ghost_limit = settings.ghost_ratio * capacity
        self.threshold = settings.move_to_main_threshold
        self._entries: dict[Position, _Entry] = {}
        self._evicting: set[Position] = set()
        self._ghost: OrderedDict[Position, int] = OrderedDict()
        self.small_bytes = 0
        self.main_bytes = 0
        self.ghost_bytes = 0
        self.promotions = 0
        self.ghost_hits = 0
        self.skips = 0
        self.second_chances = 0

    @classmethod
    def from_context(cls, context: PluginContext) -> S3FifoPredicate:
        """Built from the profile: the cache size and the ``sim.s3fifo.*`` keys."""
        own = context.plugin_settings.get(NAMESPACE)
        settings = own if isinstance(own, S3FifoSettings) else S3FifoSettings()
        broker: Any = context.settings
        return cls(int(broker.cache_size_bytes), settings)

    # ---- views for tests ---------------------------------------------------------------------

    def phase(self, position: Position) -> str | None:
        """``"small"``, ``"main"``, or ``None`` for an entry this predicate does not hold."""
        entry = self._entries.get(position)
        return None if entry is None else ("main" if entry.main else "small")

    def frequency(self, position: Position) -> int | None:
        entry = self._entries.get(position)
        return None if entry is None else entry.frequency

    def remembers(self, position: Position) -> bool:
        """Whether ``position`` is in the ghost."""
        return position in self._ghost

    # ---- notifications -----------------------------------------------------------------------

    def on_insert(self, entry: CachedEntryView) -> None:
        position = entry.position
        if position in self._entries:  # never expected: the cache removes before re-inserting
            self._forget(position)
        size = self._ghost.pop(position, None)
        main = size is not None
        if size is not None:
            self.ghost_bytes -= size
            self.ghost_hits += 1
        self._entries[position] = _Entry(entry.size, main)
        if main:
            self.main_bytes += entry.size
        else:
            self.small_bytes += entry.size

    def on_access(self, entry: CachedEntryView) -> None:
        state = self._entries.get(entry.position)
        if state is not None and state.frequency < MAX_FREQUENCY:
            state.frequency += 1

    def on_remove(self, entry: CachedEntryView) -> None:
        position = entry.position
        state = self._forget(position)
        evicted_by_us = position in self._evicting
        self._evicting.discard(position)
        if state is not None and not state.main and evicted_by_us and self.ghost_limit > 0:
            self._remember(position, state.size)

    def _forget(self, position: Position) -> _Entry | None:
        state = self._entries.pop(position, None)
        if state is not None:
            if state.main:
                self.main_bytes -= state.size
            else:
                self.small_bytes -= state.size
        return state

    def _remember(self, position: Position, size: int) -> None:
        self._ghost[position] = size
        self.ghost_bytes += size
        while self.ghost_bytes > self.ghost_limit and self._ghost:
            _, old = self._ghost.popitem(last=False)
            self.ghost_bytes -= old

    # ---- decisions ---------------------------------------------------------------------------

    def decide(
        self, entry: CachedEntryView, kind: EvictionPass, threshold_ns: int
    ) -> EvictionDecision | None:
        position = entry.position
        state = self._entries.get(position)
        if state is None:
            return None  # not ours (inserted before this predicate existed): the queue's rule
        if kind is _TIME:
            if entry.timestamp_ns >= threshold_ns:
                return None  # live: the queue stops at it
            return self._main(state) if state.main else self._small(state, position)
        from_small = self.small_bytes >= self.small_limit or self.main_bytes <= 0
        if state.main:
            if from_small and self.small_bytes > 0:
                self.skips += 1
                return _REQUEUE  # evicting from the small phase: pass over main entries
            return self._main(state)
        if not from_small:
            self.skips += 1
            return _REQUEUE  # evicting from the main phase: pass over probationary entries
        return self._small(state, position)

    def _small(self, state: _Entry, position: Position) -> EvictionDecision:
        if state.frequency >= self.threshold:
            state.main = True
            self.small_bytes -= state.size
            self.main_bytes += state.size
            self.promotions += 1
            return _REQUEUE
        self._evicting.add(position)
        return _REMOVE

    def _main(self, state: _Entry) -> EvictionDecision:
        if state.frequency > 0:
            state.frequency -= 1
            self.second_chances += 1
            return _REQUEUE
        return _REMOVE
