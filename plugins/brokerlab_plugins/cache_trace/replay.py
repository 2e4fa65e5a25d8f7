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
from brokerlab.protocols import CursorContainer, EntryCache
from brokerlab_plugins.cache_trace.traces import Trace

__all__ = ["READER", "TOPIC", "TraceReplay"]

TOPIC: Final = "trace"
READER: Final = "trace-reader"

Admission = Literal["add", "storage-read"]


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
        cache, run_until = self.cache, self.loop.run_until
        read, released, size_bytes = cache.read, cache.released, cache.size_bytes
        insert, storage_read = cache.insert, cache.storage_read
        by_add = self.admission == "add"
        ledgers, entries, times, sizes = trace.columns(self.entries_per_ledger)
        total = len(times)
        hits = [False] * total
        step = max(1, total // 100)
        peak = self.peak_bytes
        with new_objects_only():
            for i in range(total):
                # Every request runs what is due first, a size eviction triggered by the previous
                # request at this same instant included.
                run_until(times[i])
                ledger, entry = ledgers[i], entries[i]
                if read(TOPIC, ledger, entry, entry, READER):
                    if by_add:
                        insert(TOPIC, (ledger, entry), sizes[i])
                    else:
                        storage_read(TOPIC, ledger, (entry,), (sizes[i],), READER)
                    held = size_bytes()
                    if held > peak:
                        peak = held
                else:
                    hits[i] = True
                released(TOPIC, (ledger, entry))
                if progress is not None and i % step == 0:
                    progress(i / total)
        self.peak_bytes = peak
        if total:
            run_until(times[-1])  # let a last triggered eviction finish
        return np.array(hits, dtype=np.bool_)
