"""Legacy backlogged-cursor caching (``checkCursorsToCacheEntries``, the "PR12258" keys, §5.3).

Pulsar decides every stats period (about a minute) which cursors cache the entries they read from
storage: a cursor with a backlog of at least ``minimumBacklogEntries`` caches its reads when at
least ``minimumBacklogCursors`` other cursors have a backlog within ``maxBacklogBetweenCursors``
of its own. The cache only sees reads and adds, so a reader's backlog is estimated from the
position of its latest read and the ends of the ledgers the cache has seen.
"""

from __future__ import annotations

from typing import Any, Final

from brokerlab.protocols import Clock

__all__ = ["BacklogCaching"]

CHECK_INTERVAL_NS: Final = 60 * 1_000_000_000
"""Pulsar runs the check with the stats update, ``statsUpdateFrequencyInSecs`` = 60."""


class _TopicBacklogs:
    """What one topic's check needs: ledger ends seen and each reader's latest read position."""

    __slots__ = ("caching", "ledger_ends", "next_check_ns", "readers")

    def __init__(self, first_check_ns: int) -> None:
        self.ledger_ends: dict[int, int] = {}
        self.readers: dict[str, tuple[int, int]] = {}
        self.caching: frozenset[str] = frozenset()
        self.next_check_ns = first_check_ns


class BacklogCaching:
    """Which readers cache their storage reads, per topic (``cursor.isCacheReadEntry()``).

    ``by_mark_delete`` reproduces ``isCacheReadEntry = cacheReadEntry ||
    cacheEvictionByMarkDeletedPosition`` (spec §5.3, inferred, low confidence).
    """

    __slots__ = (
        "_by_mark_delete",
        "_clock",
        "_max_between",
        "_min_cursors",
        "_min_entries",
        "_topics",
        "enabled",
    )

    def __init__(self, settings: Any, clock: Clock) -> None:
        self._clock = clock
        self._min_cursors: int = settings.managed_ledger_minimum_backlog_cursors_for_caching
        self._min_entries: int = settings.managed_ledger_minimum_backlog_entries_for_caching
        self._max_between: int = settings.managed_ledger_max_backlog_between_cursors_for_caching
        self._by_mark_delete: bool = settings.cache_eviction_by_mark_deleted_position
        self.enabled = self._min_cursors >= 1
        """Whether the per-read bookkeeping is needed at all (the feature is off by default)."""
        self._topics: dict[str, _TopicBacklogs] = {}

    def open(self, topic: str) -> None:
        self._topics[topic] = _TopicBacklogs(self._clock.now_ns() + CHECK_INTERVAL_NS)

    def close(self, topic: str) -> None:
        self._topics.pop(topic, None)

    def saw_entries(self, topic: str, ledger_id: int, last_entry: int) -> None:
        """Entries up to ``last_entry`` exist in ``ledger_id`` (an add, or a read)."""
        state = self._topics.get(topic)
        if state is not None and state.ledger_ends.get(ledger_id, 0) <= last_entry:
            state.ledger_ends[ledger_id] = last_entry + 1

    def saw_read(self, topic: str, ledger_id: int, first: int, last: int, reader: str) -> None:
        state = self._topics.get(topic)
        if state is None:
            return
        if state.ledger_ends.get(ledger_id, 0) <= last:
            state.ledger_ends[ledger_id] = last + 1
        state.readers[reader] = (ledger_id, first)

    def caches_reads(self, topic: str, reader: str) -> bool:
        """``isCacheReadEntry()`` of ``reader`` now (re-running the check when it is due)."""
        if self._by_mark_delete:
            return True
        if not self.enabled:
            return False
        state = self._topics.get(topic)
        if state is None:
            return False
        now = self._clock.now_ns()
        if now >= state.next_check_ns:
            state.caching = self._check(state)
            state.next_check_ns = now + CHECK_INTERVAL_NS
        return reader in state.caching

    def _check(self, state: _TopicBacklogs) -> frozenset[str]:
        backlogs = {name: _backlog(state.ledger_ends, pos) for name, pos in state.readers.items()}
        chosen: set[str] = set()
        for name, mine in backlogs.items():
            if mine < self._min_entries:
                continue
            similar = sum(
                1
                for other, theirs in backlogs.items()
                if other != name and abs(mine - theirs) <= self._max_between
            )
            if similar >= self._min_cursors:
                chosen.add(name)
        return frozenset(chosen)


def _backlog(ledger_ends: dict[int, int], position: tuple[int, int]) -> int:
    """Entries at or after ``position`` among the ledgers seen."""
    ledger_id, entry_id = position
    total = max(0, ledger_ends.get(ledger_id, 0) - entry_id)
    return total + sum(end for lid, end in ledger_ends.items() if lid > ledger_id)
