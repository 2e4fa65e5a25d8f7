"""Replay a trace straight through an entry cache, one request at a time, on the simulation clock.

Each request is a one-entry read by a single reader. On a miss the object reaches the cache as
the workload's ``admission`` says (the add path, or a storage read), and in both cases the
requester consumes its copy (``released``), as a dispatcher does after delivering an entry.

How a generic cache maps onto a broker cache:

* all objects live in one topic; the k-th distinct object is entry ``k % n`` of ledger ``k // n``
  (positions in first-request order, as a broker appends entries);
* the reader is an active cursor parked at the first position, so every object lies ahead of it
  and both broker caches keep what they admit; it never moves, because a moving cursor makes the
  legacy cache drop everything behind it, which no generic cache does;
* the cache's periodic eviction runs every ``managedLedgerCacheEvictionIntervalMs`` of simulated
  time, as in the broker, and a size eviction a request triggers runs before the next request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from brokerlab.broker.events import EventLoop
from brokerlab.gc_policy import new_objects_only
from brokerlab.protocols import CursorContainer, EntryCache, SingleEntryCache
from brokerlab_plugins.cache_trace.traces import Trace

__all__ = ["READER", "TOPIC", "CacheRequests", "SingleEntryRequests", "TraceReplay", "requests_of"]

TOPIC: Final = "trace"
READER: Final = "trace-reader"

Admission = Literal["add", "storage-read"]


class CacheRequests:
    """The requests a replay makes of its cache, through the :class:`EntryCache` protocol."""

    def __init__(self, cache: EntryCache, admission: Admission) -> None:
        self.cache = cache
        self.by_add = admission == "add"

    def hit(self, ledger: int, entry: int) -> bool:
        """Read one entry; whether the cache had it."""
        return not self.cache.read(TOPIC, ledger, entry, entry, READER)

    def admit(self, ledger: int, entry: int, size: int) -> None:
        """Offer a missed entry to the cache, by the replay's admission path."""
        if self.by_add:
            self.cache.insert(TOPIC, (ledger, entry), size)
        else:
            self.cache.storage_read(TOPIC, ledger, (entry,), (size,), READER)

    def release(self, ledger: int, entry: int) -> None:
        """The reader consumed its copy."""
        self.cache.released(TOPIC, (ledger, entry))

    def size_bytes(self) -> int:
        return self.cache.size_bytes()


class SingleEntryRequests(CacheRequests):
    """The same requests of a :class:`~brokerlab.protocols.SingleEntryCache`, through its
    one-entry methods, taken bound once: a replay spends most of its time in these calls."""

    def __init__(self, cache: SingleEntryCache, admission: Admission) -> None:
        super().__init__(cache, admission)
        self._read_entry: Callable[[str, int, int, str], bool] = cache.read_entry
        self._insert: Callable[[str, tuple[int, int], int], bool] = cache.insert
        self._storage_read_entry: Callable[[str, int, int, int, str], None] = (
            cache.storage_read_entry
        )
        self._release_entry: Callable[[str, int, int], None] = cache.release_entry
        self._size_bytes: Callable[[], int] = cache.size_bytes

    def hit(self, ledger: int, entry: int) -> bool:
        return self._read_entry(TOPIC, ledger, entry, READER)

    def admit(self, ledger: int, entry: int, size: int) -> None:
        if self.by_add:
            self._insert(TOPIC, (ledger, entry), size)
        else:
            self._storage_read_entry(TOPIC, ledger, entry, size, READER)

    def release(self, ledger: int, entry: int) -> None:
        self._release_entry(TOPIC, ledger, entry)

    def size_bytes(self) -> int:
        return self._size_bytes()


def requests_of(cache: EntryCache, admission: Admission) -> CacheRequests:
    """The requests a replay makes of ``cache``: through the one-entry methods of a cache that
    has them (found by its members, whoever wrote it), else through the general ones."""
    if isinstance(cache, SingleEntryCache):
        return SingleEntryRequests(cache, admission)
    return CacheRequests(cache, admission)


class TraceReplay:
    """One replay: the cache, its one topic and reader, and the clock that drives both."""

    def __init__(
        self,
        cache: EntryCache,
        cursors: CursorContainer,
        loop: EventLoop,
        *,
        eviction_interval_ns: int,
        entries_per_ledger: int,
        admission: Admission = "add",
    ) -> None:
        self.cache = cache
        self.loop = loop
        self.entries_per_ledger = entries_per_ledger
        self.admission = admission
        self.peak_bytes = 0
        cache.open_ledger(TOPIC, cursors)
        cursors.add(READER, (0, 0))
        cache.cursors_changed(TOPIC)
        loop.call_every(eviction_interval_ns, eviction_interval_ns, cache.evict_expired)

    def run(
        self, trace: Trace, progress: Callable[[float], None] | None = None
    ) -> npt.NDArray[np.bool_]:
        """Replay every request of ``trace``; returns whether each one was a hit."""
        requests, loop = requests_of(self.cache, self.admission), self.loop
        objects, times, sizes = trace.columns()
        per_ledger = self.entries_per_ledger
        total = len(times)
        hits = [False] * total
        step = max(1, total // 100)
        peak = self.peak_bytes
        with new_objects_only():
            for i in range(total):
                # Every request runs what is due first, a size eviction triggered by the previous
                # request at this same instant included.
                loop.run_until(times[i])
                ledger = objects[i] // per_ledger
                entry = objects[i] - ledger * per_ledger
                if requests.hit(ledger, entry):
                    hits[i] = True
                else:
                    requests.admit(ledger, entry, sizes[i])
                    held = requests.size_bytes()
                    if held > peak:
                        peak = held
                requests.release(ledger, entry)
                if progress is not None and i % step == 0:
                    progress(i / total)
        self.peak_bytes = peak
        if total:
            loop.run_until(times[-1])  # let a last triggered eviction finish
        # Bytes, then a view as booleans: numpy converts a list of bools one object at a time.
        return np.frombuffer(bytearray(hits), dtype=np.bool_)
