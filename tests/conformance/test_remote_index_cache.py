"""Kafka's tiered-storage RemoteIndexCache: fetching and naming index files, size- and time-based
eviction, explicit removal with delayed file deletion, resizing, close and start-up reload."""

from __future__ import annotations

from typing import Any

import kafka_index_support
import pytest
from _conformance import UpstreamClass, ready_profile, reexpresses
from kafka_index_support import ENTRY_BYTES, SEC, seg

from brokerlab_plugins.kafka_remote_index.cache import (
    CacheClosedError,
    EntryMarkedForCleanupError,
    IndexType,
    RemovalCause,
)
from brokerlab_plugins.kafka_remote_index.disk import (
    DELETED_SUFFIX,
    TMP_SUFFIX,
    CacheDirectory,
    index_file_names,
)
from brokerlab_plugins.kafka_remote_index.settings import KafkaIndexCacheSettings

UPSTREAM = UpstreamClass(
    name="RemoteIndexCacheTest",
    area="Kafka remote index cache",
    repo="apache/kafka",
    path="storage/src/test/java/org/apache/kafka/storage/internals/log/RemoteIndexCacheTest.java",
    commit="0de2339f9bfbecd40cf786e49ae69a34eb98b70f",
    methods=(
        "testIndexFileNameAndLocationOnDisk",
        "testFetchIndexFromRemoteStorage",
        "testFetchIndexForMissingTransactionIndex",
        "testPositionForNonExistentEntry",
        "testCacheEntryExpiry",
        "shouldThrowErrorWhenAccessedAfterCacheClose",
        "testCloseIsIdempotent",
        "testCacheEntryIsDeletedOnRemoval",
        "testCleanerThreadShutdown",
        "testClose",
        "testConcurrentReadWriteAccessForCache",
        "testReloadCacheAfterClose",
        "testRemoveItem",
        "testRemoveNonExistentItem",
        "testRemoveMultipleItems",
        "testClearCacheAndIndexFilesWhenResizeCache",
        "testCorrectnessForCacheAndIndexFilesWhenResizeCache",
        "testCorruptCacheIndexFileExistsButNotInCache",
        "testConcurrentRemoveReadForCache1",
        "testConcurrentRemoveReadForCache2",
        "testMultipleIndexEntriesExecutionInCorruptException",
        "testIndexFileAlreadyExistOnDiskButNotInCache",
        "testRSMReturnCorruptedIndexFile",
        "testConcurrentCacheDeletedFileExists",
        "testDeleteInvalidIndexFilesOnInit",
        "testFetchIndexAccessibleWhenMarkedForCleanup",
        "testCacheTtlCanBeDisabled",
        "testCacheTtlEviction",
        "testCacheTtlRefreshOnAccess",
        "testCacheTtlWithMultipleEntries",
        "testSizeAndTimeBasedEviction",
    ),
    not_applicable={
        "testConcurrentReadWriteAccessForCache": (
            "a cache hit must not block on another key's in-flight miss (threads and latches "
            "inside the RSM call); the simulation is single-threaded and a fetch takes no time"
        ),
        "testMultipleIndexEntriesExecutionInCorruptException": (
            "the remote storage manager returns a corrupt time index (a fault the storage "
            "model does not inject: fetched index files are taken as sane; only files already "
            "on disk can fail their sanity check)"
        ),
        "testRSMReturnCorruptedIndexFile": (
            "the remote storage manager returns a corrupt index file, for each index type (a "
            "fault the storage model does not inject: fetched index files are taken as sane)"
        ),
    },
    line="trunk with KAFKA-19970 (TTL)",
    profile="kafka-ttl",
    note=(
        "The newest stored version, with the TTL tests of KAFKA-19970 / KIP-1264 (commit "
        "59e4af3f on trunk). The cache runs with the ready profile's policy (w-tinylfu, what "
        "Caffeine does), TTL and maintenance cadence; each test sets only what upstream passes "
        "to the constructor (maximum bytes, TTL, the 20 ms file-delete delay). Upstream's "
        "Mockito spies and waits become direct checks of brokerlab's entry flags, removal log "
        "and simulated cache directory; its threads become the sequential orders they race."
    ),
)


def files_of(i: int) -> tuple[str, str, str]:
    return index_file_names(i * 1000, f"m{i}")


def profile_settings() -> KafkaIndexCacheSettings:
    own = ready_profile(UPSTREAM).plugin_settings["kafka"]
    assert isinstance(own, KafkaIndexCacheSettings)
    return own


