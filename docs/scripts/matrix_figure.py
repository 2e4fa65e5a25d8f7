"""Draw chosen metrics of a finished matrix, one PNG per workload, for the docs.

    python docs/scripts/matrix_figure.py RESULTS_DIR OUT_PREFIX METRIC [METRIC ...]

Reads the Parquet results of ``brokerlab matrix --out RESULTS_DIR`` and writes
``OUT_PREFIX<workload>.png`` with the same bars and 95% intervals as the matrix report, for the
metrics named only (the report shows a fixed set).
"""

from __future__ import annotations

import sys
from pathlib import Path

from brokerlab.report.plots import metric_bars
from brokerlab.spark.results import ResultStore, summarize


def main(results: str, prefix: str, *metrics: str) -> None:
    summary = summarize(ResultStore(Path(results)).load())
    for workload, part in summary.groupby("workload", sort=True):
        path = Path(f"{prefix}{workload}.png")
        path.write_bytes(metric_bars(part, str(workload), metrics))
        print(path)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
