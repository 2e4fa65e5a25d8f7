"""The legacy per-ledger cache (the old ``util.RangeCache``) keeps entries in position order with
their sizes and timestamps, refuses duplicates, and removes by range, by age and lowest first."""

from __future__ import annotations

from _conformance import UpstreamClass, reexpresses

from brokerlab.protocols import Position
from brokerlab_plugins.cursor_containers import HeapCursorContainer
from brokerlab_plugins.legacy_cache.ledger_cache import LedgerCache, key_of

UPSTREAM = UpstreamClass(
    name="RangeCacheTest (util, 4.0 line)",
    area="Entry cache (legacy)",
    repo="apache/pulsar",
    path="managed-ledger/src/test/java/org/apache/bookkeeper/mledger/util/RangeCacheTest.java",
    commit="2e2ce0b61ec88a536664565695b891a180a6c876",
    methods=(
        "simple",
        "customWeighter",
        "customTimeExtraction",
        "doubleInsert",
        "getRange",
        "eviction",
        "evictions",
        "testPutWhileClearIsCalledConcurrently",
        "testPutSameObj",
        "testRemoveEntryWithInvalidRefCount",
        "testRemoveEntryWithInvalidMatchingKey",
        "testGetKeyWithDifferentInstance",
    ),
    not_applicable={
        "testPutWhileClearIsCalledConcurrently": "puts racing clears on eight threads; the"
        " simulation is single-threaded",
        "testRemoveEntryWithInvalidRefCount": "JVM reference counting of cached entries (a"
        " value released to a zero count is still removed); brokerlab holds no buffers",
        "testRemoveEntryWithInvalidMatchingKey": "key validation of pooled entry objects"
        " recycled under another position; brokerlab caches a size per position, never an"
        " entry object",
    },
    line="4.0",
    note="brokerlab's counterpart of `RangeCache` is the legacy plugin's `LedgerCache`: a key is a"
    " position, the weight is the size given at insert (upstream's default weighter counts 1 per"
    " entry, its custom one the string length) and the timestamp is the insert time given"
    " (upstream's custom extractor uses the string length). Upstream's integer key k is the"
    " position 0:k unless a test says otherwise. Reference counts, which upstream also checks,"
    " have no counterpart and are left out.",
)


def _cache() -> LedgerCache:
    return LedgerCache("t", HeapCursorContainer())


def _cached(cache: LedgerCache, position: Position) -> bool:
    return key_of(*position) in cache.entries


def _count(cache: LedgerCache) -> int:
    return len(cache.entries)


@reexpresses(
    UPSTREAM,
    "simple",
    differs="brokerlab's per-ledger cache removes only the ranges the broker asks for: every"
    " entry before a position (`invalidateEntries`) and a whole ledger (`invalidateAllEntries`)."
    " Upstream's removals of inner ranges, `removeRange(1, 5, true)` and `removeRange(2, 8,"
    " false)`, have no counterpart; this test removes everything before 0:3 instead (0, 1 and"
    " 2, where upstream removes 1 and 2), so it holds one entry fewer after that step; the"
    " other steps agree.",
)
def test_puts_lookups_and_removals_before_a_position() -> None:
    """0 and 1 (one unit each) make size 2 in 2 entries; 0 is found, 2 is not. 2, 8 and 11 make 5.
    Removing everything before 0:3 leaves 8 and 11; removing everything before 0:100 empties the
    cache, and doing it again removes nothing."""
    cache = _cache()
    assert cache.put(key_of(0, 0), 1, 0) and cache.put(key_of(0, 1), 1, 0)
    assert cache.size == 2 and _count(cache) == 2
    assert _cached(cache, (0, 0)) and not _cached(cache, (0, 2))
    for entry in (2, 8, 11):
        assert cache.put(key_of(0, entry), 1, 0)
    assert cache.size == 5 and _count(cache) == 5
    assert cache.invalidate_before((0, 3)) == (3, 3)
    assert cache.size == 2 and list(cache.positions()) == [(0, 8), (0, 11)]
    assert cache.invalidate_before((0, 100)) == (2, 2)
    assert cache.size == 0 and _count(cache) == 0
    assert cache.invalidate_before((0, 100)) == (0, 0)
    assert cache.size == 0 and _count(cache) == 0


@reexpresses(UPSTREAM, "customWeighter")
def test_size_is_the_sum_of_the_entries_sizes() -> None:
    """Entries of 4 and 3 bytes ("zero", "one") make a cache of 7 bytes in 2 entries."""
    cache = _cache()
    cache.put(key_of(0, 0), 4, 0)
    cache.put(key_of(0, 1), 3, 0)
    assert cache.size == 7 and _count(cache) == 2


@reexpresses(UPSTREAM, "customTimeExtraction")
def test_entries_at_or_before_a_timestamp_are_evicted() -> None:
    """Entries of 1, 2, 3 and 4 bytes stamped 1, 2, 3 and 4 (10 bytes): evicting up to timestamp 3
    removes the first three (inclusive bound), 6 bytes, and leaves the 4-byte entry."""
    cache = _cache()
    for key, size in ((1, 1), (22, 2), (333, 3), (4444, 4)):
        cache.put(key_of(0, key), size, size)
    assert cache.size == 10 and _count(cache) == 4
    removed, freed, _ = cache.evict_before_timestamp(3)
    assert (removed, freed) == (3, 6)
    assert cache.size == 4 and list(cache.positions()) == [(0, 4444)]