class Harness(kafka_index_support.Harness):
    """A cache as the ready profile configures it (policy, TTL, maintenance cadence), on a
    virtual clock, with the test's own maximum and TTL and the 20 ms delete delay upstream's
    setup uses."""

    def __init__(self, *, ttl_ms: int | None = None, **kwargs: Any) -> None:
        own = profile_settings()
        super().__init__(
            ttl_ms=own.ttl_ms if ttl_ms is None else ttl_ms,
            policy=own.policy,
            every_reads=own.maintenance_every_reads,
            **kwargs,
        )


# ---- naming, fetching, lookups ----------------------------------------------------------------


@reexpresses(UPSTREAM, "testIndexFileNameAndLocationOnDisk")
def test_index_files_are_named_after_the_segment_in_the_cache_directory() -> None:
    """A segment's entry holds its three index files, named ``<startOffset>_<uuid>`` plus
    ``.index``, ``.timeindex`` and ``.txnindex``, and they are the files in the cache
    directory."""
    h = Harness()
    entry = h.get(3)
    assert entry.files == ("3000_m3.index", "3000_m3.timeindex", "3000_m3.txnindex")
    assert h.dir.names() == sorted(entry.files)


@reexpresses(UPSTREAM, "testFetchIndexFromRemoteStorage")
def test_the_first_lookup_fetches_each_index_once() -> None:
    """A first offset lookup fetches the offset and time indexes once each; a second lookup and
    a plain get then find the entry cached and call remote storage no more."""
    h = Harness()
    segment = seg(0)
    entry = h.cache.get_index_entry(segment)
    assert h.cache.lookup_offset(segment, 4) == entry.lookup_offset(4)
    assert [h.storage.count(t) for t in (IndexType.OFFSET, IndexType.TIMESTAMP)] == [1, 1]
    calls = len(h.storage.calls)
    assert h.cache.lookup_offset(segment, 8) == entry.lookup_offset(8)
    assert h.cache.get_index_entry(segment) is entry
    assert len(h.storage.calls) == calls


@reexpresses(UPSTREAM, "testFetchIndexForMissingTransactionIndex")
def test_a_missing_transaction_index_becomes_an_empty_file() -> None:
    """Remote storage has no transaction index for the segment: the entry is still built, with
    an empty transaction index file in the cache directory."""
    h = Harness()
    entry = h.cache.get_index_entry(seg(0, txn_missing=True))
    txn = files_of(0)[2]
    assert entry.files[2] == txn
    assert h.dir.exists(txn) and h.dir.size(txn) == 0


@reexpresses(UPSTREAM, "testPositionForNonExistentEntry")
def test_lookups_past_either_end_of_the_offset_index() -> None:
    """Past the last indexed offset a lookup gives the last entry's position; before the
    segment's base offset it gives position 0."""
    h = Harness()
    segment = seg(3)
    entry = h.cache.get_index_entry(segment)
    last = entry.last_indexed_offset
    last_position = h.cache.lookup_offset(segment, last)[1]
    assert last_position > 0
    assert h.cache.lookup_offset(segment, last + 1)[1] == last_position
    assert h.cache.lookup_offset(segment, segment.start_offset - 1)[1] == 0


# ---- size-based eviction -----------------------------------------------------------------------


@reexpresses(UPSTREAM, "testCacheEntryExpiry")
def test_a_two_entry_cache_evicts_one_and_refetches_it() -> None:
    """A cache of two entries' bytes: one segment fetched once however often it is read; a
    second makes two fetches per index type; a third makes three, keeps two entries and at
    least one of the first two; reading the evicted one fetches a fourth time and keeps two."""
    h = Harness(max_bytes=2 * ENTRY_BYTES)
    assert h.cache.entry_count == 0
    h.get(0)
    h.get(0)
    assert h.cache.entry_count == 1
    assert [h.storage.count(t) for t in IndexType] == [1, 1, 1]
    h.get(0)
    h.get(1)
    assert h.cache.entry_count == 2
    assert [h.storage.count(t) for t in IndexType] == [2, 2, 2]
    h.get(2)
    assert h.cache.is_live("m0") or h.cache.is_live("m1")
    assert h.cache.entry_count == 2
    assert [h.storage.count(t) for t in IndexType] == [3, 3, 3]
    missing = next(i for i in range(3) if not h.cache.is_live(f"m{i}"))
    h.get(missing)
    assert h.cache.entry_count == 2
    assert [h.storage.count(t) for t in IndexType] == [4, 4, 4]


