"""The PIP-430 cache manager across managed ledgers: global size and queue-order eviction,
duplicate inserts, removal of a ledger's cache, the disabled cache, caching of adds, hits and
cursor-driven invalidation, and time-based expiry."""

from __future__ import annotations

from _conformance import UpstreamClass, ready_profile, reexpresses
from _pip430_bench import bench

from brokerlab import load_profile
from brokerlab.host import PluginHost
from brokerlab.protocols import EntryCache
from brokerlab.testing._common import build_context
from brokerlab_plugins.cursor_containers import SortedListCursorContainer

UPSTREAM = UpstreamClass(
    name="EntryCacheManagerTest (PIP-430 line)",
    area="Entry cache (PIP-430)",
    repo="lhotari/pulsar",
    path="managed-ledger/src/test/java/org/apache/bookkeeper/mledger/impl/EntryCacheManagerTest.java",
    commit="580eb128cc07274c9c45366f3d149649eda82586",
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
    line="4.2",
    profile="pulsar-4.2",
    note="The stored apache/pulsar versions of this file all predate PIP-430; this is the version "
    "on the branch of PIP-430's author, whose expectations follow the removal queue (simple: "
    "cache1 keeps 3 bytes) and which runs verifyHitsMisses with "
    "cacheEvictionByExpectedReadCount=false. Factory-level metrics with no brokerlab counterpart "
    "(hit rates per second, the number of eviction runs) are not asserted.",
)


@reexpresses(UPSTREAM, "simple")
def test_size_eviction_takes_the_oldest_insert_of_any_ledger() -> None:
    """A 10-byte cache with watermark 0.8: cache1 gets (1,1) of 4 bytes then (1,0) of 3, cache2
    three 1-byte entries. At 10 bytes (over the 9-byte trigger) the size eviction takes the first
    entry queued, (1,1), whatever its ledger; the fourth cache2 entry is accepted. Removing cache1
    and invalidating cache2 before (2,1) leave 3 bytes; 6 inserts and 3 removals in all."""
    b = bench(UPSTREAM, max_size=10, watermark=0.8, queue=(5, True), tick=False)
    b.open("cache1")
    b.open("cache2")
    assert b.put("cache1", (1, 1), 4) and b.put("cache1", (1, 0), 3)
    assert (b.size("cache1"), b.size()) == (7, 7)
    for entry in range(3):
        b.put("cache2", (2, entry), 1)
    assert (b.size("cache2"), b.size()) == (3, 10)
    assert b.put("cache2", (2, 3), 1)
    b.settle()
    assert (b.size(), b.size("cache1"), b.size("cache2")) == (7, 3, 4)
    assert (1, 1) not in b.cache.cached("cache1")
    b.cache.close_ledger("cache1")
    assert (b.size(), b.size("cache2")) == (4, 4)
    assert b.cache.remove_range("cache2", (-1, 0), (2, 1), last_inclusive=False) == (1, 1)
    assert (b.size(), b.size("cache2")) == (3, 3)
    assert b.cache.counters.cache_inserts == 6
    assert len(b.cache.cached("cache2")) == 3
    assert b.removed() == 3


@reexpresses(UPSTREAM, "doubleInsert")
def test_a_second_insert_at_a_cached_position_is_refused() -> None:
    """Inserting (1,0) again with 5 bytes is refused: the size stays 7, with 2 inserts and no
    removal."""
    b = bench(UPSTREAM, max_size=10, watermark=0.8, tick=False)
    b.open("cache1")
    assert b.put("cache1", (1, 1), 4) and b.put("cache1", (1, 0), 3)
    assert b.size() == 7
    assert not b.put("cache1", (1, 0), 5)
    assert (b.size("cache1"), b.size()) == (7, 7)
    assert b.cache.counters.cache_inserts == 2
    assert len(b.cache.cached("cache1")) == 2 and b.removed() == 0


@reexpresses(UPSTREAM, "cacheSizeUpdate")
def test_removing_a_ledger_cache_frees_what_its_entries_were_counted_with() -> None:
    """Twenty entries of 1..20 bytes (210) in a 200-byte cache; removing the ledger's cache
    leaves nothing counted: 20 inserts, 20 removals, size 0, even though the insert that crossed
    the trigger scheduled a size eviction."""
    b = bench(UPSTREAM, max_size=200, watermark=0.8, tick=False)
    b.open("cache1")
    for i in range(20):
        assert b.put("cache1", (1, i), i + 1)
    assert b.size() == 210
    b.cache.close_ledger("cache1")
    b.settle()
    assert b.size() == 0
    assert b.cache.counters.cache_inserts == 20 and b.removed() == 20


def _disabled_cache() -> EntryCache:
    """The entry cache the ready profile selects with ``managedLedgerCacheSizeMB=0``."""
    host = PluginHost()
    profile = load_profile(
        ready_profile(UPSTREAM).path, {"managedLedgerCacheSizeMB": "0"}, mode="strict"
    )
    choices = host.resolve(profile)
    assert choices.entry_cache.record.name == "disabled"
    context, _ = build_context(host, profile)
    cache: EntryCache = choices.entry_cache.record.factory(context)
    return cache


