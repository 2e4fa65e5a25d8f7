"""One managed ledger's entry map under PIP-430: puts, lookups, range reads and range removals,
and the removal queue's time and size passes over it."""

from __future__ import annotations

import pytest
from _conformance import UpstreamClass, reexpresses
from _pip430_bench import Bench, bench

UPSTREAM = UpstreamClass(
    name="RangeCacheTest",
    area="Entry cache (PIP-430)",
    repo="apache/pulsar",
    path="managed-ledger/src/test/java/org/apache/bookkeeper/mledger/impl/cache/RangeCacheTest.java",
    commit="bbdb4aa3ee0437c02d08615bf5d879befe382161",
    methods=(
        "simple",
        "customTimeExtraction",
        "doubleInsert",
        "getRange",
        "eviction",
        "evictions",
        "testPutWhileClearIsCalledConcurrently",
        "testPutSameObj",
        "testRemoveEntryWithInvalidRefCount",
        "testInvalidMatchingKey",
        "testGetKeyWithDifferentInstance",
    ),
    not_applicable={
        "testPutWhileClearIsCalledConcurrently": "puts racing clear() on eight threads; the "
        "simulation is single-threaded",
        "testRemoveEntryWithInvalidRefCount": "clear() of an entry whose ByteBuf reference count "
        "was already released; brokerlab holds no buffers and no reference counts",
        "testInvalidMatchingKey": "a cached value's entryId changed by reflection behind the "
        "cache's back; brokerlab caches no value objects that could drift from their key",
    },
    line="4.2",
    profile="pulsar-4.2",
    note="Entry sizes are the lengths of the upstream test's string values; the removal queue "
    "is built as (maxRequeue 5, no access extension) and entries have no expected reads. Reader "
    "reference counts (refCnt after get, retained entries surviving eviction) are not modelled.",
)

T = "t"


def _cache() -> Bench:
    b = bench(UPSTREAM, queue=(5, False), tick=False)
    b.open(T)
    return b


def _put(b: Bench, items: dict[int, str]) -> None:
    """Entry (0, key) sized as its string value."""
    for key, value in items.items():
        assert b.put(T, (0, key), len(value))


def _state(b: Bench) -> tuple[int, int]:
    return b.size(), len(b.cache.cached(T))


@reexpresses(UPSTREAM, "simple")
def test_puts_lookups_and_range_removals() -> None:
    """ "0" and "1" at 0 and 1: 2 bytes, 2 entries; 0 is served, 2 is not. Adding 2, 8 and "11"
    at 11: 6 bytes, 5 entries. Removing 1..5 inclusive leaves 4 bytes, 3 entries; removing 2..8
    exclusive of 8 removes nothing; removing 0..100 empties the cache, and doing it again is a
    no-op."""
    b = _cache()
    _put(b, {0: "0", 1: "1"})
    assert _state(b) == (2, 2)
    assert b.hits(T, 0, 0, 0) == [0]
    assert b.hits(T, 0, 2, 2) == []
    _put(b, {2: "2", 8: "8", 11: "11"})
    assert _state(b) == (6, 5)
    b.cache.remove_range(T, (0, 1), (0, 5), last_inclusive=True)
    assert _state(b) == (4, 3)
    assert b.cache.remove_range(T, (0, 2), (0, 8), last_inclusive=False) == (0, 0)
    assert _state(b) == (4, 3)
    b.cache.remove_range(T, (0, 0), (0, 100), last_inclusive=False)
    assert _state(b) == (0, 0)
    assert b.cache.remove_range(T, (0, 0), (0, 100), last_inclusive=False) == (0, 0)
    assert _state(b) == (0, 0)


@reexpresses(UPSTREAM, "customTimeExtraction")
def test_a_time_pass_removes_what_was_queued_before_the_threshold() -> None:
    """Entries of 1, 2 and 3 bytes, then a timestamp, then one of 4 bytes (10 bytes, 4 entries),
    all read once: a time pass at that timestamp removes the first three (3 entries, 6 bytes);
    the 4-byte entry stays and is still served."""
    b = _cache()
    _put(b, {1: "1", 22: "22", 333: "333"})
    b.loop.run_until(1)
    threshold = b.loop.now_ns()
    _put(b, {4444: "4444"})
    assert _state(b) == (10, 4)
    assert b.hits(T, 0, 1, 4444) == [1, 22, 333, 4444]
    assert b.cache.queue.evict_before(threshold) == (3, 6)
    assert _state(b) == (4, 1)
    assert b.hits(T, 0, 1, 4444) == [4444]