@reexpresses(UPSTREAM, "testClearCacheAndIndexFilesWhenResizeCache")
def test_resizing_to_one_byte_evicts_everything_and_deletes_the_files() -> None:
    """One cached entry and its three files; resizing the cache to 1 byte evicts it, marks it,
    and after the delete delay its cleanup has run and the directory holds no index or
    ``.deleted`` file."""
    h = Harness()
    entry = h.get(0)
    assert h.dir.names() == sorted(files_of(0))
    h.cache.resize(1)
    assert entry.marked_for_cleanup
    h.loop.advance(20)
    assert entry.cleanup_started
    assert h.dir.names() == []
    assert h.cache.entry_count == 0


@reexpresses(UPSTREAM, "testCorrectnessForCacheAndIndexFilesWhenResizeCache")
def test_a_sequence_of_resizes_evicts_exactly_what_no_longer_fits() -> None:
    """Resize to 1 byte empties the cache; at two entries' bytes three gets leave two entries
    and exactly one evicted, its files deleted; at one entry's bytes one more goes; resizing
    to the same size or larger evicts nothing and the survivor's files stay."""
    h = Harness()
    h.get(0)
    h.cache.resize(1)
    h.loop.advance(20)
    assert h.cache.entry_count == 0 and h.dir.names() == []
    h.cache.resize(2 * ENTRY_BYTES)
    assert h.cache.entry_count == 0
    entries = [h.get(i) for i in range(3)]
    assert h.cache.entry_count == 2
    h.loop.advance(20)
    evicted = [i for i, e in enumerate(entries) if e.marked_for_cleanup]
    assert len(evicted) == 1
    assert [i for i, e in enumerate(entries) if e.cleanup_started] == evicted
    assert not any(h.dir.exists(n) for n in files_of(evicted[0]))
    h.cache.resize(ENTRY_BYTES)
    assert h.cache.entry_count == 1
    h.loop.advance(20)
    assert sum(e.cleanup_started for e in entries) == 2
    (kept,) = [i for i, e in enumerate(entries) if not e.marked_for_cleanup]
    for size in (ENTRY_BYTES, 2 * ENTRY_BYTES):
        h.cache.resize(size)
        assert h.cache.entry_count == 1 and h.cache.is_live(f"m{kept}")
        assert h.dir.names() == sorted(files_of(kept))


# ---- close and reload --------------------------------------------------------------------------


@reexpresses(UPSTREAM, "shouldThrowErrorWhenAccessedAfterCacheClose")
def test_a_closed_cache_refuses_lookups() -> None:
    """One entry fetched once; after close, getting it raises brokerlab's closed-cache error
    (Kafka's IllegalStateException)."""
    h = Harness()
    h.get(0)
    assert h.cache.entry_count == 1 and h.storage.count(IndexType.OFFSET) == 1
    h.cache.close()
    with pytest.raises(CacheClosedError):
        h.get(0)


@reexpresses(UPSTREAM, "testCloseIsIdempotent")
def test_closing_twice_closes_each_entry_once() -> None:
    """Closing the cache twice closes its entry exactly once."""
    h = Harness()
    entry = h.get(0)
    h.cache.close()
    h.cache.close()
    assert entry.close_calls == 1


@reexpresses(UPSTREAM, "testClose")
def test_close_closes_entries_and_keeps_their_files() -> None:
    """Close closes the cached entry but neither marks nor deletes its files, and stops the
    cleaner: no deletion is pending or runs later."""
    h = Harness()
    entry = h.get(0)
    h.cache.close()
    assert entry.closed and not entry.marked_for_cleanup
    assert h.cache.pending_deletions == 0 and h.loop.scheduled == 0
    h.loop.advance(1000)
    assert h.dir.names() == sorted(files_of(0))


@reexpresses(UPSTREAM, "testReloadCacheAfterClose")
def test_a_new_cache_reloads_the_closed_caches_entries_from_disk() -> None:
    """Two entries' bytes: three segments read (each twice) make three or four fetches per
    index type and leave two entries. After close, a new cache on the same directory holds
    two entries and calls remote storage no more."""
    h = Harness(max_bytes=2 * ENTRY_BYTES)
    for i in range(3):
        h.get(i)
        h.get(i)
        assert h.cache.entry_count == min(i + 1, 2)
    assert all(3 <= h.storage.count(t) <= 4 for t in IndexType)
    h.cache.close()
    calls = len(h.storage.calls)
    again = Harness(max_bytes=2 * ENTRY_BYTES, directory=h.dir, storage=h.storage, loop=h.loop)
    assert again.cache.entry_count == 2
    assert len(h.storage.calls) == calls


