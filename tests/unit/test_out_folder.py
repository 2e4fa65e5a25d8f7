"""The ``--out`` folder: one run at a time, clashes and a full disk refused before Spark starts,
unreadable files moved aside, and a failed write after the cells ran is exit 2 naming the file.

Real files and real subprocesses; the full-disk cases mount a small tmpfs (root only).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("matplotlib")

from brokerlab import make_host  # noqa: E402
from brokerlab.errors import OutputError  # noqa: E402
from brokerlab.spark.lock import holding  # noqa: E402
from brokerlab.spark.matrix import MatrixRequest, plan, run_matrix  # noqa: E402
from brokerlab.spark.results import ResultStore  # noqa: E402
from brokerlab.spark.schema import RESULT_SCHEMA  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "profiles" / "baseline.conf"
WORKLOAD = (
    'name = "small"\nduration_s = 2\n[[topics]]\nrate = 50\n'
    "[[topics.subscriptions]]\nconsumers = [{ rate = 100 }]\n"
)


def brokerlab(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROKERLAB_")}
    probe = (
        "import sys; from brokerlab.cli import main; code = main(sys.argv[1:]); "
        "sys.stderr.write(f'spark imported: {\"pyspark\" in sys.modules}\\n'); sys.exit(code)"
    )
    return subprocess.run(
        [sys.executable, "-c", probe, *args],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def lines_of(result: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr without the probe's own last line, after checking Spark never started."""
    *lines, probe = result.stderr.splitlines()
    assert probe == "spark imported: False", result.stderr
    assert "Traceback" not in result.stderr
    return lines


def one_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert result.returncode == 2, result.stderr
    (line,) = lines_of(result)
    assert line.startswith("brokerlab: error: "), line
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} missing from {line}"
    return line


def matrix(tmp_path: Path, out: Path) -> list[str]:
    workload = tmp_path / "small.toml"
    workload.write_text(WORKLOAD)
    return ["matrix", "--profile", str(BASELINE), "--workload", str(workload), "--seeds", "2",
            "--out", str(out), "--conf", "spark.ui.enabled=false"]  # fmt: skip


def finished_rows(tmp_path: Path, out: Path) -> None:
    """Write an ``ok`` row for every cell of :func:`matrix`: a run into ``out`` has nothing left
    to compute, so it needs no Spark."""
    workload = tmp_path / "small.toml"
    workload.write_text(WORKLOAD)
    request = MatrixRequest(profiles=[str(BASELINE)], workloads=[str(workload)], seeds=2)
    rows = []
    for cell in plan(request, make_host()):
        values: dict[str, object] = dict.fromkeys(RESULT_SCHEMA.names)
        values.update(cell.as_row())
        values.update(status="ok", finished_at="2026-11-28T00:00:00+00:00",
                      storage_entries_read=float(cell.seed), delivered=10.0)  # fmt: skip
        rows.append({k: values[k] for k in RESULT_SCHEMA.names})
    ResultStore(out).write(pa.Table.from_pylist(rows, schema=RESULT_SCHEMA))


# ---- the lock ---------------------------------------------------------------------------------


def test_a_second_run_into_a_held_folder_is_refused_naming_the_holder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with holding(out, "matrix", print):
        line = one_error(brokerlab(*matrix(tmp_path, out)), str(out), "in use by another")
        assert f"pid {os.getpid()} on " in line and "brokerlab matrix since" in line
        one_error(brokerlab("report", str(out)), f"pid {os.getpid()} on ")
    assert not (out / "results").exists()  # the refused run wrote nothing


def test_the_stale_lock_of_a_dead_run_is_taken_over_with_a_warning(tmp_path: Path) -> None:
    out = tmp_path / "out"
    finished_rows(tmp_path, out)
    # A run killed with kill -9: its name stays in the file, its flock went with it.
    (out / ".lock").write_text("pid 999999 on elsewhere, brokerlab matrix since then\n")
    result = brokerlab(*matrix(tmp_path, out))
    assert result.returncode == 0, result.stderr
    warnings = [line for line in lines_of(result) if "warning" in line]
    assert warnings == [
        f"brokerlab: warning: took over the lock of {out} from a run that ended without "
        "releasing it (pid 999999 on elsewhere, brokerlab matrix since then)"
    ]
    assert (out / ".lock").read_text() == ""  # released cleanly: the next run says nothing
    again = brokerlab("report", str(out))
    assert again.returncode == 0 and "warning" not in again.stderr, again.stderr


