"""Registration of the cache-trace family: its simulator and its built-in workload."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Iterator
from importlib import resources

from brokerlab import Metric
from brokerlab.hookspecs import hookimpl
from brokerlab.records import SimulatorRecord, WorkloadRecord
from brokerlab.workloads.scaling import check_scale
from brokerlab_plugins.cache_trace.metrics import METRICS
from brokerlab_plugins.cache_trace.model import SIMULATOR, TraceWorkload
from brokerlab_plugins.cache_trace.resources import estimate_trace, requests_in
from brokerlab_plugins.cache_trace.simulator import limits_of, run_cache_trace
from brokerlab_plugins.cache_trace.traces import count_requests

__all__ = ["TRACE_WORKLOADS", "estimated_cost", "scale_trace_workload"]

TRACE_WORKLOADS = ("trace-zipf",)


def scale_trace_workload(workload: TraceWorkload, factor: float) -> TraceWorkload:
    """A cheaper run: the first ``factor`` of the requests the workload replays (at least one).

    Reads the trace once to count them.
    """
    check_scale(factor)
    if factor == 1.0:
        return workload
    total = count_requests(workload.trace, workload.format, limits_of(workload))
    return workload.model_copy(update={"max_requests": max(1, math.floor(total * factor))})


def estimated_cost(workload: TraceWorkload) -> float:
    """About how many requests a run replays, without reading the trace: ``max_requests``, or
    what the file's size suggests (an oracleGeneral record is 24 bytes; a CSV line is as long as
    its first lines)."""
    if workload.max_requests is not None:
        return float(workload.max_requests)
    return max(1.0, requests_in(workload)[0])  # 1: the run reports a missing file


@hookimpl
def brokerlab_simulators() -> Iterator[SimulatorRecord]:
    yield SimulatorRecord(
        name=SIMULATOR,
        description="A standard cache trace (libCacheSim oracleGeneral or CSV) replayed "
        "straight through the profile's entry cache, for comparison with generic policies",
        workload_model=TraceWorkload,
        run=run_cache_trace,
        scale=scale_trace_workload,
        cost=estimated_cost,
        estimate=estimate_trace,
        settings_of=("pulsar",),  # the entry caches read Pulsar's keys
    )


@hookimpl
def brokerlab_workloads() -> Iterator[WorkloadRecord]:
    folder = resources.files(__package__).joinpath("workloads")
    for name in TRACE_WORKLOADS:
        document = folder.joinpath(f"{name}.toml")
        text = document.read_text(encoding="utf-8")
        yield WorkloadRecord(
            name=name,
            description=str(tomllib.loads(text).get("description", "")),
            document=text,
            # The Pulsar built-ins' origin form; the model finds the trace next to the document.
            origin=f"builtin:{name} ({document})",
            metadata={"simulator": SIMULATOR},
        )


@hookimpl
def brokerlab_metrics() -> Iterator[Metric]:
    yield from METRICS
