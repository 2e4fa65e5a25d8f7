"""The Spark matrix runner end to end: ``brokerlab matrix`` as a user starts it.

Planning tests need no Spark. The ``spark`` tests run one small matrix locally (two small
workload files, a profile whose plugin raises, a ``--set`` sweep, two seeds) and check parity with
``brokerlab run --json``, failed rows, resume after a kill, the report; and a few on a real
standalone cluster on 127.0.0.1 started from the pyspark package, whose executors see other
installed plugins than the driver.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from brokerlab import make_host
from brokerlab.metrics import metrics_of
from brokerlab.spark.cells import parse_sweeps, scale_workload
from brokerlab.spark.matrix import MatrixRequest, plan, showcase_scale
from brokerlab.spark.results import summarize, t_quantile_975
from brokerlab.spark.schema import METRIC_COLUMNS, PER_BROKER_COLUMN
from brokerlab.workloads import parse_workload

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "profiles" / "baseline.conf"
SWEEP = "managedLedgerDefaultMarkDeleteRateLimit=100,1000"

WORKLOAD = """
name = "{name}"
duration_s = {duration}
drain_s = 1
[[topics]]
name = "t"
rate = {rate}
[[topics.subscriptions]]
name = "s"
type = "Shared"
[[topics.subscriptions.consumers]]
count = 2
rate = 150
"""

# A plugin whose ack-state persister raises: every cell of a profile selecting it fails.
EXPLODING_PLUGIN = """
from brokerlab import AckStatePersisterRecord, hookimpl

def _explode(context, cursor):
    raise RuntimeError("boom: the test plugin always fails")

@hookimpl
def brokerlab_ack_state_persisters():
    yield AckStatePersisterRecord(name="explode", description="always raises", factory=_explode)
"""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("inputs")
    (folder / "w_small.toml").write_text(WORKLOAD.format(name="w-small", duration=3, rate=200))
    (folder / "w_busy.toml").write_text(WORKLOAD.format(name="w-busy", duration=2, rate=500))
    (folder / "exploding.conf").write_text(
        f"sim.include={BASELINE}\nsim.ackStatePersister=explode\n"
    )
    (folder / "explode_plugin.py").write_text(EXPLODING_PLUGIN)
    return {
        "small": folder / "w_small.toml",
        "busy": folder / "w_busy.toml",
        "exploding": folder / "exploding.conf",
        "folder": folder,
    }


def _env(inputs: dict[str, Path], *first: Path) -> dict[str, str]:
    """The test's environment with ``first`` and the inputs folder ahead on the import path."""
    paths = [*map(str, first), str(inputs["folder"])]
    if os.environ.get("PYTHONPATH"):  # e.g. a worktree's sources ahead of an installed brokerlab
        paths.append(os.environ["PYTHONPATH"])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths), SPARK_LOCAL_IP="127.0.0.1")
    env["PYSPARK_PYTHON"] = sys.executable
    return env


def _brokerlab(
    args: list[str], inputs: dict[str, Path], plugin: bool = True, path: tuple[Path, ...] = ()
) -> subprocess.CompletedProcess[str]:
    modules = ["-p", "explode_plugin"] if plugin else []
    command = [sys.executable, "-m", "brokerlab", *modules, *args]
    return subprocess.run(
        command, capture_output=True, text=True, env=_env(inputs, *path), timeout=900, check=False
    )


