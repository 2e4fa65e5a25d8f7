"""The report's charts (matplotlib, Agg backend): PNG bytes, no files, no display."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")  # no display on servers and executors; must precede pyplot

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from brokerlab.metrics import METRICS, metrics_of

__all__ = [
    "KEY_METRICS",
    "config_label",
    "config_labels",
    "key_metrics",
    "metric_bars",
    "sweep_lines",
]

KEY_METRICS: dict[str, tuple[str, ...]] = {
    "pulsar": (
        "storage_entries_read",
        "cache_hit_ratio",
        "cache_peak_bytes",
        "delayed_index_bytes",
        "redelivered_after_restart",
        "dispatch_paused_ms",
        "latency_p99_ms",
    ),
    "kafka-tiered-storage": (
        "index_cache_hit_ratio",
        "remote_index_fetches",
        "index_cache_resident_bytes_peak",
        "index_cache_stale_bytes_peak",
        "index_cache_stale_bytes_end",
        "index_cache_stale_residence_mean_s",
    ),
    "cache-trace": (
        "trace_hit_ratio",
        "trace_byte_hit_ratio",
        "trace_miss_bytes",
        "trace_peak_cache_bytes",
    ),
}
"""The metrics a report shows per workload, by the simulator that reports them."""


def key_metrics(summary: pd.DataFrame) -> tuple[str, ...]:
    """The key metrics of the simulator whose numbers ``summary`` (one workload) holds."""
    reported = summary.loc[summary["mean"].notna(), "metric"]
    simulators = [METRICS[name].simulator for name in reported if name in METRICS]
    if not simulators:
        return KEY_METRICS["pulsar"]
    simulator = simulators[0]
    return KEY_METRICS.get(simulator) or tuple(metrics_of(simulator)[:6])


def config_label(profile: str, overrides: str, hide: Sequence[str] = ()) -> str:
    """``profile`` plus its ``--set`` values (except the keys in ``hide``), for legends."""
    values = {k: v for k, v in json.loads(overrides or "{}").items() if k not in hide}
    # Whole keys: a last dotted part ("ms") is ambiguous among a plugin's many *.ms keys.
    extra = ", ".join(f"{k}={v}" for k, v in values.items())
    return f"{profile} [{extra}]" if extra else profile


def config_labels(summary: pd.DataFrame, hide: Sequence[str] = ()) -> list[str]:
    """A label per row of ``summary`` (summary.csv rows): :func:`config_label`, plus what tells
    apart configurations it would merge: the scale when ``summary`` holds several, and a short
    profile fingerprint when one profile and ``--set`` values ran with different settings (an
    environment variable, an edited profile file)."""
    several_scales = summary["scale"].nunique() > 1
    fingerprints = summary.groupby(["profile", "overrides"], dropna=False)["profile_fingerprint"]
    several_fingerprints = fingerprints.transform("nunique") > 1
    labels = []
    for row, ambiguous in zip(summary.itertuples(), several_fingerprints, strict=True):
        extra = [f"settings {str(row.profile_fingerprint)[:8]}"] if ambiguous else []
        extra += [f"scale {row.scale:g}"] if several_scales else []
        label = config_label(str(row.profile), str(row.overrides), hide)
        labels.append(f"{label} ({', '.join(extra)})" if extra else label)
    return labels


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    plt.close(figure)
    return buffer.getvalue()


def _grid(count: int) -> tuple[Figure, list[Axes]]:
    columns = 4 if count > 4 else count
    rows = math.ceil(count / columns)
    figure, axes = plt.subplots(
        rows, columns, figsize=(4.2 * columns, 3.2 * rows), squeeze=False, layout="constrained"
    )
    flat = [ax for row in axes for ax in row]
    for ax in flat[count:]:
        ax.set_visible(False)
    return figure, flat[:count]


def _half_width(row: pd.Series) -> float:
    half = (row["ci95_high"] - row["ci95_low"]) / 2
    return 0.0 if pd.isna(half) else float(half)


def metric_bars(summary: pd.DataFrame, workload: str, metrics: Sequence[str] = ()) -> bytes:
    """One panel per metric (default: :func:`key_metrics`): a bar per configuration, with its 95%
    interval over seeds."""
    metrics = metrics or key_metrics(summary)
    label_of = pd.Series(config_labels(summary), index=summary.index)
    figure, axes = _grid(len(metrics))
    for ax, metric in zip(axes, metrics, strict=True):
        rows = summary[summary["metric"] == metric]
        labels = label_of[rows.index].tolist()
        means = rows["mean"].tolist()
        errors = [_half_width(r) for _, r in rows.iterrows()]
        positions = list(range(len(labels)))
        ax.barh(positions, means, xerr=errors, color="#4477aa", ecolor="#222222", capsize=3)
        ax.set_yticks(positions, labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_title(f"{metric} ({METRICS[metric].unit})", fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
    figure.suptitle(f"{workload}: mean and 95% interval over seeds", fontsize=11)
    return _png(figure)


def _as_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def sweep_lines(
    summary: pd.DataFrame, workload: str, key: str, metrics: Sequence[str] = ()
) -> bytes:
    """One panel per metric (default: :func:`key_metrics`): the metric against the swept value of
    ``key``, a line per profile."""
    metrics = metrics or key_metrics(summary)
    data = summary.copy()
    data["swept"] = [json.loads(o).get(key) for o in data["overrides"]]
    data = data[data["swept"].notna()]
    values = sorted(
        set(data["swept"]), key=lambda v: (_as_number(v) is None, _as_number(v) or 0, v)
    )
    numeric = all(_as_number(v) is not None for v in values)
    data["x"] = [float(v) if numeric else values.index(v) for v in data["swept"]]
    data["series"] = config_labels(data, hide=[key])
    figure, axes = _grid(len(metrics))
    for ax, metric in zip(axes, metrics, strict=True):
        rows = data[data["metric"] == metric]
        for series, group in rows.groupby("series", sort=True):
            group = group.sort_values("x")
            errors = [_half_width(r) for _, r in group.iterrows()]
            ax.errorbar(group["x"], group["mean"], yerr=errors, marker="o", capsize=3, label=series)
        if not numeric:
            ax.set_xticks(range(len(values)), values, fontsize=7)
        ax.set_xlabel(key, fontsize=7)
        ax.set_title(f"{metric} ({METRICS[metric].unit})", fontsize=9)
        ax.tick_params(labelsize=7)
    if axes:
        axes[0].legend(fontsize=6)
    figure.suptitle(f"{workload}: metrics against {key}", fontsize=11)
    return _png(figure)
