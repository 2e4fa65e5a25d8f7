"""The ``--out`` folder checked before Spark starts: no clashing files, and room for the results.

A matrix meets a clash or a full disk only when it writes, which is after Spark computed the
cells; these checks refuse such a folder in well under a second instead. They cannot foresee
everything (another process may fill the disk meanwhile), so writers handle :class:`OSError` too.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from brokerlab.errors import OutputError

__all__ = ["check_layout", "check_space", "expected_bytes", "human_bytes"]

# What a matrix writes into DIR, by kind: a folder where it writes files, a file it replaces.
FOLDERS = ("results", "attempts", "quarantine", "plots", ".tmp")
FILES = ("summary.csv", "verdicts.csv", "matrix.json", "report.html", "spark.log", ".lock")

# Measured: a part file of one row is ~50 KB (the Parquet footer of ~135 columns), each further
# row ~1 KB, more with a cell's settings JSON or a failed cell's traceback; a report is ~1 MB
# plus a plot or two per workload. Rounded up: the check refuses a folder that is surely too
# small, and the write path handles the rest.
_PART_BYTES = 64 * 1024
_ROW_BYTES = 8 * 1024
_REPORT_BYTES = 2 * 1024 * 1024
_PLOT_BYTES = 256 * 1024
_WAVES = 12  # a big matrix runs in about ten waves (runner.default_wave_size)


def check_layout(out: Path, workloads: Sequence[str]) -> None:
    """Raise :class:`OutputError` if something in ``out`` has the wrong kind for what a matrix
    writes there: a file where it makes a folder, or a folder where it writes a file."""
    folders = [*FOLDERS, *(f"results/workload={quote(name, safe='')}" for name in workloads)]
    for name in folders:
        path = out / name
        if path.exists() and not path.is_dir():
            raise OutputError(
                f"{path} is a file, where brokerlab matrix writes a folder; move it away or "
                "choose another --out"
            )
        if not path.exists() and path.is_symlink():
            raise OutputError(
                f"{path} is a broken symbolic link; remove it or choose another --out"
            )
    for name in FILES:
        path = out / name
        if path.is_dir():
            raise OutputError(
                f"{path} is a folder, where brokerlab matrix writes a file; move it away or "
                "choose another --out"
            )


def expected_bytes(cells: int, workloads: int) -> int:
    """About what a matrix of ``cells`` over ``workloads`` writes (results and report)."""
    files = min(cells, _WAVES * max(workloads, 1))
    return files * _PART_BYTES + cells * _ROW_BYTES + _REPORT_BYTES + workloads * _PLOT_BYTES


def check_space(out: Path, cells: int, workloads: int) -> None:
    """Raise :class:`OutputError` if ``out``'s file system has less room than the matrix needs."""
    need = expected_bytes(cells, workloads)
    free = shutil.disk_usage(out).free
    if free < need:
        raise OutputError(
            f"{out} has {human_bytes(free)} free, and this matrix writes about "
            f"{human_bytes(need)} ({cells} cells: results, summary and report); free some "
            "space or choose another --out"
        )


def human_bytes(count: float) -> str:
    """``1.5 MB``-style sizes (powers of 1024, as ``df -h``)."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TB"
