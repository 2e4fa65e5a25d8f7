"""A virtual clock, a fake remote storage and a cache harness for the Kafka remote index cache
tests, unit and conformance alike.

Imported by both suites (``tests/support`` is on pytest's ``pythonpath``); it holds no tests.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from brokerlab_plugins.kafka_remote_index.cache import (
    Entry,
    IndexType,
    RemoteIndexCache,
    RemoteResourceNotFound,
    RemoteSegment,
    RemovalCause,
)
from brokerlab_plugins.kafka_remote_index.disk import (
    CacheDirectory,
)

MS = 1_000_000
SEC = 1000  # ms
MIB = 1024 * 1024
# One segment's indexes weigh 1000 + 600 + 100 bytes.
ENTRY_BYTES = 1700


class Handle:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeLoop:
    """Virtual nanosecond clock plus a heap of (when, seq, callback, handle)."""

    def __init__(self) -> None:
        self.now = 0
        self._seq = 0
        self._heap: list[tuple[int, int, Callable[[], None], Handle]] = []

    def now_ns(self) -> int:
        return self.now

    def call_at(self, when_ns: int, callback: Callable[[], None]) -> Handle:
        handle = Handle()
        self._seq += 1
        heapq.heappush(self._heap, (max(when_ns, self.now), self._seq, callback, handle))
        return handle

    def advance(self, ms: int) -> None:
        self.advance_ns(ms * MS)

    def advance_ns(self, ns: int) -> None:
        end = self.now + ns
        while self._heap and self._heap[0][0] <= end:
            when, _, callback, handle = heapq.heappop(self._heap)
            if handle.cancelled:
                continue
            self.now = when
            callback()
        self.now = end

    @property
    def scheduled(self) -> int:
        return sum(1 for *_, h in self._heap if not h.cancelled)


class FakeStorage:
    """The RSM: returns the segment's index sizes, raises not-found for a missing txn index."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, IndexType]] = []

    def fetch_index(self, segment: RemoteSegment, index_type: IndexType) -> int:
        self.calls.append((segment.uuid, index_type))
        if index_type is IndexType.OFFSET:
            return segment.offset_index_bytes
        if index_type is IndexType.TIMESTAMP:
            return segment.time_index_bytes
        if segment.txn_missing:
            raise RemoteResourceNotFound(segment.uuid)
        return segment.txn_index_bytes

    def count(self, index_type: IndexType | None = None, uuid: str | None = None) -> int:
        return sum(
            1
            for u, t in self.calls
            if (index_type is None or t is index_type) and (uuid is None or u == uuid)
        )


def seg(i: int, weight: int = ENTRY_BYTES, *, txn_missing: bool = False) -> RemoteSegment:
    """Segment ``m<i>``; the weight is split 1000/600/100-like over the three indexes."""
    off = weight * 10 // 17
    time = weight * 6 // 17
    return RemoteSegment(
        uuid=f"m{i}",
        start_offset=i * 1000,
        offset_index_bytes=off,
        time_index_bytes=time,
        txn_index_bytes=weight - off - time,
        txn_missing=txn_missing,
    )


class Harness:
    def __init__(
        self,
        *,
        max_bytes: int = MIB,
        ttl_ms: int = -1,
        policy: str = "lru",
        directory: CacheDirectory | None = None,
        storage: FakeStorage | None = None,
        loop: FakeLoop | None = None,
        delay_ms: int = 20,
        every_reads: int = 0,
        seed: int = 7,
        on_removed: Callable[[str, RemovalCause, int], None] | None = None,
    ) -> None:
        self.loop = loop or FakeLoop()
        self.storage = storage or FakeStorage()
        self.removed: list[tuple[str, RemovalCause, int]] = []
        self.cache = RemoteIndexCache(
            max_bytes=max_bytes,
            ttl_ms=ttl_ms,
            policy=policy,
            clock=self.loop,
            scheduler=self.loop,
            storage=self.storage,
            seed=seed,
            directory=directory,
            file_delete_delay_ms=delay_ms,
            maintenance_every_reads=every_reads,
            on_removed=on_removed or (lambda u, c, w: self.removed.append((u, c, w))),
        )

    @property
    def dir(self) -> CacheDirectory:
        return self.cache.directory

    def get(self, i: int) -> Entry:
        return self.cache.get_index_entry(seg(i))

    def causes(self) -> list[RemovalCause]:
        return [c for _, c, _ in self.removed]
