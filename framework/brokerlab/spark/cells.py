"""The matrix: profiles x ``--set`` sweeps x workloads x seeds, as self-contained cells.

Everything here runs on the driver before Spark starts, so every bad input (a profile, a sweep
value, a workload) fails fast with the profile or workload error format. A :class:`Cell` carries
all an executor needs, as plain data: the profile's set keys and their values (executors read
no profile files, and unpickle nothing that needs a plugin module), its fingerprint and resolved
settings (to prove the rebuilt profile equal), the plugins the driver chose with their
distributions and versions (executors check theirs agree), the workload spec as JSON and the seed.
Nothing in this module imports pyspark.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brokerlab.errors import Origin, ProfileError, WorkloadError
from brokerlab.host import PluginHost
from brokerlab.profiles import Profile
from brokerlab.profiles.portable import portable_settings
from brokerlab.simulation import load_workload, profile_simulators
from brokerlab.spark import plugin_check
from brokerlab.spark.applicability import apply_sweep_values, key_owners
from brokerlab.workloads import WorkloadDocument
from brokerlab.workloads.scaling import scale_workload

__all__ = [
    "Cell",
    "Sweep",
    "build_cells",
    "parse_sweeps",
    "scale_workload",
    "workload_hash",
]

# A comma separates sweep values; "\," keeps a comma inside one value (for list-valued keys).
_SPLIT = re.compile(r"(?<!\\),")
_SET = Origin("--set")


@dataclass(frozen=True)
class Sweep:
    """One ``--set key=v1,v2,...``: a key and the values it takes, in the order given."""

    key: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Cell:
    """One simulation of the matrix, self-contained so that an executor needs no files.

    ``cell_id`` is stable: the same profile label, overrides, resolved settings, workload and seed
    always give the same id, which is what resuming an interrupted run keys on. ``settings`` is
    JSON (set key -> value text, see :mod:`brokerlab.profiles.portable`), ``resolved`` JSON of
    every key's effective value, ``plugin_sources`` JSON of
    :class:`~brokerlab.spark.plugin_check.ChosenPlugin` values.
    """

    cell_id: str
    profile: str
    profile_path: str
    overrides: str
    workload: str
    seed: int
    scale: float
    settings: str
    resolved: str
    profile_fingerprint: str
    workload_json: str
    workload_hash: str
    plugins: str
    plugin_sources: str
    cost: float
    headline: str = ""

    def as_row(self) -> dict[str, Any]:
        """The cell as a plain row (what Spark ships to executors)."""
        return {name: getattr(self, name) for name in CELL_COLUMNS}


CELL_COLUMNS: tuple[str, ...] = tuple(Cell.__dataclass_fields__)


@dataclass(frozen=True)
class _ProfileData:
    """One profile of the matrix as the cells carry it (JSON texts and the fingerprint)."""

    settings: str
    resolved: str
    fingerprint: str


def parse_sweeps(items: Iterable[str]) -> list[Sweep]:
    """``["k=v1,v2", ...]`` -> sweeps; a key given twice is an error (which one would win?)."""
    sweeps: dict[str, Sweep] = {}
    for item in items:
        key, separator, text = item.partition("=")
        key = key.strip()
        if not separator or not key:
            raise ProfileError(
                "is not of the form key=value[,value...]",
                origin=_SET,
                value=item,
                allowed="key=v1,v2,... (write \\, for a comma inside one value)",
            )
        values = tuple(part.replace("\\,", ",") for part in _SPLIT.split(text))
        if key in sweeps:
            raise ProfileError(
                "is given twice; list every value in one --set", origin=_SET, key=key
            )
        if len(set(values)) != len(values):
            raise ProfileError("lists a value twice", origin=_SET, key=key, value=text)
        sweeps[key] = Sweep(key, values)
    return list(sweeps.values())


def workload_hash(spec: WorkloadDocument) -> str:
    """SHA-256 (hex) of the workload's canonical JSON: equal for workloads that behave the same."""
    return hashlib.sha256(_canonical(spec).encode()).hexdigest()


def _canonical(spec: WorkloadDocument) -> str:
    # The headline only chooses what the report ranks on: it changes no result, so it leaves
    # the hash (and the cell ids of results written before it existed) as they were.
    data = spec.model_dump(mode="json", exclude={"headline"})
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def profile_labels(paths: Sequence[str | None]) -> list[str]:
    """Short names for profiles in results and plots: the file stem, or the path when two clash."""
    stems = [Path(p).stem if p else "defaults" for p in paths]
    return [
        stem if stems.count(stem) == 1 else (str(p) if p else stem)
        for stem, p in zip(stems, paths, strict=True)
    ]


