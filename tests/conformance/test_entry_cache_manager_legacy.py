"""The legacy (pre-PIP-430) entry-cache manager: a global limit enforced by evicting from the
largest ledger caches, time-based eviction, invalidation up to the slowest active reader, and the
disabled cache."""

from __future__ import annotations

from _conformance import UpstreamClass, ready_profile, reexpresses

from brokerlab.host import PluginHost
from brokerlab.testing.entry_cache import CacheBench
from brokerlab_plugins.legacy_cache import LegacyEntryCache

UPSTREAM = UpstreamClass(
    name="EntryCacheManagerTest (4.0 line)",
    area="Entry cache (legacy)",
    repo="apache/pulsar",
    path="managed-ledger/src/test/java/org/apache/bookkeeper/mledger/impl/EntryCacheManagerTest.java",
    commit="04569b77d7029df8ed7fb49bbe8162ea569233f5",
    methods=(
        "simple",
        "doubleInsert",
        "cacheSizeUpdate",
        "cacheDisabled",
        "verifyNoCacheIfNoConsumer",
        "verifyHitsMisses",
        "verifyTimeBasedEviction",
        "entryCacheDisabledAsyncReadEntry",
    ),
    line="4.0",
    profile="pulsar-4.0-legacy",
    note="Pinned to the newest pre-PIP-430 version of the file the index stores (before the 3.x"
    " `Position` API change; no 4.0-branch copy is stored). Its scenarios are the legacy cache"
    " that Pulsar kept up to 4.0 and that `pulsar-4.0-legacy.conf` claims. Upstream sizes the"
    " cache in bytes (10, 70, 200); profiles size it in MiB, so these tests use the same numbers"
    " in MiB and entries of as many MiB as upstream's bytes: every threshold, share and"
    " comparison is the same.",
)

MIB = 1024 * 1024
HOST = PluginHost()


def _bench(**keys: str) -> CacheBench:
    """The cache of the ready profile, with ``keys`` set on top of it."""
    return CacheBench(HOST, ready_profile(UPSTREAM).with_overrides(keys))


def _legacy(bench: CacheBench) -> LegacyEntryCache:
    assert isinstance(bench.cache, LegacyEntryCache)
    return bench.cache


@reexpresses(UPSTREAM, "simple")
def test_size_eviction_takes_from_the_largest_cache_and_refuses_the_trigger() -> None:
    """A 10 MiB cache with watermark 0.8 (trigger 0.98 x 10 MiB). cache1 holds 1:1 (4 MiB) and 1:0
    (3 MiB), cache2 three 1 MiB entries: 10 MiB in all. The next insert finds the cache above
    the trigger: it schedules one eviction of 10 - 8 = 2 MiB and is refused (10 is not below 10).
    cache1 alone holds half the bytes, so it gives up the 2 MiB, lowest position first: 1:0 goes,
    leaving 7 MiB (cache1 4, cache2 3). Closing cache1 leaves 3 MiB; invalidating cache2 before 2:1
    removes one entry. In all: one eviction run, 5 inserts, 3 entries removed, no reads."""
    bench = _bench(managedLedgerCacheSizeMB="10", managedLedgerCacheEvictionWatermark="0.8")
    cache = _legacy(bench)
    bench.open_topic("cache1", {})
    bench.open_topic("cache2", {})
    assert cache.put("cache1", (1, 1), 4 * MIB)
    assert cache.put("cache1", (1, 0), 3 * MIB)
    assert cache.ledger_size("cache1") == bench.size() == 7 * MIB
    assert cache.counters.cache_inserts == 2 and cache.counters.removals() == 0
    for entry in range(3):
        assert cache.put("cache2", (2, entry), MIB)
    assert cache.ledger_size("cache2") == 3 * MIB and bench.size() == 10 * MIB
    assert not cache.put("cache2", (2, 3), MIB)
    bench.settle()
    assert bench.size() == 7 * MIB
    assert cache.ledger_size("cache1") == 4 * MIB and cache.ledger_size("cache2") == 3 * MIB
    assert list(cache.cached("cache1")) == [(1, 1)]
    cache.close_ledger("cache1")
    assert bench.size() == 3 * MIB and cache.ledger_size("cache2") == 3 * MIB
    assert cache.invalidate_entries("cache2", (2, 1)) == (1, MIB)
    assert bench.size() == 2 * MIB and cache.ledger_size("cache2") == 2 * MIB
    stats = bench.stats()
    assert cache._eviction.requests == 1
    assert stats["cache_inserts"] == 5 and cache.counters.removals() == 3
    assert len(cache.cached("cache2")) == 2
    assert stats["cache_hits"] == stats["cache_misses"] == 0


