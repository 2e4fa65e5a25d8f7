"""The report of a matrix run: ``report.html`` (self-contained) and PNG plots beside it.

:func:`build_report` reads only the Parquet results of an ``--out`` folder, so ``brokerlab
report DIR`` can rebuild the report at any time, and without Spark.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from brokerlab.errors import WorkloadError
from brokerlab.spark.results import ResultStore, atomic_path, summarize, write_summary

__all__ = ["build_report", "swept_keys"]


def swept_keys(overrides: list[str]) -> list[str]:
    """The ``--set`` keys that take more than one value across the rows."""
    values: dict[str, set[str]] = {}
    for text in overrides:
        for key, value in json.loads(text or "{}").items():
            values.setdefault(key, set()).add(value)
    return [key for key, seen in values.items() if len(seen) > 1]


def _file_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


def build_report(out: Path) -> Path:
    """Write ``summary.csv``, ``plots/*.png`` and ``report.html`` in ``out``; returns the HTML path.

    Raises :class:`WorkloadError` when ``out`` holds no results.
    """
    from brokerlab.report.html import render  # matplotlib: only when a report is made
    from brokerlab.report.plots import metric_bars, sweep_lines

    frame = ResultStore(out).load()
    if frame.empty:
        raise WorkloadError(
            "holds no matrix results (expected results/workload=*/*.parquet)", value=str(out)
        )
    write_summary(frame, out)
    summary = summarize(frame)
    plots = out / "plots"
    plots.mkdir(exist_ok=True)
    bars: dict[str, bytes] = {}
    sweeps: dict[tuple[str, str], bytes] = {}
    keys = swept_keys(list(frame["overrides"]))
    for workload, part in summary.groupby("workload", sort=True):
        name = str(workload)
        bars[name] = metric_bars(part, name)
        _write(plots / f"{_file_name(name)}.png", bars[name])
        for key in keys:
            sweeps[(name, key)] = sweep_lines(part, name, key)
            _write(plots / f"{_file_name(name)}--{_file_name(key)}.png", sweeps[(name, key)])
    provenance = [
        "brokerlab " + ", ".join(sorted(set(frame["brokerlab_version"].dropna()))),
        "scale " + ", ".join(str(s) for s in sorted(set(frame["scale"]))),
        "plugins: " + "; ".join(sorted(set(frame["plugin_versions"].dropna()))),
    ]
    page = render(frame, summary, bars, sweeps, provenance)
    path = out / "report.html"
    with atomic_path(path) as temporary:
        temporary.write_text(page, encoding="utf-8")
    return path


def _write(path: Path, data: bytes) -> None:
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)
