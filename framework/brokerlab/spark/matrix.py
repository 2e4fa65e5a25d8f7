"""``brokerlab matrix`` without the CLI: plan cells, skip finished ones, run the rest, summarize.

Planning (profiles, sweeps, workloads, scale) happens entirely before Spark starts, so bad input
fails in well under a second with the usual error format. Spark is imported only when there is
something to run.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import pyarrow as pa  # imported by the result store already

from brokerlab._api import load_profile
from brokerlab.errors import OutputError, ProfileError
from brokerlab.files import unwritable_folder_reason
from brokerlab.host import PluginHost
from brokerlab.spark.applicability import key_owners, keys_not_applied
from brokerlab.spark.cells import Cell, build_cells, parse_sweeps, profile_labels
from brokerlab.spark.executor import HostConfig
from brokerlab.spark.lock import holding
from brokerlab.spark.outdir import check_layout, check_space
from brokerlab.spark.progress import MatrixProgress
from brokerlab.spark.results import (
    ResultStore,
    read_metrics,
    write_profile_order,
    write_summary,
)
from brokerlab.spark.schema import STATUS_FAILED

__all__ = [
    "SHOWCASE_FOCUS",
    "SHOWCASE_SEEDS",
    "MatrixInterrupted",
    "MatrixOutcome",
    "MatrixRequest",
    "ShowcaseFocus",
    "plan",
    "ready_profiles",
    "run_matrix",
    "showcase_focus",
    "showcase_scale",
    "sweep_keys_not_applied",
]

SHOWCASE_SEEDS = 3
SPARK_LOG = "spark.log"  # the JVM's and Python workers' own output, out of the terminal
# Core-seconds per profile and seed (its simulator's built-in workloads once) at each scale,
# measured as the showcase's cells (10 profiles x 3 seeds, 282 cells) on the 2-core reference
# machine: 90 s of wall time at 0.2 with every built-in workload on its bookies, times 2 cores x
# _EFFICIENCY over 30; the smaller scales are their earlier measurements grown by the same
# factor (1.2). Small scales cost more than their share: Spark's per-cell overhead stays. The
# showcase takes the largest scale whose matrix fits its time budget. None below 0.05: the
# built-in workloads' restarts keep their outages, and rolling-restart's would overlap.
SHOWCASE_COST_S = {0.2: 5.1, 0.1: 3.1, 0.05: 2.3}


@dataclass(frozen=True)
class ShowcaseFocus:
    """A comparison the showcase adds to every ready profile x every workload: one profile with
    a limit it studies lowered (its ``--set`` values are in its label), so that the limit binds
    within a shortened run. The profiles keep Pulsar's (or the proposal's) defaults, and the
    showcase runs them too: their "was never reached" warnings are part of the story."""

    profile: str
    """File name in ``profiles/``."""
    sets: tuple[str, ...]
    workloads: tuple[str, ...]
    why: str


SHOWCASE_FOCUS: tuple[ShowcaseFocus, ...] = (
    ShowcaseFocus(
        "ack-range-limit.conf",
        ("managedLedgerMaxUnackedRangesToPersist=100",),
        ("ack-holes-restart",),
        "at --scale 0.2 a subscription of ack-holes-restart peaks at ~240 ack ranges: Pulsar's "
        "10,000 would need ~40 times the run; 100 binds (ranges dropped, dispatch paused)",
    ),
    ShowcaseFocus(
        "pip299-ack-bytes.conf",
        ("managedLedgerMaxAckStateInBytesToPersist=1024",),
        ("ack-holes-restart",),
        "the proposal's 5 MiB holds ~238k ranges; its lower bound, 1 KiB (~47 ranges), binds",
    ),
    ShowcaseFocus(
        "pip81-split-acks.conf",
        ("maxIndividualAckCacheBytesPerCursor=1024", "managedLedgerMaxEntriesPerLedger=5000"),
        ("ack-holes-restart",),
        "PIP-81 swaps out whole ledgers' ack state, least recently used first: a shortened run "
        "fits in one 50,000-entry ledger and 3 MiB; 5,000-entry ledgers and 1 KiB per cursor "
        "make it swap",
    ),
)
"""The showcase's focused comparisons (docs/spark.md, "The showcase")."""


