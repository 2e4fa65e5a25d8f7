"""The plugins a cell runs, as plain data, and the executor's check that it has the same ones.

The driver records, per cell, each chosen record's plugin, distribution and version (the
extension points' choices and the workload's simulator). An executor checks them against its own
plugin host before it runs a cell: a plugin missing there, or of another distribution or version,
would make the cell fail obscurely or, worse, silently measure something else. Imports no pyspark.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from brokerlab.host import PluginChoices, PluginHost, Registered

__all__ = ["SHIP_HINT", "ChosenPlugin", "check_plugins", "chosen_plugins", "dumps", "loads"]

SHIP_HINT = (
    "install the driver's plugin versions on every executor "
    "(docs/spark.md#shipping-brokerlab-and-plugins-to-executors)"
)


@dataclass(frozen=True)
class ChosenPlugin:
    """One record a cell runs: its role, its name and the plugin that registered it."""

    point: str  # extension point, e.g. "entry_cache", or "simulator"
    record: str
    plugin: str  # the plugin's registered name (entry-point name, or -p module)
    distribution: str
    version: str

    @property
    def source(self) -> str:
        return f"{self.distribution} {self.version}".strip()


def chosen_plugins(choices: PluginChoices, simulator: Registered[Any]) -> list[ChosenPlugin]:
    """Every record ``choices`` selects, then the simulator, as :class:`ChosenPlugin` values."""
    picked: list[tuple[str, Registered[Any]]] = [
        ("entry_cache", choices.entry_cache),
        *(("eviction_predicate", reg) for reg in choices.eviction_predicates),
        ("cursor_container", choices.cursor_container),
        ("delayed_delivery", choices.delayed_delivery),
        ("ack_state_persister", choices.ack_state_persister),
        ("simulator", simulator),
    ]
    return [
        ChosenPlugin(point, reg.record.name, reg.plugin, reg.distribution, reg.version)
        for point, reg in picked
    ]


def dumps(plugins: Iterable[ChosenPlugin]) -> str:
    """The cell column: a JSON list of objects."""
    return json.dumps([asdict(p) for p in plugins], sort_keys=True)


def loads(text: str) -> list[ChosenPlugin]:
    return [ChosenPlugin(**item) for item in json.loads(text)]


def check_plugins(expected: Sequence[ChosenPlugin], host: PluginHost, where: str) -> str | None:
    """``None`` when ``host`` has each plugin of ``expected`` from the same distribution and
    version; else one line naming each plugin that differs, its versions on the driver and on
    executor ``where`` (or ``missing``), and how to ship the driver's."""
    problems: dict[str, str] = {}
    for plugin in expected:
        if plugin.plugin in problems:
            continue
        found = host.distribution(plugin.plugin)
        if found == (plugin.distribution, plugin.version):
            continue
        same = (p for p in expected if p.plugin == plugin.plugin)
        roles = ", ".join(f"{p.point.replace('_', ' ')} {p.record!r}" for p in same)
        if found is None:
            here = "missing"
        elif found[0] == plugin.distribution:
            here = found[1] or "no version"
        else:  # another distribution registers a plugin of that name there
            here = " ".join(found).strip()
        problems[plugin.plugin] = (
            f"plugin {plugin.distribution} ({roles}): {plugin.version or 'no version'} on the "
            f"driver, {here} on executor {where}"
        )
    if not problems:
        return None
    return "; ".join(problems.values()) + f"; {SHIP_HINT}"
