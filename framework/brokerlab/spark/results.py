"""The results folder: Parquet partitioned by workload, one row per cell, written durably.

Layout of ``--out DIR``::

    DIR/results/workload=<name>/part-<uuid>.parquet   one row per cell: what users query
    DIR/attempts/workload=<name>/part-<uuid>.parquet  earlier rows of retried cells (history)
    DIR/quarantine/workload=<name>/...                files found unreadable, moved aside
    DIR/matrix.json                                   the --profile order of the last run, and
                                                      every metric's unit, kind and meaning
    DIR/summary.csv                                   mean and 95% t interval over seeds
    DIR/verdicts.csv                                  per workload, configurations ranked
    DIR/report.html, DIR/plots/*.png                  the report (brokerlab.report)

Every file is written under ``DIR/.tmp``, synced, renamed into place and its folder synced, so
neither a crash nor a power cut leaves a half-written file where a reader looks. A retried cell's
new row replaces its old one, which moves to ``attempts/``: ``pandas.read_parquet(DIR/results)``
counts every cell once. A part file that cannot be read as a result file (empty, truncated, not
Parquet, a column of another type) is moved to ``quarantine/`` with a warning, and its cells count
as not run. A file whose rows are all one-broker runs has no ``per_broker`` column, as files had
before there was one; readers see it as null. The metric columns are those the matrix's plugins
declare; a reader keeps every float column of a part file that is not a cell column as a metric,
so results outlive the plugins that produced them.
"""

from __future__ import annotations

import json
import math
import os
import sys
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from brokerlab.errors import OutputError
from brokerlab.files import atomic_path, fsync_folder, replace_durably
from brokerlab.metrics import MetricRegistry, current
from brokerlab.spark.schema import FIXED_COLUMNS, PER_BROKER_COLUMN, STATUS_OK, result_schema

__all__ = [
    "ATTEMPTS",
    "GROUP_COLUMNS",
    "MATRIX_FILE",
    "QUARANTINE",
    "RESULTS",
    "ResultStore",
    "UnreadablePart",
    "atomic_path",
    "read_metrics",
    "read_not_applied",
    "read_part",
    "read_profile_order",
    "summarize",
    "t_quantile_975",
    "warn_on_stderr",
    "write_profile_order",
]

MATRIX_FILE = "matrix.json"
"""``{"profiles": [label, ...], "metrics": {name: {unit, kind, ...}}}``: the ``--profile`` order of
the last matrix run into a folder, which decides the report's default baseline and the order of
its configurations, and the declaration of every metric its matrices reported (with the plugin
that declared it), so a report needs none of those plugins installed."""

# What identifies a configuration: the fingerprint of the resolved settings tells apart runs of one
# profile and --set values whose environment (BROKERLAB_<key>) or profile file differed.
GROUP_COLUMNS = ("profile", "overrides", "profile_fingerprint", "workload", "scale")

# Two-sided 95% quantiles of Student's t by degrees of freedom (no scipy at run time).
_T975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    11: 2.201,
    12: 2.179,
    13: 2.160,
    14: 2.145,
    15: 2.131,
    16: 2.120,
    17: 2.110,
    18: 2.101,
    19: 2.093,
    20: 2.086,
    21: 2.080,
    22: 2.074,
    23: 2.069,
    24: 2.064,
    25: 2.060,
    26: 2.056,
    27: 2.052,
    28: 2.048,
    29: 2.045,
    30: 2.042,
    40: 2.021,
    60: 2.000,
    120: 1.980,
}


def t_quantile_975(dof: int) -> float:
    """The 0.975 quantile of Student's t with ``dof`` degrees of freedom (table, conservative)."""
    if dof < 1:
        return math.nan
    if dof in _T975:
        return _T975[dof]
    above = [d for d in _T975 if d > dof]
    return _T975[min(above)] if above else 1.960  # the next smaller dof is the safe side


