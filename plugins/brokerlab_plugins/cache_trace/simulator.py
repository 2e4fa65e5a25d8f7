"""The ``cache-trace`` simulator: a profile's entry cache, alone, under a standard cache trace.

It builds the cache, its eviction-predicate chain and its cursor container exactly as the Pulsar
simulator does for a broker, replays the trace through it (:mod:`.replay`) and reports hit ratios
that compare directly with those of generic cache policies on the same trace.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from brokerlab.broker.events import EventLoop
from brokerlab.protocols import EntryCache, SimulationOutput, SimulationRequest
from brokerlab.simulation import plugin_context
from brokerlab_plugins.cache_trace.model import TraceWorkload
from brokerlab_plugins.cache_trace.replay import TraceReplay
from brokerlab_plugins.cache_trace.traces import Trace, TraceLimits, read_trace

__all__ = ["limits_of", "load_trace", "replay_trace", "run_cache_trace", "trace_metrics"]

_MS = 1_000_000


def limits_of(workload: TraceWorkload) -> TraceLimits:
    """The part of its trace that ``workload`` replays."""
    return TraceLimits(workload.duration_s, workload.time_unit_s, workload.max_requests)


def load_trace(workload: TraceWorkload) -> Trace:
    """The requests ``workload`` replays (a :class:`~brokerlab.errors.WorkloadError` names the
    trace file when it cannot be read)."""
    return read_trace(workload.trace, workload.format, limits_of(workload))


def run_cache_trace(request: SimulationRequest) -> SimulationOutput:
    """Replay a :class:`TraceWorkload` through the profile's entry cache."""
    trace, hits, replay = replay_trace(request)
    names = request.choices.names()  # the roles used here, not the broker's other plugins
    plugins = {
        role: names[role] for role in ("entry_cache", "cursor_container", "eviction_predicates")
    }
    return SimulationOutput(
        metrics=trace_metrics(trace, hits, replay.peak_bytes),
        plugins=plugins,
        events=replay.loop.events_run + len(trace),
    )


def replay_trace(request: SimulationRequest) -> tuple[Trace, npt.NDArray[np.bool_], TraceReplay]:
    """The replay behind :func:`run_cache_trace`: the trace, whether each request hit, and the
    finished replay (its cache and clock)."""
    workload, profile, choices = request.workload, request.profile, request.choices
    assert isinstance(workload, TraceWorkload)
    settings = profile.settings
    trace = load_trace(workload)
    loop = EventLoop()
    context = plugin_context(profile, choices, loop, request.seed)
    cache: EntryCache = choices.entry_cache.record.factory(context)
    replay = TraceReplay(
        cache,
        choices.cursor_container.record.factory(),
        loop,
        eviction_interval_ns=settings.cache_eviction_interval_ms * _MS,
        entries_per_ledger=workload.entries_per_ledger
        or settings.managed_ledger_max_entries_per_ledger,
        admission=workload.admission,
    )
    return trace, replay.run(trace, request.progress), replay


def trace_metrics(
    trace: Trace, hits: npt.NDArray[np.bool_], peak_bytes: int
) -> Mapping[str, float]:
    """Every ``cache-trace`` metric of one replay."""
    requests = len(trace)
    hit_count = int(hits.sum())
    requested = int(trace.sizes.sum())
    hit_bytes = int(trace.sizes[hits].sum())
    return {
        "trace_requests": requests,
        "trace_skipped_requests": trace.skipped,
        "trace_objects": trace.object_count,
        "trace_span_s": int(trace.times_ns[-1]) / 1e9 if requests else 0.0,
        "trace_hits": hit_count,
        "trace_misses": requests - hit_count,
        "trace_hit_ratio": hit_count / requests if requests else 0.0,
        "trace_byte_hit_ratio": hit_bytes / requested if requested else 0.0,
        "trace_miss_bytes": requested - hit_bytes,
        "trace_peak_cache_bytes": peak_bytes,
    }
