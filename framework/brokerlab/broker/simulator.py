"""The Pulsar broker model, registered as the ``pulsar`` simulator.

It is the framework's own simulator: the host registers this module always, so a workload without
a ``simulator`` key runs here. It wires the plugins a profile chose into :class:`Broker` and turns
the broker's counters and the plugins' stats into metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from brokerlab.broker.broker import Broker, BrokerPlugins, BrokerTuning, percentiles
from brokerlab.broker.cluster import Cluster, combined_metrics, merged_histogram
from brokerlab.broker.durations import write_latencies
from brokerlab.broker.events import EventLoop
from brokerlab.broker.streams import stream
from brokerlab.errors import PluginError
from brokerlab.gc_policy import collector_paused, new_objects_only
from brokerlab.hookspecs import hookimpl
from brokerlab.metrics import FRAMEWORK_METRICS, Metric, MetricRegistry
from brokerlab.protocols import (
    AckStatePersister,
    PluginContext,
    SimulationOutput,
    SimulationRequest,
)
from brokerlab.records import AckStatePersisterRecord, PluginRecord, SimulatorRecord
from brokerlab.workloads.model import StorageSpec, WorkloadSpec
from brokerlab.workloads.resources import estimate
from brokerlab.workloads.scaling import estimated_cost, scale_workload

if TYPE_CHECKING:
    from brokerlab.host import PluginChoices, Registered
    from brokerlab.profiles import Profile

__all__ = ["PULSAR", "run_pulsar", "wire_broker"]

PULSAR = "pulsar"
# What a cluster reports only as a whole: its size, and the producers' metrics (the clients',
# which the model keeps with the first broker whichever broker persists their messages).
NOT_PER_BROKER = frozenset(
    {"brokers", *(m.name for m in FRAMEWORK_METRICS if m.group == "publishing")}
)


def run_pulsar(request: SimulationRequest) -> SimulationOutput:
    """Simulate a Pulsar workload (:class:`WorkloadSpec`) on the broker model."""
    workload = request.workload
    assert isinstance(workload, WorkloadSpec)
    loop = EventLoop()
    brokers = [
        wire_broker(
            request.profile, request.choices, loop, request.seed, index=i, storage=workload.storage
        )
        for i in range(workload.cluster.brokers)
    ]
    # One broker is a cluster too, for the unload of a topic's bundle; it is built as before.
    cluster = Cluster(brokers, request.profile.settings.default_number_of_namespace_bundles)
    # The collector walks neither the process's startup objects nor the model, which both live
    # through the run; it collects only what the run creates.
    with new_objects_only() as keep:
        with collector_paused():
            if len(brokers) == 1:
                brokers[0].build(workload)
                cluster.schedule_topic_unloads(workload)
            else:
                cluster.build(workload)
            keep()  # before the collector is back, or its first pass walks the whole model
        end = brokers[0].end_ns
        progress = request.progress
        report = None if progress is None else (lambda now: progress(now / end if end else 1.0))
        loop.run_until(end, report)
    per_broker: tuple[dict[str, float], ...] = ()
    if len(brokers) == 1:
        metrics = _collect(brokers[0], request.choices, request.metrics)
        _derive(metrics, request.metrics)
    else:
        metrics, per_broker = _collect_cluster(brokers, request.choices, request.metrics)
    for broker in brokers:
        broker.plugins.tracker_factory.close()
    return SimulationOutput(
        metrics=metrics,
        plugins=request.choices.names(),
        events=loop.events_run,
        per_broker=per_broker,
    )


def wire_broker(
    profile: Profile,
    choices: PluginChoices,
    loop: EventLoop,
    seed: int,
    wrap_persister: Callable[[AckStatePersister], AckStatePersister] | None = None,
    index: int = 0,
    storage: StorageSpec | None = None,
) -> Broker:
    """A broker on ``loop`` with the plugins ``choices`` names, set up from ``profile``; not yet
    built. ``wrap_persister`` (tests) wraps every cursor's persister as it is created. ``index``
    numbers a cluster's brokers: each after the first has a random stream of its own.
    ``storage`` (the workload's) tells the plugins how long a storage write takes."""
    context = PluginContext(
        settings=profile.settings,
        clock=loop,
        scheduler=loop,
        rng=stream(seed, "plugins") if index == 0 else stream(seed, "plugins", f"broker-{index}"),
        plugin_settings=profile.plugin_settings,
        new_cursor_container=choices.cursor_container.record.factory,
        storage_write_ns=None
        if storage is None
        else write_latencies(storage.write_latency_ms, seed),
    )
    predicates = tuple(reg.record.factory(context) for reg in choices.eviction_predicates)
    context = context.with_(eviction_predicates=predicates)
    new_persister = partial(_new_persister, choices.ack_state_persister.record, context)
    plugins = BrokerPlugins(
        cache=choices.entry_cache.record.factory(context),
        new_cursor_container=choices.cursor_container.record.factory,
        tracker_factory=choices.delayed_delivery.record.factory(context),
        new_persister=new_persister
        if wrap_persister is None
        else (lambda cursor: wrap_persister(new_persister(cursor))),
    )
    return Broker(BrokerTuning.from_settings(profile.settings), plugins, loop, seed)


def _new_persister(
    record: AckStatePersisterRecord, context: PluginContext, cursor: str
) -> AckStatePersister:
    return record.factory(context, cursor)


def _collect(broker: Broker, choices: PluginChoices, registry: MetricRegistry) -> dict[str, float]:
    """The broker's counters and the plugins' stats: what was measured, nothing more (a metric
    nobody reported stays out, and the run reports it as null)."""
    metrics: dict[str, float] = dict(broker.finish())
    reported: dict[str, float] = _declared(broker.cache.stats(), choices.entry_cache, registry)
    # The peaks are the tracker factory's gauges, sampled, and the broker's own cache peak.
    for name, value in _declared(broker.peaks, choices.delayed_delivery, registry).items():
        reported[name] = max(value, reported.get(name, value))
    # Persisters report per cursor; their counters add up over cursors.
    for persister in broker.persisters():
        stats = _declared(persister.stats(), choices.ack_state_persister, registry)
        for name, value in stats.items():
            reported[name] = reported.get(name, 0) + value
    # In a cluster, what the persisters of topics that moved counted on the other brokers.
    for name, value in broker.moved_persister_stats.items():
        reported[name] = reported.get(name, 0) + value
    metrics.update(reported)
    metrics["brokers"] = 1
    return metrics


def _derive(metrics: dict[str, float], registry: MetricRegistry) -> None:
    """Compute in ``metrics`` the declared ratios (``Metric.ratio_of``) of what was reported:
    absent when a term is (it was not measured), 0 when the denominator is."""
    for m in registry.values():
        if m.ratio_of is None or m.simulator != PULSAR:
            continue
        numerator, terms = m.ratio_of
        if numerator not in metrics or any(t not in metrics for t in terms):
            metrics.pop(m.name, None)
            continue
        denominator = sum(metrics[t] for t in terms)
        metrics[m.name] = metrics[numerator] / denominator if denominator else 0.0


def _collect_cluster(
    brokers: list[Broker], choices: PluginChoices, registry: MetricRegistry
) -> tuple[dict[str, float], tuple[dict[str, float], ...]]:
    """The cluster's metrics and each broker's own. The cluster's are the brokers' combined
    (``cluster.combined_metrics``), with the ratios recomputed from the sums, the latency
    percentiles from the brokers' histograms added up, and the cluster's own counts; each
    broker's are what :func:`_collect` reports for it, without :data:`NOT_PER_BROKER`."""
    kinds = {name: m.kind for name, m in registry.items()}
    each = [_collect(b, choices, registry) for b in brokers]
    for metrics in each:
        _derive(metrics, registry)
    combined = combined_metrics(each, kinds)
    combined["latency_p50_ms"], combined["latency_p99_ms"] = percentiles(
        merged_histogram(brokers), (0.5, 0.99)
    )
    _derive(combined, registry)
    combined["brokers"] = len(brokers)
    own = tuple({k: v for k, v in m.items() if k not in NOT_PER_BROKER} for m in each)
    return combined, own


def _declared(
    stats: Mapping[str, float], reporter: Registered[Any], registry: MetricRegistry
) -> dict[str, float]:
    """``stats``, refused (naming the record that reported it) if a name is no declared Pulsar
    metric."""
    record: PluginRecord = reporter.record
    for name in stats:
        if name not in registry or registry[name].simulator != PULSAR:
            raise PluginError(
                f"{type(record).__name__} {record.name!r} of plugin {reporter.plugin!r} "
                f"({reporter.source}) reported the undeclared metric {name!r}",
                allowed="the metrics of the pulsar simulator that a loaded plugin declares "
                "(brokerlab_metrics; `brokerlab metrics` lists them)",
            )
    return dict(stats)


@hookimpl
def brokerlab_simulators() -> Iterator[SimulatorRecord]:
    yield SimulatorRecord(
        name=PULSAR,
        description="The Pulsar broker model: topics, managed ledgers, cursors, dispatchers",
        workload_model=WorkloadSpec,
        run=run_pulsar,
        scale=scale_workload,
        cost=estimated_cost,
        estimate=estimate,
    )


@hookimpl
def brokerlab_metrics() -> Iterator[Metric]:
    yield from FRAMEWORK_METRICS