RESULTS, ATTEMPTS, QUARANTINE = "results", "attempts", "quarantine"
"""The folders of ``DIR``: the rows users read, the replaced rows of retried cells, and files
moved aside because they could not be read."""

# The cell columns of a part file (the workload is the folder's name), those it cannot lack, and
# the type of its metric columns.
_PART_TYPES = {f.name: f.type for f in result_schema(()) if f.name != "workload"}
_METRIC_TYPE = pa.float64()
_REQUIRED = ("cell_id", "status", "finished_at")

Warn = Callable[[str], None]


def warn_on_stderr(message: str) -> None:
    """The default of :class:`ResultStore`'s ``warn``: one ``brokerlab: warning:`` line."""
    sys.stderr.write(f"brokerlab: warning: {message}\n")


class UnreadablePart(Exception):
    """A file under ``results/`` that is not a result file brokerlab can read."""


@dataclass(frozen=True)
class _Part:
    path: Path
    workload: str
    table: pa.Table  # the file's rows, without the workload column


class ResultStore:
    """One ``--out`` folder: add finished waves, list finished cells, load every cell's row.

    Writers must hold the folder's lock (:mod:`brokerlab.spark.lock`): the store keeps an index
    of which file holds which cell, read once, and trusts no one else changes the folder.
    """

    def __init__(
        self, out: Path, warn: Warn | None = None, metrics: Sequence[str] | None = None
    ) -> None:
        self.out = out
        # The metric columns readers get first, in this order (default: the folder's recorded
        # metrics, else the registry in effect); any other metric column found follows.
        self.metrics = metrics
        self.results = out / RESULTS
        self.attempts = out / ATTEMPTS
        self.quarantine = out / QUARANTINE
        self._warn = warn or warn_on_stderr
        self._where: dict[str, set[Path]] | None = None  # cell id -> the part files holding it

    def write(self, table: pa.Table) -> None:
        """Add one wave's rows (one file per workload); earlier rows of these cells (a retried
        failed cell) move to ``attempts/``, so ``results/`` keeps one row per cell."""
        where = self._index()
        written = _write_parts(self.out, self.results, table)
        ids = set(table.column("cell_id").to_pylist())
        older = {path for cell in ids for path in where.get(cell, ())}
        for path in sorted(older):
            self._retire(path, ids)
        for path, cells in written:
            for cell in cells:
                where[cell] = {path}

    def compact(self) -> int:
        """Keep only each cell's latest row in ``results/`` (a run cut short between writing a
        retry and retiring the old row leaves two; so did brokerlab before this store);
        returns how many rows moved to ``attempts/``."""
        parts = self._scan()
        latest: dict[str, tuple[str, Path]] = {}
        for part in parts:
            ids = part.table.column("cell_id").to_pylist()
            finished = part.table.column("finished_at").to_pylist()
            for cell, at in zip(ids, finished, strict=True):
                if cell not in latest or (at or "", str(part.path)) >= latest[cell]:
                    latest[cell] = (at or "", part.path)
        moved = 0
        for part in parts:
            ids = part.table.column("cell_id").to_pylist()
            stale = {cell for cell in ids if latest[cell][1] != part.path}
            if stale:
                moved += self._retire(part.path, stale)
        return moved

    def load(self) -> pd.DataFrame:
        """Every cell's latest row, with the result schema's columns (empty if nothing ran)."""
        parts = self._scan()
        schema = result_schema(self._metric_columns(parts))
        if not parts:
            return schema.empty_table().to_pandas()
        table = pa.concat_tables(_conform(part, schema) for part in parts)
        frame = table.to_pandas(maps_as_pydicts="strict")
        frame[PER_BROKER_COLUMN] = frame[PER_BROKER_COLUMN].map(_as_list, na_action="ignore")
        frame["workload"] = frame["workload"].astype(str)
        frame = frame.sort_values(["cell_id", "finished_at"]).drop_duplicates(
            "cell_id", keep="last"
        )
        return frame[list(schema.names)].reset_index(drop=True)

    def _metric_columns(self, parts: Sequence[_Part]) -> list[str]:
        if self.metrics is not None:
            known = list(self.metrics)
        else:
            recorded = read_metrics(self.out)
            known = list(recorded if recorded is not None else current())
        found = {
            field.name
            for part in parts
            for field in part.table.schema
            if field.name not in FIXED_COLUMNS and field.type == _METRIC_TYPE
        }
        return [*known, *sorted(found.difference(known))]

    def finished(self) -> set[str]:
        """Ids of the cells that finished ``ok`` (failed cells run again on resume)."""
        frame = self.load()
        return set(frame.loc[frame["status"] == STATUS_OK, "cell_id"])

    # ---- reading, and moving aside what cannot be read ----

    def _scan(self) -> list[_Part]:
        """Every readable part file; unreadable ones are quarantined. Rebuilds the index."""
        parts: list[_Part] = []
        where: dict[str, set[Path]] = {}
        for path in _part_paths(self.results):
            try:
                table = read_part(path)
            except UnreadablePart as exc:
                self._set_aside(path, str(exc))
                continue
            workload = unquote(path.parent.name.partition("=")[2])
            parts.append(_Part(path, workload, table))
            for cell in table.column("cell_id").to_pylist():
                where.setdefault(cell, set()).add(path)
        self._where = where
        return parts

    def _index(self) -> dict[str, set[Path]]:
        if self._where is None:
            self._scan()
        assert self._where is not None
        return self._where

    def _set_aside(self, path: Path, reason: str) -> None:
        target = self.quarantine / path.parent.name / path.name
        for n in range(1, 1000):
            if not target.exists() and not target.is_symlink():
                break
            target = target.with_name(f"{path.name}.{n}")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
            fsync_folder(path.parent)
        except OSError as exc:
            raise OutputError(
                f"{path} is not a result file ({reason}) and cannot be moved aside to "
                f"{target}: {exc.strerror or exc}; move or delete it, then run again"
            ) from exc
        self._warn(
            f"{path} is not a result file ({reason}); moved it to {target}: its cells count "
            "as not run"
        )

    def _retire(self, path: Path, cells: set[str]) -> int:
        """Move the rows of ``cells`` in part file ``path`` to ``attempts/``; returns how many."""
        table = read_part(path)
        stale = pc.is_in(table.column("cell_id"), value_set=pa.array(sorted(cells), pa.string()))
        old, keep = table.filter(stale), table.filter(pc.invert(stale))
        if old.num_rows:
            workload = unquote(path.parent.name.partition("=")[2])
            column = pa.array([workload] * old.num_rows, pa.string())
            _write_parts(self.out, self.attempts, old.append_column("workload", column))
        if keep.num_rows:
            _write_file(self.out, keep, path)
        else:
            path.unlink()
            fsync_folder(path.parent)
        where = self._index()
        for cell in cells:
            where.get(cell, set()).discard(path)
        return int(old.num_rows)


