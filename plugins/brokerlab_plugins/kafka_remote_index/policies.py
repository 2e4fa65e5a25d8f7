"""Size-eviction policies of the remote index cache: ``lru`` and ``w-tinylfu`` (spec §4).

Both bound the sum of entry weights in bytes and share one small interface, ``SizePolicy``. The
cache tells a policy about every read hit, write and removal; ``evict()`` (run by the cache's
maintenance) returns the keys to drop so that the weighted size is at most the maximum. Rules
common to both, as in Caffeine:

* an entry heavier than the whole maximum is evicted first and on its own, so it never pushes
  out lighter entries;
* an entry of weight 0 is never size-evicted (and costs nothing);
* the policies know nothing about time: expiry is the cache's business.
"""

from __future__ import annotations

import hashlib
import random
from collections import OrderedDict
from typing import Final, Protocol

__all__ = [
    "POLICY_NAMES",
    "FrequencySketch",
    "LruPolicy",
    "SizePolicy",
    "WTinyLfuPolicy",
    "make_policy",
]

POLICY_NAMES: Final = ("lru", "w-tinylfu")


class SizePolicy(Protocol):
    """What the cache needs from a size-eviction policy; keys are segment UUIDs."""

    @property
    def weighted_size(self) -> int:
        """Sum of the weights of the entries the policy holds."""

    @property
    def maximum(self) -> int: ...

    def __len__(self) -> int: ...

    def __contains__(self, key: object) -> bool: ...

    def set_maximum(self, maximum: int) -> None:
        """Change the bound; the next ``evict()`` enforces it."""

    def on_read(self, key: str) -> None:
        """A read hit on a held key."""

    def on_write(self, key: str, weight: int) -> None:
        """A new key, or a new value (and weight) for a held key; counts as an access."""

    def remove(self, key: str) -> None:
        """Forget a held key (explicit removal or expiry); unknown keys are ignored."""

    def evict(self) -> list[str]:
        """Drop entries until the weighted size is at most the maximum; return them in order."""


def _check_maximum(maximum: int) -> int:
    if maximum < 0:
        raise ValueError(f"maximum weight must be >= 0, got {maximum}")
    return maximum


class LruPolicy:
    """Least recently accessed first (spec §4.2); an access is any read hit or write."""

    __slots__ = ("_maximum", "_order", "_suspects", "_weighted", "_weightless")

    def __init__(self, maximum: int) -> None:
        self._maximum = _check_maximum(maximum)
        self._order: OrderedDict[str, int] = OrderedDict()  # key -> weight, LRU first
        self._weightless: set[str] = set()
        self._weighted = 0
        # Keys that may weigh more than the maximum: checked by the next evict().
        self._suspects: list[str] = []

    @property
    def weighted_size(self) -> int:
        return self._weighted

    @property
    def maximum(self) -> int:
        return self._maximum

    def __len__(self) -> int:
        return len(self._order) + len(self._weightless)

    def __contains__(self, key: object) -> bool:
        return key in self._order or key in self._weightless

    def order(self) -> list[str]:
        """Weighted keys, least recently accessed first."""
        return list(self._order)

    def set_maximum(self, maximum: int) -> None:
        self._maximum = _check_maximum(maximum)
        self._suspects = [k for k, w in self._order.items() if w > maximum]

    def on_read(self, key: str) -> None:
        if key in self._order:
            self._order.move_to_end(key)

    def on_write(self, key: str, weight: int) -> None:
        self.remove(key)
        if weight == 0:
            self._weightless.add(key)
            return
        self._order[key] = weight
        self._weighted += weight
        if weight > self._maximum:
            self._suspects.append(key)

    def remove(self, key: str) -> None:
        weight = self._order.pop(key, None)
        if weight is not None:
            self._weighted -= weight
        else:
            self._weightless.discard(key)

    def evict(self) -> list[str]:
        evicted = _evict_oversize(self._suspects, self._order, self._maximum)
        for key in evicted:
            self._weighted -= self._order.pop(key)
        order = self._order
        while self._weighted > self._maximum:
            key, weight = order.popitem(last=False)
            self._weighted -= weight
            evicted.append(key)
        return evicted