@reexpresses(UPSTREAM, "testDeleteInvalidIndexFilesOnInit")
def test_start_up_deletes_leftover_deleted_and_tmp_files() -> None:
    """A cache directory holding a ``.index.deleted`` and a ``.timeindex.tmp`` leftover and an
    unrelated file: a new cache deletes the two leftovers and keeps the other file."""
    directory = CacheDirectory()
    prefix = "100_0b6c2a5e"
    directory.create(prefix + ".index" + DELETED_SUFFIX, 8)
    directory.create(prefix + ".timeindex" + TMP_SUFFIX, 12)
    directory.create("unrelated.txt", 3)
    Harness(directory=directory)
    assert directory.names() == ["unrelated.txt"]


# ---- removal and file cleanup ------------------------------------------------------------------


@reexpresses(UPSTREAM, "testCacheEntryIsDeletedOnRemoval")
def test_removal_renames_each_file_once_then_deletes_it() -> None:
    """Removing a cached entry marks it for cleanup and renames each of its three files to
    ``.deleted`` once; after the delete delay its cleanup has run and no index or ``.deleted``
    file is left."""
    h = Harness(directory=CountingDirectory())
    entry = h.get(0)
    directory = h.dir
    assert isinstance(directory, CountingDirectory)
    directory.renames.clear()  # the fetch's own .tmp -> final moves
    assert h.cache.pending_deletions == 0
    h.cache.remove("m0")
    assert entry.marked_for_cleanup and not entry.cleanup_started
    assert directory.renames == [(n, n + DELETED_SUFFIX) for n in files_of(0)]
    h.loop.advance(20)
    assert entry.cleanup_started
    assert h.dir.names() == []
    assert len(directory.renames) == 3


@reexpresses(UPSTREAM, "testCleanerThreadShutdown")
def test_a_failing_deletion_does_not_stop_the_cleaner_and_close_does() -> None:
    """The first deletion of a ``.deleted`` file fails: it is counted, and the next scheduled
    cleanup still deletes its files. After close no cleanup is pending and none runs."""
    h = Harness(directory=FlakyDirectory())
    for i in range(3):
        h.get(i)
    h.cache.remove("m0")
    h.cache.remove("m1")
    h.loop.advance(20)
    assert h.cache.stats()["cleanup_errors"] == 1
    assert not any(h.dir.exists(n + DELETED_SUFFIX) for n in files_of(1))
    h.cache.remove("m2")
    h.cache.close()
    assert h.loop.scheduled == 0 and h.cache.pending_deletions == 0
    h.loop.advance(1000)
    assert all(h.dir.exists(n + DELETED_SUFFIX) for n in files_of(2))


@reexpresses(UPSTREAM, "testRemoveItem")
def test_remove_drops_the_entry_and_marks_it() -> None:
    """A cached, unmarked entry: remove takes it out of the cache and marks it for cleanup."""
    h = Harness()
    entry = h.get(0)
    assert h.cache.is_live("m0") and not entry.marked_for_cleanup
    h.cache.remove("m0")
    assert not h.cache.is_resident("m0") and entry.marked_for_cleanup


@reexpresses(UPSTREAM, "testRemoveNonExistentItem")
def test_removing_an_unknown_key_leaves_the_cache_alone() -> None:
    """Removing a key the cache does not hold leaves the cached entry in place and unmarked."""
    h = Harness()
    entry = h.get(0)
    h.cache.remove("no-such-uuid")
    assert h.cache.is_live("m0") and not entry.marked_for_cleanup
    assert h.removed == []


@reexpresses(UPSTREAM, "testRemoveMultipleItems")
def test_remove_all_marks_every_entry() -> None:
    """Ten cached entries removed at once with remove-all are all marked for cleanup."""
    h = Harness()
    entries = [h.get(i) for i in range(10)]
    assert not any(e.marked_for_cleanup for e in entries)
    h.cache.remove_all([f"m{i}" for i in range(10)])
    assert all(e.marked_for_cleanup for e in entries)
    assert h.cache.entry_count == 0


