"""The configurations of a results folder: their labels, their order, and what each one is.

A configuration is a profile with its ``--set`` values (and scale): what the report ranks. Its
description names the plugin chosen per extension point, which of them ran compiled, and the
settings that differ from the first configuration, from the ``plugins``, ``plugin_versions``,
``compiled`` and ``settings`` columns of the result rows (rows of older results have no
``settings``: their ``--set`` values stand in; nor ``compiled``: then it is "not recorded").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

__all__ = [
    "Configuration",
    "config_label",
    "config_labels",
    "describe_configurations",
    "ordered_labels",
]

# Settings that say where values came from, not how the broker behaves.
_NOT_BEHAVIOUR = frozenset({"sim.include"})


def config_label(profile: str, overrides: str, hide: Sequence[str] = ()) -> str:
    """``profile`` plus its ``--set`` values (except the keys in ``hide``), for legends."""
    values = {k: v for k, v in json.loads(overrides or "{}").items() if k not in hide}
    # Whole keys: a last dotted part ("ms") is ambiguous among a plugin's many *.ms keys.
    extra = ", ".join(f"{k}={v}" for k, v in values.items())
    return f"{profile} [{extra}]" if extra else profile


def config_labels(rows: pd.DataFrame, hide: Sequence[str] = ()) -> list[str]:
    """A label per row of ``rows`` (result rows or summary.csv rows): :func:`config_label`, plus
    what tells apart configurations it would merge: the scale when ``rows`` hold several, and a
    short profile fingerprint when one profile and ``--set`` values ran with different settings
    (an environment variable, an edited profile file)."""
    several_scales = rows["scale"].nunique() > 1
    fingerprints = rows.groupby(["profile", "overrides"], dropna=False)["profile_fingerprint"]
    several_fingerprints = fingerprints.transform("nunique") > 1
    labels = []
    for row, ambiguous in zip(rows.itertuples(), several_fingerprints, strict=True):
        extra = [f"settings {str(row.profile_fingerprint)[:8]}"] if ambiguous else []
        extra += [f"scale {row.scale:g}"] if several_scales else []
        label = config_label(str(row.profile), str(row.overrides), hide)
        labels.append(f"{label} ({', '.join(extra)})" if extra else label)
    return labels


def ordered_labels(rows: pd.DataFrame, profiles: Sequence[str] = ()) -> list[str]:
    """The configuration labels of ``rows`` in report order: profiles in ``profiles`` order (the
    ``--profile`` order of the matrix; others after them, by name), then ``--set`` values, scale."""
    labels = pd.Series(config_labels(rows), index=rows.index)
    rank = {name: index for index, name in enumerate(profiles)}
    keys = {
        label: (
            rank.get(str(row.profile), len(rank)),
            str(row.profile),
            _values_key(str(row.overrides)),
            row.scale,
            label,
        )
        for label, row in zip(labels, rows.itertuples(), strict=True)
    }
    return sorted(keys, key=lambda label: keys[label])


def _values_key(overrides: str) -> tuple[tuple[bool, float, str], ...]:
    """Sort ``--set`` values as numbers where they are (1000 before 100000), else as text."""
    key = []
    for _, value in sorted(json.loads(overrides or "{}").items()):
        try:
            key.append((False, float(value), str(value)))
        except ValueError:
            key.append((True, 0.0, str(value)))
    return tuple(key)


@dataclass(frozen=True)
class Configuration:
    """What one configuration is: its plugins, their sources and its distinctive settings."""

    label: str
    plugins: Mapping[str, str]
    """Extension point -> the record name the profile chose (points it left empty omitted)."""
    sources: Mapping[str, str]
    """Extension point -> "distribution version" of that record."""
    differences: Mapping[str, str] = field(default_factory=dict)
    """Setting -> value, for each setting whose value differs from the first configuration's."""
    settings_recorded: bool = True
    """False for rows of older results without settings: ``differences`` are the --set values."""
    compiled: Sequence[Mapping[str, Sequence[str]]] = ()
    """Each distinct record of what ran compiled among the configuration's cells (role -> the
    compiled modules of its plugin); empty when no cell recorded it."""

    def compiled_line(self) -> str:
        """Which roles' plugins ran compiled (mypyc), so wall times compare knowingly. A role
        compiled in some cells and not in others (executors with different builds) is named
        apart; a role absent from some cells (another simulator's workload) is not a difference."""
        if not self.compiled:
            return "compiled modules: not recorded"
        seen: dict[str, set[bool]] = {}
        for record in self.compiled:
            for role, modules in record.items():
                seen.setdefault(role, set()).add(bool(modules))
        built = [role for role, kinds in seen.items() if kinds == {True}]
        plain = [role for role, kinds in seen.items() if kinds == {False}]
        mixed = [role for role, kinds in seen.items() if len(kinds) > 1]
        parts = [f"compiled: {', '.join(built) or 'none'}"]
        if plain:
            parts.append(f"as Python: {', '.join(plain)}")
        if mixed:
            parts.append(f"compiled in some cells only: {', '.join(mixed)}")
        return "; ".join(parts)

    def plugin_line(self) -> str:
        """``entry_cache=pip430, ack_state_persister=range-count, ...``."""
        return ", ".join(f"{point}={name}" for point, name in self.plugins.items())

    def source_line(self) -> str:
        """Each distinct plugin source once, with the points that use it."""
        points: dict[str, list[str]] = {}
        for point, source in self.sources.items():
            for one in dict.fromkeys(source.split(",")):  # eviction predicates list several
                points.setdefault(one, []).append(point)
        return "; ".join(f"{source} ({', '.join(names)})" for source, names in points.items())

    def difference_line(self) -> str:
        """``key=value, ...``, or what to say when nothing differs."""
        if not self.differences:
            return "no setting differs" if self.settings_recorded else "settings not recorded"
        shown = ", ".join(f"{key}={value}" for key, value in self.differences.items())
        return shown if self.settings_recorded else f"--set {shown} (other settings not recorded)"