@reexpresses(UPSTREAM, "doubleInsert")
def test_a_second_put_at_a_cached_position_is_refused() -> None:
    """ "zero" and "one" at 0 and 1 (7 bytes, 2 entries); "uno" at 1 is refused, and the cache
    still holds the 3-byte entry put first."""
    b = _cache()
    _put(b, {0: "zero", 1: "one"})
    assert _state(b) == (7, 2)
    assert b.hits(T, 0, 1, 1) == [1]
    assert not b.put(T, (0, 1), len("uno"), 2)
    assert _state(b) == (7, 2)
    entry = b.cache.entry(T, (0, 1))
    assert entry is not None and entry.size == 3 and entry.expected_reads is None


@reexpresses(UPSTREAM, "getRange")
def test_a_range_read_serves_the_cached_positions_in_order() -> None:
    """Entries at 0, 1, 3 and 5: reading 1..8 serves exactly 1, 3 and 5; after a put at 8 it
    serves 1, 3, 5 and 8. Clearing the cache leaves nothing."""
    b = _cache()
    _put(b, {0: "0", 1: "1", 3: "3", 5: "5"})
    assert b.hits(T, 0, 1, 8) == [1, 3, 5]
    _put(b, {8: "8"})
    assert b.hits(T, 0, 1, 8) == [1, 3, 5, 8]
    b.cache.close_ledger(T)
    assert b.size() == 0 and b.cache.cached(T) == {}


@reexpresses(UPSTREAM, "eviction")
def test_size_passes_remove_the_oldest_entries_first() -> None:
    """ "zero", "one", "two", "three" at 0..3: freeing 5 bytes removes 0 and 1 (2 entries, 7
    bytes), leaving 2 and 3 (8 bytes) served; freeing 100 removes the other two. A size pass
    asked to free 0 or -1 bytes is refused."""
    b = _cache()
    _put(b, {0: "zero", 1: "one", 2: "two", 3: "three"})
    assert b.cache.queue.evict_size(5) == (2, 7)
    assert _state(b) == (8, 2)
    assert b.hits(T, 0, 0, 3) == [2, 3]
    assert b.cache.queue.evict_size(100) == (2, 8)
    assert _state(b) == (0, 0)
    assert b.hits(T, 0, 0, 3) == []
    for bad in (0, -1):
        with pytest.raises(ValueError):
            b.cache.queue.evict_size(bad)


@reexpresses(UPSTREAM, "evictions")
def test_size_passes_may_free_more_than_asked() -> None:
    """The strings "0".."99" at 0..99 (190 bytes): freeing 1 byte removes 1 entry; freeing 10
    removes 10 entries of 11 bytes (one two-digit entry overshoots); freeing the remaining 178
    removes the last 89. Refilled, removing 10..20 exclusive of 20 takes 10 entries, 20 bytes."""
    b = _cache()
    values = {i: str(i) for i in range(100)}
    _put(b, values)
    assert b.size() == 190
    assert b.cache.queue.evict_size(1) == (1, 1)
    assert b.cache.queue.evict_size(10) == (10, 11)
    assert b.size() == 178
    assert b.cache.queue.evict_size(178) == (89, 178)
    assert b.size() == 0
    _put(b, values)
    assert b.cache.remove_range(T, (0, 10), (0, 20), last_inclusive=False) == (10, 20)
    assert b.size() == 170


@reexpresses(UPSTREAM, "testPutSameObj")
def test_putting_the_same_entry_twice_is_refused_the_second_time() -> None:
    """The same entry put twice: the second put is refused and queues nothing."""
    b = _cache()
    assert b.put(T, (0, 0), 4)
    assert not b.put(T, (0, 0), 4)
    assert b.cache.counters.cache_inserts == 1 and len(b.cache.queue) == 1


@reexpresses(UPSTREAM, "testGetKeyWithDifferentInstance")
def test_a_lookup_with_an_equal_position_object_hits() -> None:
    """An entry put at (0,129) is found through a distinct but equal position object."""
    b = _cache()
    key = (0, 129)
    assert b.put(T, key, 3)
    other = tuple([0, 129])
    assert other is not key and other == key
    assert b.cache.entry(T, other) is not None  # type: ignore[arg-type]
    assert b.hits(T, 0, 129, 129) == [129]
