"""Size policies of the Kafka remote index cache (spec §4).

* ``lru``: the whole cache against libCacheSim's LRU (GPL, test-only oracle) on byte-weighted
  traces. libCacheSim does not admit an object larger than the cache; our cache admits it and
  its maintenance evicts it at once, alone. Both leave the other objects untouched, so the
  hit/miss sequences must be identical, and the traces include such objects on purpose.
* ``w-tinylfu``: against ``RefWTinyLfu`` below, a plain-list reading of the rules in the
  ``WTinyLfuPolicy`` docstring (same seed -> same hash key and same random draws), plus
  targeted tests: scan resistance, the 1/128 admission, and the sketch's halving.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable

import pytest

from brokerlab_plugins.kafka_remote_index.cache import IndexType, RemoteIndexCache, RemoteSegment
from brokerlab_plugins.kafka_remote_index.policies import (
    FrequencySketch,
    LruPolicy,
    WTinyLfuPolicy,
    make_policy,
)

# ------------------------------------------------------------------------ shared fixtures


class _Handle:
    def cancel(self) -> None:
        pass


class _Clock:
    def now_ns(self) -> int:
        return 0

    def call_at(self, when_ns: int, callback: Callable[[], None]) -> _Handle:
        return _Handle()  # deletions never run: irrelevant to hit/miss decisions


class _Storage:
    def fetch_index(self, segment: RemoteSegment, index_type: IndexType) -> int:
        return segment.offset_index_bytes if index_type is IndexType.OFFSET else 0


def make_cache(policy: str, max_bytes: int, seed: int = 1) -> RemoteIndexCache:
    clock = _Clock()
    return RemoteIndexCache(
        max_bytes=max_bytes,
        ttl_ms=-1,
        policy=policy,
        clock=clock,
        scheduler=clock,
        storage=_Storage(),
        seed=seed,
    )


def hit_sequence(cache: RemoteIndexCache, trace: list[tuple[int, int]]) -> list[bool]:
    out = []
    for obj, size in trace:
        before = cache.stats()["hits"]
        cache.get_index_entry(RemoteSegment(f"o{obj}", obj, size, 0, 0))
        out.append(cache.stats()["hits"] > before)
    return out


def zipf_trace(seed: int, n: int, objects: int, max_size: int, huge: int) -> list[tuple[int, int]]:
    """Zipf-like popularity, a fixed size per object; every 37th object weighs ``huge``."""
    rng = random.Random(seed)
    sizes = [huge if o % 37 == 5 else rng.randint(1, max_size) for o in range(objects)]
    weights = [1 / (o + 1) ** 0.8 for o in range(objects)]
    return [(o, sizes[o]) for o in rng.choices(range(objects), weights, k=n)]


# ------------------------------------------------------------------------ LRU vs libCacheSim


@pytest.mark.parametrize(("seed", "capacity"), [(1, 500), (2, 2000), (3, 7000), (4, 300)])
def test_lru_matches_libcachesim_lru(seed: int, capacity: int) -> None:
    lcs = pytest.importorskip("libcachesim", reason="libcachesim (dev-only GPL oracle) missing")
    trace = zipf_trace(seed, 4000, 300, 400, huge=capacity + 1)
    trace += [(1000, capacity), *trace[:50]]  # an object of exactly the capacity is admitted
    oracle = lcs.LRU(cache_size=capacity, hashpower=16)
    expected = [bool(oracle.get(lcs.Request(obj_size=s, obj_id=o + 1))) for o, s in trace]
    cache = make_cache("lru", capacity)
    got = hit_sequence(cache, trace)
    assert got == expected
    assert sum(got) > 100  # the comparison is not vacuous
    assert cache.weighted_size == oracle.get_occupied_byte()
    assert cache.entry_count == oracle.get_n_obj()


def test_lru_policy_order_and_oversize() -> None:
    p = LruPolicy(100)
    for k, w in [("a", 30), ("b", 30), ("c", 30)]:
        p.on_write(k, w)
    p.on_read("a")
    p.on_write("d", 30)
    assert p.evict() == ["b"] and p.order() == ["c", "a", "d"]
    p.on_write("huge", 101)
    assert p.evict() == ["huge"] and p.order() == ["c", "a", "d"]
    p.on_write("zero", 0)
    p.set_maximum(35)
    assert p.evict() == ["c", "a"] and "zero" in p and len(p) == 2
    p.set_maximum(20)
    assert p.evict() == ["d"] and p.weighted_size == 0


# ------------------------------------------------------------------------ W-TinyLFU reference


class RefSketch:
    """Count-min, 4 rows of 4-bit counters, same keyed hash and aging rule, plain lists."""

    def __init__(self, rng: random.Random) -> None:
        self.salt = rng.getrandbits(64).to_bytes(8, "little")
        self.width = 0
        self.rows: list[list[int]] = []
        self.additions = 0
        self.sample = 0
        self.grow(0)

    def grow(self, entries: int) -> None:
        capacity = 16
        while capacity < entries:
            capacity *= 2
        if 4 * capacity > self.width:
            self.width = 4 * capacity
            self.rows = [[0] * self.width for _ in range(4)]
            self.sample = 10 * capacity
            self.additions = 0

    def cells(self, key: str) -> list[int]:
        h = int.from_bytes(
            hashlib.blake2b(key.encode(), digest_size=16, key=self.salt).digest(), "little"
        )
        return [(h >> (32 * r)) % self.width for r in range(4)]

    def freq(self, key: str) -> int:
        return min(self.rows[r][c] for r, c in enumerate(self.cells(key)))

    def inc(self, key: str) -> None:
        changed = False
        for r, c in enumerate(self.cells(key)):
            if self.rows[r][c] < 15:
                self.rows[r][c] += 1
                changed = True
        if changed:
            self.additions += 1
            if self.additions == self.sample:
                odd = sum(v % 2 for row in self.rows for v in row)
                self.rows = [[v // 2 for v in row] for row in self.rows]
                self.additions = (self.additions - odd // 4) // 2


class RefWTinyLfu:
    """The documented rules of ``WTinyLfuPolicy`` with lists and recomputed sums."""

    def __init__(self, maximum: int, rng: random.Random) -> None:
        self.rng = rng
        self.sketch = RefSketch(rng)
        self.weight: dict[str, int] = {}  # every held key, weightless ones included
        self.window: list[str] = []
        self.probation: list[str] = []
        self.protected: list[str] = []
        self.set_maximum(maximum)

    def set_maximum(self, maximum: int) -> None:
        self.max = maximum
        self.window_max = maximum - (maximum * 99) // 100
        self.protected_max = ((maximum - self.window_max) * 80) // 100
        self.demote()

    def w(self, keys: list[str]) -> int:
        return sum(self.weight[k] for k in keys)

    def total(self) -> int:
        return self.w(self.window) + self.w(self.probation) + self.w(self.protected)

    def demote(self) -> None:
        while self.w(self.protected) > self.protected_max:
            self.probation.append(self.protected.pop(0))

    def region(self, key: str) -> list[str] | None:
        for region in (self.window, self.probation, self.protected):
            if key in region:
                return region
        return None

    def place_new(self, key: str) -> None:
        if self.weight[key] > self.window_max:
            self.window.insert(0, key)
        elif self.weight[key] > 0:
            self.window.append(key)

    def read(self, key: str) -> None:
        self.sketch.inc(key)
        region = self.region(key)
        if region is self.probation and self.weight[key] <= self.protected_max:
            self.probation.remove(key)
            self.protected.append(key)
            self.demote()
        elif region is not None:
            region.remove(key)
            region.append(key)

    def write(self, key: str, weight: int) -> None:
        if key in self.weight:
            region = self.region(key)
            self.weight[key] = weight
            if weight == 0 and region is not None:
                region.remove(key)
            elif region is None:
                self.place_new(key)
            self.demote()
            self.read(key)
        else:
            self.sketch.grow(len(self.weight) + 1)
            self.sketch.inc(key)
            self.weight[key] = weight
            self.place_new(key)

    def remove(self, key: str) -> None:
        region = self.region(key)
        if region is not None:
            region.remove(key)
        self.weight.pop(key, None)

    def admit(self, candidate: str, victim: str) -> bool:
        cf = self.sketch.freq(candidate)
        if cf > self.sketch.freq(victim):
            return True
        return cf >= 6 and self.rng.getrandbits(7) == 0

    def evict(self) -> set[str]:
        out = {
            k for k in self.window + self.probation + self.protected if self.weight[k] > self.max
        }
        for k in out:
            self.remove(k)
        candidates = []
        while self.w(self.window) > self.window_max:
            key = self.window.pop(0)
            self.probation.append(key)
            candidates.append(key)
        while self.total() > self.max:
            live = [c for c in candidates if c in self.probation]
            if live:
                candidate = live[-1]
                candidates = candidates[: candidates.index(candidate)]
                victim = self.probation[0]
                if victim != candidate and self.admit(candidate, victim):
                    loser = victim
                else:
                    loser = candidate
            else:
                loser = (self.probation or self.protected or self.window)[0]
            out.add(loser)
            self.remove(loser)
        return out


@pytest.mark.parametrize("seed", range(8))
def test_w_tinylfu_matches_the_reference(seed: int) -> None:
    rng = random.Random(1000 + seed)
    maximum = rng.choice([150, 1000, 4000])
    policy = WTinyLfuPolicy(maximum, random.Random(seed))
    ref = RefWTinyLfu(maximum, random.Random(seed))
    keys = [f"k{i}" for i in range(rng.choice([30, 80, 200]))]
    sizes = {k: rng.choice([rng.randint(1, 20), rng.randint(20, 400)]) for k in keys}
    sizes[keys[3]] = 0
    sizes[keys[4]] = 5000  # heavier than every maximum
    hot = keys[: len(keys) // 5]
    evictions = 0
    for step in range(2500):
        r = rng.random()
        key = rng.choice(hot) if r < 0.5 else rng.choice(keys)
        if r < 0.02:
            policy.remove(key)
            ref.remove(key)
        elif r < 0.03:
            maximum = rng.choice([100, 1000, 4000])
            policy.set_maximum(maximum)
            ref.set_maximum(maximum)
        elif r < 0.05 and key in policy:
            sizes[key] = rng.randint(0, 300)  # a new value for a held key
            policy.on_write(key, sizes[key])
            ref.write(key, sizes[key])
        elif key in policy:
            policy.on_read(key)
            ref.read(key)
        else:
            policy.on_write(key, sizes[key])
            ref.write(key, sizes[key])
        got = policy.evict()
        assert len(got) == len(set(got))
        assert set(got) == ref.evict(), step
        evictions += len(got)
        assert policy.regions() == (ref.window, ref.probation, ref.protected), step
        assert policy.weighted_size == ref.total() <= policy.maximum
        assert len(policy) == len(ref.weight)
        assert policy.sketch.additions == ref.sketch.additions
    assert evictions > 100 and policy.sketch.resets > 0


def test_same_seed_same_decisions_other_seed_other_hash() -> None:
    def run(seed: int) -> list[str]:
        p = WTinyLfuPolicy(2000, random.Random(seed))
        rng = random.Random(5)
        out = []
        for _ in range(3000):
            key = f"k{int(rng.paretovariate(1.0)) % 400}"
            if key in p:
                p.on_read(key)
            else:
                p.on_write(key, 100)
            out += p.evict()
        return out

    assert run(1) == run(1)
    a = FrequencySketch(random.Random(1), 64)
    b = FrequencySketch(random.Random(2), 64)
    assert a.digest("x") != b.digest("x")
    assert a.digest("x") == FrequencySketch(random.Random(1), 64).digest("x")


# ------------------------------------------------------------------------ targeted W-TinyLFU


def _scan_survivors(policy: str) -> int:
    cache = make_cache(policy, max_bytes=100 * 100)
    # Warm up to a full cache first: growing the sketch clears it (as in Caffeine), which
    # would wipe the working set's history in the middle of the scan.
    for i in range(100):
        cache.get_index_entry(RemoteSegment(f"warm{i}", 5_000 + i, 100, 0, 0))
    hot = [RemoteSegment(f"hot{i}", i, 100, 0, 0) for i in range(50)]
    for _ in range(8):
        for s in hot:
            cache.get_index_entry(s)
    for i in range(1000):  # a one-time scan, 10x the cache
        cache.get_index_entry(RemoteSegment(f"scan{i}", 10_000 + i, 100, 0, 0))
    return sum(cache.is_live(s.uuid) for s in hot)


def test_scan_resistance_w_tinylfu_keeps_the_working_set_lru_does_not() -> None:
    assert _scan_survivors("lru") == 0
    assert _scan_survivors("w-tinylfu") == 50


def _contest(seed: int, candidate_count: int, victim_count: int, rounds: int) -> list[bool]:
    p = WTinyLfuPolicy(1000, random.Random(seed))
    for _ in range(candidate_count):
        p.sketch.increment("cand")
    for _ in range(victim_count):
        p.sketch.increment("vict")
    assert p.sketch.frequency("cand") == candidate_count
    assert p.sketch.frequency("vict") == victim_count
    return [p.admit("cand", "vict") for _ in range(rounds)]


def test_random_admission_one_in_128_from_frequency_6_deterministic_per_seed() -> None:
    first = _contest(11, 6, 9, 12_800)
    assert first == _contest(11, 6, 9, 12_800)
    assert first != _contest(12, 6, 9, 12_800)
    assert 60 <= sum(first) <= 140  # about 1/128 of 12 800
    assert not any(_contest(11, 5, 9, 5000))  # below the threshold: never
    assert all(_contest(11, 7, 6, 100))  # more frequent: always, no draw


def _tie_contests(seed: int) -> list[int]:
    """Saturated (15) candidate and victims: every contest is the 1/128 draw."""
    p = WTinyLfuPolicy(200, random.Random(seed))
    for key in ("v1", "v2", "cand"):
        for _ in range(15):
            p.sketch.increment(key)
    p.on_write("v1", 100)
    p.on_write("v2", 100)
    assert p.evict() == [] and sorted(p.regions()[1]) == ["v1", "v2"]
    admitted = []
    for step in range(2000):
        p.on_write("cand", 100)
        evicted = p.evict()
        if evicted == ["cand"]:
            continue
        assert evicted in (["v1"], ["v2"])
        admitted.append(step)
        p.remove("cand")
        p.on_write(evicted[0], 100)
        assert p.evict() == []
    assert p.random_admissions == len(admitted) and p.sketch.resets == 0
    return admitted


def test_random_admission_takes_effect_in_evict() -> None:
    admitted = _tie_contests(3)
    assert 4 <= len(admitted) <= 40  # about 2000 / 128
    assert admitted == _tie_contests(3) and admitted != _tie_contests(4)


def test_sketch_counts_cap_at_15_and_halve_after_the_sample() -> None:
    s = FrequencySketch(random.Random(4), 16)
    assert (s.capacity, s.width, s.sample_size) == (16, 64, 160)
    for _ in range(20):
        s.increment("a")
    assert s.frequency("a") == 15 and s.additions == 15  # saturated increments do not count
    i = 0
    while s.resets == 0:
        s.increment(f"b{i}")
        i += 1
    assert s.frequency("a") == 7
    assert 0 < s.additions <= 80
    s.ensure_capacity(17)  # growing clears the table
    assert (s.width, s.sample_size, s.frequency("a"), s.additions) == (128, 320, 0, 0)


def test_regions_sizes_and_promotion() -> None:
    p = WTinyLfuPolicy(10_000, random.Random(0))
    assert (p.window_maximum, p.protected_maximum) == (100, 7920)
    p.on_write("a", 50)
    p.on_write("b", 60)  # window over its 100 bytes: "a" moves to probation
    assert p.evict() == [] and p.regions() == (["b"], ["a"], [])
    p.on_read("a")
    assert p.regions() == (["b"], [], ["a"])
    p.on_write("big", 500)  # heavier than the window: first out of it, "b" may stay
    p.evict()
    assert p.regions() == (["b"], ["big"], ["a"])


def test_make_policy() -> None:
    assert isinstance(make_policy("lru", 10, random.Random(0)), LruPolicy)
    assert isinstance(make_policy("w-tinylfu", 10, random.Random(0)), WTinyLfuPolicy)
    with pytest.raises(ValueError, match="unknown"):
        make_policy("arc", 10, random.Random(0))
    with pytest.raises(ValueError, match=">= 0"):
        LruPolicy(-1)