def showcase_focus(folder: Path, seeds: int, scale: float) -> tuple[MatrixRequest, ...]:
    """The :data:`SHOWCASE_FOCUS` matrices whose profile is in ``folder``."""
    return tuple(
        MatrixRequest(
            profiles=[str(folder / focus.profile)],
            sweeps=focus.sets,
            workloads=focus.workloads,
            seeds=seeds,
            scale=scale,
        )
        for focus in SHOWCASE_FOCUS
        if (folder / focus.profile).is_file()
    )


SHOWCASE_BUDGET_S = 210.0  # wall seconds for the cells; Spark start and the report take the rest
_EFFICIENCY = 0.85  # measured speed-up on 2 cores is ~1.7-1.9x

# The master URLs Spark accepts: a typo is refused here, not after a JVM start and Java traces.
MASTER_FORMS = (
    "local, local[N], local[*], local[N,F], spark://HOST:PORT[,HOST:PORT...], yarn, "
    "k8s://URL, mesos://URL"
)
_HOST_PORT = r"(\[[0-9A-Fa-f:.]+\]|[^\s/:,\[\]]+):\d+"
_MASTER = re.compile(
    rf"local(\[(\d+|\*)(\s*,\s*\d+)?\])?|spark://{_HOST_PORT}(,{_HOST_PORT})*"
    r"|yarn|k8s://\S+|mesos://\S+"
)


@dataclass(frozen=True)
class MatrixRequest:
    """What to run: the CLI's arguments, as data."""

    profiles: Sequence[str]
    sweeps: Sequence[str] = ()
    workloads: Sequence[str] = ()
    seeds: int = SHOWCASE_SEEDS
    scale: float = 1.0
    out: Path | None = None
    master: str | None = None
    modules: Sequence[str] = ()
    engine: str = "rdd"
    wave_size: int | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)
    note: str = ""
    """Shown with the progress: the resource estimate of the largest cell."""
    also: tuple[MatrixRequest, ...] = ()
    """More matrices (their profiles, sets, workloads; seeds and scale as given) run with this
    one, in the same Spark session and ``out`` folder: the showcase's focused comparisons."""


class MatrixInterrupted(KeyboardInterrupt):
    """Ctrl-C during a matrix; its message says what is saved and how to resume."""


@dataclass(frozen=True)
class MatrixOutcome:
    """What happened: where the results are, and which cells failed (ids and labels)."""

    out: Path
    cells: int
    resumed: int
    ran: int
    failed: list[str]


def ready_profiles(folder: Path) -> list[Path]:
    """The ready profiles: every ``*.conf`` in ``folder`` but the generated reference."""
    return sorted(p for p in folder.glob("*.conf") if p.name != "reference.conf")


def showcase_scale(profiles: int, seeds: int, cores: int) -> float:
    """The largest measured scale whose showcase matrix fits :data:`SHOWCASE_BUDGET_S`."""
    for scale in sorted(SHOWCASE_COST_S, reverse=True):
        wall = profiles * seeds * SHOWCASE_COST_S[scale] / (max(cores, 1) * _EFFICIENCY)
        if wall <= SHOWCASE_BUDGET_S:
            return scale
    return min(SHOWCASE_COST_S)


def default_out() -> Path:
    """``results/<UTC timestamp>/`` under the working directory."""
    return Path("results") / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def check_master(master: str | None) -> None:
    """Raise :class:`ProfileError` unless ``master`` (``None``: Spark's config) has a valid form."""
    if master is not None and not _MASTER.fullmatch(master):
        raise ProfileError(
            "is not a Spark master URL", key="--master", value=master, allowed=MASTER_FORMS
        )


def check_out(out: Path) -> None:
    """Raise :class:`ProfileError` (the class of every bad option of a run: --master, --seed,
    --timeline) unless ``out`` is (or now became) a writable folder."""
    problem = unwritable_folder_reason(out)
    if problem is not None:
        raise ProfileError(
            problem, key="--out", value=str(out), allowed="a folder path (created if missing)"
        )


