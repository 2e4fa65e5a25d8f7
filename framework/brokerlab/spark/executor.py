"""The executor side: run cells and turn each into one result row. Imports no pyspark.

Spark calls :func:`run_cells` once per partition, as do the plain-Python benchmarks. A cell that
raises becomes a ``failed`` row with its traceback, so one bad cell never stops the rest of the
matrix. Before running anything the executor checks that its environment can run the cell as the
driver planned it: the same plugins at the same versions, and a profile rebuilt from the cell's
settings with the driver's fingerprint. A cell failing a check becomes a ``failed`` row whose
error is one line saying what differs, where, and how to ship the driver's plugins.
"""

from __future__ import annotations

import json
import os
import socket
import time
import traceback
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from brokerlab import __version__
from brokerlab.errors import BrokerlabError
from brokerlab.host import PluginChoices, PluginHost, Registered
from brokerlab.metrics import using
from brokerlab.profiles import Profile
from brokerlab.profiles.portable import differing_keys, rebuild_profile
from brokerlab.simulation import run_simulation
from brokerlab.spark import plugin_check
from brokerlab.spark.schema import PER_BROKER_COLUMN, STATUS_FAILED, STATUS_OK

__all__ = ["CellRefused", "HostConfig", "run_cells"]


class CellRefused(Exception):
    """This executor cannot run the cell as the driver planned it; the message is one line."""


@dataclass(frozen=True)
class HostConfig:
    """How executors build their plugin host: the driver's ``-p`` modules and blocked names; and
    the driver's metric columns, which every row has (null where the cell reported nothing)."""

    modules: tuple[str, ...] = ()
    blocked: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()

    def build(self) -> PluginHost:
        return PluginHost(modules=self.modules, blocked=self.blocked)


def run_cells(cells: Iterable[Mapping[str, Any]], config: HostConfig) -> Iterator[dict[str, Any]]:
    """One result row per cell (a mapping with the cell columns), with one plugin host for all."""
    host: PluginHost | None = None
    where = socket.gethostname()
    checked: dict[str, str | None] = {}  # plugin_sources -> the problem, checked once each
    for cell in cells:
        started = time.perf_counter()
        row: dict[str, Any] = {
            name: cell[name]
            for name in (
                "cell_id",
                "profile",
                "profile_path",
                "overrides",
                "workload",
                "seed",
                "scale",
                "profile_fingerprint",
                "workload_hash",
                "plugins",
                "headline",
            )
        }
        # The row's settings are every resolved key (the report reads limits from them).
        row["settings"] = cell["resolved"]
        row.update(dict.fromkeys((*config.metrics, PER_BROKER_COLUMN)))
        row.update(brokerlab_version=__version__, executor=f"{where}:{os.getpid()}")
        try:
            host = host or _build(config, where)  # once per partition; a failure is a row too
            if not config.metrics:  # no driver columns given: this host's own
                row.update(dict.fromkeys(host.metrics()))
            sources = cell["plugin_sources"]
            if sources not in checked:
                expected = plugin_check.loads(sources)
                checked[sources] = plugin_check.check_plugins(expected, host, where)
            problem = checked[sources]
            if problem is not None:
                raise CellRefused(problem)
            profile = _rebuild(cell, host, where)
            choices = host.resolve(profile)
            _check_choices(choices, cell["plugins"])
            simulator = host.simulator(json.loads(cell["workload_json"])["simulator"])
            registry = host.metrics()
            with using(registry):  # a workload's headline may be a plugin's metric
                spec = simulator.workload_model.model_validate_json(cell["workload_json"])
            result = run_simulation(
                profile, choices, spec, int(cell["seed"]), simulator=simulator, metrics=registry
            )
            row.update({name: _float(value) for name, value in result.metrics.items()})
            if result.per_broker:
                row[PER_BROKER_COLUMN] = [
                    {name: _float(value) for name, value in metrics.items()}
                    for metrics in result.per_broker
                ]
            compiled = host.compiled_modules(choices, simulator.name)
            row.update(
                status=STATUS_OK,
                error=None,
                plugin_versions=_versions(choices),
                compiled=json.dumps(compiled, sort_keys=True),
            )
        except CellRefused as exc:
            row.update(status=STATUS_FAILED, error=str(exc), plugin_versions=None, compiled=None)
        except Exception:
            row.update(
                status=STATUS_FAILED,
                error=traceback.format_exc(),
                plugin_versions=None,
                compiled=None,
            )
        row["elapsed_s"] = time.perf_counter() - started
        row["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        yield row


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


def _build(config: HostConfig, where: str) -> PluginHost:
    try:
        return config.build()
    except BrokerlabError as exc:  # a -p module or a plugin that does not import here
        first = str(exc).splitlines()[0]
        raise CellRefused(
            f"executor {where} cannot load the plugins: {first}; {plugin_check.SHIP_HINT}"
        ) from exc


def _rebuild(cell: Mapping[str, Any], host: PluginHost, where: str) -> Profile:
    """The cell's profile from its settings alone, proven equal to the driver's by fingerprint."""
    label = cell["profile"]
    try:
        profile = rebuild_profile(json.loads(cell["settings"]), host.plugin_settings())
    except BrokerlabError as exc:
        first = str(exc).splitlines()[0]
        raise CellRefused(
            f"executor {where} cannot rebuild profile {label} from the cell's settings: {first}"
        ) from exc
    fingerprint = profile.fingerprint()
    if fingerprint != cell["profile_fingerprint"]:
        keys = differing_keys(json.loads(cell["resolved"]), profile.resolved())
        raise CellRefused(
            f"profile {label} rebuilt on executor {where} has fingerprint {fingerprint[:12]}, "
            f"the driver's {cell['profile_fingerprint'][:12]}; effective values differ (driver "
            f"-> executor): {keys}: brokerlab or a plugin differs there under the same version; "
            f"{plugin_check.SHIP_HINT}"
        )
    return profile


def _check_choices(choices: PluginChoices, expected: str) -> None:
    # The driver resolved the same profile; a different answer means the executors' environment
    # has other plugins installed, and the cell would silently measure something else.
    names = json.dumps(choices.names(), sort_keys=True)
    if names != expected:
        raise RuntimeError(
            f"executor resolved plugins {names}, the driver {expected}: install the same plugins "
            "on the executors (see docs/spark.md)"
        )


def _versions(choices: PluginChoices) -> str:
    registered: dict[str, Registered[Any]] = {
        "entry_cache": choices.entry_cache,
        "cursor_container": choices.cursor_container,
        "delayed_delivery": choices.delayed_delivery,
        "ack_state_persister": choices.ack_state_persister,
    }
    versions = {point: reg.source for point, reg in registered.items()}
    versions["eviction_predicates"] = ",".join(p.source for p in choices.eviction_predicates)
    return json.dumps(versions, sort_keys=True)
