"""Assemble ``report.html``: one self-contained file, plots embedded as base64 PNG.

The page opens with the answer (a verdict line per workload) and what was compared (each
configuration's plugins and distinctive settings); then a section per workload: its ranking,
its chart and the metrics the data singled out; then the failed cells.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from brokerlab.report.configs import Configuration, config_labels
from brokerlab.report.numbers import format_metric, unit_header
from brokerlab.report.verdicts import Difference, MetricSelection, WorkloadVerdict

__all__ = ["WorkloadSection", "render"]

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 80em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; }
th:first-child, td:first-child, th.text, td.text { text-align: left; }
td.text { overflow-wrap: anywhere; }  /* a Java class name must not widen the table */
.wide { overflow-x: auto; max-width: 100%; }
img { max-width: 100%; }
pre { font-size: 0.75em; background: #f6f6f6; padding: 0.5em; overflow-x: auto; }
.failed { color: #a00; }
.verdict { margin: 0.5em 0; }
.verdict .aside { display: block; color: #555; font-size: 0.9em; }
.quiet { color: #666; font-size: 0.85em; }
"""


@dataclass(frozen=True)
class WorkloadSection:
    """What the page shows of one workload."""

    verdict: WorkloadVerdict
    selection: MetricSelection
    summary: pd.DataFrame
    """summary.csv rows of this workload."""
    order: Sequence[str]
    """Configuration labels in report order."""
    bars: bytes
    sweeps: Mapping[str, bytes]
    """Heading (``against KEY``, ``miss-ratio curve against KEY``) -> PNG, in page order."""


def _e(text: object) -> str:
    return html.escape(str(text))


