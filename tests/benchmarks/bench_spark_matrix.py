"""Speed-up of the Spark matrix runner on local[2] (a plain script, not a test).

    python tests/benchmarks/bench_spark_matrix.py [--scale F] [--engine pandas|rdd|both]

One run measures, on the same 16 cells (baseline profile x a 2-value sweep x tailing,
key-shared-slow-consumer x 4 seeds, time axis scaled so a cell takes ~5 s):

* serial: the cells one after another in this process;
* pool: ``multiprocessing.Pool(2)``, one cell per task;
* spark: the runner on ``local[2]`` (session already started), per engine;
* start-up: the runner's fixed overhead: a cold Spark session plus a one-cell matrix, per
  engine, with the driver JVM's class-data-sharing archive and without it.

It prints the wall times and the ratios. The machine may be shared: run it when it is quiet.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from brokerlab import make_host
from brokerlab.spark.cells import Cell
from brokerlab.spark.executor import HostConfig, run_cells
from brokerlab.spark.matrix import MatrixRequest, plan

ROOT = Path(__file__).resolve().parents[2]
CONF = {"spark.ui.enabled": "false"}  # --driver-java-options adds the driver JVM's options


def cells(scale: float) -> list[Cell]:
    request = MatrixRequest(
        profiles=[str(ROOT / "profiles" / "baseline.conf")],
        sweeps=["managedLedgerMaxUnackedRangesToPersist=100,1000"],
        workloads=["tailing", "key-shared-slow-consumer"],
        seeds=4,
        scale=scale,
    )
    return plan(request, make_host())


def _one(row: dict[str, Any]) -> dict[str, Any]:
    return next(run_cells([row], HostConfig()))


Timing = tuple[float, float]  # (wall seconds, the cells' own seconds summed)


def _timing(started: float, rows: list[dict[str, Any]]) -> Timing:
    assert all(r["status"] == "ok" for r in rows)
    return time.perf_counter() - started, sum(r["elapsed_s"] for r in rows)


def serial(matrix: list[Cell]) -> Timing:
    started = time.perf_counter()
    return _timing(started, list(run_cells((c.as_row() for c in matrix), HostConfig())))


def pool(matrix: list[Cell]) -> Timing:
    started = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(2) as workers:
        rows = workers.map(_one, [c.as_row() for c in matrix], chunksize=1)
    return _timing(started, rows)


def spark(matrix: list[Cell], engine: str, warm: list[Cell] | None = None) -> Timing:
    """Wall time of the runner on the cells; ``warm`` cells run first, untimed: they start the
    Python workers, whose start is part of the fixed overhead measured by :func:`startup`."""
    from brokerlab.spark.runner import RunnerConfig, run_waves
    from brokerlab.spark.session import start_session

    session, _ = start_session("local[2]", conf=CONF)
    tables: list[Any] = []
    config = RunnerConfig(engine="rdd" if engine == "rdd" else "pandas")
    if warm:
        run_waves(session, warm, config, lambda table: None)
    started = time.perf_counter()
    run_waves(session, matrix, config, tables.append)
    rows = [row for table in tables for row in table.to_pylist()]
    assert len(rows) == len(matrix)
    return _timing(started, rows)


def startup(scale: float, engine: str, archive: bool) -> tuple[float, str]:
    """A cold process: Spark session + a one-cell matrix, minus that cell's own run time; and
    what the driver JVM did with its class-data-sharing archive."""
    code = (
        f"import sys, time; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from bench_spark_matrix import cells, spark\n"
        "from brokerlab.spark.session import start_session\n"
        "from brokerlab.spark.executor import HostConfig, run_cells\n"
        f"one = cells({scale!r})[:1]\n"
        "t = time.perf_counter(); list(run_cells([one[0].as_row()], HostConfig()))\n"
        "cell = time.perf_counter() - t\n"
        f"import bench_spark_matrix; bench_spark_matrix.CONF.update({CONF!r})\n"
        "t = time.perf_counter(); s, _ = start_session('local[2]', conf=bench_spark_matrix.CONF)\n"
        f"print(time.perf_counter() - t + spark(one, {engine!r})[0] - cell)\n"
        "print(s.sparkContext.getConf().get('spark.driver.extraJavaOptions'))\n"
        "s.stop()\n"
    )
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    if not archive:
        env["BROKERLAB_JVM_ARCHIVE"] = "off"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    seconds, options = out.stdout.strip().splitlines()[-2:]
    used = (
        "archive mapped"
        if "SharedArchiveFile" in options
        else "archive dumped at exit: run again in a minute"
        if "ArchiveClassesAtExit" in options
        else "no archive"
    )
    return float(seconds), used


def print_speed_ups(best: dict[str, Timing], engines: list[str], cells: int) -> None:
    (t_serial, _), (t_pool, _) = best["serial"], best["pool"]
    print(f"serial        {t_serial:7.1f} s   ({t_serial / cells:.2f} s per cell)")
    for name, label in [("pool", "Pool(2)"), *((f"spark-{e}", f"spark {e}") for e in engines)]:
        wall, cell_seconds = best[name]
        # The cells' own time over 2 x wall separates slower cells from idle cores.
        print(
            f"{label:<13} {wall:7.1f} s   speed-up {t_serial / wall:.2f}x, "
            f"{t_pool / wall:.2f}x the pool's speed; cells ran {cell_seconds:.1f} s "
            f"({cell_seconds / t_serial:.2f}x serial's), cores busy {cell_seconds / 2 / wall:.0%}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scale", type=float, default=0.7, help="time-axis scale (0.7: cells of ~5 s)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="best of N, methods interleaved")
    parser.add_argument("--engine", choices=("pandas", "rdd", "both"), default="both")
    parser.add_argument(
        "--driver-java-options",
        metavar="OPTS",
        help="the driver JVM's options instead of the runner's default ('' for the JVM's own)",
    )
    parser.add_argument("--startup-only", action="store_true", help="only the fixed overhead")
    args = parser.parse_args()
    if args.driver_java_options is not None:
        CONF["spark.driver.extraJavaOptions"] = args.driver_java_options
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    matrix = cells(args.scale)
    warm = cells(0.01)[:2]
    print(f"{len(matrix)} cells at scale {args.scale}; load average {os.getloadavg()[0]:.1f}")
    engines = ["pandas", "rdd"] if args.engine == "both" else [args.engine]
    best: dict[str, Timing] = {}
    for round_ in range(0 if args.startup_only else args.rounds):
        # Interleaved, best of N: on a shared machine the load drifts during a run.
        times = {"serial": serial(matrix), "pool": pool(matrix)}
        for engine in engines:
            times[f"spark-{engine}"] = spark(matrix, engine, warm)  # idle workers exit in 60 s
        print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[0]:.1f} s" for k, v in times.items()))
        for name, timing in times.items():
            best[name] = min(timing, best.get(name, timing))
    if best:
        print_speed_ups(best, engines, len(matrix))
    # The fixed overhead: a cold session plus a one-cell job, less the cell's own time.
    for engine, archive in [*((e, True) for e in engines), ("rdd", False)]:
        seconds, used = startup(args.scale, engine, archive)
        print(f"start-up      {seconds:7.1f} s   ({engine}, {used})")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
