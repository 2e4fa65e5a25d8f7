"""A managed ledger's range read under PIP-430 when part of the range is cached: the cached entries
are served, and each contiguous run of missing entries is read from storage on its own."""

from __future__ import annotations

import pytest
from _conformance import UpstreamClass, reexpresses
from _read_bench import ReadBench, read_bench

UPSTREAM = UpstreamClass(
    name="RangeEntryCacheImplTest",
    area="Entry cache (PIP-430)",
    repo="apache/pulsar",
    path="managed-ledger/src/test/java/org/apache/bookkeeper/mledger/impl/cache/RangeEntryCacheImplTest.java",
    commit="ce7a49120c9b9f575986b4d8a6b7aff656eea1d1",
    methods=(
        "testPartialCachingWithMiddleEntryInCache",
        "testPartialCachingWithFirstEntryInCache",
        "testPartialCachingWithLastEntryInCache",
        "testPartialCachingWithMiddleRangeInCache",
        "testPartialCachingWithFirstRangeInCache",
        "testPartialCachingWithLastRangeInCache",
        "testPartialCachingWithMultipleEntriesInCache",
        "testPartialCachingWithMultipleEntriesInCacheWhilePartialReadFails",
    ),
    not_applicable={
        "testPartialCachingWithMultipleEntriesInCacheWhilePartialReadFails": "a storage read of "
        "one missing run fails and the whole range is read again; brokerlab's storage never "
        "fails a read (the [storage] section models latency and transfer time only)",
    },
    line="4.2",
    profile="pulsar-4.2",
    note="Upstream drives RangeEntryCacheImpl with a mocked pending-reads manager and counts its "
    "readEntries calls; here a broker under the ready profile reads a 100-entry backlog (1 KiB "
    "entries, ledger 1) through the cache in one dispatcher read, and the storage reads are the "
    "broker's read operations (storage_read_ops) and entries read from storage. Each case runs "
    "with storage reads that take no time (the synchronous read path) and with reads of 10 ms "
    "(pending reads shared through PendingReads).",
)

ENTRIES = 100
# A storage read taking no time (the dispatcher reads synchronously) or 10 ms (reads under way).
LATENCIES = pytest.mark.parametrize("latency_ms", [0, 10], ids=["instant", "10ms"])


def _bench(latency_ms: int, *cached: int) -> ReadBench:
    b = read_bench(UPSTREAM.profile or "", entries=ENTRIES, size=1024, read_latency_ms=latency_ms)
    b.cache(*cached)
    return b


def _check(b: ReadBench, *, hits: int, storage_reads: int) -> None:
    """The one read of 0..99 served ``hits`` entries from the cache and read the rest from
    storage in ``storage_reads`` operations; the consumer got all 100."""
    counters = b.run()
    stats = b.broker.cache.stats()
    assert counters.delivered == ENTRIES
    assert (stats["cache_hits"], stats["cache_misses"]) == (hits, ENTRIES - hits)
    assert counters.storage_entries_read == ENTRIES - hits
    assert counters.storage_bytes_read == (ENTRIES - hits) * 1024
    assert counters.storage_read_ops == storage_reads


@reexpresses(UPSTREAM, "testPartialCachingWithMiddleEntryInCache")
@LATENCIES
def test_one_cached_entry_in_the_middle_splits_the_storage_read_in_two(latency_ms: int) -> None:
    """Entry 50 cached: the read of 0..99 serves 50 from the cache and reads 0..49 and 51..99
    from storage, two reads of 99 entries in all."""
    _check(_bench(latency_ms, 50), hits=1, storage_reads=2)


@reexpresses(UPSTREAM, "testPartialCachingWithFirstEntryInCache")
@LATENCIES
def test_a_cached_first_entry_leaves_one_storage_read_after_it(latency_ms: int) -> None:
    """Entry 0 cached: 0 comes from the cache, 1..99 from one storage read."""
    _check(_bench(latency_ms, 0), hits=1, storage_reads=1)


@reexpresses(UPSTREAM, "testPartialCachingWithLastEntryInCache")
@LATENCIES
def test_a_cached_last_entry_leaves_one_storage_read_before_it(latency_ms: int) -> None:
    """Entry 99 cached: 99 comes from the cache, 0..98 from one storage read."""
    _check(_bench(latency_ms, 99), hits=1, storage_reads=1)


@reexpresses(UPSTREAM, "testPartialCachingWithMiddleRangeInCache")
@LATENCIES
def test_a_cached_run_in_the_middle_splits_the_storage_read_in_two(latency_ms: int) -> None:
    """Entries 50 and 51 cached: they come from the cache; 0..49 and 52..99 are two storage
    reads (98 entries)."""
    _check(_bench(latency_ms, 50, 51), hits=2, storage_reads=2)


@reexpresses(UPSTREAM, "testPartialCachingWithFirstRangeInCache")
@LATENCIES
def test_a_cached_first_run_leaves_one_storage_read_after_it(latency_ms: int) -> None:
    """Entries 0 and 1 cached: 2..99 is one storage read of 98 entries."""
    _check(_bench(latency_ms, 0, 1), hits=2, storage_reads=1)


@reexpresses(UPSTREAM, "testPartialCachingWithLastRangeInCache")
@LATENCIES
def test_the_last_range_case_as_upstream_runs_it(latency_ms: int) -> None:
    """As the upstream test actually runs: entry 98 is put twice (the second put is refused) and
    99 is never cached, so 98 is served from the cache and 0..97 and 99 are two storage reads of
    99 entries (upstream checks only the read of 0..97)."""
    b = _bench(latency_ms)
    assert b.cache(98, 98) == [True, False]
    _check(b, hits=1, storage_reads=2)


@reexpresses(UPSTREAM, "testPartialCachingWithMultipleEntriesInCache")
@LATENCIES
def test_scattered_cached_entries_leave_one_storage_read_per_gap(latency_ms: int) -> None:
    """Entries 5, 15, 75, 76 and 78 cached: five storage reads, of 0..4, 6..14, 16..74, 77 and
    79..99 (95 entries), and the five cached entries served from the cache."""
    _check(_bench(latency_ms, 5, 15, 75, 76, 78), hits=5, storage_reads=5)
