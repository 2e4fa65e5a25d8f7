"""PIP-430's global removal queue on its own: requeueing by expected reads and by recent access
in time passes, the order of removals in size passes, and the non-evictable size metric."""

from __future__ import annotations

from _conformance import UpstreamClass, reexpresses
from _pip430_bench import Bench, bench

UPSTREAM = UpstreamClass(
    name="RangeCacheRemovalQueueTest",
    area="Entry cache (PIP-430)",
    repo="apache/pulsar",
    path="managed-ledger/src/test/java/org/apache/bookkeeper/mledger/impl/cache/RangeCacheRemovalQueueTest.java",
    commit="942e4440d9e3ad1f56e1b629045401e78dcdeb57",
    methods=(
        "testAddEntryAndIsEmpty",
        "testTimeBasedEvictionRespectsExpectedReadsRequeueThreshold",
        "testExtendTTLOfRecentlyAccessedRequeuesOnTimeBasedEviction",
        "testSizeBasedEvictionEvictsAsLongAsNeeded",
        "testSizeBasedEvictionEvictsEasiestFirstAsLongAsNeeded",
        "testSizeBasedEvictionEvictsExpectedReadsLast",
        "testGetNonEvictableSizeCountsEntriesWithExpectedReads",
    ),
    line="4.2",
    profile="pulsar-4.2",
    note="Each test builds the queue with the upstream test's (maxRequeue, "
    "extendTTLOfRecentlyAccessed); entries are made expired by letting virtual time pass "
    "instead of back-dating their timestamps.",
)

T = "t"


def _expire(b: Bench) -> tuple[int, int]:
    """One nanosecond on, a time pass whose threshold finds everything queued so far expired."""
    b.loop.run_until(b.loop.now_ns() + 1)
    return b.cache.queue.evict_before(b.loop.now_ns())


def _three(max_requeue: int) -> Bench:
    """e1 (11,1) of 40 bytes, read once; e2 (11,2) of 50 bytes with 3 expected reads; e3 (11,3)
    of 30 bytes; queued in that order, with the access extension on."""
    b = bench(UPSTREAM, queue=(max_requeue, True), tick=False)
    b.open(T)
    b.put(T, (11, 1), 40)
    b.put(T, (11, 2), 50, 3)
    b.put(T, (11, 3), 30)
    assert b.hits(T, 11, 1, 1) == [1]
    return b


@reexpresses(UPSTREAM, "testAddEntryAndIsEmpty")
def test_a_new_queue_is_empty_until_an_entry_is_added() -> None:
    """A fresh queue holds nothing; after one insert it holds that entry."""
    b = bench(UPSTREAM, queue=(0, False), tick=False)
    b.open(T)
    assert len(b.cache.queue) == 0
    assert b.put(T, (1, 1), 10)
    assert len(b.cache.queue) == 1


@reexpresses(UPSTREAM, "testTimeBasedEvictionRespectsExpectedReadsRequeueThreshold")
def test_an_expired_entry_with_expected_reads_is_requeued_up_to_the_maximum() -> None:
    """Queue (1, no access extension): an expired entry with one expected read is requeued by
    the first time pass (requeue count 1, still queued) and removed by the next, the maximum of
    one requeue being spent."""
    b = bench(UPSTREAM, queue=(1, False), tick=False)
    b.open(T)
    b.put(T, (2, 1), 10, 1)
    assert _expire(b) == (0, 0)
    entry = b.cache.entry(T, (2, 1))
    assert entry is not None and entry.requeue_count == 1 and len(b.cache.queue) == 1
    assert _expire(b) == (1, 10)
    assert len(b.cache.queue) == 0


@reexpresses(UPSTREAM, "testExtendTTLOfRecentlyAccessedRequeuesOnTimeBasedEviction")
def test_an_expired_recently_read_entry_is_requeued_once_per_access() -> None:
    """Queue (0, access extension on): an expired entry that was read is requeued once, its
    access flag cleared; expired again without a new read, it is removed."""
    b = bench(UPSTREAM, queue=(0, True), tick=False)
    b.open(T)
    b.put(T, (3, 1), 10)
    assert b.hits(T, 3, 1, 1) == [1]
    assert _expire(b) == (0, 0)
    entry = b.cache.entry(T, (3, 1))
    assert entry is not None and entry.requeue_count == 1 and not entry.accessed
    assert len(b.cache.queue) == 1
    assert _expire(b) == (1, 10)
    assert len(b.cache.queue) == 0


@reexpresses(UPSTREAM, "testSizeBasedEvictionEvictsAsLongAsNeeded")
def test_a_size_pass_removes_protected_entries_too_when_it_must() -> None:
    """Queue (1, on), entries of 40 (read), 50 (3 expected reads) and 30 bytes: freeing 120 bytes
    removes all three, the protected ones after their requeues."""
    b = _three(1)
    assert b.cache.queue.evict_size(120) == (3, 120)
    assert b.cache.cached(T) == {}


@reexpresses(UPSTREAM, "testSizeBasedEvictionEvictsEasiestFirstAsLongAsNeeded")
def test_a_size_pass_removes_the_unprotected_entry_first() -> None:
    """Same three entries: freeing 20 bytes requeues the read entry and the one with expected
    reads and removes only the 30-byte entry."""
    b = _three(1)
    assert b.cache.queue.evict_size(20) == (1, 30)
    assert sorted(b.cache.cached(T)) == [(11, 1), (11, 2)]


@reexpresses(UPSTREAM, "testSizeBasedEvictionEvictsExpectedReadsLast")
def test_a_size_pass_keeps_expected_reads_longest() -> None:
    """Queue (5, on): freeing 35 bytes requeues both protected entries, removes the 30-byte one,
    then the read entry on its second visit (its access spent): 70 bytes; the entry with expected
    reads stays."""
    b = _three(5)
    assert b.cache.queue.evict_size(35) == (2, 70)
    assert sorted(b.cache.cached(T)) == [(11, 2)]
    assert b.cache.counters.cache_requeues_accessed == 1
    assert b.cache.counters.cache_requeues_expected_reads == 1


@reexpresses(UPSTREAM, "testGetNonEvictableSizeCountsEntriesWithExpectedReads")
def test_the_non_evictable_size_counts_entries_still_expecting_reads() -> None:
    """Entries of 100 bytes (2 expected reads) and 50 bytes (1): 2 entries, 150 bytes are
    non-evictable; once the second is read, 1 entry, 100 bytes."""
    b = bench(UPSTREAM, queue=(0, False), tick=False)
    b.open(T)
    b.put(T, (1, 1), 100, 2)
    b.put(T, (1, 2), 50, 1)
    assert b.cache.non_evictable(pulsar_definition=True) == (2, 150)
    b.cache.released(T, (1, 2))
    assert b.cache.non_evictable(pulsar_definition=True) == (1, 100)
    # Pulsar's metric also counts an entry with no count; brokerlab's own gauge does not.
    b.put(T, (1, 3), 7)
    assert b.cache.non_evictable(pulsar_definition=True) == (2, 107)
    assert b.cache.stats()["cache_non_evictable_bytes"] == 100
