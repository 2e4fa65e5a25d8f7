"""Memory and throughput of the legacy tracker and PIP-448's topic-level tracker (issue #5).

A plain script: ``python tests/benchmarks/bench_delayed_delivery.py [--messages N]``. Every
subscription of one topic adds the same delayed messages (every other entry, 50,000 entries a
ledger, delays 1-120 s, tick 1000 ms, non-strict), as Shared subscriptions of one topic do, on a
clock that does not move: it measures the index each tracker builds. In one run it prints

1. add and getScheduledMessages throughput, from one-by-one ``add_message`` calls for all
   messages and one subscription, and a check that the bulk load below leaves the same figures;
2. memory for S in 1, 10, 100, 1,000 subscriptions, both trackers: Pulsar's estimate, the real
   index bytes and the PIP-448 per-subscription bytes (the figures ``delayed_*`` metrics report),
   and the process's resident-memory growth, with the ratios 1,000 / 1;
3. bytes per tracked position for dense and sparse position patterns.

Adding 10^6 messages one by one to 1,000 trackers would be 10^9 calls, so section 2 builds every
tracker with ``load(DelayedBatch)`` (``brokerlab_plugins.legacy_delayed_delivery.bulk``): the same
structures one-by-one adds leave, as ``tests/unit/test_delayed_bulk_load.py`` checks and section 1
re-checks at full size. ``--one-by-one N`` prints the older table (one-by-one adds, S in 1, 10,
100) instead.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import random
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from brokerlab.protocols import DelayedDeliveryTrackerFactory
from brokerlab_plugins.legacy_delayed_delivery.bulk import DelayedBatch
from brokerlab_plugins.legacy_delayed_delivery.tracker import (
    LegacyFactory,
    LegacyTracker,
    TrackerConfig,
)
from brokerlab_plugins.pip448_delayed_delivery.factory import TopicFactory
from brokerlab_plugins.pip448_delayed_delivery.manager import PruneRules, TrackerProxy

NS = 1_000_000
TICK = 1000
ENTRIES_PER_LEDGER = 50_000
KINDS = ("legacy", "pip448")
FIGURES = (
    "delayed_pulsar_memory_bytes",
    "delayed_index_bytes",
    "delayed_subscription_state_bytes",
    "delayed_index_positions",
)


class Clock:
    """A clock that moves only when told to, and a scheduler that never fires: the benchmark
    measures the index, not delivery."""

    def __init__(self) -> None:
        self.ms = 0

    def now_ms(self) -> int:
        return self.ms

    def now_ns(self) -> int:
        return self.ms * NS

    def call_at(self, when_ns: int, callback: Callable[[], None]) -> _Handle:
        return _Handle()


class _Handle:
    def cancel(self) -> None:
        return None


def new_factory(kind: str, clock: Clock) -> LegacyFactory | TopicFactory:
    config = TrackerConfig(clock, clock, TICK, False, 0)
    if kind == "legacy":
        return LegacyFactory(config)
    return TopicFactory(config, PruneRules(TICK, 0, 0.5), 0)


def rss_bytes() -> int:
    """Resident bytes, after handing freed heap back to the system (glibc's ``malloc_trim``):
    otherwise memory a previous build freed is reused and growth reads as zero."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def available_bytes() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def messages(
    n: int, stride: int = 2, delays: tuple[int, int] = (1_000, 120_000), seed: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ledger, entry, deliverAt) of every ``stride``-th entry, ``ENTRIES_PER_LEDGER`` a ledger,
    due ``delays`` ms after 1,000 (uniform; one value: all due together)."""
    rng = np.random.default_rng(seed)
    index = np.arange(0, stride * n, stride, dtype=np.int64)
    deliver_at = 1_000 + rng.integers(delays[0], delays[1] + 1, size=n, dtype=np.int64)
    return 3 + index // ENTRIES_PER_LEDGER, index % ENTRIES_PER_LEDGER, deliver_at


def figures(factory: DelayedDeliveryTrackerFactory) -> dict[str, float]:
    stats = factory.stats()
    return {name: float(stats.get(name, 0)) for name in FIGURES}


def bucketing_of(tracker: Any) -> Any:
    return tracker.view.buckets if isinstance(tracker, TrackerProxy) else tracker.buckets


# ---- 1. throughput, and the bulk load checked at full size -----------------------------------


def throughput(arrays: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    ledgers, entries, deliver_at = arrays
    adds = list(zip(ledgers.tolist(), entries.tolist(), deliver_at.tolist(), strict=True))
    print(f"1. Throughput, one subscription, {len(adds):,} one-by-one adds\n")
    print(
        f"{'tracker':>8} {'adds/s':>10} {'get calls/s':>12} {'positions/s':>12} "
        f"{'bulk load s':>12} {'bulk == one-by-one':>19}"
    )
    for kind in KINDS:
        clock = Clock()
        factory = new_factory(kind, clock)
        tracker = factory.new_tracker("t", "s", lambda: None)
        start = time.perf_counter()
        for ledger, entry, at in adds:
            tracker.add_message(ledger, entry, at)
        add_rate = len(adds) / (time.perf_counter() - start)
        one_by_one = figures(factory)

        bulk_factory = new_factory(kind, clock)
        bulk = bulk_factory.new_tracker("t", "s", lambda: None)
        start = time.perf_counter()
        bulk.load(DelayedBatch.of(ledgers, entries, deliver_at, bucketing_of(bulk)))
        load_s = time.perf_counter() - start
        same = figures(bulk_factory) == one_by_one
        del bulk, bulk_factory

        clock.ms = int(deliver_at.max()) + TICK  # everything is due
        calls = handed = 0
        start = time.perf_counter()
        while True:
            due = tracker.get_scheduled_messages(100)
            calls += 1
            if not due:
                break
            handed += len(due)
        elapsed = time.perf_counter() - start
        assert handed == len(adds), f"{kind} handed back {handed} of {len(adds)}"
        print(
            f"{kind:>8} {add_rate:>10,.0f} {calls / elapsed:>12,.0f} {handed / elapsed:>12,.0f} "
            f"{load_s:>12.2f} {'yes' if same else 'NO':>19}"
        )
        if not same:
            sys.exit(f"the bulk load differs from one-by-one adds: {one_by_one}")
        tracker.close()
    print("   getScheduledMessages(100) drains the whole tracker once everything is due.\n")


# ---- 2. memory at S subscriptions ------------------------------------------------------------


def build(
    kind: str, subscriptions: int, arrays: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> tuple[dict[str, float], float, float, str]:
    """Figures, build seconds and resident-memory growth of S subscriptions that each add every
    message; for legacy at S where building all would not fit in memory, one tracker times S."""
    gc.collect()
    rss_before = rss_bytes()
    clock = Clock()
    factory = new_factory(kind, clock)
    start = time.perf_counter()
    first = factory.new_tracker("t", "s0", lambda: None)
    batch = DelayedBatch.of(*arrays, bucketing_of(first))
    first.load(batch)
    note = ""
    one = rss_bytes() - rss_before
    if kind == "legacy" and one * subscriptions * 1.3 > available_bytes():
        # Only when memory forbids building them all: the trackers are provably identical (same
        # config, same batch, no shared state), so S of them hold S times one tracker's bytes.
        out = {k: v * subscriptions for k, v in figures(factory).items()}
        note = f"1 built x {subscriptions} (not enough memory to build all)"
        return out, time.perf_counter() - start, one * subscriptions, note
    for i in range(1, subscriptions):
        tracker = factory.new_tracker("t", f"s{i}", lambda: None)
        tracker.load(batch)
    elapsed = time.perf_counter() - start
    out = figures(factory)
    grown = rss_bytes() - rss_before
    if kind == "legacy":
        trackers = [t for t in factory.trackers if isinstance(t, LegacyTracker)]
        counts = {t.index.count for t in trackers}
        note = f"all {len(trackers)} built" if len(counts) == 1 else "TRACKERS DIFFER"
    else:
        note = f"all {subscriptions} built"
    factory.close()
    del factory, first, batch
    gc.collect()
    return out, elapsed, grown, note


def memory(arrays: tuple[np.ndarray, np.ndarray, np.ndarray], levels: list[int]) -> None:
    n = len(arrays[0])
    print(f"2. Memory, {n:,} delayed messages added by each of S subscriptions\n")
    print(
        f"{'S':>5} {'tracker':>8} {'pulsar est B':>15} {'index B':>15} {'sub-state B':>14} "
        f"{'index+state B':>15} {'RSS growth B':>15} {'build s':>8}  how"
    )
    rows: dict[tuple[str, int], dict[str, float]] = {}
    for subscriptions in levels:
        for kind in KINDS:
            f, elapsed, grown, note = build(kind, subscriptions, arrays)
            rows[(kind, subscriptions)] = f
            total = f["delayed_index_bytes"] + f["delayed_subscription_state_bytes"]
            print(
                f"{subscriptions:>5,} {kind:>8} {f['delayed_pulsar_memory_bytes']:>15,.0f} "
                f"{f['delayed_index_bytes']:>15,.0f} "
                f"{f['delayed_subscription_state_bytes']:>14,.0f} {total:>15,.0f} "
                f"{grown:>15,.0f} {elapsed:>8.1f}  {note}"
            )
    lo, hi = levels[0], levels[-1]

    def ratio(kind: str, *names: str) -> float:
        top = sum(rows[(kind, hi)][m] for m in names)
        bottom = sum(rows[(kind, lo)][m] for m in names)
        return top / bottom

    print(f"\n   ratios S={hi:,} / S={lo:,}:")
    for kind in KINDS:
        print(
            f"   {kind:>8}: pulsar estimate {ratio(kind, FIGURES[0]):,.2f}x, "
            f"index bytes {ratio(kind, FIGURES[1]):,.2f}x, "
            f"index + per-subscription state {ratio(kind, FIGURES[1], FIGURES[2]):,.2f}x"
        )
    legacy, topic = rows[("legacy", hi)], rows[("pip448", hi)]
    print(
        f"   legacy / pip448 at S={hi:,}: index bytes "
        f"{legacy[FIGURES[1]] / topic[FIGURES[1]]:,.0f}x, including PIP-448's per-subscription "
        f"state {legacy[FIGURES[1]] / (topic[FIGURES[1]] + topic[FIGURES[2]]):,.1f}x\n"
    )


# ---- 3. bytes per tracked position -----------------------------------------------------------


def per_position(n: int) -> None:
    print(f"3. Bytes per tracked position, one subscription, {n:,} positions\n")
    print(
        f"{'positions':>16} {'deliver-at':>12} {'pulsar est':>11} {'legacy idx':>11} "
        f"{'pip448 idx':>11} {'pip448 sub':>11}"
    )
    for stride, label in (
        (1, "every entry"),
        (2, "every 2nd"),
        (10, "every 10th"),
        (100, "1 in 100"),
    ):
        for delays, spread in (((1_000, 120_000), "1-120 s"), ((60_000, 60_000), "one time")):
            arrays = messages(n, stride, delays)
            row = {}
            for kind in KINDS:
                factory = new_factory(kind, Clock())
                tracker = factory.new_tracker("t", "s", lambda: None)
                tracker.load(DelayedBatch.of(*arrays, bucketing_of(tracker)))
                row[kind] = figures(factory)
                factory.close()
            print(
                f"{label:>16} {spread:>12} {row['legacy'][FIGURES[0]] / n:>11.2f} "
                f"{row['legacy'][FIGURES[1]] / n:>11.2f} {row['pip448'][FIGURES[1]] / n:>11.2f} "
                f"{row['pip448'][FIGURES[2]] / n:>11.2f}"
            )
    ledgers, entries, _ = messages(n, 2)
    positions = set(zip(ledgers.tolist(), entries.tolist(), strict=True))
    ints = {id(x): sys.getsizeof(x) for pos in positions for x in pos}
    held = sys.getsizeof(positions) + sum(sys.getsizeof(p) for p in positions) + sum(ints.values())
    per = held / len(positions)
    del positions, ints
    print(
        "   pulsar est = Pulsar's serialized-size estimate; idx = real bytes of the index "
        "(PIP-448: the shared index\n   with its membership maps); sub = PIP-448's "
        f"per-subscription view. A Python set of (ledger, entry) tuples (every 2nd entry): "
        f"{per:.0f} B/position.\n"
    )


# ---- the older one-by-one table ----------------------------------------------------------------


def one_by_one(n: int) -> None:
    rng = random.Random(1)
    adds = [
        (3 + i // ENTRIES_PER_LEDGER, i % ENTRIES_PER_LEDGER, 1_000 + rng.randint(1_000, 120_000))
        for i in range(0, 2 * n, 2)
    ]
    print(f"{n} delayed messages (every other entry), tick {TICK} ms\n")
    print(
        f"{'subs':>5} {'tracker':>8} {'pulsar est B':>13} {'index B':>12} {'sub-state B':>12} "
        f"{'idx B/pos':>9} {'adds/s':>10}"
    )
    for subscriptions in (1, 10, 100):
        rows = {}
        for kind in KINDS:
            factory = new_factory(kind, Clock())
            trackers = [
                factory.new_tracker("t", f"s{i}", lambda: None) for i in range(subscriptions)
            ]
            start = time.perf_counter()
            for ledger, entry, at in adds:
                for tracker in trackers:
                    tracker.add_message(ledger, entry, at)
            s = figures(factory)
            s["adds_per_s"] = n * subscriptions / (time.perf_counter() - start)
            rows[kind] = s
            print(
                f"{subscriptions:>5} {kind:>8} {s[FIGURES[0]]:>13,.0f} {s[FIGURES[1]]:>12,.0f} "
                f"{s[FIGURES[2]]:>12,.0f} {s[FIGURES[1]] / (n * subscriptions):>9.2f} "
                f"{s['adds_per_s']:>10,.0f}"
            )
        legacy, topic = rows["legacy"], rows["pip448"]
        index, total = topic[FIGURES[1]], topic[FIGURES[1]] + topic[FIGURES[2]]
        print(
            f"      index-bytes ratio legacy/pip448 = {legacy[FIGURES[1]] / index:.1f}x; "
            f"including PIP-448 per-subscription state = {legacy[FIGURES[1]] / total:.1f}x\n"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--subscriptions", default="1,10,100,1000", help="comma-separated S")
    parser.add_argument("--one-by-one", type=int, metavar="N", help="the older small table")
    args = parser.parse_args()
    if args.one_by_one:
        one_by_one(args.one_by_one)
        return
    started = time.perf_counter()
    arrays = messages(args.messages)
    print(
        f"{args.messages:,} delayed messages (every other entry, {ENTRIES_PER_LEDGER:,} entries a "
        f"ledger, delays 1-120 s), tick {TICK} ms, non-strict\n"
    )
    throughput(arrays)
    memory(arrays, [int(s) for s in args.subscriptions.split(",")])
    per_position(args.messages)
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
