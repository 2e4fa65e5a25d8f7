"""How the S3-FIFO predicate decides, alone and in brokerlab's PIP-430 cache."""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from brokerlab import EvictionDecision, EvictionPass, Position, ProfileError, load_profile
from brokerlab.testing import CacheBench, EntryView

from brokerlab_s3fifo import S3FifoPredicate, S3FifoSettings

if TYPE_CHECKING:  # the types of brokerlab's fixtures
    from brokerlab import PluginHost, Profile

REMOVE, REQUEUE = EvictionDecision.REMOVE, EvictionDecision.REQUEUE
SIZE, TIME = EvictionPass.SIZE, EvictionPass.TIME
CAPACITY = 1000
PROFILE = Path(__file__).resolve().parents[1] / "profiles" / "pulsar-4.2-s3fifo.conf"


def predicate(**settings: float) -> S3FifoPredicate:
    return S3FifoPredicate(CAPACITY, S3FifoSettings.model_validate(settings))


def inserted(p: S3FifoPredicate, entry: int, size: int = 10, reads: int = 0) -> EntryView:
    view = EntryView((1, entry), size)
    p.on_insert(view)
    for _ in range(reads):
        view.accessed = True
        p.on_access(view)
    return view


def decide(p: S3FifoPredicate, view: EntryView, kind: EvictionPass = SIZE) -> object:
    """Ask as the removal queue does, and apply the decision as it does."""
    decision = p.decide(view, kind, threshold_ns=100)
    if decision is REQUEUE:
        view.requeued(100)
    elif decision is REMOVE:
        p.on_remove(view)
    return decision


# ---- the predicate on its own -------------------------------------------------------------------


def test_an_unread_probationary_entry_is_evicted_and_remembered() -> None:
    p = predicate()
    view = inserted(p, 0)
    assert decide(p, view) is REMOVE
    assert p.remembers((1, 0)) and p.phase((1, 0)) is None
    inserted(p, 0)  # read again from storage and re-inserted: a ghost hit
    assert p.phase((1, 0)) == "main" and p.ghost_hits == 1 and not p.remembers((1, 0))


def test_a_read_probationary_entry_moves_to_main_and_gets_one_round_per_read() -> None:
    p = predicate()
    view = inserted(p, 0, reads=2)
    assert decide(p, view) is REQUEUE and p.phase((1, 0)) == "main" and p.promotions == 1
    assert [decide(p, view), decide(p, view), decide(p, view)] == [REQUEUE, REQUEUE, REMOVE]
    assert p.second_chances == 2
    assert not p.remembers((1, 0)), "only probationary evictions enter the ghost"


def test_frequency_is_a_two_bit_counter() -> None:
    p = predicate()
    view = inserted(p, 0, reads=10)
    assert p.frequency((1, 0)) == 3
    decisions = [decide(p, view) for _ in range(5)]
    assert decisions == [REQUEUE, REQUEUE, REQUEUE, REQUEUE, REMOVE]  # promotion, then 3 rounds


def test_move_to_main_threshold() -> None:
    p = predicate(moveToMainThreshold=2)
    once, twice = inserted(p, 0, reads=1), inserted(p, 1, reads=2)
    assert decide(p, once) is REMOVE
    assert decide(p, twice) is REQUEUE and p.phase((1, 1)) == "main"


def test_size_passes_take_from_the_small_phase_while_it_holds_its_share() -> None:
    p = predicate(smallQueueRatio=0.1)  # 100 of 1000 bytes
    hot = inserted(p, 0, reads=1)
    assert decide(p, hot) is REQUEUE and p.phase((1, 0)) == "main"  # promoted, frequency kept
    hot_frequency = p.frequency((1, 0))
    scan = [inserted(p, e) for e in range(1, 11)]  # 100 probationary bytes: the full share
    assert decide(p, hot) is REQUEUE and p.skips == 1, "a main head is passed over"
    assert p.frequency((1, 0)) == hot_frequency, "passing over costs no frequency"
    assert decide(p, scan[0]) is REMOVE
    # 90 probationary bytes now, under the share: the main phase is evicted from, and a
    # probationary head is passed over instead.
    assert decide(p, scan[1]) is REQUEUE and p.phase((1, 2)) == "small" and p.skips == 2
    assert [decide(p, hot), decide(p, hot)] == [REQUEUE, REMOVE]


