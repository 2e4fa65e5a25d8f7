"""``simulate(profile, workload, seed)``: hand a workload to the simulator it names and collect
its metrics.

A simulation is a pure function of its three inputs: virtual time only, randomness only from
streams seeded by ``seed``, and no state shared between runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from brokerlab.broker.events import EventLoop
from brokerlab.broker.streams import stream
from brokerlab.errors import PluginError, WorkloadError
from brokerlab.host import PluginChoices, PluginHost, Registered
from brokerlab.metrics import MetricRegistry, current, using
from brokerlab.profiles import Profile
from brokerlab.protocols import PluginContext, SimulationRequest
from brokerlab.records import SimulatorRecord, WorkloadRecord
from brokerlab.workloads import WorkloadDocument, resolve_workload

__all__ = [
    "Result",
    "load_workload",
    "plugin_context",
    "profile_simulators",
    "run_simulation",
    "simulate",
]

Progress = Callable[[float], None]


@dataclass(frozen=True)
class Result:
    """One simulation's outcome: what ran, and every metric of its simulator as a number, or
    ``None`` where nothing reported it; for a cluster of more than one broker, ``metrics`` are the
    cluster's and ``per_broker`` each broker's own."""

    profile: str
    workload: str
    seed: int
    plugins: Mapping[str, str]
    metrics: Mapping[str, float | None]
    events: int = field(default=0, compare=False)
    timeline: tuple[Mapping[str, float], ...] = field(default=(), compare=False, repr=False)
    per_broker: tuple[Mapping[str, float | None], ...] = ()
    compiled: Mapping[str, list[str]] = field(default_factory=dict, compare=False)
    """Role -> the modules of its plugin that ran compiled (``PluginHost.compiled_modules``):
    provenance, not a result, so runs that differ only here compare equal."""

    def to_json(self) -> str:
        """The CLI's ``--json`` document; byte-identical for identical inputs and builds.
        ``per_broker`` appears only for a cluster, ``compiled`` only when it was recorded."""
        document: dict[str, object] = {
            "profile": self.profile,
            "workload": self.workload,
            "seed": self.seed,
            "plugins": dict(self.plugins),
            "metrics": dict(self.metrics),
        }
        if self.per_broker:
            document["per_broker"] = [dict(m) for m in self.per_broker]
        if self.compiled:
            document["compiled"] = dict(self.compiled)
        return json.dumps(document, indent=2)


def load_workload(host: PluginHost, name_or_path: str) -> WorkloadDocument:
    """A workload named on the command line (a registered name or alias, or a TOML file),
    validated by the model of the simulator it names (its headline against ``host``'s metrics)."""
    records = {reg.record.name: _labelled(reg) for reg in host.records("workload")}
    with using(host.metrics()):
        return resolve_workload(name_or_path, records, host.workload_models())


def _labelled(reg: Registered[WorkloadRecord]) -> WorkloadRecord:
    """The record with an ``origin`` for errors: a record without one is named by its plugin."""
    if reg.record.origin:
        return reg.record
    return replace(reg.record, origin=f"plugin {reg.plugin}: workload {reg.record.name}")


def profile_simulators(profile: Profile, host: PluginHost) -> set[str]:
    """The simulators whose keys ``profile`` sets explicitly (empty: it suits every simulator).

    A matrix pairs a profile only with workloads of these simulators, so Kafka profiles meet Kafka
    workloads and Pulsar profiles Pulsar ones, while a file of defaults meets both.
    """
    owners = {record.namespace: record.simulator for record in host.plugin_settings()}
    return {
        "pulsar" if namespace is None else owners[namespace]
        for namespace in profile.namespaces_set()
    }


def plugin_context(
    profile: Profile, choices: PluginChoices, loop: EventLoop, seed: int
) -> PluginContext:
    """What a simulator hands the plugins ``profile`` chose: the validated settings, ``loop`` as
    clock and scheduler, the seed's ``plugins`` random stream, the chosen cursor container, and
    the eviction-predicate chain built in the same context (one of each per simulation)."""
    context = PluginContext(
        settings=profile.settings,
        clock=loop,
        scheduler=loop,
        rng=stream(seed, "plugins"),
        plugin_settings=profile.plugin_settings,
        new_cursor_container=choices.cursor_container.record.factory,
    )
    predicates = tuple(reg.record.factory(context) for reg in choices.eviction_predicates)
    return context.with_(eviction_predicates=predicates)


def simulate(
    profile: Profile,
    workload: WorkloadDocument | str,
    seed: int = 0,
    *,
    host: PluginHost | None = None,
    progress: Progress | None = None,
) -> Result:
    """Run ``workload`` (a document, a registered name or a TOML path) under ``profile``."""
    host = host or PluginHost()
    choices = host.resolve(profile)
    if isinstance(workload, str):
        workload = load_workload(host, workload)
    simulator = host.simulator(workload.simulator)
    fits = profile_simulators(profile, host)
    if fits and not fits & simulator.settings_families:
        raise WorkloadError(
            f"runs on the {simulator.name!r} simulator, but the profile sets keys of "
            f"{', '.join(sorted(fits))} only; pick a workload of that simulator "
            "(brokerlab workloads lists each one's)",
            value=workload.name,
        )
    result = run_simulation(
        profile,
        choices,
        workload,
        seed,
        simulator=simulator,
        progress=progress,
        metrics=host.metrics(),
    )
    return replace(result, compiled=host.compiled_modules(choices, workload.simulator))


def run_simulation(
    profile: Profile,
    choices: PluginChoices,
    workload: WorkloadDocument,
    seed: int,
    *,
    simulator: SimulatorRecord,
    progress: Progress | None = None,
    metrics: MetricRegistry | None = None,
) -> Result:
    """The simulation proper, from already resolved plugin choices (executors call this).

    ``metrics`` is the registry of the host that resolved ``choices`` (default: the one in
    effect, :func:`brokerlab.metrics.current`)."""
    registry = metrics if metrics is not None else current()
    if not isinstance(workload, simulator.workload_model):
        raise WorkloadError(
            f"is a {type(workload).__name__}; the {simulator.name!r} simulator runs "
            f"{simulator.workload_model.__name__} documents",
            value=workload.name,
        )
    request = SimulationRequest(profile, choices, workload, seed, progress, registry)
    output = simulator.run(request)
    return Result(
        profile=str(profile.path) if profile.path else "",
        workload=workload.name,
        seed=seed,
        plugins=dict(output.plugins),
        metrics=_numbers(output.metrics, simulator.name, registry),
        events=output.events,
        timeline=output.timeline,
        per_broker=_per_broker(output.metrics, output.per_broker, simulator.name, registry),
    )


def _per_broker(
    cluster: Mapping[str, float],
    brokers: tuple[Mapping[str, float], ...],
    simulator: str,
    registry: MetricRegistry,
) -> tuple[dict[str, float | None], ...]:
    """Each broker's metrics as :func:`_numbers` gives them, without the ones the simulator
    reports for the cluster only (reported for it, by no broker)."""
    own = {name for metrics in brokers for name in metrics}
    cluster_only = set(cluster) - own
    return tuple(
        {
            name: value
            for name, value in _numbers(metrics, simulator, registry).items()
            if name not in cluster_only
        }
        for metrics in brokers
    )


def _numbers(
    reported: Mapping[str, float], simulator: str, registry: MetricRegistry
) -> dict[str, float | None]:
    """``reported`` by name, each value as :func:`_number` gives it, and ``None`` for every
    declared metric of ``simulator`` that nobody reported (but those reported only under a
    condition, which stay out); refused if a name is not one of ``simulator``'s metrics."""
    for name in reported:
        if name not in registry or registry[name].simulator != simulator:
            raise PluginError(
                f"the {simulator!r} simulator reported {name!r}, which no loaded plugin "
                "declares as one of its metrics (brokerlab_metrics)"
            )
    numbers: dict[str, float | None] = dict.fromkeys(registry.of(simulator, conditional=False))
    numbers.update((name, _number(value)) for name, value in reported.items())
    return {name: numbers[name] for name in sorted(numbers)}


def _number(value: Any) -> float:
    number = float(value)
    return int(number) if number.is_integer() else round(number, 6)
