"""The Spark matrix runner: cells, the executor side, results and progress.

Importing this package imports nothing heavy: each name below loads its module on first use, so a
Spark worker that unpickles :func:`brokerlab.spark.executor.run_cells` does not import pandas for
the driver's results and report (half a second per worker). Only :mod:`brokerlab.spark.runner`
and :mod:`brokerlab.spark.session` import pyspark; :func:`run_matrix` imports them when it has
cells to run.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from brokerlab.spark.cells import Cell, Sweep, build_cells, parse_sweeps, scale_workload
    from brokerlab.spark.matrix import (
        MatrixOutcome,
        MatrixRequest,
        plan,
        ready_profiles,
        run_matrix,
        showcase_focus,
        showcase_scale,
    )

_MODULE_OF = {
    "Cell": "cells",
    "Sweep": "cells",
    "build_cells": "cells",
    "parse_sweeps": "cells",
    "scale_workload": "cells",
    "MatrixOutcome": "matrix",
    "MatrixRequest": "matrix",
    "plan": "matrix",
    "ready_profiles": "matrix",
    "run_matrix": "matrix",
    "showcase_focus": "matrix",
    "showcase_scale": "matrix",
}

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
    "showcase_focus",
    "showcase_scale",
]


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