def test_time_passes_decide_only_for_expired_entries() -> None:
    p = predicate()
    live = inserted(p, 0)
    live.timestamp_ns = 100  # not older than the threshold
    assert p.decide(live, TIME, threshold_ns=100) is None  # the queue stops at a live head
    unread, read = inserted(p, 1), inserted(p, 2, reads=1)
    assert decide(p, unread, TIME) is REMOVE and p.remembers((1, 1))
    assert decide(p, read, TIME) is REQUEUE and p.phase((1, 2)) == "main"


def test_the_ghost_is_bounded_by_its_share_of_the_cache() -> None:
    p = predicate(ghostRatio=0.05)  # 50 bytes of positions
    for e in range(10):
        assert decide(p, inserted(p, e)) is REMOVE
    assert [e for e in range(10) if p.remembers((1, e))] == [5, 6, 7, 8, 9]
    assert p.ghost_bytes == 50


def test_removals_the_predicate_did_not_decide_are_not_remembered() -> None:
    p = predicate()
    view = inserted(p, 0)
    p.on_remove(view)  # a ledger deletion or a range removal
    assert not p.remembers((1, 0)) and p.small_bytes == 0


def test_no_ghost_when_its_ratio_is_zero() -> None:
    p = predicate(ghostRatio=0)
    assert decide(p, inserted(p, 0)) is REMOVE
    assert not p.remembers((1, 0))


# ---- settings and the profile -------------------------------------------------------------------


def test_the_example_profile_chains_s3fifo_after_pulsars_predicates(
    brokerlab_host: PluginHost,
) -> None:
    profile = load_profile(PROFILE, host=brokerlab_host)
    assert profile.mode == "strict"
    assert profile.get("sim.entryCache") == "pip430"  # from the included pulsar-4.2.conf
    chain = [reg.record.name for reg in brokerlab_host.resolve(profile).eviction_predicates]
    assert chain == ["expected-reads", "s3fifo"]
    assert profile.plugin_settings["s3fifo"] == S3FifoSettings()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("sim.s3fifo.smallQueueRatio", "1.5"),
        ("sim.s3fifo.ghostRatio", "-1"),
        ("sim.s3fifo.moveToMainThreshold", "4"),
    ],
)
def test_out_of_range_settings_are_profile_errors(
    brokerlab_host: PluginHost, key: str, value: str
) -> None:
    with pytest.raises(ProfileError) as caught:
        load_profile(None, {key: value}, host=brokerlab_host)
    assert key in str(caught.value)


def test_a_misspelt_key_suggests_the_right_one(brokerlab_host: PluginHost) -> None:
    with pytest.raises(ProfileError) as caught:
        load_profile(None, {"sim.s3fifo.smallQueueRation": "0.2"}, host=brokerlab_host)
    assert "sim.s3fifo.smallQueueRatio" in str(caught.value)


# ---- in the PIP-430 cache -----------------------------------------------------------------------


def bench(host: PluginHost, profile: Profile, *, s3fifo: bool) -> CacheBench:
    """PIP-430 with a 1 MiB cache, without the recently-accessed requeue, with or without S3-FIFO
    (an empty list, a lone comma, clears any predicates the base profile lists)."""
    return CacheBench(
        host,
        profile.with_overrides(
            {
                "sim.entryCache": "pip430",
                "managedLedgerCacheSizeMB": "1",
                "managedLedgerCacheEvictionExtendTTLOfRecentlyAccessed": "false",
                "sim.evictionPredicates": "s3fifo" if s3fifo else ",",
                "sim.s3fifo.smallQueueRatio": "0.1",
                "sim.s3fifo.ghostRatio": "0.9",
                "sim.s3fifo.moveToMainThreshold": "1",
            }
        ),
    )


