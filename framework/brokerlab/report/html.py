"""Assemble ``report.html``: one self-contained file, plots embedded as base64 PNG."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping, Sequence

import pandas as pd

from brokerlab.metrics import METRICS
from brokerlab.report.plots import config_labels, key_metrics

__all__ = ["render"]

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
img { max-width: 100%; }
pre { font-size: 0.75em; background: #f6f6f6; padding: 0.5em; overflow-x: auto; }
.failed { color: #a00; }
"""


def _image(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode()
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">'


def _cell(row: pd.Series) -> str:
    if pd.isna(row["mean"]):
        return ""
    half = (row["ci95_high"] - row["ci95_low"]) / 2
    shown = f"{row['mean']:,.4g}"
    return shown if pd.isna(half) else f"{shown} &plusmn; {half:,.2g}"


def _table(summary: pd.DataFrame) -> str:
    shown = key_metrics(summary)
    head = "".join(f"<th>{html.escape(m)}<br><small>{METRICS[m].unit}</small></th>" for m in shown)
    lines = [f"<table><tr><th>configuration</th><th>seeds</th>{head}</tr>"]
    # A row per configuration label: it tells apart scales and settings fingerprints, so no
    # metric of one configuration overwrites another's.
    labels = pd.Series(config_labels(summary), index=summary.index)
    for label, group in summary.groupby(labels, sort=False):
        by_metric = {r["metric"]: r for _, r in group.iterrows()}
        seeds = int(group["n"].max())
        cells = "".join(f"<td>{_cell(by_metric[m]) if m in by_metric else ''}</td>" for m in shown)
        lines.append(f"<tr><td>{html.escape(str(label))}</td><td>{seeds}</td>{cells}</tr>")
    lines.append("</table>")
    return "\n".join(lines)


def render(
    frame: pd.DataFrame,
    summary: pd.DataFrame,
    bars: Mapping[str, bytes],
    sweeps: Mapping[tuple[str, str], bytes],
    provenance: Sequence[str],
) -> str:
    """The whole page: overview, a section per workload, then failed cells."""
    failed = frame[frame["status"] != "ok"]
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>brokerlab matrix report</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>brokerlab matrix report</h1>",
        f"<p>{len(frame)} cells: {len(frame) - len(failed)} ok, "
        f"<span class='failed'>{len(failed)} failed</span>. Each value is the mean over seeds "
        "&plusmn; the half-width of its 95% t interval. Full numbers: <code>summary.csv</code>; "
        "every row: the Parquet files under <code>results/</code>.</p>",
        "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in provenance) + "</ul>",
    ]
    for workload in sorted(bars):
        parts.append(f"<h2>{html.escape(workload)}</h2>")
        parts.append(_image(bars[workload], workload))
        parts.append(_table(summary[summary["workload"] == workload]))
        for (name, key), png in sorted(sweeps.items()):
            if name == workload:
                parts.append(f"<h3>{html.escape(workload)}: against {html.escape(key)}</h3>")
                parts.append(_image(png, f"{workload} against {key}"))
    if len(failed):
        parts.append("<h2 class='failed'>Failed cells</h2>")
        for row in failed.itertuples():
            overrides = json.loads(row.overrides or "{}")
            title = f"{row.cell_id}: {row.profile} {overrides or ''} {row.workload} seed {row.seed}"
            parts.append(
                f"<details><summary>{html.escape(title)}</summary>"
                f"<pre>{html.escape(str(row.error))}</pre></details>"
            )
    parts.append("</body></html>")
    return "\n".join(parts)
