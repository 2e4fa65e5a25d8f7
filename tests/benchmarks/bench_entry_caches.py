"""Entry-cache benchmarks: (a) cost of one time-eviction pass against the number of topics,
(b) cache operations per second on a Zipf trace, beside libCacheSim's LRU when it is installed.

Run: ``python tests/benchmarks/bench_entry_caches.py [--requests N]``. (b) replays the 10M-request
trace the issue asks for by default (a few minutes on the 2-core reference machine; ``--requests
1000000`` takes about a minute, and the rates barely depend on the length once the cache is warm).
libCacheSim is a dev-only (GPL) oracle.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "framework"), str(ROOT / "plugins")]

import numpy as np  # noqa: E402

from brokerlab.broker.events import EventLoop  # noqa: E402
from brokerlab.profiles.model import BrokerSettings  # noqa: E402
from brokerlab.protocols import EntryCache, PluginContext  # noqa: E402
from brokerlab_plugins.cursor_containers import (  # noqa: E402
    HeapCursorContainer,
    SortedListCursorContainer,
)
from brokerlab_plugins.entry_cache_common import CacheLimits  # noqa: E402
from brokerlab_plugins.legacy_cache import LegacyEntryCache  # noqa: E402
from brokerlab_plugins.pip430_cache import (  # noqa: E402
    ExpectedReadsPredicate,
    Pip430EntryCache,
    RecentlyAccessedPredicate,
)

MS = 1_000_000
TOPIC_COUNTS = (1, 100, 10_000)
ENTRIES_PER_TOPIC = 5
REQUESTS = 10_000_000
OBJECTS = 100_000
ALPHA = 1.0
CAPACITY = 10_000  # entries (unit size): 10% of the objects

Factory = Callable[[PluginContext, CacheLimits], Any]


def build(kind: str, limits: CacheLimits) -> tuple[Any, EventLoop, type]:
    loop = EventLoop()
    by_read_count = kind == "pip430"
    settings = BrokerSettings.model_validate(
        {
            "cacheEvictionByExpectedReadCount": by_read_count,
            # Legacy caches storage reads only for readers that "cache reads"; mark-delete mode
            # makes every reader do so, which (b) needs to compare like with like.
            "cacheEvictionByMarkDeletedPosition": not by_read_count,
        }
    )
    container = SortedListCursorContainer if by_read_count else HeapCursorContainer
    context = PluginContext(
        settings=settings,
        clock=loop,
        scheduler=loop,
        rng=np.random.default_rng(0),
        eviction_predicates=(RecentlyAccessedPredicate(), ExpectedReadsPredicate(5))
        if by_read_count
        else (),
        new_cursor_container=container,
    )
    cache: EntryCache
    if by_read_count:
        cache = Pip430EntryCache(context, limits=limits)
    else:
        cache = LegacyEntryCache(context, limits=limits)
    return cache, loop, container


def eviction_pass_cost(kind: str, topics: int) -> float:
    """Microseconds per periodic eviction pass while nothing has expired yet."""
    cache, loop, container = build(kind, CacheLimits.of(1 << 40, 0.9, 1000))
    for t in range(topics):
        cursors = container()
        cursors.add("sub", (0, 0))
        name = f"topic-{t}"
        cache.open_ledger(name, cursors)
        cache.cursors_changed(name)
        for e in range(ENTRIES_PER_TOPIC):
            cache.insert(name, (0, e), 100)
    loop.run_until(500 * MS)  # half a TTL: every pass finds only live entries
    passes = max(20, 200_000 // topics)
    start = time.perf_counter()
    for _ in range(passes):
        cache.evict_expired()
    return (time.perf_counter() - start) / passes * 1e6


def zipf_trace(requests: int) -> list[int]:
    rng = np.random.default_rng(42)
    weights = 1.0 / np.arange(1, OBJECTS + 1) ** ALPHA
    trace: list[int] = rng.choice(OBJECTS, size=requests, p=weights / weights.sum()).tolist()
    return trace


def run_broker_cache(kind: str, trace: list[int]) -> tuple[float, float]:
    """(operations per second, hit ratio): a one-entry read, and on a miss the storage insert."""
    cache, loop, container = build(kind, CacheLimits.of(CAPACITY, 0.9, 1000))
    cursors = container()
    cursors.add("r", (0, 0))
    cache.open_ledger("t", cursors)
    cache.cursors_changed("t")
    read, storage_read, run = cache.read, cache.storage_read, loop.run_until
    one = [1]
    hits = 0
    start = time.perf_counter()
    for obj in trace:
        if read("t", 0, obj, obj, "r"):
            storage_read("t", 0, [obj], one, "r")
            run(0)  # let a triggered size eviction run
        else:
            hits += 1
    elapsed = time.perf_counter() - start
    return len(trace) / elapsed, hits / len(trace)


def run_ordered_dict_lru(trace: list[int]) -> tuple[float, float]:
    lru: OrderedDict[int, None] = OrderedDict()
    hits = 0
    start = time.perf_counter()
    for obj in trace:
        if obj in lru:
            lru.move_to_end(obj)
            hits += 1
        else:
            lru[obj] = None
            if len(lru) > CAPACITY:
                lru.popitem(last=False)
    return len(trace) / (time.perf_counter() - start), hits / len(trace)


def run_libcachesim_lru(trace: list[int]) -> tuple[float, float] | None:
    try:
        import libcachesim as lcs  # type: ignore[import-untyped]
    except ImportError:
        return None
    cache = lcs.LRU(cache_size=CAPACITY, hashpower=20)
    request = lcs.Request(obj_size=1)
    get = cache.get
    hits = 0
    start = time.perf_counter()
    for obj in trace:
        request.obj_id = obj + 1
        hits += get(request)
    return len(trace) / (time.perf_counter() - start), hits / len(trace)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--requests", type=int, default=REQUESTS, help=f"trace length of (b) (default {REQUESTS:,})"
    )
    requests: int = parser.parse_args().requests
    print("(a) time-eviction pass cost vs number of topics "
          f"({ENTRIES_PER_TOPIC} live entries per topic)")  # fmt: skip
    for kind in ("legacy", "pip430"):
        # Best of three: the machine may be shared, and the minimum is the least disturbed run.
        costs = {n: min(eviction_pass_cost(kind, n) for _ in range(3)) for n in TOPIC_COUNTS}
        base = costs[TOPIC_COUNTS[0]]
        cells = ", ".join(f"{n} topics {c:9.2f} us (x{c / base:7.1f})" for n, c in costs.items())
        print(f"  {kind:7s} {cells}")
    print(
        f"\n(b) Zipf(alpha={ALPHA}) trace, {requests:,} requests over {OBJECTS:,} objects, "
        f"capacity {CAPACITY:,} unit-size entries"
    )
    trace = zipf_trace(requests)
    rows: list[tuple[str, tuple[float, float] | None]] = [
        ("libcachesim LRU", run_libcachesim_lru(trace)),
        ("OrderedDict LRU", run_ordered_dict_lru(trace)),
        ("pip430", run_broker_cache("pip430", trace)),
        ("legacy", run_broker_cache("legacy", trace)),
    ]
    reference = rows[0][1]
    for name, result in rows:
        if result is None:
            print(f"  {name:16s} skipped: libcachesim is not installed")
            continue
        ops, ratio = result
        share = f"  {ops / reference[0]:5.2f} of libcachesim LRU" if reference else ""
        print(f"  {name:16s} {ops / 1e6:6.3f} M ops/s  hit ratio {ratio:.4f}{share}")


if __name__ == "__main__":
    main()
