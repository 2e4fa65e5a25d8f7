"""Simulated message deliveries per second of the broker model (a plain script, not a test).

    python tests/benchmarks/bench_broker.py [WORKLOAD ...]

Runs each workload once with the baseline profile (disabled cache, no delayed delivery, unlimited
ack state), so the figure is the broker model's own cost. It also prints a pure-Python yardstick
measured in the same run, since this machine's speed varies: compare the ratio across machines,
not the absolute figure.
"""

from __future__ import annotations

import sys
import time
import timeit
from pathlib import Path

from brokerlab import load_profile, simulate
from brokerlab.host import PluginHost

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ["catch-up-fanout", "many-topics"]


def yardstick() -> float:
    """Microseconds for a 1,000-iteration dict-insert loop: how fast this interpreter is now."""
    seconds = min(timeit.repeat("for i in range(1000): d[i] = i", "d = {}", number=200, repeat=5))
    return seconds / 200 * 1e6


def main(workloads: list[str]) -> None:
    host = PluginHost()
    profile = load_profile(ROOT / "profiles" / "baseline.conf", host=host)
    base = yardstick()
    print(f"yardstick: {base:.1f} us per 1,000 dict inserts")
    print(f"{'workload':<26}{'deliveries':>12}{'events':>12}{'seconds':>9}{'deliveries/s':>14}")
    for name in workloads:
        started = time.perf_counter()
        result = simulate(profile, name, 0, host=host)
        elapsed = time.perf_counter() - started
        delivered = result.metrics["delivered"]
        print(
            f"{name:<26}{delivered:>12,.0f}{result.events:>12,}{elapsed:>9.1f}"
            f"{delivered / elapsed:>14,.0f}"
        )


if __name__ == "__main__":
    main(sys.argv[1:] or DEFAULT)