def _image(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode()
    return f'<img src="data:image/png;base64,{data}" alt="{_e(alt)}">'


def _value(row: pd.Series) -> str:
    if row["n"] == 0:
        return "not reported"  # declared for this simulator, reported by none of the seeds
    if pd.isna(row["mean"]):
        return ""
    shown = format_metric(str(row["metric"]), float(row["mean"]))
    half = (row["ci95_high"] - row["ci95_low"]) / 2
    if pd.isna(half) or half == 0:
        return shown
    return f"{shown} &plusmn; {_e(format_metric(str(row['metric']), float(half)))}"


def _header(metric: str) -> str:
    unit = unit_header(metric)
    return f"<th>{_e(metric)}" + (f"<br><small>{_e(unit)}</small>" if unit else "") + "</th>"


def _metric_table(section: WorkloadSection) -> str:
    summary = section.summary
    shown = section.selection.shown
    labels = pd.Series(config_labels(summary), index=summary.index)
    lines = [
        "<div class='wide'><table><tr><th>configuration</th><th>seeds</th>"
        + "".join(_header(m) for m in shown)
        + "</tr>"
    ]
    groups = dict(list(summary.groupby(labels, sort=False)))
    for label in section.order:
        group = groups.get(label)
        if group is None:
            continue
        by_metric = {r["metric"]: r for _, r in group.iterrows()}
        cells = "".join(f"<td>{_value(by_metric[m]) if m in by_metric else ''}</td>" for m in shown)
        lines.append(f"<tr><td>{_e(label)}</td><td>{int(group['n'].max())}</td>{cells}</tr>")
    lines.append("</table></div>")
    return "\n".join(lines)


def _difference(label: str, difference: Difference | None, metric: str) -> str:
    if difference is None or difference.reference == label:
        return "<td></td><td></td>"
    verdict = {True: "yes", False: "no", None: "1 seed"}[difference.distinguishable]
    return f"<td>{_e(difference.text(metric))}</td><td>{verdict}</td>"


def _ranking(verdict: WorkloadVerdict) -> str:
    metric = verdict.metric
    unit = unit_header(metric)
    lines = [
        "<div class='wide'><table><tr><th>rank</th><th class='text'>configuration</th>"
        f"<th>seeds</th><th>{_e(metric)}{f'<br><small>{_e(unit)}</small>' if unit else ''}</th>"
        "<th>vs best (95% interval)</th><th>beyond noise</th>"
        f"<th>vs {_e(verdict.baseline)} (95% interval)</th><th>beyond noise</th></tr>"
    ]
    for s in verdict.standings:
        lines.append(
            f"<tr><td>{s.rank}</td><td class='text'>{_e(s.label)}</td><td>{s.seeds}</td>"
            f"<td>{_e(format_metric(metric, s.mean))}</td>"
            f"{_difference(s.label, s.vs_best, metric)}"
            f"{_difference(s.label, s.vs_baseline, metric)}</tr>"
        )
    lines.append("</table></div>")
    return "\n".join(lines)


def _configurations(configurations: Sequence[Configuration]) -> str:
    if not configurations:
        return ""
    first = configurations[0].label
    lines = [
        "<h2>Configurations</h2>",
        f"<p>Settings are listed where they differ from <b>{_e(first)}</b>.</p>",
        "<div class='wide'><table><tr><th>configuration</th><th class='text'>plugins</th>"
        f"<th class='text'>settings that differ from {_e(first)}</th></tr>",
    ]
    for c in configurations:
        sources = c.source_line()
        details = (
            f"<details><summary class='quiet'>from</summary>{_e(sources)}</details>"
            if sources
            else ""
        )
        compiled = f"<div class='quiet'>{_e(c.compiled_line())}</div>"
        lines.append(
            f"<tr><td>{_e(c.label)}</td><td class='text'>{_e(c.plugin_line())}{compiled}{details}"
            "</td>"
            f"<td class='text'>{_e(c.difference_line())}</td></tr>"
        )
    lines.append("</table></div>")
    return "\n".join(lines)


def _verdict_html(verdict: WorkloadVerdict) -> str:
    """The verdict's text, its workload in bold and each aside on a line of its own."""
    first, *asides = verdict.sentences()
    name = verdict.workload
    head = f"<a href='#{_e(name)}'><strong>{_e(name)}</strong></a>{_e(first[len(name) :])}"
    return head + "".join(f" <span class='aside'>{_e(text)}</span>" for text in asides)


def _section(section: WorkloadSection) -> list[str]:
    verdict = section.verdict
    selection = section.selection
    name = verdict.workload
    parts = [
        f"<h2 id='{_e(name)}'>{_e(name)}</h2>",
        f"<p class='verdict'>{_verdict_html(verdict)}</p>",
        _ranking(verdict),
        _image(section.bars, name),
        _metric_table(section),
    ]
    if selection.within_noise:
        parts.append(
            "<p class='quiet'>Within seed noise in every configuration: "
            + _e(", ".join(selection.within_noise))
            + "</p>"
        )
    if selection.unchanged:
        parts.append(
            "<p class='quiet'>Unchanged (one value in every cell): "
            + _e(", ".join(selection.unchanged))
            + "</p>"
        )
    for title, png in section.sweeps.items():
        parts.append(f"<h3>{_e(name)}: {_e(title)}</h3>")
        parts.append(_image(png, f"{name}: {title}"))
    return parts


def render(
    frame: pd.DataFrame,
    sections: Sequence[WorkloadSection],
    configurations: Sequence[Configuration],
    provenance: Sequence[str],
) -> str:
    """The whole page: verdicts, configurations, a section per workload, then failed cells."""
    failed = frame[frame["status"] != "ok"]
    failed_text = f"{len(failed)} failed"
    if len(failed):  # red only when something failed
        failed_text = f"<span class='failed'>{failed_text}</span>"
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>brokerlab matrix report</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>brokerlab matrix report</h1>",
        f"<p>{len(frame):,} cells: {len(frame) - len(failed):,} ok, {failed_text}. "
        "Differences are paired by seed (same workload, same seeds); their 95% t intervals "
        "are over the per-seed differences. Values are the mean over seeds &plusmn; the "
        "half-width of its 95% t interval. Full numbers: <code>verdicts.csv</code>, "
        "<code>summary.csv</code>; every row: the Parquet files under <code>results/</code>.</p>",
        "<ul class='quiet'>" + "".join(f"<li>{_e(line)}</li>" for line in provenance) + "</ul>",
        "<h2>Verdicts</h2>",
        "<ul>"
        + "".join(f"<li class='verdict'>{_verdict_html(s.verdict)}</li>" for s in sections)
        + "</ul>",
        _configurations(configurations),
    ]
    for section in sections:
        parts += _section(section)
    if len(failed):
        parts.append("<h2 class='failed'>Failed cells</h2>")
        for row in failed.itertuples():
            overrides = json.loads(row.overrides or "{}")
            title = f"{row.cell_id}: {row.profile} {overrides or ''} {row.workload} seed {row.seed}"
            parts.append(
                f"<details><summary>{_e(title)}</summary><pre>{_e(row.error)}</pre></details>"
            )
    parts.append("</body></html>")
    return "\n".join(parts)