@reexpresses(UPSTREAM, "doubleInsert")
def test_a_cached_position_is_not_inserted_again() -> None:
    """Inserting 1:0 again (5 MiB this time) into a cache holding 1:1 and 1:0 (7 MiB) is refused:
    the size stays 7 MiB, with 2 inserts, 2 entries and nothing removed."""
    bench = _bench(managedLedgerCacheSizeMB="10", managedLedgerCacheEvictionWatermark="0.8")
    cache = _legacy(bench)
    bench.open_topic("cache1", {})
    assert cache.put("cache1", (1, 1), 4 * MIB)
    assert cache.put("cache1", (1, 0), 3 * MIB)
    assert cache.ledger_size("cache1") == bench.size() == 7 * MIB
    assert not cache.put("cache1", (1, 0), 5 * MIB)
    assert cache.ledger_size("cache1") == bench.size() == 7 * MIB
    assert cache.cached("cache1") == {(1, 0): 3 * MIB, (1, 1): 4 * MIB}
    assert cache.counters.cache_inserts == 2 and cache.counters.removals() == 0


@reexpresses(
    UPSTREAM,
    "cacheSizeUpdate",
    differs="Pulsar weighs an entry by its buffer's readable bytes when it leaves the cache, so"
    " entries whose buffers a reader consumed free less than they added: upstream asserts the"
    " manager's size stays above 0 after the only cache is removed. brokerlab holds no buffers"
    " and frees exactly the size each entry was inserted with, so the size returns to 0; the"
    " insert and removal counts agree.",
)
def test_removing_a_ledger_cache_frees_what_it_held() -> None:
    """Twenty entries of 1..20 MiB go into a 200 MiB cache: 210 MiB, all accepted (the last insert
    still finds 190 MiB, under the trigger). Removing the ledger's cache removes all 20 entries and
    frees all 210 MiB."""
    bench = _bench(managedLedgerCacheSizeMB="200", managedLedgerCacheEvictionWatermark="0.8")
    cache = _legacy(bench)
    bench.open_topic("cache1", {})
    for entry in range(20):
        assert cache.put("cache1", (1, entry), (entry + 1) * MIB)
    assert bench.size() == 210 * MIB
    cache.close_ledger("cache1")
    assert bench.size() == 0
    assert cache.counters.cache_inserts == 20 and cache.counters.removals() == 20
    assert cache.cached("cache1") == {}


@reexpresses(UPSTREAM, "cacheDisabled")
def test_a_zero_size_selects_the_disabled_cache() -> None:
    """With managedLedgerCacheSizeMB=0 the profile selects the disabled cache whatever
    sim.entryCache says: adds to two ledgers, each with an active cursor, cache nothing, and every
    size and counter stays 0."""
    profile = ready_profile(UPSTREAM).with_overrides({"managedLedgerCacheSizeMB": "0"})
    assert profile.get("sim.entryCache") == "legacy"
    assert HOST.resolve(profile).entry_cache.record.name == "disabled"
    bench = CacheBench(HOST, profile)
    assert bench.record.name == "disabled"
    bench.open_topic("cache1", {"c": (1, 0)})
    bench.open_topic("cache2", {"c": (2, 0)})
    assert not bench.insert("cache1", (1, 1), 4)
    assert not bench.insert("cache1", (1, 0), 3)
    assert bench.size() == 0
    assert bench.stats() == {"cache_hits": 0, "cache_misses": 0}
    for entry in range(3):
        assert not bench.insert("cache2", (2, entry), 1)
    assert bench.size() == 0


