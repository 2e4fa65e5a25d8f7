"""``simulate(profile, workload, seed)``: wire the chosen plugins into the broker model and run it.

A simulation is a pure function of its three inputs: virtual time only, randomness only from
streams seeded by ``seed``, and no state shared between runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from brokerlab.broker.broker import Broker, BrokerPlugins, BrokerTuning
from brokerlab.broker.events import EventLoop
from brokerlab.broker.streams import stream
from brokerlab.errors import PluginError
from brokerlab.host import PluginChoices, PluginHost
from brokerlab.metrics import METRICS
from brokerlab.profiles import Profile
from brokerlab.protocols import AckStatePersister, PluginContext
from brokerlab.records import AckStatePersisterRecord
from brokerlab.workloads import WorkloadSpec, resolve_workload

__all__ = ["Result", "run_simulation", "simulate"]

Progress = Callable[[float], None]


@dataclass(frozen=True)
class Result:
    """One simulation's outcome: what ran, and every metric as a number."""

    profile: str
    workload: str
    seed: int
    plugins: Mapping[str, str]
    metrics: Mapping[str, float]
    events: int = field(default=0, compare=False)

    def to_json(self) -> str:
        """The CLI's ``--json`` document; byte-identical for identical inputs."""
        document = {
            "profile": self.profile,
            "workload": self.workload,
            "seed": self.seed,
            "plugins": dict(self.plugins),
            "metrics": dict(self.metrics),
        }
        return json.dumps(document, indent=2)


def simulate(
    profile: Profile,
    workload: WorkloadSpec | str,
    seed: int = 0,
    *,
    host: PluginHost | None = None,
    progress: Progress | None = None,
) -> Result:
    """Run ``workload`` (a spec, a built-in name or a TOML path) on the broker of ``profile``."""
    host = host or PluginHost()
    choices = host.resolve(profile)
    if isinstance(workload, str):
        records = {reg.record.name: reg.record for reg in host.records("workload")}
        workload = resolve_workload(workload, records)
    return run_simulation(profile, choices, workload, seed, progress=progress)


def run_simulation(
    profile: Profile,
    choices: PluginChoices,
    workload: WorkloadSpec,
    seed: int,
    *,
    progress: Progress | None = None,
) -> Result:
    """The simulation proper, from already resolved plugin choices (executors call this)."""
    loop = EventLoop()
    context = PluginContext(
        settings=profile.settings,
        clock=loop,
        scheduler=loop,
        rng=stream(seed, "plugins"),
        plugin_settings=profile.plugin_settings,
        new_cursor_container=choices.cursor_container.record.factory,
    )
    predicates = tuple(reg.record.factory(context) for reg in choices.eviction_predicates)
    context = context.with_(eviction_predicates=predicates)
    plugins = BrokerPlugins(
        cache=choices.entry_cache.record.factory(context),
        new_cursor_container=choices.cursor_container.record.factory,
        tracker_factory=choices.delayed_delivery.record.factory(context),
        new_persister=partial(_new_persister, choices.ack_state_persister.record, context),
    )
    broker = Broker(BrokerTuning.from_settings(profile.settings), plugins, loop, seed)
    broker.build(workload)
    end = broker.end_ns
    report = None if progress is None else (lambda now: progress(now / end if end else 1.0))
    loop.run_until(end, report)
    metrics = _collect(broker)
    plugins.tracker_factory.close()
    return Result(
        profile=str(profile.path) if profile.path else "",
        workload=workload.name,
        seed=seed,
        plugins=choices.names(),
        metrics=metrics,
        events=loop.events_run,
    )


def _new_persister(
    record: AckStatePersisterRecord, context: PluginContext, cursor: str
) -> AckStatePersister:
    return record.factory(context, cursor)


def _collect(broker: Broker) -> dict[str, float]:
    """Every registered metric, from the broker's counters and the plugins' stats."""
    metrics: dict[str, Any] = dict.fromkeys(METRICS, 0)
    metrics.update(broker.finish())
    reported: dict[str, float] = dict(broker.cache.stats())
    for name, value in broker.peaks.items():
        reported[name] = max(value, reported.get(name, 0))
    # Persisters report per cursor; their counters add up over cursors.
    for dispatcher in broker.dispatchers:
        for name, value in dispatcher.persister.stats().items():
            reported[name] = reported.get(name, 0) + value
    for name, value in reported.items():
        if name not in METRICS:
            raise PluginError(f"a plugin reported the unregistered metric {name!r}")
        metrics[name] = value
    hits, misses = metrics["cache_hits"], metrics["cache_misses"]
    metrics["cache_hit_ratio"] = hits / (hits + misses) if hits + misses else 0.0
    written, changed = metrics["ack_persisted_bytes"], metrics["ack_changed_bytes"]
    metrics["ack_write_amplification"] = written / changed if changed else 0.0
    return {name: _number(metrics[name]) for name in sorted(metrics)}


def _number(value: Any) -> float:
    number = float(value)
    return int(number) if number.is_integer() else round(number, 6)