def plan(request: MatrixRequest, host: PluginHost) -> list[Cell]:
    """Every cell of the request, validated (raises ProfileError / WorkloadError)."""
    profiles = [load_profile(path, host=host) for path in request.profiles]
    return build_cells(
        profiles,
        parse_sweeps(request.sweeps),
        list(request.workloads),
        request.seeds,
        host,
        scale=request.scale,
    )


def sweep_keys_not_applied(request: MatrixRequest, host: PluginHost) -> dict[str, dict[str, str]]:
    """Profile label -> the ``--set`` keys it does not read -> why (it ran once for them)."""
    sweeps = {s.key: s.values for s in parse_sweeps(request.sweeps)}
    if not sweeps:
        return {}
    profiles = [load_profile(path, host=host) for path in request.profiles]
    labels = profile_labels([str(p.path) if p.path else None for p in profiles])
    owners = key_owners(host)
    found = {
        label: keys_not_applied(profile, label, sweeps, host, owners)
        for label, profile in zip(labels, profiles, strict=True)
    }
    return {label: keys for label, keys in found.items() if keys}


def _plan_all(request: MatrixRequest, host: PluginHost) -> list[Cell]:
    """The cells of ``request`` and of each of its ``also`` matrices, each cell once."""
    cells = [cell for one in (request, *request.also) for cell in plan(one, host)]
    return list({cell.cell_id: cell for cell in cells}.values())


def _not_applied_all(request: MatrixRequest, host: PluginHost) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for one in (request, *request.also):
        for label, keys in sweep_keys_not_applied(one, host).items():
            found.setdefault(label, {}).update(keys)
    return found


def run_matrix(
    request: MatrixRequest,
    host: PluginHost,
    log: TextIO | None = None,
    then: Callable[[Path], None] | None = None,
) -> MatrixOutcome:
    """Plan, resume, run on Spark, write results and ``summary.csv``, then call ``then`` with
    the folder (the CLI writes the report there) while still holding the folder's lock.

    Raises :class:`OutputError` (exit 2) when the folder is another run's, or a write fails:
    whatever was computed is then kept, and the message says where."""
    log = log or sys.stderr
    check_master(request.master)
    cells = _plan_all(request, host)
    out = request.out or default_out()
    check_out(out)  # before Spark: results are written there from the first wave on
    check_layout(out, sorted({cell.workload for cell in cells}))

    def warn(message: str) -> None:
        log.write(f"brokerlab: warning: {message}\n")

    with holding(out, "matrix", warn):
        store = ResultStore(out, warn=warn, metrics=tuple(host.metrics()))
        store.compact()
        done = store.finished()
        todo = [cell for cell in cells if cell.cell_id not in done]
        check_space(out, len(todo), len({cell.workload for cell in todo}))
        order = list(dict.fromkeys(cell.profile for cell in cells))
        write_profile_order(out, order, _not_applied_all(request, host), host.metrics())
        resumed = len(cells) - len(todo)
        if resumed:
            log.write(f"resuming in {out}: {resumed} of {len(cells)} cells already finished\n")
        if todo:
            _run_todo(request, host, cells, todo, store, log)
        with contextlib.suppress(OSError):
            (out / ".tmp").rmdir()  # empty after a clean run; a crash may leave stray temporaries
        frame = store.load()
        mine = frame[frame["cell_id"].isin({c.cell_id for c in cells})]
        failed = mine[mine["status"] == STATUS_FAILED]
        try:
            write_summary(frame, out, read_metrics(out))
            if then is not None:
                then(out)
        except OSError as exc:
            raise OutputError(
                f"cannot write {exc.filename or out}: {_reason(exc)}; the results of every cell "
                f"are kept in {store.results}: free space and run 'brokerlab report {out}'"
            ) from exc
    labels = [
        f"{r.cell_id} ({r.profile} {r.overrides} {r.workload} seed {r.seed})"
        for r in failed.itertuples()
    ]
    return MatrixOutcome(out, len(cells), resumed, len(todo), labels)


def _reason(exc: OSError) -> str:
    """``No space left on device [Errno 28]``: the OS's own words (pyarrow wraps them in its)."""
    if exc.errno:
        return f"{os.strerror(exc.errno)} [Errno {exc.errno}]"
    return exc.strerror or str(exc) or type(exc).__name__


