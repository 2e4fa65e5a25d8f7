"""The report of a matrix run: ``report.html`` (self-contained), ``verdicts.csv`` and PNG plots.

:func:`build_report` reads only the ``--out`` folder (the Parquet results and ``matrix.json``,
the ``--profile`` order of the last matrix run into it and the declaration of every metric), so
``brokerlab report DIR`` can rebuild the report at any time, without Spark, and without the
plugins that declared the metrics.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from brokerlab.errors import WorkloadError
from brokerlab.metrics import current, using
from brokerlab.report.sweeps import SIZE_KEYS, hit_ratio_metric, knees, sweep_values, swept_keys
from brokerlab.report.verdicts import WorkloadVerdict, select_metrics, verdict_rows, verdicts
from brokerlab.spark.results import (
    ResultStore,
    atomic_path,
    read_metrics,
    read_not_applied,
    read_profile_order,
    summarize,
    write_summary,
)
from brokerlab.spark.schema import STATUS_OK

__all__ = ["Report", "build_report", "swept_keys"]


@dataclass(frozen=True)
class Report:
    """What :func:`build_report` wrote: the HTML page, and the verdicts it opens with."""

    path: Path
    verdicts: tuple[WorkloadVerdict, ...]


def _file_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


def build_report(out: Path, *, baseline: str | None = None) -> Report:
    """Write ``summary.csv``, ``verdicts.csv``, ``plots/*.png`` and ``report.html`` in ``out``.

    ``baseline`` (a configuration label or profile name) is what every configuration is compared
    with; by default the first ``--profile`` of the matrix. Raises :class:`WorkloadError` when
    ``out`` holds no results or ``baseline`` names no configuration. Metrics are read with the
    units, kinds and meanings recorded in ``out`` (folders written before they were: the
    installed plugins').
    """
    recorded = read_metrics(out)
    with using(recorded if recorded is not None else current()):
        return _build_report(out, baseline)


def _build_report(out: Path, baseline: str | None) -> Report:
    from brokerlab.report.configs import describe_configurations, ordered_labels
    from brokerlab.report.html import WorkloadSection, render  # matplotlib: only for a report
    from brokerlab.report.plots import metric_bars

    frame = ResultStore(out).load()
    if frame.empty:
        raise WorkloadError(
            "holds no matrix results (expected results/workload=*/*.parquet)", value=str(out)
        )
    profiles = read_profile_order(out)
    found = verdicts(frame, baseline=baseline, profiles=profiles, not_applied=read_not_applied(out))
    write_summary(frame, out)
    with atomic_path(out / "verdicts.csv") as temporary:
        verdict_rows(found).to_csv(temporary, index=False)
    summary = summarize(frame)
    ok = frame[frame["status"] == STATUS_OK]
    order = ordered_labels(ok, profiles) if not ok.empty else []
    if found and order and found[0].baseline in order:  # the baseline is described first
        order.remove(found[0].baseline)
        order.insert(0, found[0].baseline)
    plots = out / "plots"
    plots.mkdir(exist_ok=True)
    keys = swept_keys(list(frame["overrides"]))
    sections = []
    for verdict in found:
        name = verdict.workload
        rows = ok[ok["workload"] == name]
        part = summary[summary["workload"] == name]
        selection = select_metrics(rows, verdict.metric)
        labels = [s.label for s in verdict.standings]
        ranked = [label for label in order if label in labels]
        bars = metric_bars(part, name, selection.shown[:12], ranked)
        _write(plots / f"{_file_name(name)}.png", bars)
        sweeps = _sweep_plots(rows, part, name, verdict.metric, keys)
        for title, png in sweeps.items():
            _write(plots / f"{_file_name(name)}--{_file_name(title)}.png", png)
        sections.append(WorkloadSection(verdict, selection, part, ranked, bars, sweeps))
    provenance = [
        "brokerlab " + ", ".join(sorted(set(frame["brokerlab_version"].dropna()))),
        "scale " + ", ".join(f"{s:g}" for s in sorted(set(frame["scale"]))),
    ]
    configurations = describe_configurations(ok, order) if order else []
    page = render(frame, sections, configurations, provenance)
    path = out / "report.html"
    with atomic_path(path) as temporary:
        temporary.write_text(page, encoding="utf-8")
    return Report(path, tuple(found))


def _sweep_plots(
    rows: pd.DataFrame, part: pd.DataFrame, workload: str, metric: str, keys: list[str]
) -> dict[str, bytes]:
    """Per key swept in this workload: the headline against it (small multiples over the other
    keys); for a size key also the miss-ratio curve with its knees. Title -> PNG."""
    from brokerlab.report.plots import sweep_panels

    plots = {}
    for key in keys:
        values = {sweep_values(o).get(key) for o in rows["overrides"]} - {None}
        if len(values) < 2:
            continue  # not swept in this workload: the key did not apply to its profiles
        others = [k for k in keys if k != key]
        plots[f"against {key}"] = sweep_panels(part, workload, key, metric, others=others)
        hit_ratio = hit_ratio_metric(rows)
        if key in SIZE_KEYS and hit_ratio is not None:
            marks = {knee.series: knee.size for knee in knees(rows, key, hit_ratio)}
            plots[f"miss-ratio curve against {key}"] = sweep_panels(
                part, workload, key, hit_ratio, others=others, miss_ratio=True, knees=marks
            )
    return plots


def _write(path: Path, data: bytes) -> None:
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)
