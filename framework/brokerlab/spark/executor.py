"""The executor side: run cells and turn each into one result row. Imports no pyspark.

Spark calls :func:`run_partition` once per partition; the plain-Python benchmarks call
:func:`run_cells` directly. A cell that raises becomes a ``failed`` row with its traceback, so one
bad cell never stops the rest of the matrix.
"""

from __future__ import annotations

import json
import os
import pickle
import socket
import time
import traceback
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from brokerlab import __version__
from brokerlab.host import PluginChoices, PluginHost, Registered
from brokerlab.profiles import Profile
from brokerlab.simulation import run_simulation
from brokerlab.spark.schema import (
    METRIC_COLUMNS,
    PER_BROKER_COLUMN,
    STATUS_FAILED,
    STATUS_OK,
)

__all__ = ["HostConfig", "run_cells"]


@dataclass(frozen=True)
class HostConfig:
    """How executors build their plugin host: the driver's ``-p`` modules and blocked names."""

    modules: tuple[str, ...] = ()
    blocked: tuple[str, ...] = ()

    def build(self) -> PluginHost:
        return PluginHost(modules=self.modules, blocked=self.blocked)


def run_cells(cells: Iterable[Mapping[str, Any]], config: HostConfig) -> Iterator[dict[str, Any]]:
    """One result row per cell (a mapping with the cell columns), with one plugin host for all."""
    host: PluginHost | None = None
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
                "settings",
                "headline",
            )
        }
        row.update(dict.fromkeys((*METRIC_COLUMNS, PER_BROKER_COLUMN)))
        row.update(brokerlab_version=__version__, executor=f"{socket.gethostname()}:{os.getpid()}")
        try:
            host = host or config.build()  # once per partition; here so a failure is a row too
            profile: Profile = pickle.loads(cell["profile_pickle"])
            choices = host.resolve(profile)
            _check_choices(choices, cell["plugins"])
            simulator = host.simulator(json.loads(cell["workload_json"])["simulator"])
            spec = simulator.workload_model.model_validate_json(cell["workload_json"])
            result = run_simulation(profile, choices, spec, int(cell["seed"]), simulator=simulator)
            row.update({name: float(value) for name, value in result.metrics.items()})
            if result.per_broker:
                row[PER_BROKER_COLUMN] = [
                    {name: float(value) for name, value in metrics.items()}
                    for metrics in result.per_broker
                ]
            row.update(status=STATUS_OK, error=None, plugin_versions=_versions(choices))
        except Exception:
            row.update(status=STATUS_FAILED, error=traceback.format_exc(), plugin_versions=None)
        row["elapsed_s"] = time.perf_counter() - started
        row["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        yield row


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
