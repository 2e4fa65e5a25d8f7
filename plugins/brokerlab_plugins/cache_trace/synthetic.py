"""The synthetic Zipf trace shipped with the ``trace-zipf`` workload, and how it was made.

Pure Python (``random.Random``, whose ``random()`` sequence is stable across Python versions for
a given seed), so the file is reproducible byte for byte::

    python -m brokerlab_plugins.cache_trace.synthetic > workloads/trace-zipf.csv
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
import sys
from dataclasses import dataclass

__all__ = ["ZIPF", "ZipfTrace", "zipf_csv"]


@dataclass(frozen=True)
class ZipfTrace:
    """``requests`` requests over ``objects`` objects with Zipf(``alpha``) popularity, Poisson
    arrivals at ``rate`` per second, and one lognormal size per object (median ``median_bytes``,
    shape ``sigma``, clipped to ``min_bytes..max_bytes``)."""

    requests: int
    objects: int
    alpha: float
    rate: float
    median_bytes: int
    sigma: float
    min_bytes: int
    max_bytes: int
    seed: int


ZIPF = ZipfTrace(
    requests=8_000,
    objects=4_000,
    alpha=1.0,
    rate=100.0,
    median_bytes=1 << 20,
    sigma=1.0,
    min_bytes=1 << 10,
    max_bytes=5 << 20,
    seed=20_240_430,
)
"""The shipped trace: 1,783 distinct objects, 2.6 GiB, three times the default entry cache."""


def zipf_csv(spec: ZipfTrace = ZIPF) -> str:
    """The trace as CSV text with a ``time,object,size`` header (times with 10 ms resolution)."""
    rng = random.Random(spec.seed)
    ids = list(range(spec.objects))
    rng.shuffle(ids)  # popularity rank -> object id, so ids say nothing about popularity
    sizes = [
        min(spec.max_bytes, max(spec.min_bytes, round(rng.lognormvariate(0.0, spec.sigma) * m)))
        for m in itertools.repeat(spec.median_bytes, spec.objects)
    ]
    weights = itertools.accumulate(1.0 / (rank + 1) ** spec.alpha for rank in range(spec.objects))
    cumulative = list(weights)
    total = cumulative[-1]
    lines = ["time,object,size"]
    now = 0.0
    for _ in range(spec.requests):
        now += rng.expovariate(spec.rate)
        rank = min(bisect.bisect_left(cumulative, rng.random() * total), spec.objects - 1)
        lines.append(f"{math.floor(now * 100) / 100:.2f},{ids[rank]},{sizes[rank]}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(zipf_csv())
