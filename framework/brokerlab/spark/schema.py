"""The result schema: one row per cell, cell columns + status + provenance + one column per metric
+ the per-broker metrics of a cluster.

Defined once, as an Arrow schema; the Spark schema of ``mapInPandas`` is derived from it (in
:mod:`brokerlab.spark.runner`), and Parquet files are written with it, so the three never drift.
"""

from __future__ import annotations

import pyarrow as pa

from brokerlab.metrics import METRICS

__all__ = [
    "CELL_RESULT_COLUMNS",
    "METRIC_COLUMNS",
    "PER_BROKER_COLUMN",
    "PROVENANCE_COLUMNS",
    "RESULT_SCHEMA",
    "STATUS_FAILED",
    "STATUS_OK",
]

STATUS_OK, STATUS_FAILED = "ok", "failed"

CELL_RESULT_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("cell_id", pa.string()),
    ("profile", pa.string()),
    ("profile_path", pa.string()),
    ("overrides", pa.string()),  # JSON object: the --set values of this cell
    ("workload", pa.string()),
    ("seed", pa.int64()),
    ("scale", pa.float64()),
)
PROVENANCE_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("status", pa.string()),
    ("error", pa.string()),  # the traceback of a failed cell, else null
    ("brokerlab_version", pa.string()),
    ("plugins", pa.string()),  # JSON: extension point -> record name
    ("plugin_versions", pa.string()),  # JSON: extension point -> "distribution version"
    # JSON: extension point (and "simulator") -> the modules of its plugin that ran compiled
    # (empty list: as Python); null in older results
    ("compiled", pa.string()),
    ("profile_fingerprint", pa.string()),
    ("settings", pa.string()),  # JSON: every resolved profile key -> value (null in older results)
    ("headline", pa.string()),  # the metric the workload ranks on ("": its simulator's default)
    ("workload_hash", pa.string()),
    ("executor", pa.string()),  # host:pid that ran the cell
    ("elapsed_s", pa.float64()),
    ("finished_at", pa.string()),  # UTC, ISO 8601: the latest row of a cell id wins
)
METRIC_COLUMNS: tuple[str, ...] = tuple(METRICS)
# A cluster's brokers' own metrics, one map (metric -> value) per broker in broker order; null
# for a one-broker run. A list of maps rather than a column per broker and metric: the number of
# brokers varies between cells, and Spark SQL reads it as ``per_broker[1]['cache_misses']``.
PER_BROKER_COLUMN = "per_broker"
PER_BROKER_TYPE = pa.list_(pa.map_(pa.string(), pa.float64()))

_fixed = {name for name, _ in (*CELL_RESULT_COLUMNS, *PROVENANCE_COLUMNS)} | {PER_BROKER_COLUMN}
_clash = _fixed.intersection(METRIC_COLUMNS)
if _clash:  # a metric named like a cell column would silently overwrite it
    raise RuntimeError(f"metric names clash with result columns: {sorted(_clash)}")

RESULT_SCHEMA = pa.schema(
    [
        *(pa.field(name, kind) for name, kind in CELL_RESULT_COLUMNS),
        *(pa.field(name, kind) for name, kind in PROVENANCE_COLUMNS),
        *(pa.field(name, pa.float64()) for name in METRIC_COLUMNS),
        pa.field(PER_BROKER_COLUMN, PER_BROKER_TYPE),
    ]
)
