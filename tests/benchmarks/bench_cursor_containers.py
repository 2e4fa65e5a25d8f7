"""Throughput of the cursor containers: updates and the PIP-430 rank query.

Run: ``python tests/benchmarks/bench_cursor_containers.py`` (about 15 s). As in Pulsar's
``ActiveManagedCursorContainerBenchmark``, an update is a random forward seek of 1-99 entries. The
cursors start one per 100 entries on average, so a seek crosses about half a group. "jump" moves a
random cursor past the tail: the long move, whose group-counter cost grows with n.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "framework"), str(ROOT / "plugins")]

from brokerlab.protocols import CursorContainer, Position  # noqa: E402
from brokerlab_plugins.cursor_containers.heap import HeapCursorContainer  # noqa: E402
from brokerlab_plugins.cursor_containers.sorted_list import SortedListCursorContainer  # noqa: E402

SIZES = (10, 100, 1000)
UPDATES = 100_000
QUERIES = 300_000

Op = tuple[str, Position]


def fill(container: CursorContainer, n: int, rng: random.Random) -> dict[str, int]:
    where = {f"c{i}": rng.randrange(100 * n) for i in range(n)}
    for name, entry in where.items():
        container.add(name, (0, entry))
    return where


def seeks(where: dict[str, int], rng: random.Random) -> list[Op]:
    names, ops = list(where), []
    for _ in range(UPDATES):
        name = rng.choice(names)
        where[name] += rng.randint(1, 99)
        ops.append((name, (0, where[name])))
    return ops


def jumps(where: dict[str, int], rng: random.Random) -> list[Op]:
    names, tail = list(where), max(where.values())
    return [(rng.choice(names), (0, tail + 1 + i)) for i in range(UPDATES // 10)]


def update_rate(
    factory: Callable[[], CursorContainer],
    n: int,
    moves: Callable[[dict[str, int], random.Random], list[Op]],
) -> float:
    """Best of 3 runs, each on a fresh container (the machine may be shared and noisy)."""
    best = float("inf")
    for _ in range(3):
        rng = random.Random(n)
        container = factory()
        ops = moves(fill(container, n, rng), rng)  # precomputed: time the container, not the rng
        update = container.update
        start = time.perf_counter()
        for name, position in ops:
            update(name, position)
        best = min(best, (time.perf_counter() - start) / len(ops))
    return 1 / best


def query_rates() -> tuple[dict[int, float], dict[int, float]]:
    """Rank-query rates, and plain ``dict.get`` rates on the same probes as a control.

    Best of 7 runs per size, interleaved so machine noise hits every size alike. The control
    shows how much of any growth with n is memory locality rather than the algorithm.
    """
    loops: dict[tuple[int, bool], tuple[Callable[[str], object], list[str]]] = {}
    for n in SIZES:
        rng = random.Random(n)
        container = SortedListCursorContainer()
        where = fill(container, n, rng)
        probes = [rng.choice(list(where)) for _ in range(QUERIES)]
        loops[n, True] = container.count_at_or_before, probes
        loops[n, False] = where.get, probes
    best = dict.fromkeys(loops, float("inf"))
    for _ in range(7):
        for key, (query, probes) in loops.items():
            start = time.perf_counter()
            for name in probes:
                query(name)
            best[key] = min(best[key], time.perf_counter() - start)
    rate = {key: QUERIES / t for key, t in best.items()}
    return {n: rate[n, True] for n in SIZES}, {n: rate[n, False] for n in SIZES}


def main() -> None:
    started = time.perf_counter()
    queries, control = query_rates()
    print(f"{'n':>5}  {'container':<12} {'operation':<24} {'ops/s':>12}")
    for n in SIZES:
        ranked, heap = SortedListCursorContainer, HeapCursorContainer
        rows = [
            ("sorted-list", "count_at_or_before", queries[n]),
            ("sorted-list", "update (seek 1-99)", update_rate(ranked, n, seeks)),
            ("sorted-list", "update (jump past tail)", update_rate(ranked, n, jumps)),
            ("heap", "update (seek 1-99)", update_rate(heap, n, seeks)),
            ("heap", "update (jump past tail)", update_rate(heap, n, jumps)),
        ]
        for name, op, rate in rows:
            print(f"{n:>5}  {name:<12} {op:<24} {rate:>12,.0f}")
    small, large = SIZES[0], SIZES[-1]
    ratio = queries[small] / queries[large]
    print(f"\nrank query time at n={large} / n={small}: {ratio:.2f} (O(1): about 1)")
    print(f"control, dict.get at n={large} / n={small}: {control[small] / control[large]:.2f}")
    print(f"total {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
