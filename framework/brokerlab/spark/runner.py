"""Run cells on Spark: waves of cells, one task per cell, results handed back wave by wave.

Each wave is one Spark job whose partitions hold one cell each (cells take seconds, so the
~10-20 ms per task is noise, and one cell per task balances load best). Two waves are in flight
at a time, so the scheduler fills a core freed at the end of one wave with the next wave's cells
instead of idling until the slowest cell of the wave is done. Cells start longest first (by
their estimated cost). Each finished wave is handed to ``on_wave`` at once, which is what makes an
interrupted run resumable.

The default engine is the RDD API: on 16 cells of ~5 s on local[2] it ran as fast as
``multiprocessing.Pool(2)`` (0.97-1.03x its speed), ``mapInPandas`` at 0.87-0.94x, and its first
job starts ~4 s sooner (no pandas or Arrow in the Python workers).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

import pandas as pd
import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from brokerlab.spark.cells import CELL_COLUMNS, Cell
from brokerlab.spark.executor import HostConfig, run_cells
from brokerlab.spark.schema import result_schema

__all__ = ["Engine", "RunnerConfig", "run_waves", "waves"]

Engine = Literal["pandas", "rdd"]
OnWave = Callable[[pa.Table], None]
OnTasks = Callable[[int], None]

_CELL_SCHEMA = pa.schema(
    [
        pa.field(
            name,
            {
                "seed": pa.int64(),
                "scale": pa.float64(),
                "cost": pa.float64(),
            }.get(name, pa.string()),
        )
        for name in CELL_COLUMNS
    ]
)


@dataclass(frozen=True)
class RunnerConfig:
    """How to run: the engine (the RDD API or ``mapInPandas``), wave size and executor host."""

    engine: Engine = "rdd"
    wave_size: int | None = None
    in_flight: int = 2
    host: HostConfig = field(default_factory=HostConfig)


def waves(cells: Sequence[Cell], size: int) -> list[list[Cell]]:
    """Cells longest first, cut into waves of ``size``."""
    ordered = sorted(cells, key=lambda c: (-c.cost, c.cell_id))
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def default_wave_size(cells: int, parallelism: int) -> int:
    """Few waves for a small matrix (each wave costs the driver a job), ~10 for a big one (a
    crash loses at most the waves in flight)."""
    return max(4 * parallelism, -(-cells // 10))


def run_waves(
    spark: SparkSession,
    cells: Sequence[Cell],
    config: RunnerConfig,
    on_wave: OnWave,
    on_tasks: OnTasks | None = None,
) -> None:
    """Run every cell; ``on_wave`` gets each wave's result table (called from one thread at a time),
    ``on_tasks`` the number of cells finished so far, polled from Spark's status tracker."""
    if not cells:
        return
    sc = spark.sparkContext
    size = config.wave_size or default_wave_size(len(cells), sc.defaultParallelism)
    planned = waves(cells, size)
    lock = threading.Lock()
    done_waves: set[int] = set()
    stop = threading.Event()

    def one(index: int, wave: list[Cell]) -> None:
        sc.setJobGroup(f"brokerlab-wave-{index}", f"brokerlab matrix wave {index + 1}")
        table = _run_wave(spark, wave, config)
        with lock:
            if stop.is_set():
                return  # interrupted: what the run reports saved is final
            on_wave(table)
            done_waves.add(index)

    poller = None
    if on_tasks is not None:
        poller = threading.Thread(
            target=_poll, args=(spark, planned, done_waves, lock, on_tasks, stop), daemon=True
        )
        poller.start()
    pool = ThreadPoolExecutor(max_workers=config.in_flight)
    try:
        futures = [pool.submit(one, i, wave) for i, wave in enumerate(planned)]
        for future in futures:
            future.result()
    except KeyboardInterrupt:
        # Ctrl-C: no more Java calls (the caller kills the JVM, which ends the waves' calls);
        # wait only for a wave being written, so the files are whole and the count is right.
        stop.set()
        with lock:
            pool.shutdown(wait=False, cancel_futures=True)
        raise
    except BaseException:
        # A failed job or write: stop the rest now instead of waiting for every wave.
        pool.shutdown(wait=False, cancel_futures=True)
        sc.cancelAllJobs()
        pool.shutdown(wait=True)
        raise
    else:
        pool.shutdown(wait=True)
    finally:
        stop.set()
        if poller is not None:
            poller.join(timeout=5)


def _poll(
    spark: SparkSession,
    planned: list[list[Cell]],
    done_waves: set[int],
    lock: threading.Lock,
    on_tasks: OnTasks,
    stop: threading.Event,
) -> None:
    try:
        _poll_until(spark, planned, done_waves, lock, on_tasks, stop)
    except Exception:
        if not stop.is_set():
            raise
        # The JVM was ended under the poll (Ctrl-C): nothing to report any more.


def _poll_until(
    spark: SparkSession,
    planned: list[list[Cell]],
    done_waves: set[int],
    lock: threading.Lock,
    on_tasks: OnTasks,
    stop: threading.Event,
) -> None:
    tracker = spark.sparkContext.statusTracker()
    while not stop.wait(0.5):
        with lock:
            finished = set(done_waves)
        count = sum(len(planned[i]) for i in finished)
        for index, wave in enumerate(planned):
            if index in finished:
                continue
            running = 0
            for job_id in tracker.getJobIdsForGroup(f"brokerlab-wave-{index}"):
                job = tracker.getJobInfo(job_id)
                for stage_id in job.stageIds if job else ():
                    stage = tracker.getStageInfo(stage_id)
                    running += stage.numCompletedTasks if stage else 0
            count += min(running, len(wave))
        on_tasks(count)


def _run_wave(spark: SparkSession, wave: list[Cell], config: RunnerConfig) -> pa.Table:
    rows = [cell.as_row() for cell in wave]
    host = config.host
    schema = result_schema(host.metrics)  # the driver's metric columns
    rdd = spark.sparkContext.parallelize(rows, numSlices=len(rows))
    if config.engine == "rdd":
        results = rdd.mapPartitions(lambda part: run_cells(part, host)).collect()
        return pa.Table.from_pylist(results, schema=schema)
    names = schema.names

    def on_batches(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        cells = (row for batch in batches for row in batch.to_dict("records"))
        for result in run_cells(cells, host):
            yield pd.DataFrame([result], columns=names)

    frame = spark.createDataFrame(rdd, schema=from_arrow_schema(_CELL_SCHEMA))
    out = frame.mapInPandas(on_batches, schema=from_arrow_schema(schema))
    return out.toArrow().cast(schema)


def describe(cells: Sequence[Cell]) -> str:
    """One line: how many cells over how many profiles, overrides, workloads and seeds."""
    return (
        f"{len(cells)} cells: {len({c.profile for c in cells})} profiles x "
        f"{len({c.overrides for c in cells})} override sets x "
        f"{len({c.workload for c in cells})} workloads x {len({c.seed for c in cells})} seeds"
    )