def build_cells(
    profiles: Sequence[Profile],
    sweeps: Sequence[Sweep],
    workloads: Sequence[str],
    seeds: int,
    host: PluginHost,
    *,
    scale: float = 1.0,
) -> list[Cell]:
    """Every cell of the matrix, validated: each sweep value against each profile, each profile's
    plugin choices, each workload. A swept key a profile does not read
    (:mod:`brokerlab.spark.applicability`) is left out of its cells: it runs once for that key.
    Raises :class:`ProfileError` / :class:`WorkloadError`."""
    if seeds < 1:
        raise ProfileError("is out of range", key="--seeds", value=seeds, allowed="an integer >= 1")
    specs = []
    for name in workloads:
        spec = load_workload(host, name)
        specs.append(host.simulator(spec.simulator).scale(spec, scale))
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        raise WorkloadError("two workloads of the matrix have one name", value=",".join(workloads))
    labels = profile_labels([str(p.path) if p.path else None for p in profiles])
    combos = [
        tuple(zip((s.key for s in sweeps), values, strict=True))
        for values in itertools.product(*(s.values for s in sweeps))
    ]
    owners = key_owners(host) if sweeps else {}
    cells: list[Cell] = []
    for label, base in zip(labels, profiles, strict=True):
        fits = profile_simulators(base, host)
        paired = [
            spec
            for spec in specs
            if not fits or fits & host.simulator(spec.simulator).settings_families
        ]
        if not paired:
            raise WorkloadError(
                f"none of the workloads runs on the simulator of profile {label} "
                f"({', '.join(sorted(fits))})",
                value=",".join(workloads),
            )
        applied_before: set[str] = set()
        for combo in combos:
            # Validated here, before Spark starts: a bad value raises the profile error format.
            # A key the profile does not read is left out, so the profile runs once for it.
            application = apply_sweep_values(base, label, dict(combo), host, owners)
            overrides, profile = application.applied, application.profile
            if json.dumps(overrides, sort_keys=True) in applied_before:
                continue
            applied_before.add(json.dumps(overrides, sort_keys=True))
            choices = host.resolve(profile)
            plugins = json.dumps(choices.names(), sort_keys=True)
            data = _ProfileData(
                json.dumps(portable_settings(profile), sort_keys=True),
                json.dumps(profile.resolved(), sort_keys=True),
                profile.fingerprint(),
            )
            for spec in paired:
                simulator = host.simulator_registration(spec.simulator)
                sources = plugin_check.dumps(plugin_check.chosen_plugins(choices, simulator))
                spec_json = spec.model_dump_json()
                digest = workload_hash(spec)
                cost = host.simulator(spec.simulator).cost(spec)
                for seed in range(seeds):
                    cells.append(
                        _cell(
                            label,
                            base,
                            overrides,
                            spec,
                            spec_json,
                            digest,
                            seed,
                            scale,
                            data,
                            plugins,
                            sources,
                            cost,
                        )
                    )
    return cells


def _cell(
    label: str,
    base: Profile,
    overrides: Mapping[str, str],
    spec: WorkloadDocument,
    spec_json: str,
    digest: str,
    seed: int,
    scale: float,
    data: _ProfileData,
    plugins: str,
    sources: str,
    cost: float,
) -> Cell:
    overrides_json = json.dumps(dict(sorted(overrides.items())))  # ids ignore --set order
    # Unchanged since before cells carried settings instead of a pickle: old folders resume.
    identity = json.dumps([label, overrides_json, data.fingerprint, digest, seed, scale])
    return Cell(
        cell_id=hashlib.sha256(identity.encode()).hexdigest()[:16],
        profile=label,
        profile_path=str(base.path) if base.path else "",
        overrides=overrides_json,
        workload=spec.name,
        seed=seed,
        scale=scale,
        settings=data.settings,
        resolved=data.resolved,
        profile_fingerprint=data.fingerprint,
        workload_json=spec_json,
        workload_hash=digest,
        plugins=plugins,
        plugin_sources=sources,
        cost=cost,
        headline=spec.headline,
    )