# ---- clashes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("results", "file"),
        ("results/workload=small", "file"),
        ("plots", "file"),
        ("report.html", "folder"),
        ("summary.csv", "folder"),
    ],
)
def test_a_clashing_path_is_refused_before_spark_starts(
    tmp_path: Path, name: str, kind: str
) -> None:
    out = tmp_path / "out"
    path = out / name
    path.parent.mkdir(parents=True)
    if kind == "file":
        path.write_text("mine")
    else:
        path.mkdir()
    other = "folder" if kind == "file" else "file"
    one_error(brokerlab(*matrix(tmp_path, out)), f"{path} is a {kind}, where brokerlab matrix "
              f"writes a {other}; move it away or choose another --out")  # fmt: skip


# ---- unreadable part files --------------------------------------------------------------------


def test_report_moves_an_unreadable_part_aside_and_reports_its_cells_missing(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    finished_rows(tmp_path, out)
    folder = out / "results" / "workload=small"
    (folder / "part-empty.parquet").write_bytes(b"")
    result = brokerlab("report", str(out))
    assert result.returncode == 0, result.stderr
    target = out / "quarantine" / "workload=small" / "part-empty.parquet"
    assert lines_of(result) == [
        f"brokerlab: warning: {folder / 'part-empty.parquet'} is not a result file (Parquet "
        "file size is 0 bytes); moved it to "
        f"{target}: its cells count as not run"
    ]
    assert target.exists()
    assert "report:" in result.stdout


# ---- a full disk ------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MB tmpfs: room for a matrix's checks to pass, and little more."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int = 0) -> Path:
    """Fill ``disk`` up to ``leave`` bytes free."""
    import shutil

    filler = disk / "filler"
    with filler.open("wb") as handle:
        try:
            while shutil.disk_usage(disk).free > leave:
                handle.write(
                    b"\0" * min(64 * 1024, max(4096, shutil.disk_usage(disk).free - leave))
                )
                handle.flush()
        except OSError:
            pass
    return filler


def test_too_little_free_space_is_refused_before_spark_starts(
    tmp_path: Path, small_disk: Path
) -> None:
    fill(small_disk, leave=200 * 1024)
    out = small_disk / "out"
    line = one_error(brokerlab(*matrix(tmp_path, out)), f"{out} has ", " free, and this matrix "
                     "writes about ", "free some space or choose another --out")  # fmt: skip
    assert "(2 cells: results, summary and report)" in line


class _FillOnResume(io.StringIO):
    """The run's log: fills the disk when the run says what it resumes, which is after the
    checks before Spark and before summary.csv is written (another process filling the disk)."""

    def __init__(self, disk: Path) -> None:
        super().__init__()
        self.disk = disk

    def write(self, text: str) -> int:
        if text.startswith("resuming in"):
            fill(self.disk)
        return super().write(text)


def test_a_summary_that_cannot_be_written_is_exit_2_naming_it_with_the_results_kept(
    tmp_path: Path, small_disk: Path
) -> None:
    out = small_disk / "out"
    finished_rows(tmp_path, out)
    request = MatrixRequest(profiles=[str(BASELINE)], workloads=[str(tmp_path / "small.toml")],
                            seeds=2, out=out)  # fmt: skip
    with pytest.raises(OutputError) as caught:
        run_matrix(request, make_host(), _FillOnResume(small_disk))
    assert str(caught.value) == (
        f"cannot write {out / 'summary.csv'}: No space left on device [Errno 28]; the results of "
        f"every cell are kept in {out / 'results'}: free space and run 'brokerlab report {out}'"
    )
    assert len(ResultStore(out).finished()) == 2
    assert not (out / "summary.csv").exists()
    assert not [p for p in out.iterdir() if p.name.startswith(".summary")]  # no temporary left
    (small_disk / "filler").unlink()
    json.loads((out / "matrix.json").read_text())  # written whole before the disk filled
    result = brokerlab("report", str(out))
    assert result.returncode == 0, result.stderr