def _matrix_args(inputs: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return [
        "matrix",
        "--profile", str(BASELINE),
        "--profile", str(inputs["exploding"]),
        "--set", SWEEP,
        "--workload", str(inputs["small"]),
        "--workload", str(inputs["busy"]),
        "--seeds", "2",
        "--out", str(out),
        "--conf", "spark.ui.enabled=false",
        *extra,
    ]  # fmt: skip


def _load(out: Path) -> list[dict[str, object]]:
    from brokerlab.spark.results import ResultStore

    frame = ResultStore(out).load()
    # A metric a cell did not report is null (NaN in pandas): None, as ``run --json`` has it.
    return [
        {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}
        for row in frame.to_dict("records")
    ]


# ---- planning: no Spark ---------------------------------------------------------------------


def test_cells_are_the_cartesian_product(
    inputs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(inputs["folder"]))
    request = MatrixRequest(
        profiles=[str(BASELINE), str(inputs["exploding"])],
        sweeps=[SWEEP],
        workloads=[str(inputs["small"]), str(inputs["busy"])],
        seeds=3,
    )
    cells = plan(request, make_host(["explode_plugin"]))
    assert len(cells) == 2 * 2 * 2 * 3
    assert len({c.cell_id for c in cells}) == len(cells)
    again = plan(request, make_host(["explode_plugin"]))
    assert [c.cell_id for c in again] == [c.cell_id for c in cells]  # stable ids: resume keys


def test_sweep_values_split_on_unescaped_commas() -> None:
    sweeps = parse_sweeps([r"a=1,2", r"b=x\,y,z"])
    assert [(s.key, s.values) for s in sweeps] == [("a", ("1", "2")), ("b", ("x,y", "z"))]


def test_scaling_shortens_every_time_of_the_scenario() -> None:
    spec = parse_workload(
        WORKLOAD.format(name="w", duration=100, rate=10)
        + '[[events]]\nat_s = 50\nkind = "restart"\n',
        "test",
    )
    short = scale_workload(spec, 0.1)
    assert (short.duration_s, short.drain_s, short.events[0].at_s) == (10, 0.1, 5)
    assert short.topics[0].rate == spec.topics[0].rate


def test_t_interval_matches_student() -> None:
    assert t_quantile_975(2) == pytest.approx(4.303)
    assert t_quantile_975(35) == pytest.approx(2.030, abs=0.01)
    import pandas as pd

    from brokerlab.spark.schema import RESULT_SCHEMA

    frame = RESULT_SCHEMA.empty_table().to_pandas()
    rows = [
        {**dict.fromkeys(frame.columns), "profile": "p", "overrides": "{}", "workload": "w",
         "scale": 1.0, "status": "ok", "delivered": v}
        for v in (10.0, 12.0, 14.0)
    ]  # fmt: skip
    summary = summarize(pd.DataFrame(rows, columns=frame.columns))
    row = summary[summary["metric"] == "delivered"].iloc[0]
    assert row["mean"] == 12.0
    assert row["ci95_high"] - 12.0 == pytest.approx(4.303 * 2.0 / 3**0.5)
    # What the cells reported has numbers; the other metrics every Pulsar run reports have an
    # empty row (not reported); another simulator's, or a conditional one, has none.
    assert summary.loc[summary["n"] > 0, "metric"].tolist() == ["delivered"]
    empty = set(summary.loc[summary["n"] == 0, "metric"])
    assert empty == set(metrics_of("pulsar", conditional=False)) - {"delivered"}
    assert summary.loc[summary["n"] == 0, "mean"].isna().all()


def test_showcase_scale_fits_the_budget() -> None:
    assert showcase_scale(1, 3, 2) >= showcase_scale(10, 3, 2)
    assert showcase_scale(1000, 3, 2) == min((0.2, 0.1, 0.05))
    # The ready profiles' showcase runs at the largest scale on the 2-core reference machine,
    # and a ten times larger one at the smallest, 0.05 (no built-in workload goes below it).
    assert showcase_scale(10, 3, 2) == 0.2
    assert showcase_scale(100, 3, 2) == 0.05
    assert showcase_scale(60, 3, 4) == 0.1


def test_bad_sweep_fails_before_spark_starts(inputs: dict[str, Path], tmp_path: Path) -> None:
    probe = (
        "import sys; from brokerlab.cli import main; "
        "code = main(sys.argv[1:]); "
        "print('pyspark' in sys.modules, 'brokerlab.spark.runner' in sys.modules); sys.exit(code)"
    )
    args = ["matrix", "--profile", str(BASELINE), "--set", "managedLedgerCacheSizeMB=10,-5",
            "--workload", str(inputs["small"]), "--out", str(tmp_path / "out")]  # fmt: skip
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2, result.stderr
    assert "managedLedgerCacheSizeMB" in result.stderr and "'-5'" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout.split() == ["False", "False"]  # Spark never imported, let alone started
    assert time.monotonic() - started < 10
    assert not (tmp_path / "out").exists()


# ---- on local Spark ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_run(inputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("local") / "out"
    result = _brokerlab(_matrix_args(inputs, out), inputs)
    assert result.returncode == 3, result.stderr  # the exploding profile's cells failed
    assert "cells failed" in result.stderr and "exploding" in result.stderr
    assert "report:" in result.stdout
    (out.parent / "stdout.txt").write_text(result.stdout)  # for the verdict test
    return out


@pytest.mark.spark
@pytest.mark.slow
def test_failed_cells_become_rows_and_the_rest_finish(local_run: Path) -> None:
    rows = _load(local_run)
    assert len(rows) == 16
    failed = [r for r in rows if r["status"] == "failed"]
    assert {r["profile"] for r in failed} == {"exploding"} and len(failed) == 8
    assert all("boom: the test plugin always fails" in str(r["error"]) for r in failed)
    ok = [r for r in rows if r["status"] == "ok"]
    assert len(ok) == 8 and all(r["delivered"] and r["error"] is None for r in ok)
    assert all(r["profile_fingerprint"] and r["workload_hash"] for r in ok)
    assert (local_run / "report.html").stat().st_size > 10_000
    assert sorted(p.name for p in (local_run / "results").iterdir()) == [
        "workload=w-busy",
        "workload=w-small",
    ]


@pytest.mark.spark
@pytest.mark.slow
def test_matrix_prints_a_verdict_per_workload(local_run: Path) -> None:
    import csv

    printed = (local_run.parent / "stdout.txt").read_text().splitlines()
    lines = printed[printed.index("verdicts:") + 1 :]
    assert [line.split(":")[0].strip() for line in lines] == ["w-busy", "w-small"]
    # The baseline is the first --profile with the first --set value; its cells all ran. The
    # swept key does not change storage reads here: both configurations share one place.
    key = SWEEP.split("=")[0]
    same = f"baseline [{key}=100] = baseline [{key}=1000]: the same results"
    assert all(same in line for line in lines)
    with (local_run / "verdicts.csv").open() as handle:
        table = list(csv.DictReader(handle))
    assert sorted((r["workload"], r["rank"] != "") for r in table) == [
        ("w-busy", True), ("w-busy", True), ("w-small", True), ("w-small", True)
    ]  # fmt: skip
    page = (local_run / "report.html").read_text(encoding="utf-8")
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert all(line.strip() in " ".join(text.split()) for line in lines)
    assert "<span class='failed'>8 failed</span>" in page


@pytest.mark.spark
@pytest.mark.slow
def test_rows_equal_brokerlab_run(local_run: Path, inputs: dict[str, Path]) -> None:
    rows = [r for r in _load(local_run) if r["status"] == "ok"]
    files = {"w-small": inputs["small"], "w-busy": inputs["busy"]}
    for row in sorted(rows, key=lambda r: str(r["cell_id"]))[:2]:
        overrides = [f"--set={k}={v}" for k, v in json.loads(str(row["overrides"])).items()]
        workload = str(files[str(row["workload"])])
        args = ["run", "--profile", str(row["profile_path"]), "--workload", workload,
                "--seed", str(row["seed"]), *overrides, "--json"]  # fmt: skip
        result = _brokerlab(args, inputs)
        assert result.returncode == 0, result.stderr
        expected = json.loads(result.stdout)["metrics"]
        assert {name: row[name] for name in expected} == expected


@pytest.mark.spark
@pytest.mark.slow
def test_resume_after_a_kill_recomputes_nothing_finished(
    local_run: Path, inputs: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    command = [sys.executable, "-m", "brokerlab", "-p", "explode_plugin",
               *_matrix_args(inputs, out, "--seeds", "3")]  # fmt: skip
    process = subprocess.Popen(
        command, env=_env(inputs), start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and process.poll() is None:
            if list((out / "results").glob("*/*.parquet")):
                break
            time.sleep(0.2)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # the run and its JVM, mid-matrix
        process.wait()
    before = {r["cell_id"]: r for r in _load(out) if r["status"] == "ok"}
    assert not list(out.glob("results/**/*.tmp"))  # nothing half-written where readers look

    result = _brokerlab(_matrix_args(inputs, out, "--seeds", "3"), inputs)
    assert result.returncode == 3, result.stderr
    rows = {str(r["cell_id"]): r for r in _load(out)}
    assert len(rows) == 24
    for cell_id, old in before.items():  # finished cells kept their row: not recomputed
        assert rows[str(cell_id)]["finished_at"] == old["finished_at"]
        assert rows[str(cell_id)]["executor"] == old["executor"]
    assert sum(r["status"] == "ok" for r in rows.values()) == 12


@pytest.mark.spark
@pytest.mark.slow
def test_kills_at_five_moments_then_a_resume_give_the_clean_runs_rows(
    local_run: Path, inputs: dict[str, Path], tmp_path: Path
) -> None:
    """kill -9 of the driver and everything in its session at five moments (Spark starting,
    then each time one more part file has landed), resuming into the same folder each time, then
    a resume to the end: every cell is there once, with the clean run's status and metrics."""
    out = tmp_path / "out"
    command = [sys.executable, "-m", "brokerlab", "-p", "explode_plugin",
               *_matrix_args(inputs, out)]  # fmt: skip

    def parts() -> int:
        return len(list((out / "results").glob("*/*.parquet")))

    for moment in range(5):
        process = subprocess.Popen(
            command, env=_env(inputs), start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            if moment == 0:
                time.sleep(1.0)  # the JVM is starting
            else:
                landed, deadline = parts(), time.monotonic() + 300
                while process.poll() is None and parts() == landed:
                    assert time.monotonic() < deadline, "no part file landed"
                    time.sleep(0.05)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    result = _brokerlab(_matrix_args(inputs, out), inputs)
    assert result.returncode == 3, result.stderr  # the exploding profile's cells fail
    clean = {str(r["cell_id"]): r for r in _load(local_run)}
    resumed = _load(out)
    assert len(resumed) == len({r["cell_id"] for r in resumed}) == len(clean) == 16
    metrics = [m for m in METRIC_COLUMNS if m != PER_BROKER_COLUMN]
    for row in resumed:
        expected = clean[str(row["cell_id"])]
        assert row["status"] == expected["status"]
        for metric in metrics:
            got, want = row[metric], expected[metric]
            assert (got == want) or (_missing(got) and _missing(want)), (row["cell_id"], metric)


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


# ---- on a standalone cluster -----------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One master and two 1-core workers on 127.0.0.1, from the pyspark package's jars (shared
    by the module's cluster tests: it takes ~15 s to start). Executors get this process's
    environment, not the driver's: the import path of a driver's ``-p`` module or of a plugin
    installed in a folder on its PYTHONPATH does not reach them."""
    import pyspark

    tmp_path = tmp_path_factory.mktemp("standalone")
    spark_home = Path(pyspark.__file__).parent
    env = dict(os.environ, SPARK_HOME=str(spark_home), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_WORKER_DIR=str(tmp_path / "work"), SPARK_LOG_DIR=str(tmp_path))  # fmt: skip
    port, ui = _free_port(), _free_port()
    url = f"spark://127.0.0.1:{port}"
    spark_class = [str(spark_home / "bin" / "spark-class")]
    processes = []
    logs = []
    try:
        log = open(tmp_path / "master.log", "w")  # noqa: SIM115  closed in finally
        logs.append(log)
        processes.append(subprocess.Popen(
            [*spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(ui)],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        ))  # fmt: skip
        for index in range(2):
            log = open(tmp_path / f"worker{index}.log", "w")  # noqa: SIM115
            logs.append(log)
            processes.append(subprocess.Popen(
                [*spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                 "--cores", "1", "--memory", "1g", "--webui-port", str(_free_port()), url],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            ))  # fmt: skip
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5) as page:
                    state = json.load(page)
                if sum(w.get("state") == "ALIVE" for w in state.get("workers", [])) == 2:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the standalone cluster did not come up"
            time.sleep(1)
        yield url
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for log in logs:
            log.close()


@pytest.mark.spark
@pytest.mark.slow
def test_standalone_cluster_rows_equal_a_local_run(
    standalone: str, local_run: Path, inputs: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "cluster"
    args = ["matrix", "--profile", str(BASELINE), "--set", SWEEP, "--workload",
            str(inputs["small"]), "--workload", str(inputs["busy"]), "--seeds", "2",
            "--master", standalone, "--out", str(out),
            "--conf", "spark.executor.memory=512m", "--conf", "spark.ui.enabled=false"]  # fmt: skip
    result = _brokerlab(args, inputs, plugin=False)  # executors there cannot import it
    assert result.returncode == 0, result.stderr
    cluster = {str(r["cell_id"]): r for r in _load(out)}
    local = {str(r["cell_id"]): r for r in _load(local_run)}
    assert len(cluster) == 8 and set(cluster) <= set(local)
    metrics = [name for name in cluster[next(iter(cluster))] if name not in _NOT_METRICS]
    for cell_id, row in cluster.items():
        assert row["status"] == "ok" and row["delivered"]
        assert _reported(row, metrics) == _reported(local[cell_id], metrics)


_NOT_METRICS = {"executor", "elapsed_s", "finished_at"}

# A third-party plugin distribution: an ack-state persister reusing the built-in range-count.
TALLY_PLUGIN = """
from brokerlab import AckStatePersisterRecord, hookimpl
from brokerlab_plugins.ack_state.range_count import new_range_count_persister

@hookimpl
def brokerlab_ack_state_persisters():
    yield AckStatePersisterRecord(
        name="tally", description="range-count, renamed", factory=new_range_count_persister
    )
"""


def _tally_wheel(folder: Path, version: str) -> Path:
    """brokerlab-tally as a wheel, written by hand: offline, this setuptools lacks bdist_wheel."""
    info = f"brokerlab_tally-{version}.dist-info"
    files = {
        "brokerlab_tally/__init__.py": TALLY_PLUGIN,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: brokerlab-tally\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
        f"{info}/entry_points.txt": "[brokerlab]\ntally = brokerlab_tally\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    wheel = folder / f"brokerlab_tally-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


@pytest.fixture(scope="module")
def tally(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """brokerlab-tally 0.1.0 and 0.2.0, each pip-installed into its own folder, and a profile
    choosing its persister."""
    folder = tmp_path_factory.mktemp("tally")
    found: dict[str, Path] = {}
    for version in ("0.1.0", "0.2.0"):
        target = folder / f"site-{version}"
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
             "--disable-pip-version-check", "--target", str(target),
             str(_tally_wheel(folder, version))],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        found[version] = target
    found["profile"] = folder / "tally.conf"
    found["profile"].write_text(f"sim.include={BASELINE}\nsim.ackStatePersister=tally\n")
    return found


def _tally_matrix(
    standalone: str, inputs: dict[str, Path], tally: dict[str, Path], out: Path, *conf: str
) -> list[dict[str, object]]:
    """A matrix of the tally profile, on a driver with brokerlab-tally 0.1.0 installed."""
    args = ["matrix", "--profile", str(tally["profile"]), "--workload", str(inputs["small"]),
            "--seeds", "2", "--master", standalone, "--out", str(out),
            "--conf", "spark.executor.memory=512m", "--conf", "spark.ui.enabled=false",
            *conf]  # fmt: skip
    result = _brokerlab(args, inputs, plugin=False, path=(tally["0.1.0"],))
    assert result.returncode == 3, result.stderr  # every cell failed, with a row each
    rows = _load(out)
    assert len(rows) == 2 and all(r["status"] == "failed" for r in rows)
    return rows


@pytest.mark.spark
@pytest.mark.slow
def test_a_plugin_on_the_driver_only_fails_its_cells_in_one_line(
    standalone: str, inputs: dict[str, Path], tally: dict[str, Path], tmp_path: Path
) -> None:
    from brokerlab.spark.plugin_check import SHIP_HINT

    rows = _tally_matrix(standalone, inputs, tally, tmp_path / "out")
    assert {r["error"] for r in rows} == {
        f"plugin brokerlab-tally (ack state persister 'tally'): 0.1.0 on the driver, missing on "
        f"executor {socket.gethostname()}; {SHIP_HINT}"
    }


@pytest.mark.spark
@pytest.mark.slow
def test_another_plugin_version_on_the_executors_fails_its_cells_in_one_line(
    standalone: str, inputs: dict[str, Path], tally: dict[str, Path], tmp_path: Path
) -> None:
    from brokerlab.spark.plugin_check import SHIP_HINT

    # Setting it replaces the executors' own PYTHONPATH (the workers' environment): keep that.
    path = os.pathsep.join([str(tally["0.2.0"]), *filter(None, [os.environ.get("PYTHONPATH")])])
    executors = f"spark.executorEnv.PYTHONPATH={path}"
    rows = _tally_matrix(standalone, inputs, tally, tmp_path / "out", "--conf", executors)
    assert {r["error"] for r in rows} == {
        f"plugin brokerlab-tally (ack state persister 'tally'): 0.1.0 on the driver, 0.2.0 on "
        f"executor {socket.gethostname()}; {SHIP_HINT}"
    }


def _reported(row: dict[str, object], names: list[str]) -> dict[str, object]:
    """The row's values without the nulls (metrics of other simulators are null, read as NaN,
    and NaN never equals itself)."""
    return {name: row[name] for name in names if row[name] is not None and row[name] == row[name]}


@pytest.mark.spark
@pytest.mark.slow
def test_kafka_and_pulsar_cells_share_a_matrix(inputs: dict[str, Path], tmp_path: Path) -> None:
    """Each profile meets the workloads of its simulator; Kafka rows equal an in-process run (on
    the mapInPandas engine: the other tests use the default RDD one)."""
    from brokerlab import load_profile, simulate
    from brokerlab.simulation import load_workload
    from brokerlab_plugins.kafka_remote_index.plugin import scale_kafka_workload

    out = tmp_path / "mixed"
    kafka_ttl = ROOT / "profiles" / "kafka-ttl.conf"
    args = ["matrix", "--profile", str(kafka_ttl), "--profile", str(BASELINE),
            "--workload", "kafka-leadership-change", "--workload", str(inputs["small"]),
            "--scale", "0.2", "--seeds", "1", "--out", str(out), "--engine", "pandas",
            "--conf", "spark.ui.enabled=false"]  # fmt: skip
    result = _brokerlab(args, inputs, plugin=False)
    assert result.returncode == 0, result.stderr
    rows = {(str(r["profile"]), str(r["workload"])): r for r in _load(out)}
    assert set(rows) == {("kafka-ttl", "kafka-leadership-change"), ("baseline", "w-small")}
    kafka = rows[("kafka-ttl", "kafka-leadership-change")]
    assert kafka["delivered"] is None or kafka["delivered"] != kafka["delivered"]  # null or NaN
    host = make_host()
    workload = scale_kafka_workload(load_workload(host, "kafka-leadership-change"), 0.2)
    expected = simulate(load_profile(kafka_ttl, host=host), workload, 0, host=host).metrics
    assert {name: kafka[name] for name in expected} == expected
    page = (out / "report.html").read_text()
    assert "index_cache_stale_bytes_peak" in page and "storage_entries_read" in page


CLUSTER_WORKLOAD = (
    WORKLOAD.format(name="w-cluster", duration=3, rate=200).replace(
        'name = "t"', 'name = "t"\ncount = 6'
    )
    + '[cluster]\nbrokers = 3\n[[events]]\nat_s = 1\nkind = "restart"\nbroker = 0\noutage_s = 0.5\n'
)

# Reads the results with Spark SQL: broker 1's delivered and each broker's row by posexplode.
SPARK_QUERY = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
frame = spark.read.parquet(sys.argv[1])
row = frame.where("workload = 'w-cluster'").selectExpr("per_broker[1]['delivered'] AS d").first()
print(row["d"])
print(frame.selectExpr("posexplode(per_broker)").count())
"""


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("engine", ["rdd", "pandas"])
def test_a_cluster_cell_keeps_each_brokers_metrics(
    inputs: dict[str, Path], tmp_path: Path, engine: str
) -> None:
    """The per_broker column holds what ``brokerlab run --json`` reports per broker; a workload
    of one broker writes files without it, as before it existed; Spark SQL queries it."""
    import pyarrow.parquet as pq

    from brokerlab.spark.schema import RESULT_SCHEMA

    workload = tmp_path / "w_cluster.toml"
    workload.write_text(CLUSTER_WORKLOAD)
    out = tmp_path / "out"
    args = ["matrix", "--profile", str(BASELINE), "--workload", str(workload),
            "--workload", str(inputs["small"]), "--seeds", "1", "--out", str(out),
            "--engine", engine, "--conf", "spark.ui.enabled=false"]  # fmt: skip
    result = _brokerlab(args, inputs, plugin=False)
    assert result.returncode == 0, result.stderr
    rows = {str(r["workload"]): r for r in _load(out)}
    run = _brokerlab(["run", "--profile", str(BASELINE), "--workload", str(workload), "--json"],
                     inputs, plugin=False)  # fmt: skip
    assert run.returncode == 0, run.stderr
    expected = json.loads(run.stdout)
    assert len(expected["per_broker"]) == 3
    assert rows["w-cluster"]["per_broker"] == expected["per_broker"]
    assert {k: rows["w-cluster"][k] for k in expected["metrics"]} == expected["metrics"]
    assert rows["w-small"]["per_broker"] is None
    old_columns = [n for n in RESULT_SCHEMA.names if n not in ("workload", "per_broker")]
    for file in (out / "results" / "workload=w-small").glob("*.parquet"):
        assert pq.read_schema(file).names == old_columns
    if engine == "rdd":  # one Spark SQL read is enough
        query = subprocess.run(
            [sys.executable, "-c", SPARK_QUERY, str(out / "results")], capture_output=True,
            text=True, env=_env(inputs), timeout=300, check=False,
        )  # fmt: skip
        assert query.returncode == 0, query.stderr
        delivered, exploded = query.stdout.split()
        assert float(delivered) == expected["per_broker"][1]["delivered"]
        assert int(exploded) == 3  # one row per broker of the cluster cell, none for w-small


# ---- the results folder as users query it ----------------------------------------------------


@pytest.mark.spark
@pytest.mark.slow
def test_the_documented_query_counts_each_cell_once_after_retries_and_two_runs(
    local_run: Path, inputs: dict[str, Path], tmp_path: Path
) -> None:
    """docs/spark.md: ``pandas.read_parquet("DIR/results")`` has one row per cell. A second run
    into the folder retries the 8 failed cells; their new rows replace the old ones."""
    import shutil

    import pandas as pd

    out = tmp_path / "out"
    shutil.copytree(local_run, out)
    result = _brokerlab(_matrix_args(inputs, out), inputs)
    assert result.returncode == 3, result.stderr
    assert "resuming in" in result.stderr and "8 of 16 cells already finished" in result.stderr
    rows = pd.read_parquet(out / "results")
    assert len(rows) == 16 and rows["cell_id"].is_unique
    assert (rows["status"] == "failed").sum() == 8
    attempts = pd.read_parquet(out / "attempts")
    assert sorted(attempts["cell_id"]) == sorted(rows.loc[rows["status"] == "failed", "cell_id"])
    before = pd.read_parquet(local_run / "results").set_index("cell_id")["finished_at"]
    after = rows.set_index("cell_id")["finished_at"]
    retried = after[after != before.reindex(after.index)]
    assert len(retried) == 8  # the failed cells ran again; the finished ones were kept


@pytest.mark.spark
@pytest.mark.slow
def test_a_disk_that_fills_up_during_the_run_keeps_the_computed_cells_and_exits_2(
    inputs: dict[str, Path], tmp_path: Path
) -> None:
    """The checks before Spark pass; another process then fills the disk. The wave that cannot
    be written goes to a rescue folder, the run says where in one line, exit 2."""
    import re
    import shutil
    import threading

    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)],
                             capture_output=True, text=True, check=False)  # fmt: skip
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    out = disk / "out"

    def fill_once_locked() -> None:  # after the checks: the lock is taken, then Spark starts
        lock = out / ".lock"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (lock.exists() and lock.read_text()):
            time.sleep(0.05)
        time.sleep(1.0)
        try:
            with (disk / "filler").open("wb") as handle:
                while True:
                    handle.write(b"\0" * 4096)
                    handle.flush()
        except OSError:
            pass  # full

    try:
        filler = threading.Thread(target=fill_once_locked)
        filler.start()
        args = ["matrix", "--profile", str(BASELINE), "--workload", str(inputs["small"]),
                "--seeds", "2", "--out", str(out), "--conf", "spark.ui.enabled=false"]  # fmt: skip
        result = _brokerlab(args, inputs, plugin=False)
        filler.join()
        assert result.returncode == 2, result.stderr
        said = [line for line in result.stderr.splitlines() if not line.startswith("cells [")]
        assert len(said) == 1 and "Traceback" not in result.stderr, result.stderr
        found = re.fullmatch(
            r"brokerlab: error: cannot write (\S+): No space left on device \[Errno 28\]; "
            rf"0 of 2 cells are saved in {re.escape(str(out / 'results'))}, 2 more in "
            r"(\S+)/results \(keep them with: cp -r \S+/results \S+/\); free space and run the "
            "same command again to resume",
            said[0],
        )
        assert found, said[0]
        rescue = Path(found[2])
        try:
            (disk / "filler").unlink()
            # As the message says: cp -r RESCUE/results DIR/
            shutil.copytree(rescue / "results", out / "results", dirs_exist_ok=True)
            assert len(_load(out)) == 2 and {r["status"] for r in _load(out)} == {"ok"}
        finally:
            shutil.rmtree(rescue, ignore_errors=True)
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
