"""``RemoteIndexCache``: Kafka's tiered-storage index cache on a virtual clock (spec §2-§5).

One entry per remote segment UUID, holding its offset, time and transaction index files in a
simulated cache directory. The weight of an entry is the sum of its three file sizes; a
size policy (``lru`` or ``w-tinylfu``) bounds the sum of weights, and an optional
expire-after-access TTL drops idle entries.

Maintenance (expire, then size-evict) runs synchronously at the end of every write (a load on
a miss, a start-up reload, an explicit removal, which Caffeine also treats as a write), every
resize, every ``clean_up()``, and every ``maintenance_every_reads`` read hits if that is > 0.
So the weighted size never exceeds the maximum when a public call returns; the overshoot
between a write and its maintenance that Kafka shows is not observable here. Read hits are
applied to the size policy at once (Caffeine's lossy read buffer is not modelled).

Every removal goes the same way: ``on_removed(uuid, cause, weight)``, the three files renamed
to ``.deleted``, their deletion scheduled ``file_delete_delay_ms`` later. ``on_removed`` is
brokerlab's observer: unlike Caffeine's eviction listener it is also called for
``EXPLICIT`` removal, where Kafka does the same file hand-off by hand. Size evictions run by the
maintenance of ``resize()`` are reported as ``RESIZE`` (Kafka's listener sees ``SIZE``).

A read of an expired entry is a miss: as in Caffeine's ``compute``, the old value is removed
with cause ``EXPIRED`` at once (files marked), and the reload takes its place under the same
key. An explicit ``remove`` of an expired entry does nothing itself; its maintenance then
expires the entry. ``close()`` cancels the pending deletions and keeps entries and files; a
removal after close still renames to ``.deleted`` but schedules nothing (Kafka's stopped
scheduler ignores the task), so those files wait for the next start-up.
"""

from __future__ import annotations

import enum
import random
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, Protocol

from brokerlab_plugins.kafka_remote_index.disk import (
    DELETED_SUFFIX,
    TMP_SUFFIX,
    CacheDirectory,
    index_file_names,
)
from brokerlab_plugins.kafka_remote_index.policies import SizePolicy, make_policy

__all__ = [
    "CacheClosedError",
    "Clock",
    "Entry",
    "EntryMarkedForCleanupError",
    "IndexType",
    "RemoteIndexCache",
    "RemoteResourceNotFound",
    "RemoteSegment",
    "RemoteStorage",
    "RemovalCause",
    "Scheduler",
    "TimerHandle",
]

_NS_PER_MS: Final = 1_000_000
OFFSET_INDEX_ENTRY_BYTES: Final = 8  # a 4-byte relative offset and a 4-byte file position
INDEX_INTERVAL_BYTES: Final = 4096  # Kafka's index.interval.bytes default
OFFSETS_PER_INDEX_ENTRY: Final = 4  # ~1 KiB records: four offsets per 4 KiB of log


class IndexType(enum.Enum):
    OFFSET = 0
    TIMESTAMP = 1
    TRANSACTION = 2


class RemovalCause(enum.Enum):
    SIZE = "size"
    EXPIRED = "expired"
    EXPLICIT = "explicit"
    RESIZE = "resize"


class CacheClosedError(RuntimeError):
    """Kafka's ``IllegalStateException`` from ``getIndexEntry`` on a closed cache."""


class EntryMarkedForCleanupError(RuntimeError):
    """Kafka's ``IllegalStateException`` from a lookup on an entry whose cleanup has started."""


class RemoteResourceNotFound(Exception):
    """Kafka's ``RemoteResourceNotFoundException``: ``fetch_index`` found no such index."""


@dataclass(frozen=True)
class RemoteSegment:
    """What the cache is asked about; ``uuid`` is the cache key."""

    uuid: str
    start_offset: int
    offset_index_bytes: int
    time_index_bytes: int
    txn_index_bytes: int  # 0 and/or txn_missing=True -> empty txn file
    txn_missing: bool = False