def read_part(path: Path) -> pa.Table:
    """The rows of one part file, checked against the result schema; raises
    :class:`UnreadablePart` saying why they cannot be read."""
    if path.is_dir():
        raise UnreadablePart("a folder")
    if not path.is_file():
        raise UnreadablePart("not a regular file")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # a damaged file raises whatever the Parquet reader meets first
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        # "Could not open Parquet input source '<path>': <why>": the path is in the warning.
        text = text.split(f"{path}': ", 1)[-1]
        raise UnreadablePart(_short(text)) from exc
    for field in table.schema:
        expected = _PART_TYPES.get(field.name)
        if field.name == "workload":
            raise UnreadablePart("a 'workload' column of its own")  # the folder names it
        if expected is not None and field.type != expected:
            raise UnreadablePart(f"column {field.name!r} is {field.type}, not {expected}")
    missing = [name for name in _REQUIRED if name not in table.column_names]
    if missing:
        raise UnreadablePart(f"no {missing[0]!r} column")
    return table


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _part_paths(results: Path) -> list[Path]:
    """What ``pandas.read_parquet(results)`` reads: every entry of every ``workload=*`` folder
    but hidden ones (pyarrow skips names starting with ``.`` or ``_``)."""
    paths = []
    for folder in sorted(results.glob("workload=*")):
        if folder.is_dir():
            paths += [p for p in sorted(folder.iterdir()) if not p.name.startswith((".", "_"))]
    return paths


