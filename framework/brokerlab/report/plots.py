"""The report's charts (matplotlib, Agg backend): PNG bytes, no files, no display.

Which metrics to draw is the caller's choice (:func:`brokerlab.report.verdicts.select_metrics`);
numbers on the axes use the report's formats (:mod:`brokerlab.report.numbers`).
"""

from __future__ import annotations

import io
import json
import math
import textwrap
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")  # no display on servers and executors; must precede pyplot

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from brokerlab.report.configs import config_label, config_labels
from brokerlab.report.numbers import format_metric, unit_header

__all__ = [
    "config_label",
    "config_labels",
    "metric_bars",
    "sweep_lines",
    "wrap_label",
]

_LABEL_WIDTH = 30  # characters per line of a configuration label beside a bar
_COLUMNS = 3  # panels per row


def wrap_label(label: str, width: int = _LABEL_WIDTH) -> str:
    """``label`` on lines of at most ``width`` characters, broken after ``[`` and ``,`` first, so a
    label with several ``--set`` values stays narrow instead of squeezing its panel to nothing."""
    spaced = label.replace("[", "[ ").replace(",", ", ").replace(",  ", ", ")
    lines = textwrap.wrap(spaced, width, break_long_words=True, break_on_hyphens=False)
    return "\n".join(line.replace("[ ", "[") for line in lines) or label


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    plt.close(figure)
    return buffer.getvalue()


def _title(metric: str) -> str:
    unit = unit_header(metric)
    return f"{metric} ({unit})" if unit else metric


def _format_axis(ax: Axes, metric: str, axis: str) -> None:
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(MaxNLocator(nbins=4))
    target.set_major_formatter(FuncFormatter(lambda value, _: format_metric(metric, value)))


def _half_width(row: pd.Series) -> float:
    half = (row["ci95_high"] - row["ci95_low"]) / 2
    return 0.0 if pd.isna(half) else float(half)


def metric_bars(
    summary: pd.DataFrame, workload: str, metrics: Sequence[str], order: Sequence[str] = ()
) -> bytes:
    """One panel per metric: a bar per configuration (in ``order``, default: as in ``summary``)
    with its 95% interval over seeds. Panels share the configuration axis, so the labels are
    drawn once per row of panels, wrapped, and the figure grows with them instead of squeezing
    the bars."""
    labels = pd.Series(config_labels(summary), index=summary.index)
    order = list(order) or list(dict.fromkeys(labels))
    wrapped = [wrap_label(label) for label in order]
    lines = sum(text.count("\n") + 1 for text in wrapped)
    widest = max(len(line) for text in wrapped for line in text.split("\n"))
    columns = min(_COLUMNS, max(1, len(metrics)))
    rows = math.ceil(len(metrics) / columns) if metrics else 1
    height = max(1.6, 0.16 * lines + 0.35 * len(order) + 0.9)
    figure, axes = plt.subplots(
        rows,
        columns,
        figsize=(0.075 * widest + 3.3 * columns, height * rows + 0.5),
        squeeze=False,
        sharey=True,
        layout="constrained",
    )
    flat = [ax for row in axes for ax in row]
    positions = list(range(len(order)))
    for ax, metric in zip(flat, metrics, strict=False):
        rows_of = summary[summary["metric"] == metric]
        by_label = {labels[i]: r for i, r in rows_of.iterrows()}
        means = [float(by_label[x]["mean"]) if x in by_label else 0.0 for x in order]
        errors = [_half_width(by_label[x]) if x in by_label else 0.0 for x in order]
        ax.barh(positions, means, xerr=errors, color="#4477aa", ecolor="#222222", capsize=3)
        ax.set_yticks(positions, wrapped, fontsize=7)
        ax.set_title(_title(metric), fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
        _format_axis(ax, metric, "x")
    for ax in flat[len(metrics) :]:
        ax.set_visible(False)
    flat[0].invert_yaxis()  # shared: the first configuration on top in every panel
    figure.suptitle(f"{workload}: mean and 95% interval over seeds", fontsize=11)
    return _png(figure)


def _as_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def sweep_lines(summary: pd.DataFrame, workload: str, key: str, metrics: Sequence[str]) -> bytes:
    """One panel per metric: the metric against the swept value of ``key``, a line per profile."""
    data = summary.copy()
    data["swept"] = [json.loads(o).get(key) for o in data["overrides"]]
    data = data[data["swept"].notna()]
    values = sorted(
        set(data["swept"]), key=lambda v: (_as_number(v) is None, _as_number(v) or 0, v)
    )
    numeric = all(_as_number(v) is not None for v in values)
    data["x"] = [float(v) if numeric else values.index(v) for v in data["swept"]]
    data["series"] = config_labels(data, hide=[key])
    columns = min(_COLUMNS, max(1, len(metrics)))
    rows = math.ceil(len(metrics) / columns) if metrics else 1
    figure, axes = plt.subplots(
        rows, columns, figsize=(4.2 * columns, 3.2 * rows), squeeze=False, layout="constrained"
    )
    flat = [ax for row in axes for ax in row]
    for ax, metric in zip(flat, metrics, strict=False):
        part = data[data["metric"] == metric]
        for series, group in part.groupby("series", sort=True):
            group = group.sort_values("x")
            errors = [_half_width(r) for _, r in group.iterrows()]
            ax.errorbar(
                group["x"],
                group["mean"],
                yerr=errors,
                marker="o",
                capsize=3,
                label=wrap_label(str(series)),
            )
        if not numeric:
            ax.set_xticks(range(len(values)), values, fontsize=7)
        ax.set_xlabel(key, fontsize=7)
        ax.set_title(_title(metric), fontsize=9)
        ax.tick_params(labelsize=7)
        _format_axis(ax, metric, "y")
    for ax in flat[len(metrics) :]:
        ax.set_visible(False)
    if metrics:
        flat[0].legend(fontsize=6)
    figure.suptitle(f"{workload}: metrics against {key}", fontsize=11)
    return _png(figure)