class RemoteStorage(Protocol):
    """The RemoteStorageManager; the cache calls it on a miss, once per missing index file."""

    def fetch_index(self, segment: RemoteSegment, index_type: IndexType) -> int:
        """The index's size in bytes; raises ``RemoteResourceNotFound`` if it does not exist."""


class Clock(Protocol):
    def now_ns(self) -> int: ...


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    def call_at(self, when_ns: int, callback: Callable[[], None]) -> TimerHandle: ...


@dataclass(eq=False, slots=True)
class Entry:
    """A cached segment: its three index files (final names) and their sizes.

    ``weight`` is fixed when the entry is built. ``marked_for_cleanup`` is set once, when the
    files are renamed to ``.deleted``; ``cleanup_started`` when the delayed deletion runs.
    """

    uuid: str
    start_offset: int
    files: tuple[str, str, str]
    sizes: tuple[int, int, int]
    last_access_ns: int
    marked_for_cleanup: bool = False
    cleanup_started: bool = False
    close_calls: int = 0

    @property
    def weight(self) -> int:
        return self.sizes[0] + self.sizes[1] + self.sizes[2]

    def lookup_offset(self, target: int) -> tuple[int, int]:
        """Kafka's ``OffsetIndex.lookup``: the last indexed ``(offset, file position)`` at or
        before ``target``; ``(start_offset, 0)`` before the first entry or in an empty index.
        An entry marked for cleanup (evicted: its files renamed to ``.deleted``) still answers;
        once its cleanup has started (the files deleted) it refuses, as Kafka's
        ``Entry.lookupOffset`` throws ``IllegalStateException`` (``RemoteIndexCacheTest
        .testFetchIndexAccessibleWhenMarkedForCleanup``).

        The offset index is modelled, not stored: its ``size // 8`` entries sit every
        ``OFFSETS_PER_INDEX_ENTRY`` offsets from the segment's start, one per
        ``INDEX_INTERVAL_BYTES`` of log (Kafka's ``index.interval.bytes`` default).
        """
        if self.cleanup_started:
            raise EntryMarkedForCleanupError(
                f"the index entry of segment {self.uuid} is cleaned up: its files are deleted"
            )
        count = self.sizes[0] // OFFSET_INDEX_ENTRY_BYTES
        if count == 0 or target < self.start_offset:
            return self.start_offset, 0
        slot = min((target - self.start_offset) // OFFSETS_PER_INDEX_ENTRY, count - 1)
        return self.start_offset + slot * OFFSETS_PER_INDEX_ENTRY, slot * INDEX_INTERVAL_BYTES

    @property
    def last_indexed_offset(self) -> int:
        """The offset of the offset index's last entry (the start offset when it is empty)."""
        count = self.sizes[0] // OFFSET_INDEX_ENTRY_BYTES
        return self.start_offset + max(count - 1, 0) * OFFSETS_PER_INDEX_ENTRY

    @property
    def closed(self) -> bool:
        return self.close_calls > 0


_INDEX_TYPES: Final = (IndexType.OFFSET, IndexType.TIMESTAMP, IndexType.TRANSACTION)
_FETCH_STATS: Final = ("fetches_offset", "fetches_timestamp", "fetches_transaction")
_EVICTION_STATS: Final = {
    RemovalCause.SIZE: "evictions_size",
    RemovalCause.EXPIRED: "evictions_expired",
    RemovalCause.EXPLICIT: "evictions_explicit",
    RemovalCause.RESIZE: "evictions_resize",
}


class RemoteIndexCache:
    """Kafka's ``RemoteIndexCache`` with a pluggable size policy and the KAFKA-19970 TTL."""

    def __init__(
        self,
        *,
        max_bytes: int,
        ttl_ms: int,
        policy: str,
        clock: Clock,
        scheduler: Scheduler,
        storage: RemoteStorage,
        seed: int,
        directory: CacheDirectory | None = None,
        file_delete_delay_ms: int = 10_000,
        maintenance_every_reads: int = 0,
        on_removed: Callable[[str, RemovalCause, int], None] | None = None,
    ) -> None:
        if file_delete_delay_ms < 0 or maintenance_every_reads < 0:
            raise ValueError("file_delete_delay_ms and maintenance_every_reads must be >= 0")
        self._clock = clock
        self._scheduler = scheduler
        self._storage = storage
        self._on_removed = on_removed
        self.policy_name = policy
        self._policy = make_policy(policy, max_bytes, random.Random(seed))
        # Caffeine enables expireAfterAccess only for a positive TTL; -1 and 0 both disable it.
        self.ttl_ms = ttl_ms
        self._ttl_ns = ttl_ms * _NS_PER_MS if ttl_ms > 0 else 0
        self._delete_delay_ns = file_delete_delay_ms * _NS_PER_MS
        self._maintain_every = maintenance_every_reads
        self._reads_since_maintenance = 0
        self._entries: dict[str, Entry] = {}
        # Access order (oldest first) so that expiry only looks at the expired prefix.
        self._access: OrderedDict[str, None] = OrderedDict()
        self._pending: dict[int, TimerHandle] = {}
        self._next_token = 0
        self._closed = False
        self._stats: dict[str, int] = dict.fromkeys(
            (
                "hits",
                "misses",
                *_FETCH_STATS,
                "txn_not_found",
                "files_reused",
                "corrupt_refetches",
                *_EVICTION_STATS.values(),
                "reloaded",
                "files_deleted",
                "cleanup_errors",
            ),
            0,
        )
        self.directory = directory if directory is not None else CacheDirectory()
        self._init_from_directory()

    # ---------------------------------------------------------------- lookups and loading

    def get_index_entry(self, segment: RemoteSegment) -> Entry:
        """The segment's entry, loading its indexes on a miss; refreshes the TTL."""
        if self._closed:
            raise CacheClosedError("the remote index cache is closed")
        uuid = segment.uuid
        now = self._clock.now_ns()
        entry = self._entries.get(uuid)
        if entry is not None:
            if not self._expired(entry, now):
                self._stats["hits"] += 1
                entry.last_access_ns = now
                if self._ttl_ns:
                    self._access.move_to_end(uuid)
                self._policy.on_read(uuid)
                if self._maintain_every:
                    self._reads_since_maintenance += 1
                    if self._reads_since_maintenance >= self._maintain_every:
                        self._maintain()
                return entry
            # Caffeine's compute on an expired entry: evict it (EXPIRED) first, then load anew
            # under the same key; the old files are already renamed, so the load fetches.
            self._hand_off(entry, RemovalCause.EXPIRED, now)
        self._stats["misses"] += 1
        try:
            fresh = self._load(segment, now)
        except BaseException:
            if entry is not None:  # the expired value is gone; do not leave it in the map
                self._forget(uuid)
            raise
        self._put(fresh)
        self._maintain()
        return fresh

    def lookup_offset(self, segment: RemoteSegment, offset: int) -> tuple[int, int]:
        """Kafka's ``lookupOffset``: through :meth:`get_index_entry` (an access: it loads on a
        miss and refreshes the TTL), then the offset index's lookup."""
        return self.get_index_entry(segment).lookup_offset(offset)

    def _load(self, segment: RemoteSegment, now: int) -> Entry:
        """Reuse a sane file already in the directory, else fetch it via ``<name>.tmp``."""
        names = index_file_names(segment.start_offset, segment.uuid)
        directory = self.directory
        sizes = [0, 0, 0]
        for i, index_type in enumerate(_INDEX_TYPES):
            name = names[i]
            if directory.exists(name):
                if not directory.is_corrupt(name):
                    sizes[i] = directory.size(name)
                    self._stats["files_reused"] += 1
                    continue
                self._stats["corrupt_refetches"] += 1
                directory.delete(name)
            sizes[i] = self._fetch(segment, index_type)
            directory.create(name + TMP_SUFFIX, sizes[i])
            directory.rename(name + TMP_SUFFIX, name)
        return Entry(
            uuid=segment.uuid,
            start_offset=segment.start_offset,
            files=names,
            sizes=(sizes[0], sizes[1], sizes[2]),
            last_access_ns=now,
        )

    def _fetch(self, segment: RemoteSegment, index_type: IndexType) -> int:
        """One RSM call; a txn index it does not have (or ``txn_missing``) is an empty file."""
        self._stats[_FETCH_STATS[index_type.value]] += 1
        try:
            size = self._storage.fetch_index(segment, index_type)
        except RemoteResourceNotFound:
            if index_type is not IndexType.TRANSACTION:
                raise
            size = -1
        if index_type is IndexType.TRANSACTION and (size < 0 or segment.txn_missing):
            self._stats["txn_not_found"] += 1
            return 0
        return size

    def _put(self, entry: Entry) -> None:
        """A write; a replaced key (an expired one reloaded) keeps its policy slot and history,
        as a Caffeine node does."""
        uuid = entry.uuid
        self._entries[uuid] = entry
        if self._ttl_ns:
            self._access[uuid] = None
            self._access.move_to_end(uuid)
        self._policy.on_write(uuid, entry.weight)

    # ---------------------------------------------------------------- queries (no access)

    def _expired(self, entry: Entry, now: int) -> bool:
        return self._ttl_ns > 0 and now - entry.last_access_ns >= self._ttl_ns

    def _expired_resident(self, now: int) -> tuple[int, int]:
        """Entries expired but still resident, and their weight (no access, no removal)."""
        count = weight = 0
        if self._ttl_ns:
            for uuid in self._access:  # oldest access first: stop at the first live one
                entry = self._entries[uuid]
                if not self._expired(entry, now):
                    break
                count += 1
                weight += entry.weight
        return count, weight

    def is_live(self, uuid: str) -> bool:
        """Present and not expired (Caffeine ``containsKey``); refreshes nothing."""
        entry = self._entries.get(uuid)
        return entry is not None and not self._expired(entry, self._clock.now_ns())

    contains = is_live

    def is_resident(self, uuid: str) -> bool:
        """Physically held, including expired entries that maintenance has not removed yet."""
        return uuid in self._entries

    def peek(self, uuid: str) -> Entry | None:
        """The resident entry, expired or not, without counting an access."""
        return self._entries.get(uuid)

    def resident_uuids(self) -> list[str]:
        return list(self._entries)

    @property
    def size_policy(self) -> SizePolicy:
        """The size-eviction policy (read-only use: tests and diagnostics)."""
        return self._policy

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def max_bytes(self) -> int:
        return self._policy.maximum

    @property
    def weighted_size(self) -> int:
        """Sum of the weights of resident entries, expired-not-yet-removed included."""
        return self._policy.weighted_size

    @property
    def entry_count(self) -> int:
        """Resident entries, expired-not-yet-removed included (Caffeine ``estimatedSize``)."""
        return len(self._entries)

    @property
    def live_bytes(self) -> int:
        """Sum of the weights of live entries: expired ones that maintenance has not removed yet
        are resident but not live (spec §0.4: resident = live + expired + ``.deleted``)."""
        return self._policy.weighted_size - self._expired_resident(self._clock.now_ns())[1]

    @property
    def resident_bytes(self) -> int:
        """Bytes of every file in the cache directory, ``.deleted`` ones included."""
        return self.directory.resident_bytes

    @property
    def pending_deletions(self) -> int:
        return len(self._pending)

    def stats(self) -> dict[str, int]:
        """Counters, plus a snapshot of live (not expired) and resident entries and bytes."""
        expired_entries, expired_bytes = self._expired_resident(self._clock.now_ns())
        out = dict(self._stats)
        out["entries"] = len(self._entries)
        out["weighted_bytes"] = self._policy.weighted_size
        out["live_entries"] = len(self._entries) - expired_entries
        out["live_bytes"] = self._policy.weighted_size - expired_bytes
        out["resident_bytes"] = self.directory.resident_bytes
        out["pending_deletions"] = len(self._pending)
        return out

    # ---------------------------------------------------------------- removal and maintenance

    def remove(self, uuid: str) -> None:
        """Explicit removal; unknown and already expired keys are left to maintenance."""
        self._remove_explicit(uuid)
        self._maintain()

    def remove_all(self, uuids: Iterable[str]) -> None:
        for uuid in uuids:
            self._remove_explicit(uuid)
        self._maintain()

    def _remove_explicit(self, uuid: str) -> None:
        entry = self._entries.get(uuid)
        now = self._clock.now_ns()
        # Caffeine's computeIfPresent treats an expired entry as absent: maintenance expires it.
        if entry is None or self._expired(entry, now):
            return
        self._forget(uuid)
        self._hand_off(entry, RemovalCause.EXPLICIT, now)

    def resize(self, max_bytes: int) -> None:
        """New maximum; its maintenance evicts at once (reported as ``RESIZE``)."""
        self._policy.set_maximum(max_bytes)
        self._maintain(size_cause=RemovalCause.RESIZE)

    def clean_up(self) -> None:
        """Caffeine ``cleanUp()``: run maintenance now."""
        self._maintain()

    def _maintain(self, size_cause: RemovalCause = RemovalCause.SIZE) -> None:
        self._reads_since_maintenance = 0
        now = self._clock.now_ns()
        if self._ttl_ns:
            access = self._access
            entries = self._entries
            while access:
                uuid = next(iter(access))
                entry = entries[uuid]
                if not self._expired(entry, now):
                    break
                self._forget(uuid)
                self._hand_off(entry, RemovalCause.EXPIRED, now)
        for uuid in self._policy.evict():
            entry = self._entries.pop(uuid)
            self._access.pop(uuid, None)
            self._hand_off(entry, size_cause, now)

    def _forget(self, uuid: str) -> None:
        del self._entries[uuid]
        self._access.pop(uuid, None)
        self._policy.remove(uuid)

    def _hand_off(self, entry: Entry, cause: RemovalCause, now: int) -> None:
        """Count and report the removal, mark the files, schedule their deletion."""
        self._stats[_EVICTION_STATS[cause]] += 1
        if self._on_removed is not None:
            self._on_removed(entry.uuid, cause, entry.weight)
        if entry.marked_for_cleanup:
            return
        entry.marked_for_cleanup = True
        for name in entry.files:
            if self.directory.exists(name):
                self.directory.rename(name, name + DELETED_SUFFIX)
        if self._closed:
            # Kafka's stopped scheduler ignores the task: the files wait for the next init().
            return
        token = self._next_token
        self._next_token += 1

        def run() -> None:
            self._pending.pop(token, None)
            self._cleanup(entry)

        self._pending[token] = self._scheduler.call_at(now + self._delete_delay_ns, run)

    def _cleanup(self, entry: Entry) -> None:
        """The delayed deletion; a failure is counted and does not stop later ones."""
        if not entry.marked_for_cleanup or entry.cleanup_started:
            return
        entry.cleanup_started = True
        try:
            for name in entry.files:
                if self.directory.delete(name + DELETED_SUFFIX):
                    self._stats["files_deleted"] += 1
        except Exception:
            self._stats["cleanup_errors"] += 1

    # ---------------------------------------------------------------- life cycle

    def _init_from_directory(self) -> None:
        """Start-up ``init()``: clear leftovers, put every complete set back (no RSM calls)."""
        now = self._clock.now_ns()
        for found in self.directory.recover():
            if found.uuid in self._entries:  # same UUID under two offsets: keep the first
                continue
            self._put(
                Entry(
                    uuid=found.uuid,
                    start_offset=found.start_offset,
                    files=found.names,
                    sizes=found.sizes,
                    last_access_ns=now,
                )
            )
            self._stats["reloaded"] += 1
            self._maintain()

    def close(self) -> None:
        """Idempotent: drop pending deletions and close every entry; keeps entries and files."""
        if self._closed:
            return
        self._closed = True
        for handle in self._pending.values():
            handle.cancel()
        self._pending.clear()
        for entry in self._entries.values():
            entry.close_calls += 1