def _conform(part: _Part, schema: pa.Schema) -> pa.Table:
    """``part``'s rows under ``schema``: missing columns null, unknown ones dropped."""
    rows = part.table.num_rows
    columns = {
        name: part.table.column(name)
        if name in part.table.column_names
        else pa.nulls(rows, schema.field(name).type)
        for name in schema.names
    }
    columns["workload"] = pa.chunked_array([pa.array([part.workload] * rows, pa.string())])
    return pa.table(columns, schema=schema)


def _write_parts(out: Path, base: Path, table: pa.Table) -> list[tuple[Path, list[str]]]:
    """Write ``table`` under ``base`` as one new part file per workload; returns each file and
    the cell ids in it."""
    written = []
    workloads = table.column("workload").to_pylist()
    for name in sorted(set(workloads)):
        mask = pa.array([w == name for w in workloads])
        rows = table.filter(mask).drop_columns(["workload"])
        if PER_BROKER_COLUMN in rows.column_names:
            rows = _without_empty_per_broker(rows)
        folder = base / f"workload={quote(name, safe='')}"
        if not folder.is_dir():
            folder.mkdir(parents=True)
            fsync_folder(folder.parent)
        path = folder / f"part-{uuid.uuid4().hex}.parquet"
        _write_file(out, rows, path)
        written.append((path, rows.column("cell_id").to_pylist()))
    return written


def _write_file(out: Path, table: pa.Table, path: Path) -> None:
    """Write ``table`` to ``path`` through ``out/.tmp``: synced, renamed, folder synced."""
    staging = out / ".tmp"
    staging.mkdir(parents=True, exist_ok=True)
    temporary = staging / f"{uuid.uuid4().hex}.parquet"
    try:
        pq.write_table(table, temporary)
        replace_durably(temporary, path)
    except OSError as exc:
        if exc.filename in (None, str(temporary)):
            exc.filename = str(path)
        raise
    finally:
        temporary.unlink(missing_ok=True)


def _without_empty_per_broker(part: pa.Table) -> pa.Table:
    """``part`` without the per-broker column when no row has one (no cluster ran): the file
    is then what a one-broker matrix wrote before the column existed."""
    column = part.column(PER_BROKER_COLUMN)
    if column.null_count == len(column):
        return part.drop_columns([PER_BROKER_COLUMN])
    return part


def _as_list(value: Iterable[Mapping[str, float]]) -> list[dict[str, float]]:
    """A per-broker cell as plain Python: a list of dicts (pyarrow gives an array of them)."""
    return [dict(metrics) for metrics in value]


