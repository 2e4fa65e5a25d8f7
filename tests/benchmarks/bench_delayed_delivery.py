"""Memory of the legacy tracker and PIP-448's topic-level tracker on the same delayed workload.

A plain script: ``python tests/benchmarks/bench_delayed_delivery.py [messages]``. Every
subscription reads the same entries of one topic and adds the delayed ones (every other entry,
with random delays), as Shared subscriptions of one topic do. For S in 1, 10, 100 it prints
Pulsar's estimate and the real index bytes of both trackers, the PIP-448 per-subscription bytes,
and the legacy / PIP-448 index-bytes ratio.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable

from brokerlab.protocols import DelayedDeliveryTrackerFactory
from brokerlab_plugins.legacy_delayed_delivery.tracker import LegacyFactory, TrackerConfig
from brokerlab_plugins.pip448_delayed_delivery.factory import TopicFactory
from brokerlab_plugins.pip448_delayed_delivery.manager import PruneRules

NS = 1_000_000
TICK = 1000


class Clock:
    """A still clock and a scheduler that never fires: the benchmark measures adds only."""

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


def workload(messages: int, seed: int = 1) -> list[tuple[int, int, int]]:
    """(ledger, entry, deliverAt) of every other entry, delays 1-120 s, 50,000 entries a ledger."""
    rng = random.Random(seed)
    return [
        (3 + i // 50_000, i % 50_000, 1_000 + rng.randint(1_000, 120_000))
        for i in range(0, 2 * messages, 2)
    ]


def measure(kind: str, subscriptions: int, adds: list[tuple[int, int, int]]) -> dict[str, float]:
    clock = Clock()
    config = TrackerConfig(clock, clock, TICK, False, 0)
    factory: DelayedDeliveryTrackerFactory
    if kind == "legacy":
        factory = LegacyFactory(config)
    else:
        factory = TopicFactory(config, PruneRules(TICK, 0, 0.5), 0)
    trackers = [factory.new_tracker("t", f"s{i}", lambda: None) for i in range(subscriptions)]
    start = time.perf_counter()
    for ledger, entry, at in adds:
        for tracker in trackers:
            tracker.add_message(ledger, entry, at)
    elapsed = time.perf_counter() - start
    stats = dict(factory.stats())
    stats["adds_per_s"] = len(adds) * subscriptions / elapsed
    return stats


def main() -> None:
    messages = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    adds = workload(messages)
    print(f"{messages} delayed messages (every other entry), tick {TICK} ms\n")
    header = (
        f"{'subs':>5} {'tracker':>8} {'pulsar est B':>13} {'index B':>12} {'sub-state B':>12} "
        f"{'idx B/pos':>9} {'adds/s':>10}"
    )
    print(header)
    for subscriptions in (1, 10, 100):
        rows = {kind: measure(kind, subscriptions, adds) for kind in ("legacy", "pip448")}
        for kind, s in rows.items():
            per_position = s["delayed_index_bytes"] / (messages * subscriptions)
            print(
                f"{subscriptions:>5} {kind:>8} {s['delayed_pulsar_memory_bytes']:>13,.0f} "
                f"{s['delayed_index_bytes']:>12,.0f} "
                f"{s['delayed_subscription_state_bytes']:>12,.0f} "
                f"{per_position:>9.2f} {s['adds_per_s']:>10,.0f}"
            )
        legacy, topic = rows["legacy"], rows["pip448"]
        total = topic["delayed_index_bytes"] + topic["delayed_subscription_state_bytes"]
        print(
            f"      index-bytes ratio legacy/pip448 = "
            f"{legacy['delayed_index_bytes'] / topic['delayed_index_bytes']:.1f}x; "
            f"including PIP-448 per-subscription state = "
            f"{legacy['delayed_index_bytes'] / total:.1f}x\n"
        )


if __name__ == "__main__":
    main()