@reexpresses(UPSTREAM, "verifyNoCacheIfNoConsumer")
def test_adds_are_not_cached_without_an_active_cursor() -> None:
    """A ledger with no cursor gets ten 7-byte entries added: none is cached, nothing is inserted,
    no eviction runs."""
    bench = _bench(managedLedgerCacheSizeMB="70", managedLedgerCacheEvictionWatermark="0.8")
    cache = _legacy(bench)
    bench.open_topic("ledger", {})
    for entry in range(10):
        assert not bench.insert("ledger", (3, entry), 7)
    assert bench.size() == 0
    stats = bench.stats()
    assert stats["cache_inserts"] == stats["cache_hits"] == stats["cache_misses"] == 0
    assert cache._eviction.requests == 0 and cache.counters.removals() == 0


@reexpresses(UPSTREAM, "verifyHitsMisses")
def test_entries_leave_once_the_slowest_active_reader_passes_them() -> None:
    """A 70 MiB cache, two active cursors at the start of the ledger, ten 7 MiB entries added:
    the cache is full (70 MiB). c1 reads all ten from the cache (10 hits) and moves past them;
    c2 is still at the start, so nothing leaves. c1 is deactivated: still 70 MiB. c2 reads all ten
    (10 more hits) and moves past them: it was the only active cursor, so every entry before it is
    invalidated and the cache is empty; moving c2 back onto the last entry re-caches nothing.
    No read missed and no size eviction ran."""
    bench = _bench(managedLedgerCacheSizeMB="70", managedLedgerCacheEvictionWatermark="0.8")
    cache = _legacy(bench)
    bench.open_topic("ledger", {"c1": (3, 0), "c2": (3, 0)})
    for entry in range(10):
        assert bench.insert("ledger", (3, entry), 7 * MIB)
    assert bench.size() == 70 * MIB
    assert bench.read("ledger", 3, 0, 9, "c1") == []
    bench.move_cursor("ledger", "c1", (3, 10))
    assert bench.size() == 70 * MIB
    assert bench.stats()["cache_hits"] == 10
    bench.move_cursor("ledger", "c1", None)
    assert bench.size() == 70 * MIB
    assert bench.read("ledger", 3, 0, 9, "c2") == []
    bench.move_cursor("ledger", "c2", (3, 10))
    assert bench.size() == 0
    bench.move_cursor("ledger", "c2", (3, 9))
    assert bench.size() == 0
    stats = bench.stats()
    assert stats["cache_hits"] == 20 and stats["cache_misses"] == 0
    assert cache._eviction.requests == 0 and stats["cache_evictions_size"] == 0


@reexpresses(UPSTREAM, "verifyTimeBasedEviction")
def test_entries_older_than_the_threshold_are_evicted() -> None:
    """Eviction every 10 ms, a 100 ms threshold, two active cursors: two entries (4 and 3 bytes)
    added at once are still cached 50 ms later, and gone once a second has passed, by time
    eviction alone (the cursors have not moved); closing the cursors leaves the cache empty."""
    bench = _bench(
        managedLedgerCacheEvictionIntervalMs="10",
        managedLedgerCacheEvictionTimeThresholdMillis="100",
    )
    bench.open_topic("test", {"c1": (1, 0), "c2": (1, 0)})
    assert bench.size() == 0
    assert bench.insert("test", (1, 0), 4)
    assert bench.insert("test", (1, 1), 3)
    bench.advance(50)
    assert bench.size() == 7
    bench.advance(950)
    assert bench.size() == 0
    assert bench.stats()["cache_evictions_time"] == 2
    bench.move_cursor("test", "c1", None)
    bench.move_cursor("test", "c2", None)
    assert bench.size() == 0


@reexpresses(UPSTREAM, "entryCacheDisabledAsyncReadEntry")
def test_the_disabled_cache_sends_every_read_to_storage() -> None:
    """With the cache disabled, a read of entry 1:1 is a miss: the entry is read from storage."""
    bench = CacheBench(
        HOST, ready_profile(UPSTREAM).with_overrides({"managedLedgerCacheSizeMB": "0"})
    )
    bench.open_topic("cache1", {})
    assert bench.read("cache1", 1, 1, 1) == [1]
    assert bench.stats()["cache_misses"] == 1
