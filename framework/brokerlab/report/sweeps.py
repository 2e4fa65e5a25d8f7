"""What a report says about ``--set`` sweeps: which keys were swept, which did not apply to a
profile, and, for a size key, the smallest size within a point of the best hit ratio.

Pure functions over result rows (one row per cell); the plots are :mod:`brokerlab.report.plots`.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from brokerlab.report.configs import config_labels
from brokerlab.report.numbers import format_ratio

__all__ = [
    "HIT_RATIOS",
    "KNEE_POINTS",
    "SIZE_KEYS",
    "Knee",
    "hit_ratio_metric",
    "knee_note",
    "knees",
    "not_applied_notes",
    "numeric_order",
    "sweep_values",
    "swept_keys",
]

SIZE_KEYS: frozenset[str] = frozenset(
    {
        "managedLedgerCacheSizeMB",  # the entry cache (Pulsar workloads and cache traces)
        "sim.maxDirectMemoryMB",  # the entry cache's size when managedLedgerCacheSizeMB is empty
        "remote.log.index.file.cache.total.size.bytes",  # Kafka's remote index cache
    }
)
"""Keys that size a cache: a sweep over one draws the miss-ratio curve."""

HIT_RATIOS: tuple[str, ...] = ("trace_hit_ratio", "index_cache_hit_ratio", "cache_hit_ratio")
"""The hit ratio of each simulator's cache, in the order a workload's rows are searched."""

KNEE_POINTS = 0.01
""""Within 1 point of the best hit ratio": 0.01 of a ratio."""


def sweep_values(overrides: object) -> dict[str, str]:
    """The ``--set`` values of one row (its ``overrides`` JSON)."""
    if not isinstance(overrides, str) or not overrides:
        return {}
    loaded = json.loads(overrides)
    return {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


def swept_keys(overrides: Iterable[object]) -> list[str]:
    """The ``--set`` keys that take more than one value across the rows, in first-seen order."""
    values: dict[str, set[str]] = {}
    for text in overrides:
        for key, value in sweep_values(text).items():
            values.setdefault(key, set()).add(value)
    return [key for key, seen in values.items() if len(seen) > 1]


def numeric_order(values: Iterable[str]) -> list[str]:
    """Distinct ``values`` sorted as numbers where they are (64 before 256), else as text."""

    def key(value: str) -> tuple[bool, float, str]:
        try:
            return (False, float(value), value)
        except ValueError:
            return (True, 0.0, value)

    return sorted(set(values), key=key)


def hit_ratio_metric(rows: pd.DataFrame) -> str | None:
    """The hit ratio the rows' simulator reports (``None``: none of :data:`HIT_RATIOS`)."""
    for metric in HIT_RATIOS:
        if metric in rows and rows[metric].notna().any():
            return metric
    return None


@dataclass(frozen=True)
class Knee:
    """Where a size sweep stops paying: the smallest size within :data:`KNEE_POINTS` of the best
    hit ratio of one series (a profile with fixed values of the other swept keys)."""

    key: str
    series: str
    size: str
    hit_ratio: float
    best: float
    best_size: str

    def text(self) -> str:
        """``pulsar-4.2 256 (0.901; best 0.908 at 1024)``."""
        if self.size == self.best_size:
            return f"{self.series} {self.size} (the best, {format_ratio(self.best)})"
        return (
            f"{self.series} {self.size} ({format_ratio(self.hit_ratio)}; best "
            f"{format_ratio(self.best)} at {self.best_size})"
        )


def knees(rows: pd.DataFrame, key: str, metric: str) -> list[Knee]:
    """One :class:`Knee` per series of ``rows`` (ok result rows of one workload) that ran two or
    more values of the size key ``key``; hit ratios are means over seeds."""
    values = [sweep_values(o).get(key) for o in rows["overrides"]]
    swept = rows.assign(_size=values)
    swept = swept[swept["_size"].notna() & swept[metric].notna()]
    if swept.empty:
        return []
    series = pd.Series(config_labels(swept, hide=[key]), index=swept.index)
    found = []
    for label, group in swept.groupby(series, sort=False):
        means = {
            size: statistics.fmean(part[metric].astype(float))
            for size, part in group.groupby("_size", sort=False)
        }
        if len(means) < 2:
            continue
        sizes = numeric_order(means)
        best = max(means.values())
        best_size = next(s for s in sizes if means[s] == best)
        # 1e-12: a hit ratio equal to best - 0.01 up to rounding is within the point.
        size = next(s for s in sizes if means[s] >= best - KNEE_POINTS - 1e-12)
        found.append(Knee(key, str(label), size, means[size], best, best_size))
    return found


def knee_note(found: Sequence[Knee], metric: str) -> str:
    """The verdict's sentence about one size key's knees."""
    key = found[0].key
    return (
        f"{key}: the smallest value within {KNEE_POINTS * 100:g} point of the best {metric}: "
        + "; ".join(k.text() for k in found)
        + "."
    )


def not_applied_notes(
    rows: pd.DataFrame, keys: Sequence[str], not_applied: Mapping[str, Mapping[str, str]]
) -> list[str]:
    """For each profile of ``rows`` that a swept key of ``keys`` did not apply to: why, and that
    it ran once (``not_applied``: profile label -> key -> why, as the matrix recorded it)."""
    notes = []
    for profile in dict.fromkeys(str(p) for p in rows["profile"]):
        for key in keys:
            reason = not_applied.get(profile, {}).get(key)
            if reason is not None:
                notes.append(f"{reason}: the key did not apply, {profile} ran once.")
    return notes