@reexpresses(UPSTREAM, "cacheDisabled")
def test_a_zero_size_cache_is_the_disabled_cache_and_holds_nothing() -> None:
    """With ``managedLedgerCacheSizeMB=0`` the profile selects the disabled cache: inserts into
    two ledgers leave every size at 0 and count no insert."""
    cache = _disabled_cache()
    for topic in ("cache1", "cache2"):
        container = SortedListCursorContainer()
        container.add("c", (0, 0))
        cache.open_ledger(topic, container)
    assert not cache.insert("cache1", (1, 1), 4)
    assert not cache.insert("cache1", (1, 0), 3)
    for entry in range(3):
        cache.insert("cache2", (2, entry), 1)
    assert cache.size_bytes() == 0
    assert cache.stats().get("cache_inserts", 0) == 0


@reexpresses(UPSTREAM, "verifyNoCacheIfNoConsumer")
def test_adds_to_a_ledger_without_cursors_are_not_cached() -> None:
    """A managed ledger opened with no cursor, under the managed-ledger library's default of no
    continue-caching window: ten adds of 7 bytes are not cached and count no insert."""
    b = bench(
        UPSTREAM,
        max_size=70,
        watermark=0.8,
        managed_ledger_continue_caching_added_entries_after_last_active_cursor_leaves_millis=0,
    )
    b.open("ledger")
    for entry in range(10):
        assert not b.cache.insert("ledger", (3, entry), 7)
    assert b.size() == 0
    assert b.cache.counters.cache_inserts == 0 and b.removed() == 0


@reexpresses(UPSTREAM, "verifyHitsMisses")
def test_without_expected_read_counts_entries_go_once_every_active_cursor_passed_them() -> None:
    """Expected read counts off (``cacheEvictionByExpectedReadCount=false``), read positions
    tracked: two active cursors, ten added entries of 7 bytes (70). c1 reads all ten from the
    cache (10 hits) and moves past them; c2 still holds the slowest position, so nothing goes.
    c1 is deactivated: still 70. c2 reads the ten (10 more hits) and moves past them: the slowest
    active position is now past every entry, so all are invalidated at once, long before the next
    eviction run (1000 ms). Moving c2 back onto the last entry brings nothing back."""
    b = bench(
        UPSTREAM,
        max_size=100,
        watermark=0.8,
        cache_eviction_by_expected_read_count=False,
        cache_eviction_by_mark_deleted_position=False,
        managed_ledger_cache_eviction_interval_ms=1000,
    )
    b.open("ledger", {"c1": (3, 0), "c2": (3, 0)})
    b.cache.cursors_changed("ledger")
    for entry in range(10):
        assert b.cache.insert("ledger", (3, entry), 7)
    assert b.size() == 70
    assert b.hits("ledger", 3, 0, 9, "c1") == list(range(10))
    b.move("ledger", "c1", (3, 10))
    assert b.size() == 70 and b.cache.counters.cache_hits == 10
    b.move("ledger", "c1", None)
    assert b.size() == 70
    assert b.hits("ledger", 3, 0, 9, "c2") == list(range(10))
    b.move("ledger", "c2", (3, 10))
    b.at_ms(200)
    assert b.size() == 0
    assert b.cache.counters.cache_hits == 20 and b.cache.counters.cache_misses == 0
    b.move("ledger", "c2", (3, 9))
    b.at_ms(400)
    assert b.size() == 0


@reexpresses(UPSTREAM, "verifyTimeBasedEviction")
def test_added_entries_expire_by_time_with_active_cursors_open() -> None:
    """TTL 100 ms, eviction every 10 ms, two active cursors: entries of 4 and 3 bytes added at
    t=0 (each expecting two reads that never come) are requeued at most five times and are gone
    well before 1 s."""
    b = bench(
        UPSTREAM,
        max_size=1000,
        managed_ledger_cache_eviction_interval_ms=10,
        managed_ledger_cache_eviction_time_threshold_millis=100,
    )
    b.open("test", {"c1": (3, 0), "c2": (3, 0)})
    assert b.cache.insert("test", (3, 0), 4) and b.cache.insert("test", (3, 1), 3)
    assert b.size() == 7
    b.at_ms(1000)
    assert b.size() == 0
    assert b.cache.counters.cache_evictions_time == 2


@reexpresses(UPSTREAM, "entryCacheDisabledAsyncReadEntry")
def test_a_read_through_the_disabled_cache_goes_to_storage() -> None:
    """With the cache disabled, reading entry (1,1) misses, so the broker reads it from storage;
    what storage returns is not kept."""
    cache = _disabled_cache()
    container = SortedListCursorContainer()
    container.add("reader", (1, 1))
    cache.open_ledger("ml1", container)
    assert cache.read("ml1", 1, 1, 1, "reader") == [1]
    cache.storage_read("ml1", 1, [1], [10], "reader")
    assert cache.read("ml1", 1, 1, 1, "reader") == [1]
    assert cache.size_bytes() == 0