class _WaveWriteFailed(Exception):
    """A finished wave could not be written to the results folder (it went to ``rescue``)."""

    def __init__(self, error: OSError, rescue: Path | None, rescue_error: OSError | None) -> None:
        super().__init__(str(error))
        self.error, self.rescue, self.rescue_error = error, rescue, rescue_error


class _WaveSaver:
    """Writes each finished wave into the store; a wave the store cannot take (a full disk) is
    written to a rescue folder on another file system, and the run stops."""

    def __init__(self, store: ResultStore) -> None:
        self.store = store
        self.rescue: Path | None = None
        self.rescued = 0

    def __call__(self, table: pa.Table) -> None:
        try:
            self.store.write(table)
        except OSError as exc:
            rescue_error = None
            try:
                if self.rescue is None:
                    stamp = time.strftime("%Y%m%dT%H%M%S")
                    self.rescue = (
                        Path(tempfile.gettempdir()) / f"brokerlab-rescue-{stamp}-{os.getpid()}"
                    )
                ResultStore(self.rescue).write(table)
                self.rescued += table.num_rows
            except OSError as again:
                rescue_error = again
            raise _WaveWriteFailed(exc, self.rescue, rescue_error) from exc


def _run_todo(
    request: MatrixRequest,
    host: PluginHost,
    cells: list[Cell],
    todo: list[Cell],
    store: ResultStore,
    log: TextIO,
) -> None:
    """Run ``todo`` on Spark; an interruption or a failed write ends in one message that says
    what is saved and how to resume."""
    every = max(1, len(todo) // 10)  # about ten lines in a log, one per wave
    progress = MatrixProgress(
        log, len(cells), len(cells) - len(todo), line_every=every, note=request.note
    )
    saver = _WaveSaver(store)
    try:
        _run_on_spark(request, host, todo, saver, progress, store.out)
    except KeyboardInterrupt as exc:
        saved = len(store.finished() & {c.cell_id for c in cells})
        raise MatrixInterrupted(
            f"interrupted: {saved} of {len(cells)} cells saved in {store.results}; "
            "run the same command again to resume"
        ) from exc
    except _WaveWriteFailed as failure:
        saved = len(store.finished() & {c.cell_id for c in cells})
        where = failure.error.filename or store.results
        text = (
            f"cannot write {where}: {_reason(failure.error)}; {saved} of {len(cells)} cells "
            f"are saved in {store.results}"
        )
        if failure.rescue is not None and failure.rescue_error is None:
            text += (
                f", {saver.rescued} more in {failure.rescue / 'results'} (keep them with: cp -r "
                f"{failure.rescue / 'results'} {store.out}/)"
            )
        text += "; free space and run the same command again to resume"
        raise OutputError(text) from failure


def _run_on_spark(
    request: MatrixRequest,
    host: PluginHost,
    todo: list[Cell],
    on_wave: Callable[[pa.Table], None],
    progress: MatrixProgress,
    output: Path,
) -> None:
    from brokerlab.spark.processes import interrupt_once
    from brokerlab.spark.runner import RunnerConfig, run_waves  # pyspark: only when running
    from brokerlab.spark.session import start_session, stop_session

    config = RunnerConfig(
        engine="pandas" if request.engine == "pandas" else "rdd",
        wave_size=request.wave_size,
        host=HostConfig(tuple(request.modules), tuple(sorted(host.blocked)), tuple(host.metrics())),
    )
    with interrupt_once():
        spark, created = start_session(
            request.master, conf=request.spark_conf, output=output / SPARK_LOG
        )
        progress.started = time.monotonic()  # time left counts cells, not the JVM's start
        try:
            try:
                run_waves(spark, todo, config, on_wave, progress.update)
                progress.update(len(todo))
            finally:
                progress.close()
            if created:  # a session the caller started is the caller's to stop
                stop_session(spark)
        except KeyboardInterrupt:
            if created:  # at once, with its workers: Ctrl-C ends every process of the run
                stop_session(spark, kill=True)
            raise
        except BaseException:
            if created:  # a failed job or write: the JVM exits as after a run
                try:
                    stop_session(spark)
                except KeyboardInterrupt:
                    stop_session(spark, kill=True)
            raise