@reexpresses(UPSTREAM, "testConcurrentRemoveReadForCache1")
def test_a_read_between_the_rename_and_the_deletion_fetches_again() -> None:
    """The read runs after the removal renamed the files but before their deletion: it fetches
    the segment again, and the deletion then removes only the ``.deleted`` files, leaving one
    entry with its fresh files."""
    h = Harness()
    old = h.get(0)
    h.cache.remove("m0")
    h.loop.advance(10)
    new = h.get(0)
    assert new is not old and h.storage.count(IndexType.OFFSET) == 2
    h.loop.advance(10)
    assert old.cleanup_started
    assert h.cache.entry_count == 1 and h.dir.names() == sorted(files_of(0))


@reexpresses(UPSTREAM, "testConcurrentRemoveReadForCache2")
def test_a_read_after_the_deletion_fetches_again() -> None:
    """The read runs after the removal's deletion: it fetches the segment again and the cache
    holds one entry with its files."""
    h = Harness()
    old = h.get(0)
    h.cache.remove("m0")
    h.loop.advance(20)
    assert old.cleanup_started and h.dir.names() == []
    h.get(0)
    assert h.storage.count(IndexType.OFFSET) == 2
    assert h.cache.entry_count == 1 and h.dir.names() == sorted(files_of(0))


@reexpresses(UPSTREAM, "testConcurrentCacheDeletedFileExists")
def test_a_removal_replaces_leftover_deleted_files() -> None:
    """``.deleted`` copies of an entry's files already exist (a slow cleaner); removing the
    entry renames over them, and after the delay no index or ``.deleted`` file is left and no
    deletion is pending."""
    h = Harness()
    entry = h.get(0)
    for name in files_of(0):
        h.dir.create(name + DELETED_SUFFIX, h.dir.size(name))
    h.cache.remove("m0")
    assert entry.marked_for_cleanup
    h.loop.advance(20)
    assert entry.cleanup_started
    assert h.dir.names() == [] and h.cache.pending_deletions == 0


@reexpresses(UPSTREAM, "testIndexFileAlreadyExistOnDiskButNotInCache")
def test_index_files_on_disk_are_used_without_fetching() -> None:
    """An entry is fetched, removed and deleted; its three files are then put back on disk.
    Getting the segment again builds the entry from them with no new fetch."""
    h = Harness()
    entry = h.get(0)
    sizes = dict(zip(files_of(0), entry.sizes, strict=True))
    h.cache.remove("m0")
    h.loop.advance(20)
    assert entry.cleanup_started and h.dir.names() == []
    for name, size in sizes.items():
        h.dir.create(name, size)
    assert not h.cache.is_resident("m0")
    h.get(0)
    assert [h.storage.count(t) for t in IndexType] == [1, 1, 1]
    assert h.dir.names() == sorted(files_of(0))


@pytest.mark.parametrize("corrupt", list(IndexType), ids=lambda t: t.name)
@reexpresses(UPSTREAM, "testCorruptCacheIndexFileExistsButNotInCache")
def test_a_corrupt_index_file_on_disk_is_fetched_again(corrupt: IndexType) -> None:
    """Only one index file of the segment is on disk, and it fails its sanity check: getting
    the entry fetches each index type once and the entry's files have the right names."""
    h = Harness()
    name = files_of(0)[corrupt.value]
    h.dir.create(name, 12)
    h.dir.corrupt(name)
    entry = h.get(0)
    assert entry.files == files_of(0)
    assert [h.storage.count(t) for t in IndexType] == [1, 1, 1]
    assert not h.dir.is_corrupt(name)


@reexpresses(UPSTREAM, "testFetchIndexAccessibleWhenMarkedForCleanup")
def test_a_removed_entry_stays_readable_until_its_cleanup() -> None:
    """With a long delete delay: after a removal the three files are ``.deleted`` and the old
    entry still answers lookups, while the cache fetches the segment again (six files). A
    second removal renames the new files over the old ``.deleted`` set (three files); both
    entries still answer. Once an entry's cleanup runs, the files are gone and that entry's
    lookups raise, while the other's still answer until its own cleanup."""
    h = Harness(delay_ms=300_000)  # as upstream: no scheduled deletion during the test
    segment = seg(0)
    first = h.cache.get_index_entry(segment)
    offset, position = first.lookup_offset(8)
    h.cache.remove("m0")
    assert h.dir.names() == sorted(n + DELETED_SUFFIX for n in files_of(0))
    assert first.lookup_offset(offset) == (offset, position)
    assert h.cache.lookup_offset(segment, offset) == (offset, position)
    assert h.storage.count(IndexType.OFFSET) == 2
    second = h.cache.get_index_entry(segment)
    assert h.storage.count(IndexType.OFFSET) == 2
    assert len(h.dir.names()) == 6
    h.cache.remove("m0")
    assert h.dir.names() == sorted(n + DELETED_SUFFIX for n in files_of(0))
    assert first.lookup_offset(offset) == second.lookup_offset(offset) == (offset, position)
    h.cache._cleanup(first)  # upstream calls the entry's cleanup() directly
    assert h.dir.names() == []
    with pytest.raises(EntryMarkedForCleanupError):
        first.lookup_offset(offset)
    assert second.lookup_offset(offset) == (offset, position)
    h.cache._cleanup(second)
    with pytest.raises(EntryMarkedForCleanupError):
        second.lookup_offset(offset)


