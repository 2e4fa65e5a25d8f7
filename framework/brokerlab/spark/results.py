"""The results folder: Parquet partitioned by workload, written atomically, read back for resume.

Layout of ``--out DIR``::

    DIR/results/workload=<name>/part-<uuid>.parquet   one file per finished wave and workload
    DIR/matrix.json                                   the --profile order of the last run
    DIR/summary.csv                                   mean and 95% t interval over seeds
    DIR/verdicts.csv                                  per workload, configurations ranked
    DIR/report.html, DIR/plots/*.png                  the report (brokerlab.report)

Every file is written under ``DIR/.tmp`` and renamed into place, so a crash never leaves a
half-written file where a reader looks. A cell id may appear more than once (a failed cell that a
later run retried): readers keep the row that finished last. A file whose rows are all one-broker
runs has no ``per_broker`` column, as files had before there was one; readers see it as null.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from brokerlab.files import atomic_path
from brokerlab.metrics import METRICS
from brokerlab.spark.schema import METRIC_COLUMNS, PER_BROKER_COLUMN, RESULT_SCHEMA, STATUS_OK

__all__ = [
    "GROUP_COLUMNS",
    "MATRIX_FILE",
    "ResultStore",
    "atomic_path",
    "read_not_applied",
    "read_profile_order",
    "summarize",
    "t_quantile_975",
    "write_profile_order",
]

MATRIX_FILE = "matrix.json"
"""``{"profiles": [label, ...]}``: the ``--profile`` order of the last matrix run into a folder,
which decides the report's default baseline and the order of its configurations."""

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


class ResultStore:
    """One ``--out`` folder: append finished waves, list finished cells, load every row."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.results = out / "results"

    def write(self, table: pa.Table) -> None:
        """Append one wave's rows, one Parquet file per workload, each renamed into place."""
        staging = self.out / ".tmp"
        staging.mkdir(parents=True, exist_ok=True)
        workloads = table.column("workload").to_pylist()
        for name in sorted(set(workloads)):
            mask = pa.array([w == name for w in workloads])
            part = _without_empty_per_broker(table.filter(mask).drop_columns(["workload"]))
            folder = self.results / f"workload={quote(name, safe='')}"
            folder.mkdir(parents=True, exist_ok=True)
            temporary = staging / f"{uuid.uuid4().hex}.parquet"
            pq.write_table(part, temporary)
            os.replace(temporary, folder / f"part-{uuid.uuid4().hex}.parquet")

    def load(self) -> pd.DataFrame:
        """Every cell's latest row, with the result schema's columns (empty if nothing ran)."""
        files = sorted(self.results.glob("workload=*/*.parquet"))
        if not files:
            return RESULT_SCHEMA.empty_table().to_pandas()
        # Files written by other brokerlab versions may lack metrics added since (or carry ones
        # since removed): read them under one unified schema, and fill what is missing with null.
        schemas = [pq.read_schema(file) for file in files]
        schemas.append(pa.schema([pa.field("workload", pa.string())]))
        dataset = ds.dataset(
            files,
            schema=pa.unify_schemas(schemas),
            format="parquet",
            partitioning="hive",
            partition_base_dir=str(self.results),
        )
        frame = dataset.to_table().to_pandas(maps_as_pydicts="strict")
        for name in RESULT_SCHEMA.names:
            if name not in frame:
                frame[name] = None
        frame[PER_BROKER_COLUMN] = frame[PER_BROKER_COLUMN].map(_as_list, na_action="ignore")
        frame["workload"] = frame["workload"].astype(str)
        frame = frame.sort_values(["cell_id", "finished_at"]).drop_duplicates(
            "cell_id", keep="last"
        )
        return frame[list(RESULT_SCHEMA.names)].reset_index(drop=True)

    def finished(self) -> set[str]:
        """Ids of the cells that finished ``ok`` (failed cells run again on resume)."""
        frame = self.load()
        return set(frame.loc[frame["status"] == STATUS_OK, "cell_id"])


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


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95% t interval over seeds, per profile x overrides x profile fingerprint x
    workload x scale x metric; only the metrics the group's cells report (a Pulsar run has no row
    for a Kafka metric)."""
    ok = frame[frame["status"] == STATUS_OK]
    rows: list[dict[str, object]] = []
    # dropna=False: a row of an older file without a fingerprint still counts.
    for keys, group in ok.groupby(list(GROUP_COLUMNS), sort=True, dropna=False):
        for metric in METRIC_COLUMNS:
            values = group[metric].dropna().astype(float)
            n = len(values)
            if not n:
                continue  # another simulator's metric: no cell of this group reports it
            mean = float(values.mean()) if n else math.nan
            std = float(values.std(ddof=1)) if n > 1 else math.nan
            half = t_quantile_975(n - 1) * std / math.sqrt(n) if n > 1 else math.nan
            rows.append(
                {
                    **dict(zip(GROUP_COLUMNS, keys, strict=True)),
                    "metric": metric,
                    "unit": METRICS[metric].unit,
                    "n": n,
                    "mean": mean,
                    "std": std,
                    "ci95_low": mean - half,
                    "ci95_high": mean + half,
                }
            )
    columns = [*GROUP_COLUMNS, "metric", "unit", "n", "mean", "std", "ci95_low", "ci95_high"]
    return pd.DataFrame(rows, columns=columns)


def write_summary(frame: pd.DataFrame, out: Path) -> Path:
    """``summary.csv`` of ``frame``, written atomically; returns its path."""
    path = out / "summary.csv"
    with atomic_path(path) as temporary:
        summarize(frame).to_csv(temporary, index=False)
    return path


def write_profile_order(
    out: Path, profiles: Sequence[str], not_applied: Mapping[str, Mapping[str, str]] | None = None
) -> None:
    """Record the ``--profile`` order (profile labels) of a matrix run in ``out``, and the swept
    keys that did not apply to a profile (label -> key -> why)."""
    data: dict[str, object] = {"profiles": list(profiles)}
    if not_applied:
        data["not_applied"] = {label: dict(keys) for label, keys in not_applied.items() if keys}
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
