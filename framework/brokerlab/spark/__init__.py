"""The Spark matrix runner: cells, the executor side, results and progress.

Importing this package does not import pyspark: only :mod:`brokerlab.spark.runner` and
:mod:`brokerlab.spark.session` do, and :func:`run_matrix` imports them when it has cells to run.
"""

from brokerlab.spark.cells import Cell, Sweep, build_cells, parse_sweeps, scale_workload
from brokerlab.spark.matrix import (
    MatrixOutcome,
    MatrixRequest,
    plan,
    ready_profiles,
    run_matrix,
    showcase_scale,
)

__all__ = [
    "Cell",
    "MatrixOutcome",
    "MatrixRequest",
    "Sweep",
    "build_cells",
    "parse_sweeps",
    "plan",
    "ready_profiles",
    "run_matrix",
    "scale_workload",
    "showcase_scale",
]