# ---- time-based eviction (KAFKA-19970) ---------------------------------------------------------


@reexpresses(UPSTREAM, "testCacheTtlCanBeDisabled")
def test_a_negative_ttl_disables_expiry() -> None:
    """TTL -1: after 15 idle minutes and a maintenance pass the entry is still cached."""
    h = Harness(ttl_ms=-1)
    h.get(0)
    h.loop.advance(15 * 60 * SEC)
    h.cache.clean_up()
    assert h.cache.is_live("m0") and h.removed == []


@reexpresses(UPSTREAM, "testCacheTtlEviction")
def test_an_idle_entry_expires_after_the_ttl() -> None:
    """TTL 10 s: 9 s after its load the entry survives maintenance; at 11 s maintenance removes
    it (cause EXPIRED)."""
    h = Harness(ttl_ms=10 * SEC)
    h.get(0)
    h.loop.advance(9 * SEC)
    h.cache.clean_up()
    assert h.cache.entry_count == 1
    h.loop.advance(2 * SEC)
    h.cache.clean_up()
    assert h.cache.entry_count == 0
    assert h.causes() == [RemovalCause.EXPIRED]


@reexpresses(UPSTREAM, "testCacheTtlRefreshOnAccess")
def test_a_read_refreshes_the_ttl() -> None:
    """TTL 10 s: read at 0 and at 8 s; at 16 s (idle 8 s) the entry survives maintenance."""
    h = Harness(ttl_ms=10 * SEC)
    h.get(0)
    h.loop.advance(8 * SEC)
    h.get(0)
    h.loop.advance(8 * SEC)
    h.cache.clean_up()
    assert h.cache.is_live("m0")


@reexpresses(UPSTREAM, "testCacheTtlWithMultipleEntries")
def test_each_entry_expires_on_its_own_idle_time() -> None:
    """TTL 10 s: A loaded at 0, B at 5 s; at 11 s maintenance removes A (idle 11 s) and keeps
    B (idle 6 s)."""
    h = Harness(ttl_ms=10 * SEC)
    h.get(0)
    h.loop.advance(5 * SEC)
    h.get(1)
    h.loop.advance(6 * SEC)
    h.cache.clean_up()
    assert not h.cache.is_resident("m0") and h.cache.is_live("m1")


@reexpresses(UPSTREAM, "testSizeAndTimeBasedEviction")
def test_size_and_time_bounds_both_apply() -> None:
    """Two entries' bytes and TTL 10 s: two loads give two entries, a third keeps two (size);
    11 s later maintenance removes both (time)."""
    h = Harness(max_bytes=2 * ENTRY_BYTES, ttl_ms=10 * SEC)
    h.get(0)
    h.get(1)
    assert h.cache.entry_count == 2
    h.get(2)
    assert h.cache.entry_count == 2
    h.loop.advance(11 * SEC)
    h.cache.clean_up()
    assert h.cache.entry_count == 0
    assert h.causes() == [RemovalCause.SIZE, RemovalCause.EXPIRED, RemovalCause.EXPIRED]


class CountingDirectory(CacheDirectory):
    """A cache directory that records its renames."""

    def __init__(self) -> None:
        super().__init__()
        self.renames: list[tuple[str, str]] = []

    def rename(self, src: str, dst: str) -> None:
        self.renames.append((src, dst))
        super().rename(src, dst)


class FlakyDirectory(CacheDirectory):
    """A cache directory whose first deletion of a ``.deleted`` file fails."""

    fail_once = True

    def delete(self, name: str) -> bool:
        if name.endswith(DELETED_SUFFIX) and self.fail_once:
            self.fail_once = False
            raise OSError("disk says no")
        return super().delete(name)
