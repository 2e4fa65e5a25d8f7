"""The result schema: one row per cell, cell columns + status + provenance + one column per metric
+ the per-broker metrics of a cluster.

Built once per matrix, as an Arrow schema, from the metrics its plugin host declares
(:func:`result_schema`); the Spark schema of ``mapInPandas`` is derived from it (in
:mod:`brokerlab.spark.runner`), and Parquet files are written with it, so the three never drift.
``METRIC_COLUMNS`` and ``RESULT_SCHEMA`` are those of the registry in effect
(:func:`brokerlab.metrics.current`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from brokerlab.errors import PluginError
from brokerlab.metrics import current

__all__ = [
    "CELL_RESULT_COLUMNS",
    "FIXED_COLUMNS",
    "PER_BROKER_COLUMN",
    "PROVENANCE_COLUMNS",
    "STATUS_FAILED",
    "STATUS_OK",
    "result_schema",
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
# A cluster's brokers' own metrics, one map (metric -> value) per broker in broker order; null
# for a one-broker run. A list of maps rather than a column per broker and metric: the number of
# brokers varies between cells, and Spark SQL reads it as ``per_broker[1]['cache_misses']``.
PER_BROKER_COLUMN = "per_broker"
PER_BROKER_TYPE = pa.list_(pa.map_(pa.string(), pa.float64()))

FIXED_COLUMNS: frozenset[str] = frozenset(
    {name for name, _ in (*CELL_RESULT_COLUMNS, *PROVENANCE_COLUMNS)} | {PER_BROKER_COLUMN}
)
"""Every column that is not a metric."""


def result_schema(metrics: Iterable[str]) -> pa.Schema:
    """The result schema with one float column per name of ``metrics``, in order (null where a
    cell did not report the metric)."""
    names = list(metrics)
    clash = FIXED_COLUMNS.intersection(names)
    if clash:  # a metric named like a cell column would silently overwrite it
        raise PluginError(
            f"metrics named like result columns: {', '.join(sorted(clash))}; rename them"
        )
    return pa.schema(
        [
            *(pa.field(name, kind) for name, kind in CELL_RESULT_COLUMNS),
            *(pa.field(name, kind) for name, kind in PROVENANCE_COLUMNS),
            *(pa.field(name, pa.float64()) for name in names),
            pa.field(PER_BROKER_COLUMN, PER_BROKER_TYPE),
        ]
    )


def __getattr__(name: str) -> Any:
    # The registry in effect decides the metric columns, so they are computed when asked for.
    if name == "METRIC_COLUMNS":
        return tuple(current())
    if name == "RESULT_SCHEMA":
        return result_schema(current())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