def _json(text: object) -> dict[str, object]:
    if not isinstance(text, str) or not text:
        return {}
    loaded = json.loads(text)
    return loaded if isinstance(loaded, dict) else {}


def _shown(value: object) -> str:
    if value is None:
        return "(empty)"
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or "(empty)"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def describe_configurations(rows: pd.DataFrame, order: Sequence[str]) -> list[Configuration]:
    """One :class:`Configuration` per label in ``order`` (labels of ``rows``, the first the one
    the others are compared with). The settings of a configuration are those of its latest row."""
    labels = pd.Series(config_labels(rows), index=rows.index)
    groups = dict(list(rows.groupby(labels, sort=False)))
    latest = {label: group.sort_values("finished_at").iloc[-1] for label, group in groups.items()}
    first = _json(latest[order[0]]["settings"]) if order else {}
    described = []
    for label in order:
        row = latest[label]
        plugins = {k: str(v) for k, v in _json(row["plugins"]).items() if v}
        sources = {k: str(v) for k, v in _json(row["plugin_versions"]).items() if v}
        settings = _json(row["settings"])
        if settings and first:
            keys = [k for k in settings if k not in _NOT_BEHAVIOUR]
            differences = {k: _shown(settings[k]) for k in keys if settings[k] != first.get(k)}
        else:
            differences = {k: str(v) for k, v in _json(row["overrides"]).items()}
        column = groups[label].get("compiled", pd.Series(dtype=object))
        compiled = [_json(text) for text in dict.fromkeys(column.dropna()) if text]
        described.append(
            Configuration(
                label,
                plugins,
                sources,
                differences,
                settings_recorded=bool(settings and first),
                compiled=[
                    {k: list(v) for k, v in c.items() if isinstance(v, list)} for c in compiled
                ],
            )
        )
    return described