def scan_after_rereads(b: CacheBench) -> tuple[int, int]:
    """16 entries read twice (a quarter of the cache), then a scan of four cache sizes of entries
    read by nobody; returns (re-read entries still cached, scan entries still cached)."""
    b.open_topic("t")  # one cursor with no position: adds are cached, no reads are expected
    unit = b.limit // 64
    hot: list[Position] = [(1, e) for e in range(16)]
    for position in hot:
        assert b.insert("t", position, unit)
        assert b.hits("t", position) and b.hits("t", position)
    scan: list[Position] = [(2, e) for e in range(256)]
    for position in scan:
        b.insert("t", position, unit)
        b.settle()  # the size eviction the insert scheduled
        assert b.size() <= b.limit
    return sum(b.hits("t", p) for p in hot), sum(b.hits("t", p) for p in scan)


def test_a_one_hit_scan_is_evicted_before_reread_entries(
    brokerlab_host: PluginHost, brokerlab_profile: Profile
) -> None:
    hot, scan = scan_after_rereads(bench(brokerlab_host, brokerlab_profile, s3fifo=True))
    assert hot == 16, f"only {hot} of 16 re-read entries survived the scan"
    assert 0 < scan < 64
    fifo_hot, _ = scan_after_rereads(bench(brokerlab_host, brokerlab_profile, s3fifo=False))
    assert fifo_hot == 0, "without the predicate the queue is a FIFO and the scan flushes all"


def polluted_trace(seed: int, length: int = 6000) -> list[int]:
    """Entry ids: 60% from a skewed working set of 150 (weights 1/k), 40% read once only."""
    rng = random.Random(seed)
    weights = [1 / (k + 1) for k in range(150)]
    trace: list[int] = []
    once = 1000
    for _ in range(length):
        if rng.random() < 0.6:
            trace.append(rng.choices(range(150), weights)[0])
        else:
            trace.append(once)
            once += 1
    return trace


ENTRIES_PER_CACHE = 200


def replay(b: CacheBench, trace: list[int]) -> int:
    """Read ``trace`` through the cache, entries of 1/200 of its size; returns the hits.

    A miss is read from storage and inserted with one expected read (the reader is the only
    cursor), which the dispatch then consumes, as in the broker.
    """
    b.open_topic("t", {"reader": (3, 0)})
    size = b.limit // ENTRIES_PER_CACHE
    hits = 0
    for entry in trace:
        if b.read("t", 3, entry, entry, "reader"):
            b.cache.storage_read("t", 3, [entry], [size], "reader")
            b.settle()
        else:
            hits += 1
        b.cache.released("t", (3, entry))
    return hits


def test_more_hits_than_fifo_when_one_time_reads_pollute_the_cache(
    brokerlab_host: PluginHost, brokerlab_profile: Profile
) -> None:
    trace = polluted_trace(3)
    s3fifo = replay(bench(brokerlab_host, brokerlab_profile, s3fifo=True), trace)
    fifo = replay(bench(brokerlab_host, brokerlab_profile, s3fifo=False), trace)
    assert s3fifo > 1.2 * fifo, f"S3-FIFO {s3fifo} hits, FIFO {fifo}"


def test_close_to_libcachesim_s3fifo_on_the_same_trace(
    brokerlab_host: PluginHost, brokerlab_profile: Profile
) -> None:
    """libCacheSim's S3FIFO (a GPL-licensed simulator: a test oracle here, never a dependency)
    with the capacity PIP-430 fills before it evicts (98% of the limit)."""
    lcs = pytest.importorskip("libcachesim", reason="libcachesim, the optional oracle, is missing")
    trace = polluted_trace(3)
    ours = replay(bench(brokerlab_host, brokerlab_profile, s3fifo=True), trace)
    oracle = lcs.S3FIFO(cache_size=int(0.98 * ENTRIES_PER_CACHE))
    theirs = sum(bool(oracle.get(lcs.Request(obj_size=1, obj_id=e + 1))) for e in trace)
    assert abs(ours - theirs) <= 0.05 * theirs, f"ours {ours} hits, libCacheSim's {theirs}"
