"""Text for people: the result table and a progress bar (used by the CLI only)."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import TextIO

from brokerlab.metrics import FRAMEWORK_PLUGIN, Declared, Metric, MetricRegistry, current
from brokerlab.simulation import Result

__all__ = ["ProgressBar", "format_result", "metrics_markdown"]

GROUP_TITLES = {
    "messages": "Messages",
    "latency": "Latency (virtual time)",
    "publishing": "Publishing (closed-loop producers, write latency)",
    "cache": "Entry cache and storage",
    "reads": "Storage reads under way (latency, shared reads, in-flight limit)",
    "delayed": "Delayed delivery",
    "ack_state": "Ack state",
    "kafka_index_cache": "Kafka remote index cache",
    "cache_trace": "Cache trace replay",
    "invariants": "Invariants (must be zero)",
}


def format_result(result: Result, metrics: MetricRegistry | None = None) -> str:
    """A readable table: non-zero metrics by group, and every invariant with its verdict; for a
    cluster, then the metrics that differ between its brokers, one column per broker. Metrics
    nobody reported are left out; ``metrics`` (default: the registry in effect) gives units."""
    registry = metrics if metrics is not None else current()
    titles = {**GROUP_TITLES, **{m.group: m.group for m in registry.values()}, **GROUP_TITLES}
    lines = [
        f"profile  {result.profile or '(defaults)'}",
        f"workload {result.workload}   seed {result.seed}",
        "plugins  " + ", ".join(f"{k}={v}" for k, v in result.plugins.items() if v),
    ]
    for group, title in titles.items():
        rows = [
            m
            for m in registry.values()
            if result.metrics.get(m.name) is not None
            and m.group == group
            and (result.metrics[m.name] or m.invariant)
        ]
        if not rows:
            continue
        lines.append("")
        lines.append(title)
        for m in rows:
            value = result.metrics.get(m.name) or 0
            verdict = ("  ok" if not value else "  VIOLATED") if m.invariant else ""
            lines.append(f"  {m.name:<34} {_shown(value):>18} {m.unit}{verdict}")
    if result.per_broker:
        lines += _per_broker_lines(result.per_broker, registry)
    return "\n".join(lines) + "\n"


def _shown(value: float | None) -> str:
    if value is None:
        return "-"
    whole = not isinstance(value, float) or value.is_integer()
    return f"{value:,.0f}" if whole else f"{value:,.4f}"


def _per_broker_lines(
    per_broker: Sequence[Mapping[str, float | None]], registry: MetricRegistry
) -> list[str]:
    """The metrics whose value is not the same on every broker, in registry order: where the
    brokers' work went (an identical row, e.g. a zero everywhere, says nothing per broker)."""
    rows = [
        m
        for m in registry.values()
        if m.name in per_broker[0] and len({b.get(m.name) for b in per_broker}) > 1
    ]
    header = "".join(f"{f'broker {i}':>15}" for i in range(len(per_broker)))
    lines = ["", "Per broker (the metrics that differ between brokers)", f"  {'':<34}{header}"]
    for m in rows:
        values = "".join(f"{_shown(b.get(m.name)):>15}" for b in per_broker)
        lines.append(f"  {m.name:<34}{values} {m.unit}")
    return lines


def metrics_markdown(metrics: MetricRegistry | None = None) -> str:
    """``docs/metrics.md``: every declared metric (default: of the registry in effect), by the
    plugin that declares it, then by group; generated from the registry."""
    registry = metrics if metrics is not None else current()
    lines = [
        "# Metrics",
        "",
        "Every number a simulation reports, generated from the metric registry (regenerate",
        "with `brokerlab metrics --markdown > docs/metrics.md`). A metric belongs to whoever",
        "produces it: the broker model declares its own, and each plugin declares its own",
        "through the `brokerlab_metrics` hook ([Writing a plugin](writing-a-plugin.md#metrics)).",
        "Counters add up over the run, gauges are peaks or end values as described, ratios are",
        "computed at the end. Times are virtual. Invariants must be zero in every correct run;",
        "`brokerlab run` marks a violation. A metric a run did not report is null (JSON `null`,",
        'empty in Parquet and `summary.csv`, "not reported" in the report), never 0.',
    ]
    owners: dict[str, list[Declared]] = {}
    for declared in registry.declared():
        owners.setdefault(declared.plugin, []).append(declared)
    for plugin, entries in owners.items():
        lines += ["", f"## {_owner_title(plugin, entries[0])}"]
        metrics_of_owner = [d.metric for d in entries]
        groups = dict.fromkeys([*GROUP_TITLES, *(m.group for m in metrics_of_owner)])
        for group in groups:
            rows = [m for m in metrics_of_owner if m.group == group]
            if not rows:
                continue
            title = GROUP_TITLES.get(group, group)
            lines += ["", f"### {title}", "", "| metric | unit | kind | meaning |"]
            lines += ["|---|---|---|---|"]
            lines += [f"| `{m.name}` | {m.unit} | {m.kind} | {_meaning(m)} |" for m in rows]
    return "\n".join(lines) + "\n"


def _owner_title(plugin: str, declared: Declared) -> str:
    distribution = declared.source.split(" ")[0]  # without the version: the page stays put
    if plugin == FRAMEWORK_PLUGIN:
        return f"The broker model ({distribution})"
    return f"Plugin `{plugin}` ({distribution})"


def _meaning(m: Metric) -> str:
    text = m.description
    if m.reported_when:
        text += f" Reported only when {m.reported_when}."
    if m.higher_is_better:
        text += " Higher is better."
    if m.aggregation != "mean":
        text += f" Seeds aggregate by {m.aggregation}."
    return text


class ProgressBar:
    """Progress of a run, shown only once it has taken more than ``after_s``.

    On a terminal a one-line bar redrawn in place; elsewhere (a log, a pipe) one line every
    ``every_s`` seconds, so a long run in the background still says how far it is. ``note`` (the
    resource estimate) is shown with the first of them.
    """

    def __init__(
        self,
        stream: TextIO,
        label: str,
        after_s: float = 2.0,
        *,
        note: str = "",
        every_s: float = 30.0,
    ) -> None:
        self.stream = stream
        self.label = label
        self.after_s = after_s
        self.note = note
        self.every_s = every_s
        self.started = time.monotonic()
        self.shown = False
        self.last_line = -math.inf
        self.terminal = stream.isatty()

    def update(self, fraction: float) -> None:
        elapsed = time.monotonic() - self.started
        if elapsed < self.after_s:
            return
        fraction = min(max(fraction, 0.0), 1.0)
        left = elapsed / fraction - elapsed if fraction > 0 else 0.0
        if self.terminal:
            filled = int(fraction * 30)
            bar = "#" * filled + "." * (30 - filled)
            note = f"  ({self.note})" if self.note else ""
            self.stream.write(f"\r{self.label} [{bar}] {fraction:4.0%}  ~{left:4.0f}s left{note}")
        elif elapsed - self.last_line >= self.every_s:
            note = f" ({self.note})" if self.note and not self.shown else ""
            self.stream.write(
                f"{self.label}: {fraction:.0%} after {elapsed:.0f} s, ~{left:.0f} s left{note}\n"
            )
            self.last_line = elapsed
        else:
            return
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown and self.terminal:
            self.stream.write("\n")
            self.stream.flush()