@reexpresses(UPSTREAM, "doubleInsert")
def test_a_second_put_at_a_cached_position_is_refused() -> None:
    """0 and 1 are cached (one unit each); putting 1 again is refused and the cached 1 keeps its
    own size and timestamp."""
    cache = _cache()
    assert cache.put(key_of(0, 0), 1, 10)
    assert cache.put(key_of(0, 1), 1, 11)
    assert cache.size == 2 and _count(cache) == 2
    assert not cache.put(key_of(0, 1), 3, 99)
    assert cache.size == 2 and _count(cache) == 2
    assert cache.entries[key_of(0, 1)] == (1, 11)


@reexpresses(UPSTREAM, "getRange")
def test_a_range_lookup_finds_the_cached_positions_in_it() -> None:
    """With 0, 1, 3 and 5 cached, the range 1..8 holds 1, 3 and 5; once 8 is cached it holds 1, 3,
    5 and 8. Clearing empties the cache."""
    cache = _cache()
    for entry in (0, 1, 3, 5):
        cache.put(key_of(0, entry), 1, 0)
    assert [e for e in range(1, 9) if _cached(cache, (0, e))] == [1, 3, 5]
    cache.put(key_of(0, 8), 1, 0)
    assert [e for e in range(1, 9) if _cached(cache, (0, e))] == [1, 3, 5, 8]
    assert cache.clear() == (5, 5)
    assert cache.size == 0 and _count(cache) == 0


@reexpresses(
    UPSTREAM,
    "eviction",
    differs="a request to free 0 or a negative number of bytes frees nothing, where upstream's"
    " `evictLeastAccessedEntries` throws `IllegalArgumentException`; the only caller, the"
    " eviction policy, skips zero shares in both, and the other steps agree.",
)
def test_size_eviction_takes_the_lowest_positions_first() -> None:
    """Entries of 4, 3, 3 and 5 bytes at 0..3: freeing 5 bytes removes 0 and 1 (7 bytes, the first
    prefix that frees enough), leaving 2 and 3 (8 bytes); freeing 100 removes those two. With an
    entry back in, asking to free 0 or -1 bytes removes nothing."""
    cache = _cache()
    for entry, size in enumerate((4, 3, 3, 5)):
        cache.put(key_of(0, entry), size, 0)
    assert cache.evict_lowest(5) == (2, 7)
    assert cache.size == 8 and _count(cache) == 2
    assert [e for e in range(4) if _cached(cache, (0, e))] == [2, 3]
    assert cache.evict_lowest(100) == (2, 8)
    assert cache.size == 0 and _count(cache) == 0
    cache.put(key_of(0, 0), 4, 0)
    assert cache.evict_lowest(0) == (0, 0)
    assert cache.evict_lowest(-1) == (0, 0)
    assert cache.size == 4 and _cached(cache, (0, 0))


def _hundred(cache: LedgerCache) -> None:
    """Entries 0..99 of one unit each; entry i is at (i // 10):(i % 10), ten per ledger, so that
    position order is the order of i."""
    for i in range(100):
        assert cache.put(key_of(i // 10, i % 10), 1, 0)


@reexpresses(UPSTREAM, "evictions")
def test_repeated_size_evictions_and_a_ledger_removal() -> None:
    """A hundred one-unit entries: freeing 1, then 10, then 100 removes 1, 10 and the remaining 89.
    Refilled, removing entries 10..19 (upstream's key range [10, 20), here ledger 1) removes 10."""
    cache = _cache()
    _hundred(cache)
    assert cache.size == 100
    assert cache.evict_lowest(1) == (1, 1) and cache.size == 99
    assert cache.evict_lowest(10) == (10, 10) and cache.size == 89
    assert cache.evict_lowest(100) == (89, 89) and cache.size == 0
    _hundred(cache)
    assert cache.size == 100
    assert cache.remove_ledger(1) == (10, 10)
    assert cache.size == 90
    assert not any(_cached(cache, (1, e)) for e in range(10))


@reexpresses(UPSTREAM, "testPutSameObj")
def test_the_same_entry_put_twice() -> None:
    """Putting the same entry at the same position twice: the first put succeeds, the second is
    refused."""
    cache = _cache()
    assert cache.put(key_of(0, 0), 4, 0)
    assert not cache.put(key_of(0, 0), 4, 0)
    assert cache.size == 4 and _count(cache) == 1


@reexpresses(UPSTREAM, "testGetKeyWithDifferentInstance")
def test_a_lookup_with_an_equal_position_object_hits() -> None:
    """An entry cached at 0:129 is found with a position built separately that is equal to, but not
    the same object as, the one it was cached with."""
    cache = _cache()
    position = (0, 129)
    cache.put(key_of(*position), 3, 0)
    other = (0, int("129"))
    assert other is not position and other == position
    assert key_of(*other) in cache.entries
