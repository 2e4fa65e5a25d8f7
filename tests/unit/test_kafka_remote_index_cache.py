"""Kafka's remote index cache against spec kafka-remote-index-cache.md §7, the TTL rules of §5,
start-up recovery (§3.3), and hypothesis invariants over random operation sequences.

Scenarios of §7 covered here: 1-18 and the sequential half of 19 (9 on a modelled offset index:
entries spaced evenly from the segment's start, see ``Entry.lookup_offset``). Not modelled:

* 19, first half (a hit is not blocked by another key's in-flight miss): the simulator is single
  threaded. The second half (a remove racing a read of the same key) is tested sequentially:
  remove, re-read before the delayed deletion, then the deletion touches only ``.deleted`` files.

Scenario 15 is interpreted as: index files already on disk but not in the cache are reused
without an RSM call, except a corrupt one, which is fetched again (once, under its own name).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from kafka_index_support import ENTRY_BYTES, MS, SEC, FakeLoop, FakeStorage, Harness, seg

from brokerlab_plugins.kafka_remote_index.cache import (
    CacheClosedError,
    EntryMarkedForCleanupError,
    IndexType,
    RemoteResourceNotFound,
    RemoteSegment,
    RemovalCause,
)
from brokerlab_plugins.kafka_remote_index.disk import (
    DELETED_SUFFIX,
    CacheDirectory,
    index_file_names,
)

POLICIES = ("lru", "w-tinylfu")


def files_of(i: int) -> tuple[str, str, str]:
    return index_file_names(i * 1000, f"m{i}")


# ------------------------------------------------------------------------ §7 scenarios 1-5: TTL


@pytest.mark.parametrize("policy", POLICIES)
def test_s1_ttl_eviction(policy: str) -> None:
    h = Harness(ttl_ms=10 * SEC, policy=policy)
    h.get(0)
    h.loop.advance(9 * SEC)
    h.cache.clean_up()
    assert h.cache.entry_count == 1
    h.loop.advance(2 * SEC)
    # Invisible at once, but physically removed only by maintenance.
    assert not h.cache.is_live("m0") and h.cache.is_resident("m0")
    assert h.cache.entry_count == 1 and h.removed == []
    h.cache.clean_up()
    assert h.cache.entry_count == 0 and h.cache.weighted_size == 0
    assert h.removed == [("m0", RemovalCause.EXPIRED, ENTRY_BYTES)]
    assert all(h.dir.exists(n + DELETED_SUFFIX) for n in files_of(0))
    h.loop.advance(20)
    assert len(h.dir) == 0 and h.cache.resident_bytes == 0


@pytest.mark.parametrize("policy", POLICIES)
def test_s2_ttl_refresh_on_access(policy: str) -> None:
    h = Harness(ttl_ms=10 * SEC, policy=policy)
    h.get(0)
    h.loop.advance(8 * SEC)
    h.get(0)
    h.loop.advance(8 * SEC)
    h.cache.clean_up()
    assert h.cache.is_live("m0") and h.cache.entry_count == 1
    assert h.cache.stats()["hits"] == 1 and h.storage.count() == 3


@pytest.mark.parametrize("policy", POLICIES)
def test_s3_ttl_several_entries(policy: str) -> None:
    h = Harness(ttl_ms=10 * SEC, policy=policy)
    h.get(0)
    h.loop.advance(5 * SEC)
    h.get(1)
    h.loop.advance(6 * SEC)
    assert not h.cache.is_live("m0") and h.cache.is_live("m1")
    h.cache.clean_up()
    assert h.cache.resident_uuids() == ["m1"]
    assert h.causes() == [RemovalCause.EXPIRED]


@pytest.mark.parametrize("ttl_ms", [-1, 0])
def test_s4_ttl_disabled(ttl_ms: int) -> None:
    h = Harness(ttl_ms=ttl_ms)
    h.get(0)
    h.loop.advance(15 * 60 * SEC)
    h.cache.clean_up()
    assert h.cache.is_live("m0") and h.cache.entry_count == 1 and h.removed == []


@pytest.mark.parametrize("policy", POLICIES)
def test_s5_size_and_time(policy: str) -> None:
    h = Harness(max_bytes=2 * ENTRY_BYTES, ttl_ms=10 * SEC, policy=policy)
    h.get(0)
    h.get(1)
    assert h.cache.entry_count == 2
    h.get(2)
    assert h.cache.entry_count == 2 and h.cache.weighted_size == 2 * ENTRY_BYTES
    assert h.causes() == [RemovalCause.SIZE]
    h.loop.advance(11 * SEC)
    h.cache.clean_up()
    assert h.cache.entry_count == 0
    assert h.causes() == [RemovalCause.SIZE, RemovalCause.EXPIRED, RemovalCause.EXPIRED]


# ------------------------------------------------------------------------ TTL details (§5)


def test_ttl_boundary_is_inclusive() -> None:
    h = Harness(ttl_ms=10 * SEC)
    h.get(0)
    h.loop.advance_ns(10 * SEC * MS - 1)
    assert h.cache.is_live("m0")
    h.loop.advance_ns(1)  # idle == ttl exactly
    assert not h.cache.is_live("m0") and h.cache.is_resident("m0")


def test_expired_read_is_a_miss_and_a_reload() -> None:
    h = Harness(ttl_ms=10 * SEC)
    old = h.get(0)
    h.loop.advance(10 * SEC)
    new = h.get(0)
    assert new is not old and old.marked_for_cleanup and not new.marked_for_cleanup
    stats = h.cache.stats()
    assert (stats["hits"], stats["misses"], stats["evictions_expired"]) == (0, 2, 1)
    assert h.storage.count() == 6 and h.removed == [("m0", RemovalCause.EXPIRED, ENTRY_BYTES)]
    # The old files wait as .deleted, the reloaded ones are final: both are resident.
    assert h.cache.resident_bytes == 2 * ENTRY_BYTES and h.cache.weighted_size == ENTRY_BYTES
    h.loop.advance(20)
    assert h.cache.resident_bytes == ENTRY_BYTES and all(h.dir.exists(n) for n in files_of(0))
    assert h.cache.is_live("m0")


def test_expired_entries_count_until_maintenance_but_are_not_live() -> None:
    h = Harness(ttl_ms=10 * SEC)
    h.get(0)
    h.loop.advance(6 * SEC)
    h.get(1)
    h.loop.advance(5 * SEC)
    stats = h.cache.stats()
    assert stats["entries"] == 2 and stats["live_entries"] == 1
    assert stats["weighted_bytes"] == 2 * ENTRY_BYTES and stats["live_bytes"] == ENTRY_BYTES
    assert h.cache.contains("m1") and not h.cache.contains("m0")


def test_a_write_runs_maintenance_and_a_read_hit_does_not_by_default() -> None:
    h = Harness(ttl_ms=10 * SEC)
    h.get(0)
    h.get(1)
    h.loop.advance(6 * SEC)
    h.get(1)
    h.loop.advance(5 * SEC)  # m0 idle 11 s, m1 idle 5 s
    for _ in range(50):
        h.get(1)
    assert h.cache.is_resident("m0")
    h.get(2)  # a load is a write
    assert not h.cache.is_resident("m0") and h.causes() == [RemovalCause.EXPIRED]


def test_maintenance_every_n_reads() -> None:
    h = Harness(ttl_ms=10 * SEC, every_reads=3)
    h.get(0)
    h.get(1)
    h.loop.advance(6 * SEC)
    h.get(1)  # read 1
    h.loop.advance(5 * SEC)
    h.get(1)  # read 2
    assert h.cache.is_resident("m0")
    h.get(1)  # read 3: maintenance
    assert not h.cache.is_resident("m0")


def test_explicit_remove_of_an_expired_entry_is_left_to_expiry() -> None:
    h = Harness(ttl_ms=10 * SEC)
    h.get(0)
    h.loop.advance(10 * SEC)
    h.cache.remove("m0")
    assert h.causes() == [RemovalCause.EXPIRED] and not h.cache.is_resident("m0")


# ------------------------------------------------------------------------ §7 scenarios 6-8


def test_s6_size_eviction_and_refetch_lru_is_deterministic() -> None:
    h = Harness(max_bytes=2 * ENTRY_BYTES, policy="lru")
    h.get(0)
    assert [h.storage.count(t) for t in IndexType] == [1, 1, 1]
    h.get(0)
    assert h.storage.count() == 3
    h.get(0)
    h.get(1)
    assert h.storage.count(IndexType.OFFSET) == 2 and h.cache.entry_count == 2
    h.get(2)
    assert h.storage.count(IndexType.OFFSET) == 3 and h.cache.entry_count == 2
    assert h.cache.resident_uuids() == ["m1", "m2"]
    h.get(0)  # the missing one
    assert h.storage.count(IndexType.OFFSET) == 4 and h.cache.entry_count == 2
    assert sorted(h.cache.resident_uuids()) == ["m0", "m2"]
    assert h.removed == [("m0", RemovalCause.SIZE, ENTRY_BYTES), ("m1", RemovalCause.SIZE, 1700)]


def test_s6_size_eviction_and_refetch_w_tinylfu() -> None:
    h = Harness(max_bytes=2 * ENTRY_BYTES, policy="w-tinylfu")
    h.get(0)
    h.get(0)
    assert h.storage.count() == 3
    h.get(0)
    h.get(1)
    assert h.storage.count(IndexType.OFFSET) == 2 and h.cache.entry_count == 2
    h.get(2)
    assert h.storage.count(IndexType.OFFSET) == 3 and h.cache.entry_count == 2
    assert h.cache.is_live("m0") or h.cache.is_live("m1")
    missing = next(i for i in range(3) if not h.cache.is_live(f"m{i}"))
    h.get(missing)
    assert h.storage.count(IndexType.OFFSET) == 4 and h.cache.entry_count == 2
    assert h.cache.weighted_size == 2 * ENTRY_BYTES
    assert set(h.causes()) == {RemovalCause.SIZE} and len(h.removed) == 2


@pytest.mark.parametrize("policy", POLICIES)
def test_s7_fetch_once(policy: str) -> None:
    h = Harness(policy=policy)
    first = h.get(0)
    assert [h.storage.count(t) for t in IndexType] == [1, 1, 1]
    assert h.get(0) is first and h.get(0) is first
    assert [h.storage.count(t) for t in IndexType] == [1, 1, 1]
    stats = h.cache.stats()
    assert (stats["fetches_offset"], stats["fetches_timestamp"]) == (1, 1)
    assert (stats["hits"], stats["misses"]) == (2, 1)


@pytest.mark.parametrize("policy", POLICIES)
def test_s7_first_lookup_offset_fetches_each_index_once(policy: str) -> None:
    h = Harness(policy=policy)
    segment = seg(0)
    h.cache.lookup_offset(segment, segment.start_offset)
    assert [h.storage.count(t) for t in (IndexType.OFFSET, IndexType.TIMESTAMP)] == [1, 1]
    h.cache.lookup_offset(segment, segment.start_offset + 10)
    h.cache.get_index_entry(segment)
    assert [h.storage.count(t) for t in (IndexType.OFFSET, IndexType.TIMESTAMP)] == [1, 1]


def test_s9_lookup_edges() -> None:
    h = Harness()
    segment = seg(3)  # starts at offset 3000
    entry = h.cache.get_index_entry(segment)
    last = entry.last_indexed_offset
    assert last > segment.start_offset  # the modelled index has more than one entry
    last_position = h.cache.lookup_offset(segment, last)[1]
    assert last_position > 0
    # Past the last indexed offset: the last entry's position.
    assert h.cache.lookup_offset(segment, last + 1) == (last, last_position)
    # Before the base offset: position 0 of the segment.
    assert h.cache.lookup_offset(segment, segment.start_offset - 1) == (segment.start_offset, 0)
    # In between: the last entry at or before the target, never one after it.
    middle_offset, middle_position = h.cache.lookup_offset(
        segment, (segment.start_offset + last) // 2
    )
    assert segment.start_offset <= middle_offset <= (segment.start_offset + last) // 2
    assert 0 <= middle_position < last_position


def test_s8_missing_txn_index_gives_an_empty_file() -> None:
    h = Harness()
    entry = h.cache.get_index_entry(seg(0, txn_missing=True))
    txn = files_of(0)[2]
    assert h.dir.exists(txn) and h.dir.size(txn) == 0
    assert entry.sizes[2] == 0 and entry.weight == 1000 + 600
    assert h.cache.stats()["txn_not_found"] == 1 and h.storage.count(IndexType.TRANSACTION) == 1


def test_not_found_for_a_non_txn_index_propagates() -> None:
    class NoTimeIndex(FakeStorage):
        missing = True

        def fetch_index(self, segment: RemoteSegment, index_type: IndexType) -> int:
            if index_type is IndexType.TIMESTAMP and self.missing:
                raise RemoteResourceNotFound(segment.uuid)
            return super().fetch_index(segment, index_type)

    storage = NoTimeIndex()
    h = Harness(storage=storage)
    with pytest.raises(RemoteResourceNotFound):
        h.get(0)
    assert not h.cache.is_resident("m0")
    # The offset index already fetched stays on disk and is reused by the next load.
    storage.missing = False
    h.get(0)
    assert h.storage.count(IndexType.OFFSET) == 1 and h.cache.stats()["files_reused"] == 1


# ------------------------------------------------------------------------ §7 scenarios 10-14


def test_s10_closed_cache() -> None:
    h = Harness()
    entries = [h.get(i) for i in range(3)]
    h.cache.close()
    with pytest.raises(CacheClosedError):
        h.get(0)
    h.cache.close()
    assert [e.close_calls for e in entries] == [1, 1, 1] and h.cache.closed


class CountingDirectory(CacheDirectory):
    def __init__(self) -> None:
        super().__init__()
        self.renames: list[tuple[str, str]] = []

    def rename(self, src: str, dst: str) -> None:
        self.renames.append((src, dst))
        super().rename(src, dst)


@pytest.mark.parametrize("policy", POLICIES)
def test_s11_removal_renames_once_then_deletes(policy: str) -> None:
    h = Harness(policy=policy, directory=CountingDirectory())
    entry = h.get(0)
    h.get(1)
    directory = h.dir
    assert isinstance(directory, CountingDirectory)
    directory.renames.clear()
    h.cache.remove("m0")
    assert entry.marked_for_cleanup and not entry.cleanup_started
    assert directory.renames == [(n, n + DELETED_SUFFIX) for n in files_of(0)]
    assert h.removed == [("m0", RemovalCause.EXPLICIT, ENTRY_BYTES)]
    h.cache.remove("m0")  # already gone: nothing happens
    h.loop.advance(19)
    assert all(h.dir.exists(n + DELETED_SUFFIX) for n in files_of(0))
    h.loop.advance(1)
    assert entry.cleanup_started
    assert h.dir.names() == sorted(files_of(1))
    assert len(directory.renames) == 3 and h.cache.stats()["evictions_explicit"] == 1


def test_index_files_are_named_by_the_plain_start_offset() -> None:
    """``RemoteIndexCache.generateFileNamePrefixForIndex`` (apache/kafka): ``startOffset + "_" +
    uuid``, no zero padding; the start-up scan reads the offset back from that name."""
    assert index_file_names(45, "fooid") == (
        "45_fooid.index",
        "45_fooid.timeindex",
        "45_fooid.txnindex",
    )
    h = Harness()
    h.get(3)
    assert h.dir.names() == sorted(files_of(3)) == sorted(index_file_names(3000, "m3"))
    again = Harness(directory=h.dir)
    assert again.cache.entry_count == 1 and again.get(3).start_offset == 3000
    assert again.storage.calls == []  # found on disk by its name: nothing fetched again


def test_a_lookup_on_an_entry_raises_once_its_cleanup_has_started() -> None:
    """Kafka's ``RemoteIndexCache.Entry.lookupOffset`` keeps answering while the entry is only
    marked for cleanup (its files renamed to ``.deleted``) and throws once the delayed deletion
    has started."""
    h = Harness()
    entry = h.get(0)
    assert entry.lookup_offset(0) == (0, 0)
    h.cache.remove("m0")
    assert entry.marked_for_cleanup and not entry.cleanup_started
    assert entry.lookup_offset(0) == (0, 0)
    h.loop.advance(20)
    assert entry.cleanup_started
    with pytest.raises(EntryMarkedForCleanupError, match="cleaned up"):
        entry.lookup_offset(0)


def test_s12_remove_variants() -> None:
    h = Harness()
    entries = [h.get(i) for i in range(12)]
    h.cache.remove("no-such-uuid")
    assert h.cache.entry_count == 12 and h.removed == []
    h.cache.remove_all([f"m{i}" for i in range(10)])
    assert [e.marked_for_cleanup for e in entries] == [True] * 10 + [False] * 2
    assert h.cache.resident_uuids() == ["m10", "m11"]
    assert h.cache.stats()["evictions_explicit"] == 10


@pytest.mark.parametrize("policy", POLICIES)
def test_s13_resize_to_one_byte(policy: str) -> None:
    h = Harness(policy=policy)
    for i in range(5):
        h.get(i)
    h.cache.resize(1)
    assert h.cache.entry_count == 0 and h.cache.weighted_size == 0
    assert h.causes() == [RemovalCause.RESIZE] * 5
    assert h.cache.stats()["evictions_resize"] == 5
    h.loop.advance(20)
    assert len(h.dir) == 0


@pytest.mark.parametrize("policy", POLICIES)
def test_s14_resize_sequence(policy: str) -> None:
    h = Harness(policy=policy)
    h.get(0)
    h.cache.resize(1)
    assert h.cache.entry_count == 0
    h.cache.resize(2 * ENTRY_BYTES)
    for i in range(3):
        h.get(i)
    assert h.cache.entry_count == 2
    assert h.causes() == [RemovalCause.RESIZE, RemovalCause.SIZE]
    evicted = h.removed[1][0]
    h.loop.advance(20)
    assert not any(n.startswith(f"{int(evicted[1:]) * 1000}_") for n in h.dir.names())
    h.cache.resize(ENTRY_BYTES)
    assert h.cache.entry_count == 1 and h.causes()[2:] == [RemovalCause.RESIZE]
    h.cache.resize(ENTRY_BYTES)
    assert h.cache.entry_count == 1
    h.cache.resize(4 * ENTRY_BYTES)
    assert h.cache.entry_count == 1 and len(h.removed) == 3


# ------------------------------------------------------------------------ §7 scenarios 15-19


def test_s15_corrupt_file_on_disk_is_fetched_again() -> None:
    for corrupt in IndexType:
        h = Harness()
        for name, size in zip(files_of(0), (1000, 600, 100), strict=True):
            h.dir.create(name, size)
        h.dir.corrupt(files_of(0)[corrupt.value])
        entry = h.get(0)
        assert h.storage.calls == [("m0", corrupt)]
        assert entry.files == files_of(0) and sorted(h.dir.names()) == sorted(files_of(0))
        assert not any(h.dir.is_corrupt(n) for n in files_of(0))
        stats = h.cache.stats()
        assert (stats["corrupt_refetches"], stats["files_reused"]) == (1, 2)


def test_s16_cleaner_survives_a_failing_deletion_and_close_stops_it() -> None:
    class FlakyDirectory(CacheDirectory):
        fail_once = True

        def delete(self, name: str) -> bool:
            if name.endswith(DELETED_SUFFIX) and self.fail_once:
                self.fail_once = False
                raise OSError("disk says no")
            return super().delete(name)

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


@pytest.mark.parametrize("policy", POLICIES)
def test_s17_close_keeps_the_files(policy: str) -> None:
    h = Harness(policy=policy)
    entry = h.get(0)
    h.get(1)
    h.cache.remove("m1")
    assert h.cache.pending_deletions == 1
    before = h.dir.names()
    h.cache.close()
    h.loop.advance(1000)
    assert entry.closed and not entry.marked_for_cleanup
    assert h.dir.names() == before and h.cache.pending_deletions == 0
    assert h.cache.entry_count == 1  # close does not invalidate
    # After close a removal still renames, but the stopped cleaner never deletes.
    h.cache.remove("m0")
    h.loop.advance(1000)
    assert h.dir.names() == sorted(n + DELETED_SUFFIX for n in files_of(0) + files_of(1))


@pytest.mark.parametrize("policy", POLICIES)
def test_s18_reload_after_close(policy: str) -> None:
    h = Harness(max_bytes=2 * ENTRY_BYTES, policy=policy)
    for i in range(3):
        h.get(i)
    h.loop.advance(5)  # the evicted entry's deletion is still pending at close
    h.cache.close()
    fetches = h.storage.count()
    assert fetches in (9, 12)
    survivors = sorted(h.cache.resident_uuids())
    h.dir.create("stray.tmp", 77)
    h2 = Harness(
        max_bytes=2 * ENTRY_BYTES,
        policy=policy,
        directory=h.dir,
        storage=h.storage,
        loop=h.loop,
    )
    assert h2.cache.entry_count == 2 and sorted(h2.cache.resident_uuids()) == survivors
    assert h.storage.count() == fetches and h2.cache.stats()["reloaded"] == 2
    assert not any(n.endswith((DELETED_SUFFIX, ".tmp")) for n in h.dir.names())
    for u in survivors:
        h2.get(int(u[1:]))
    assert h.storage.count() == fetches and h2.cache.stats()["hits"] == 2


def test_init_deletes_partial_sets_and_keeps_other_files() -> None:
    directory = CacheDirectory()
    directory.create(files_of(0)[0], 10)
    directory.create(files_of(0)[1], 10)  # no txn index: partial
    for n in files_of(1):
        directory.create(n, 5)
    for n in files_of(2):
        directory.create(n + DELETED_SUFFIX, 5)
    directory.create(files_of(3)[0] + ".tmp", 5)
    directory.create("README", 3)
    h = Harness(directory=directory)
    assert h.cache.resident_uuids() == ["m1"] and h.cache.weighted_size == 15
    assert directory.names() == sorted([*files_of(1), "README"])
    assert h.storage.calls == []


def test_init_over_capacity_evicts_like_any_write() -> None:
    directory = CacheDirectory()
    for i in range(4):
        for n, size in zip(files_of(i), (1000, 600, 100), strict=True):
            directory.create(n, size)
    h = Harness(max_bytes=2 * ENTRY_BYTES, directory=directory)
    assert h.cache.entry_count == 2 and h.causes() == [RemovalCause.SIZE] * 2
    h.loop.advance(20)
    assert h.cache.resident_bytes == 2 * ENTRY_BYTES


@pytest.mark.parametrize("policy", POLICIES)
def test_s19_remove_then_read_of_the_same_key(policy: str) -> None:
    h = Harness(policy=policy)
    old = h.get(0)
    h.cache.remove("m0")
    h.loop.advance(10)
    new = h.get(0)  # the reader fetches again
    assert new is not old and h.cache.entry_count == 1 and h.storage.count() == 6
    assert h.cache.resident_bytes == 2 * ENTRY_BYTES
    h.loop.advance(10)  # the cleaner deletes only the .deleted files
    assert h.dir.names() == sorted(files_of(0)) and h.cache.is_live("m0")


# ------------------------------------------------------------------------ size rules


@pytest.mark.parametrize("policy", POLICIES)
def test_an_entry_heavier_than_the_maximum_is_evicted_alone(policy: str) -> None:
    h = Harness(max_bytes=3 * ENTRY_BYTES, policy=policy)
    h.get(0)
    h.get(1)
    big = h.cache.get_index_entry(seg(9, weight=3 * ENTRY_BYTES + 1))
    assert big.marked_for_cleanup and h.removed == [("m9", RemovalCause.SIZE, 3 * ENTRY_BYTES + 1)]
    assert sorted(h.cache.resident_uuids()) == ["m0", "m1"]
    # Exactly the maximum is not oversize: it competes like any entry.
    exact = h.cache.get_index_entry(seg(8, weight=3 * ENTRY_BYTES))
    assert h.cache.weighted_size <= 3 * ENTRY_BYTES
    if policy == "lru":
        assert not exact.marked_for_cleanup and h.cache.resident_uuids() == ["m8"]
    else:  # a fresh candidate (frequency 1) does not beat an equally fresh victim
        assert exact.marked_for_cleanup and sorted(h.cache.resident_uuids()) == ["m0", "m1"]


@pytest.mark.parametrize("policy", POLICIES)
def test_weightless_entries_are_never_size_evicted(policy: str) -> None:
    h = Harness(max_bytes=2 * ENTRY_BYTES, policy=policy)
    h.cache.get_index_entry(seg(0, weight=0))
    for i in range(1, 6):
        h.get(i)
    assert h.cache.is_live("m0") and "m0" not in [u for u, *_ in h.removed]


def test_unknown_policy_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown size policy"):
        Harness(policy="fifo")


def test_same_seed_same_decisions() -> None:
    def run(seed: int) -> list[tuple[str, RemovalCause, int]]:
        h = Harness(max_bytes=6 * ENTRY_BYTES, policy="w-tinylfu", seed=seed)
        for k in range(400):
            i = (k * 7919) % 23 if k % 3 else k % 5
            h.cache.get_index_entry(seg(i, weight=ENTRY_BYTES + 97 * (i % 4)))
        return h.removed

    assert run(3) == run(3)


# ------------------------------------------------------------------------ hypothesis invariants

DELAY_MS = 50


class CacheMachine(RuleBasedStateMachine):
    """Random get/remove/resize/advance/clean_up/close+reopen against the invariants."""

    def __init__(self) -> None:
        super().__init__()
        self.h: Harness
        self.last_removed: dict[str, int] = {}
        self.loaded = 0
        self.removals = 0

    @initialize(
        policy=st.sampled_from(POLICIES),
        ttl_ms=st.sampled_from([-1, 0, 30, 200]),
        max_bytes=st.integers(1, 6000),
        every_reads=st.sampled_from([0, 1, 4]),
    )
    def start(self, policy: str, ttl_ms: int, max_bytes: int, every_reads: int) -> None:
        self.policy = policy
        self.ttl_ms = ttl_ms
        self.every_reads = every_reads
        self.h = self._new_harness(max_bytes, None, None, None)

    def _new_harness(
        self,
        max_bytes: int,
        directory: CacheDirectory | None,
        storage: FakeStorage | None,
        loop: FakeLoop | None,
    ) -> Harness:
        h = Harness(
            max_bytes=max_bytes,
            ttl_ms=self.ttl_ms,
            policy=self.policy,
            delay_ms=DELAY_MS,
            every_reads=self.every_reads,
            directory=directory,
            storage=storage,
            loop=loop,
            on_removed=self._record,
        )
        return h

    def _record(self, uuid: str, cause: RemovalCause, weight: int) -> None:
        self.last_removed[uuid] = self.h.loop.now
        self.removals += 1

    @staticmethod
    def _segment(i: int) -> RemoteSegment:
        # Fixed per key; some weigh 0, one is heavier than most maxima.
        weight = (0, 40, 300, 800, 1500, 2500, 7000)[i % 7] + i
        return seg(i, weight=weight if i % 7 else 0, txn_missing=i % 5 == 0)

    @rule(i=st.integers(0, 13))
    def get(self, i: int) -> None:
        if self.h.cache.closed:
            return
        before = self.h.cache.stats()["misses"]
        entry = self.h.cache.get_index_entry(self._segment(i))
        self.loaded += self.h.cache.stats()["misses"] - before
        assert entry.uuid == f"m{i}"

    @rule(i=st.integers(0, 13))
    def remove(self, i: int) -> None:
        self.h.cache.remove(f"m{i}")

    @rule(ids=st.lists(st.integers(0, 13), max_size=4))
    def remove_all(self, ids: list[int]) -> None:
        self.h.cache.remove_all(f"m{i}" for i in ids)

    @rule(max_bytes=st.integers(1, 6000))
    def resize(self, max_bytes: int) -> None:
        self.h.cache.resize(max_bytes)

    @rule(ms=st.integers(1, 120))
    def advance(self, ms: int) -> None:
        self.h.loop.advance(ms)

    @rule()
    def clean_up(self) -> None:
        self.h.cache.clean_up()

    @rule()
    def close_and_reopen(self) -> None:
        old = self.h
        old.cache.close()
        kept = old.cache.entry_count
        self.h = self._new_harness(old.cache.max_bytes, old.dir, old.storage, old.loop)
        # Reloaded entries are new loads; the old cache's entries are simply forgotten.
        self.loaded += self.h.cache.stats()["reloaded"] - kept

    @invariant()
    def bounded_after_maintenance(self) -> None:
        cache = self.h.cache
        assert cache.weighted_size <= cache.max_bytes

    @invariant()
    def every_weight_counted_once(self) -> None:
        cache = self.h.cache
        entries = [cache.peek(u) for u in cache.resident_uuids()]
        assert sum(e.weight for e in entries if e is not None) == cache.weighted_size
        assert len(cache.size_policy) == cache.entry_count
        assert self.loaded == cache.entry_count + self.removals
        deleted = sum(
            cache.directory.size(n) for n in cache.directory.names() if n.endswith(DELETED_SUFFIX)
        )
        assert cache.resident_bytes == cache.weighted_size + deleted
        stats = cache.stats()
        assert cache.resident_bytes >= stats["weighted_bytes"] >= stats["live_bytes"] >= 0

    @invariant()
    def no_removed_file_outlives_the_delay(self) -> None:
        now = self.h.loop.now
        for name in self.h.dir.names():
            if name.endswith(DELETED_SUFFIX):
                uuid = name.split("_", 1)[1].rsplit(".", 2)[0]
                if self.h.cache.closed:
                    continue  # a closed cache's stopped cleaner leaves them for init()
                assert now - self.last_removed[uuid] < DELAY_MS * MS, name
            else:
                uuid = name.split("_", 1)[1].rsplit(".", 1)[0]
                assert self.h.cache.is_resident(uuid), name


CacheMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestCacheMachine = CacheMachine.TestCase