def summarize(frame: pd.DataFrame, metrics: MetricRegistry | None = None) -> pd.DataFrame:
    """Mean and 95% t interval over seeds, and the value of the metric's declared aggregation,
    per profile x overrides x profile fingerprint x workload x scale x metric.

    A group has a row for each metric its cells report, and for each declared metric of their
    simulator that every run reports (``reported_when`` empty) but none of them did: ``n`` 0 and
    the numbers blank, "not reported". Another simulator's metrics have no row (a Pulsar run has
    no row for a Kafka metric). ``metrics`` (default: the registry in effect) gives each metric's
    unit, simulator and aggregation.
    """
    registry = metrics if metrics is not None else current()
    ok = frame[frame["status"] == STATUS_OK]
    names = [c for c in frame.columns if c not in FIXED_COLUMNS]
    rows: list[dict[str, object]] = []
    # dropna=False: a row of an older file without a fingerprint still counts.
    for keys, group in ok.groupby(list(GROUP_COLUMNS), sort=True, dropna=False):
        reported = {m for m in names if group[m].notna().any()}
        simulators = {registry[m].simulator for m in reported if m in registry}
        for metric in names:
            values = group[metric].dropna().astype(float)
            n = len(values)
            declared = registry.get(metric)
            if not n and (
                declared is None or declared.simulator not in simulators or declared.reported_when
            ):
                continue  # another simulator's metric, or one reported only when a run needs it
            mean = float(values.mean()) if n else math.nan
            std = float(values.std(ddof=1)) if n > 1 else math.nan
            half = t_quantile_975(n - 1) * std / math.sqrt(n) if n > 1 else math.nan
            aggregation = declared.aggregation if declared is not None else "mean"
            rows.append(
                {
                    **dict(zip(GROUP_COLUMNS, keys, strict=True)),
                    "metric": metric,
                    "unit": declared.unit if declared is not None else "",
                    "n": n,
                    "mean": mean,
                    "std": std,
                    "ci95_low": mean - half,
                    "ci95_high": mean + half,
                    "aggregation": aggregation,
                    "aggregate": float(values.agg(aggregation)) if n else math.nan,
                }
            )
    columns = [
        *GROUP_COLUMNS,
        *("metric", "unit", "n", "mean", "std", "ci95_low", "ci95_high"),
        *("aggregation", "aggregate"),
    ]
    return pd.DataFrame(rows, columns=columns)


def write_summary(frame: pd.DataFrame, out: Path, metrics: MetricRegistry | None = None) -> Path:
    """``summary.csv`` of ``frame``, written atomically; returns its path."""
    path = out / "summary.csv"
    with atomic_path(path) as temporary:
        summarize(frame, metrics).to_csv(temporary, index=False)
    return path


def write_profile_order(
    out: Path,
    profiles: Sequence[str],
    not_applied: Mapping[str, Mapping[str, str]] | None = None,
    metrics: MetricRegistry | None = None,
) -> None:
    """Record the ``--profile`` order (profile labels) of a matrix run in ``out``, the swept
    keys that did not apply to a profile (label -> key -> why), and the run's metric registry
    (added to the one recorded before: earlier results keep their metrics' meaning)."""
    data: dict[str, object] = {"profiles": list(profiles)}
    if not_applied:
        data["not_applied"] = {label: dict(keys) for label, keys in not_applied.items() if keys}
    recorded = read_metrics(out)
    if metrics is not None:
        recorded = metrics if recorded is None else recorded.merged(metrics)
    if recorded is not None:
        data["metrics"] = recorded.as_json()
    with atomic_path(out / MATRIX_FILE) as temporary:
        temporary.write_text(json.dumps(data, indent=1), encoding="utf-8")


def _matrix_file(out: Path) -> dict[str, object]:
    try:
        data = json.loads((out / MATRIX_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_profile_order(out: Path) -> list[str]:
    """The ``--profile`` order recorded in ``out``; empty for folders written before it was."""
    profiles = _matrix_file(out).get("profiles")
    return [str(p) for p in profiles] if isinstance(profiles, list) else []


def read_not_applied(out: Path) -> dict[str, dict[str, str]]:
    """Profile label -> swept key -> why it did not apply, as the last matrix into ``out`` found."""
    found = _matrix_file(out).get("not_applied")
    if not isinstance(found, dict):
        return {}
    return {
        str(label): {str(k): str(v) for k, v in keys.items()}
        for label, keys in found.items()
        if isinstance(keys, dict)
    }


def read_metrics(out: Path) -> MetricRegistry | None:
    """The metric registry recorded in ``out`` (``None`` for folders written before it was, or
    an unreadable record)."""
    found = _matrix_file(out).get("metrics")
    if not isinstance(found, dict):
        return None
    try:
        return MetricRegistry.from_json(found)
    except (TypeError, ValueError, KeyError, IndexError):
        return None