def _evict_oversize(suspects: list[str], weights: dict[str, int], maximum: int) -> list[str]:
    """The suspects still held and heavier than ``maximum``, once each; clears ``suspects``."""
    out = list(dict.fromkeys(k for k in suspects if weights.get(k, 0) > maximum))
    suspects.clear()
    return out


_COUNTER_MAX = 15  # 4-bit counters
_HALF = bytes(i >> 1 for i in range(256))
_ODD = bytes(i & 1 for i in range(256))
_DIGEST_MEMO_LIMIT = 1 << 16


class FrequencySketch:
    """A 4-bit count-min sketch of depth 4 with periodic halving (TinyLFU's aging).

    Each key is hashed once with a keyed BLAKE2b (the key is drawn from the seeded ``rng``, so
    runs are deterministic and independent of Python's per-process ``hash()`` salt); the four
    32-bit slices of the digest pick one counter per row. An increment adds one to each of the
    four counters that is below 15; after ``sample_size`` increments that changed a
    counter, every counter is halved and the increment count becomes
    ``(count - odd_counters / 4) / 2``, the halving's truncation taken into account.

    Sizing follows Caffeine's budget of 16 counters per entry: for ``capacity`` = the next
    power of two >= the number of entries (at least 16), each row has ``4 x capacity`` counters
    and ``sample_size`` is ``10 x capacity``. Growing clears the table, as Caffeine's
    ``ensureCapacity`` does. Unlike Caffeine, the table is not allocated lazily when the cache
    is half full (it counts from the first access), and the four counters of a key are in four
    independent rows rather than in one 64-byte block.
    """

    __slots__ = (
        "_digests",
        "_mask",
        "_salt",
        "_table",
        "_width",
        "additions",
        "capacity",
        "resets",
        "sample_size",
    )

    MIN_CAPACITY: Final = 16

    def __init__(self, rng: random.Random, capacity: int = 0) -> None:
        self._salt = rng.getrandbits(64).to_bytes(8, "little")
        # Memo of digests: the hash dominates an access otherwise; cleared when it grows large.
        self._digests: dict[str, int] = {}
        self.capacity = 0
        self._width = 0
        self._mask = 0
        self._table = bytearray()
        self.sample_size = 0
        self.additions = 0
        self.resets = 0
        self.ensure_capacity(capacity)

    @property
    def width(self) -> int:
        """Counters per row."""
        return self._width

    def ensure_capacity(self, entries: int) -> None:
        capacity = max(self.MIN_CAPACITY, 1 << max(0, entries - 1).bit_length())
        if capacity <= self.capacity:
            return
        self.capacity = capacity
        self._width = 4 * capacity
        self._mask = self._width - 1
        self._table = bytearray(4 * self._width)
        self.sample_size = 10 * capacity
        self.additions = 0

    def digest(self, key: str) -> int:
        """The key's 128-bit keyed hash (public so that tests can rebuild the indexes)."""
        h = self._digests.get(key)
        if h is None:
            raw = hashlib.blake2b(key.encode(), digest_size=16, key=self._salt).digest()
            h = int.from_bytes(raw, "little")
            if len(self._digests) >= _DIGEST_MEMO_LIMIT:
                self._digests.clear()
            self._digests[key] = h
        return h

    def _indexes(self, key: str) -> tuple[int, int, int, int]:
        h = self.digest(key)
        m = self._mask
        w = self._width
        return (h & m, w + ((h >> 32) & m), 2 * w + ((h >> 64) & m), 3 * w + ((h >> 96) & m))

    def frequency(self, key: str) -> int:
        t = self._table
        a, b, c, d = self._indexes(key)
        return min(t[a], t[b], t[c], t[d])

    def increment(self, key: str) -> None:
        t = self._table
        added = False
        for i in self._indexes(key):
            if t[i] < _COUNTER_MAX:
                t[i] += 1
                added = True
        if added:
            self.additions += 1
            if self.additions >= self.sample_size:
                self.reset()

    def reset(self) -> None:
        """Halve every counter (aging)."""
        odd = self._table.translate(_ODD).count(1)
        self._table = self._table.translate(_HALF)
        self.additions = (self.additions - odd // 4) // 2
        self.resets += 1


class WTinyLfuPolicy:
    """Window TinyLFU over byte weights (spec §4.1), written from Caffeine's design.

    Regions: an LRU *window* of ``max - floor(max * 0.99)`` bytes (about 1 %) takes new entries;
    the main space is a segmented LRU of *probation* and *protected* (``floor(0.8 * main)``
    bytes). A read hit moves a window entry to the window's MRU end, promotes a probation entry
    to protected (unless it alone is heavier than protected may be, then it goes to probation's
    MRU end), and moves a protected entry to protected's MRU end; overflow of protected is
    demoted at once to probation's MRU end (Caffeine demotes during maintenance). A new entry
    heavier than the window goes to the window's LRU end, so it is the first to leave it.

    ``evict()``:

    1. entries heavier than the whole maximum are evicted;
    2. while the window is over its share, its LRU entry moves to probation's MRU end and
       becomes a *candidate* (this happens even when the cache is not full);
    3. while the weighted size is over the maximum: the newest candidate not yet judged meets
       the *victim*, probation's LRU entry. If they are the same entry, it is evicted. Otherwise
       the candidate is admitted (the victim is evicted) iff ``freq(candidate) >
       freq(victim)``, or, when ``freq(candidate) >= 6``, with probability 1/128 (a draw of
       ``rng.getrandbits(7) == 0``); if not admitted the candidate is evicted. Each candidate
       is judged once;
    4. when no candidate is left and the size is still over, LRU entries are evicted without a
       contest: probation's first, then protected's, then the window's. (Caffeine instead
       keeps drawing candidates from the window; this only matters after a resize or when a
       heavy candidate won against a light victim.)

    The window is **fixed** at 1 %: Caffeine's hill climber, which resizes the window from the
    hit rate, is not modelled.
    """

    __slots__ = (
        "_maximum",
        "_probation",
        "_protected",
        "_protected_max",
        "_protected_weight",
        "_rng",
        "_suspects",
        "_weighted",
        "_weightless",
        "_window",
        "_window_max",
        "_window_weight",
        "random_admissions",
        "sketch",
    )

    WINDOW_PERCENT: Final = 1
    PROTECTED_PERCENT: Final = 80
    RANDOM_ADMIT_THRESHOLD: Final = 6

    def __init__(self, maximum: int, rng: random.Random) -> None:
        self._rng = rng
        self.sketch = FrequencySketch(rng)
        self._window: OrderedDict[str, int] = OrderedDict()  # key -> weight, LRU first
        self._probation: OrderedDict[str, int] = OrderedDict()
        self._protected: OrderedDict[str, int] = OrderedDict()
        self._weightless: set[str] = set()
        self._window_weight = 0
        self._protected_weight = 0
        self._weighted = 0
        self._suspects: list[str] = []
        self._maximum = 0
        self._window_max = 0
        self._protected_max = 0
        self.random_admissions = 0  # admissions won by the 1/128 draw
        self.set_maximum(maximum)

    @property
    def weighted_size(self) -> int:
        return self._weighted

    @property
    def maximum(self) -> int:
        return self._maximum

    @property
    def window_maximum(self) -> int:
        return self._window_max

    @property
    def protected_maximum(self) -> int:
        return self._protected_max

    def __len__(self) -> int:
        return (
            len(self._window) + len(self._probation) + len(self._protected) + len(self._weightless)
        )

    def __contains__(self, key: object) -> bool:
        return (
            key in self._window
            or key in self._probation
            or key in self._protected
            or key in self._weightless
        )

    def regions(self) -> tuple[list[str], list[str], list[str]]:
        """(window, probation, protected) keys, each LRU first; weightless keys are in none."""
        return list(self._window), list(self._probation), list(self._protected)

    def set_maximum(self, maximum: int) -> None:
        self._maximum = _check_maximum(maximum)
        self._window_max = maximum - maximum * (100 - self.WINDOW_PERCENT) // 100
        self._protected_max = (maximum - self._window_max) * self.PROTECTED_PERCENT // 100
        self._suspects = [k for k, w in self._weights() if w > maximum]
        self._demote()

    def _weights(self) -> list[tuple[str, int]]:
        return [*self._window.items(), *self._probation.items(), *self._protected.items()]

    def on_read(self, key: str) -> None:
        self.sketch.increment(key)
        self._reorder(key)

    def _reorder(self, key: str) -> None:
        if key in self._window:
            self._window.move_to_end(key)
        elif key in self._probation:
            weight = self._probation.pop(key)
            if weight > self._protected_max:
                self._probation[key] = weight
                return
            self._protected[key] = weight
            self._protected_weight += weight
            self._demote()
        elif key in self._protected:
            self._protected.move_to_end(key)

    def _demote(self) -> None:
        while self._protected_weight > self._protected_max:
            key, weight = self._protected.popitem(last=False)
            self._protected_weight -= weight
            self._probation[key] = weight

    def on_write(self, key: str, weight: int) -> None:
        if weight < 0:
            raise ValueError(f"negative weight {weight} for {key}")
        if key in self:
            self._update(key, weight)
            self.on_read(key)
        else:
            self.sketch.ensure_capacity(len(self) + 1)
            self.sketch.increment(key)
            self._add(key, weight)
        if weight > self._maximum:
            self._suspects.append(key)

    def _add(self, key: str, weight: int) -> None:
        if weight == 0:
            self._weightless.add(key)
            return
        self._window[key] = weight
        self._window_weight += weight
        self._weighted += weight
        if weight > self._window_max:
            self._window.move_to_end(key, last=False)

    def _update(self, key: str, weight: int) -> None:
        """Change a held key's weight in place (its region stays)."""
        for region in (self._window, self._probation, self._protected):
            old = region.get(key)
            if old is None:
                continue
            if weight == 0:
                self.remove(key)
                self._weightless.add(key)
                return
            region[key] = weight
            self._weighted += weight - old
            if region is self._window:
                self._window_weight += weight - old
            elif region is self._protected:
                self._protected_weight += weight - old
                self._demote()
            return
        self._weightless.discard(key)
        self._add(key, weight)

    def remove(self, key: str) -> None:
        weight = self._window.pop(key, None)
        if weight is not None:
            self._window_weight -= weight
        else:
            weight = self._probation.pop(key, None)
            if weight is None:
                weight = self._protected.pop(key, None)
                if weight is None:
                    self._weightless.discard(key)
                    return
                self._protected_weight -= weight
        self._weighted -= weight

    def _weight(self, key: str) -> int:
        for region in (self._window, self._probation, self._protected):
            weight = region.get(key)
            if weight is not None:
                return weight
        return 0

    def admit(self, candidate: str, victim: str) -> bool:
        """TinyLFU admission with Caffeine's defence against hash flooding."""
        candidate_freq = self.sketch.frequency(candidate)
        if candidate_freq > self.sketch.frequency(victim):
            return True
        if candidate_freq >= self.RANDOM_ADMIT_THRESHOLD and self._rng.getrandbits(7) == 0:
            self.random_admissions += 1
            return True
        return False

    def evict(self) -> list[str]:
        suspects = {k: self._weight(k) for k in self._suspects}
        evicted = _evict_oversize(self._suspects, suspects, self._maximum)
        for key in evicted:
            self.remove(key)
        candidates = self._drain_window()
        probation = self._probation
        while self._weighted > self._maximum:
            candidate = None
            while candidates:
                key = candidates.pop()
                if key in probation:
                    candidate = key
                    break
            if candidate is None:
                victim = self._lru_victim()
                if victim is None:
                    break
                evicted.append(victim)
                self.remove(victim)
                continue
            victim = next(iter(probation))
            loser = victim if victim != candidate and self.admit(candidate, victim) else candidate
            evicted.append(loser)
            self.remove(loser)
        return evicted

    def _drain_window(self) -> list[str]:
        """Move the window's overflow to probation's MRU end; return it, oldest first."""
        moved: list[str] = []
        window = self._window
        while self._window_weight > self._window_max and window:
            key, weight = window.popitem(last=False)
            self._window_weight -= weight
            self._probation[key] = weight
            moved.append(key)
        return moved

    def _lru_victim(self) -> str | None:
        for region in (self._probation, self._protected, self._window):
            if region:
                return next(iter(region))
        return None


def make_policy(name: str, maximum: int, rng: random.Random) -> SizePolicy:
    """``lru`` or ``w-tinylfu``; ``rng`` feeds W-TinyLFU's hash key and admission draws."""
    if name == "lru":
        return LruPolicy(maximum)
    if name == "w-tinylfu":
        return WTinyLfuPolicy(maximum, rng)
    raise ValueError(f"unknown size policy {name!r}; expected one of {', '.join(POLICY_NAMES)}")
