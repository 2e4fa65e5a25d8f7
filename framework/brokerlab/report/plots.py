"""The report's charts (matplotlib, Agg backend): PNG bytes, no files, no display.

Which metrics to draw is the caller's choice (:func:`brokerlab.report.verdicts.select_metrics`);
numbers on the axes use the report's formats (:mod:`brokerlab.report.numbers`).
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")  # no display on servers and executors; must precede pyplot

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from brokerlab.report.configs import config_label, config_labels
from brokerlab.report.numbers import format_metric, unit_header
from brokerlab.report.sweeps import numeric_order, sweep_values

__all__ = [
    "config_label",
    "config_labels",
    "metric_bars",
    "sweep_panels",
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


def _panel_title(values: Sequence[tuple[str, str]]) -> str:
    return "\n".join(wrap_label(f"{k}={v}", 48) for k, v in values)


def _numeric(values: Sequence[str]) -> bool:
    try:
        [float(v) for v in values]
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class _Line:
    """One series of a sweep panel: its x values (the swept ones) and means with intervals."""

    label: str
    x: list[str]
    y: list[float]
    low: list[float]
    high: list[float]
    knee_at: str | None = None


def sweep_panels(
    summary: pd.DataFrame,
    workload: str,
    key: str,
    metric: str,
    *,
    others: Sequence[str] = (),
    miss_ratio: bool = False,
    knees: Mapping[str, str] | None = None,
) -> bytes:
    """``metric`` against the swept values of ``key``: a line per profile with its 95% intervals,
    one panel per combination of the values of the ``others`` swept keys (small multiples, each
    with its own axes). ``miss_ratio`` draws 1 - ``metric`` (a hit ratio): the miss-ratio curve of
    a size sweep; ``knees`` (series label with ``key`` hidden -> value) ring the point where a
    series comes within a point of its best hit ratio. A profile ``key`` did not apply to ran once:
    a dashed line across its panel."""
    part = summary[summary["metric"] == metric]
    sets = [sweep_values(o) for o in part["overrides"]]
    series = config_labels(part, hide=[key, *others])
    with_key = config_labels(part, hide=[key])
    panels: dict[tuple[tuple[str, str], ...], dict[str, _Line]] = {}
    once: list[tuple[dict[str, str], str, pd.Series]] = []  # ran once: key did not apply
    for (_, row), values, label, knee_label in zip(
        part.iterrows(), sets, series, with_key, strict=True
    ):
        if key not in values:
            once.append((values, label, row))
            continue
        panel = tuple((k, values[k]) for k in others if k in values)
        line = panels.setdefault(panel, {}).setdefault(
            label, _Line(label, [], [], [], [], (knees or {}).get(knee_label))
        )
        mean, low, high = float(row["mean"]), float(row["ci95_low"]), float(row["ci95_high"])
        if miss_ratio:
            mean, low, high = 1 - mean, 1 - high, 1 - low
        line.x.append(values[key])
        line.y.append(mean)
        line.low.append(mean if math.isnan(low) else low)
        line.high.append(mean if math.isnan(high) else high)
    xs = numeric_order(v for lines in panels.values() for line in lines.values() for v in line.x)
    numeric = _numeric(xs)
    positive = numeric and all(float(v) > 0 for v in xs)
    log_x = positive and float(xs[-1]) / float(xs[0]) >= 10
    keys = sorted(panels, key=_sort_key)
    count = max(1, len(keys))
    columns = min(_COLUMNS, count)
    rows = math.ceil(count / columns)
    figure, axes = plt.subplots(
        rows,
        columns,
        figsize=(max(4.4 * columns, 8.0), 3.3 * rows + 0.9),  # one panel: room for the legend
        squeeze=False,
        layout="constrained",
    )
    flat = [ax for row in axes for ax in row]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    order = list(dict.fromkeys(label for lines in panels.values() for label in lines))
    order += [label for _, label, _ in once if label not in order]
    colour = {label: colours[i % len(colours)] for i, label in enumerate(order)}
    handles: dict[str, Artist] = {}
    for ax, panel in zip(flat, keys, strict=False):
        for label, line in panels[panel].items():
            points = sorted(
                zip(line.x, line.y, line.low, line.high, strict=True),
                key=lambda point: xs.index(point[0]),
            )
            x = [float(p[0]) if numeric else xs.index(p[0]) for p in points]
            y = [p[1] for p in points]
            errors = [[p[1] - p[2] for p in points], [p[3] - p[1] for p in points]]
            drawn = ax.errorbar(
                x, y, yerr=errors, marker="o", capsize=3, color=colour[label], label=label
            )
            handles.setdefault(wrap_label(label, 60), drawn)
            if line.knee_at is not None and line.knee_at in line.x:
                at = line.x.index(line.knee_at)
                knee_x = float(line.knee_at) if numeric else xs.index(line.knee_at)
                ax.plot(
                    [knee_x], [line.y[at]], marker="o", markersize=13, markerfacecolor="none",
                    markeredgecolor=colour[label], markeredgewidth=2, linestyle="none",
                )  # fmt: skip
                ax.annotate(
                    f"{line.knee_at}: within 1 point",
                    (knee_x, line.y[at]),
                    textcoords="offset points",
                    xytext=(6, 8),
                    fontsize=6,
                    color=colour[label],
                )
        for values, label, row in once:
            if any(values.get(k, v) != v for k, v in panel):
                continue
            mean = float(row["mean"])
            mean = 1 - mean if miss_ratio else mean
            shown = f"{label} (ran once: {key} did not apply)"
            drawn = ax.axhline(mean, linestyle="--", linewidth=1.2, color=colour[label])
            handles.setdefault(wrap_label(shown, 60), drawn)
        if log_x:
            ax.set_xscale("log")
        if numeric:
            ax.set_xticks([float(v) for v in xs], xs, fontsize=7)
            ax.minorticks_off()
        else:
            ax.set_xticks(range(len(xs)), xs, fontsize=7)
        ax.set_xlabel(key, fontsize=7)
        ax.set_title(_panel_title(panel), fontsize=8)
        ax.tick_params(labelsize=7)
        if miss_ratio:
            ax.set_ylabel(f"miss ratio (1 - {metric})", fontsize=7)
            ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.3g}"))
        else:
            ax.set_ylabel(_title(metric), fontsize=7)
            _format_axis(ax, metric, "y")
    for ax in flat[len(keys) :]:
        ax.set_visible(False)
    if handles:
        figure.legend(
            list(handles.values()),
            list(handles),
            loc="outside lower center",
            ncols=1 if max(len(label) for label in handles) > 45 else min(2, len(handles)),
            fontsize=7,
        )
    what = "miss-ratio curve" if miss_ratio else metric
    figure.suptitle(f"{workload}: {what} against {key}", fontsize=11)
    return _png(figure)


def _sort_key(panel: tuple[tuple[str, str], ...]) -> list[tuple[bool, float, str]]:
    key = []
    for _, value in panel:
        try:
            key.append((False, float(value), value))
        except ValueError:
            key.append((True, 0.0, value))
    return key
