"""Which ``--set`` keys a profile uses.

A matrix applies a swept key to a profile only when the profile's simulation reads it; elsewhere
the profile runs once instead of once per value (with identical results, which a report would
show as configurations that "tie"). A key applies to a profile when it is

* a broker key and the profile runs the simulator that reads broker keys (Pulsar's), or
* a plugin key of a simulator the profile runs, and, when the plugin that owns the key's
  namespace provides extension-point records (entry caches, trackers, persisters...), the
  profile selects one of them: ``sim.pip448.*`` means nothing to a profile whose delayed-delivery
  tracker is the legacy one.

Which simulators a profile runs is :func:`brokerlab.simulation.profile_simulators` of the profile
*before* the sweep (a profile that sets no simulator's keys runs every simulator's workloads).
Selection is judged with the other swept values of the cell applied, so ``--set
sim.ackStatePersister=pip81,range-count`` together with a key of the persister works.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from brokerlab.host import PluginChoices, PluginHost
from brokerlab.profiles import Profile, profile_keys
from brokerlab.profiles.readers import key_applies, unread_keys
from brokerlab.simulation import profile_simulators

__all__ = [
    "BROKER_SIMULATOR",
    "KeyOwner",
    "SweepApplication",
    "apply_sweep_values",
    "key_owners",
    "keys_not_applied",
]

BROKER_SIMULATOR = "pulsar"
"""The simulator whose keys the broker settings model holds."""

# The extension points a profile selects one record of (predicates: a chain).
_SELECTED_POINTS = (
    "entry_cache",
    "eviction_predicate",
    "cursor_container",
    "delayed_delivery",
    "ack_state_persister",
)


@dataclass(frozen=True)
class KeyOwner:
    """Who reads a profile key: its simulator, and for a plugin key the plugin and its records."""

    simulator: str
    namespace: str | None = None
    plugin: str = ""
    records: tuple[str, ...] = ()
    """The owning plugin's extension-point record names; empty: the key is the simulator's."""


def key_owners(host: PluginHost) -> dict[str, KeyOwner]:
    """Every key a profile may set, with its :class:`KeyOwner`."""
    settings = {reg.record.namespace: reg for reg in host.settings_records()}
    records: dict[str, list[str]] = {}
    for point in _SELECTED_POINTS:
        for reg in host.records(point):
            records.setdefault(reg.plugin, []).append(reg.record.name)
    owners = {}
    for key, info in profile_keys(plugin_settings=host.plugin_settings()).items():
        if info.namespace is None:
            owners[key] = KeyOwner(BROKER_SIMULATOR)
            continue
        reg = settings[info.namespace]
        owners[key] = KeyOwner(
            reg.record.simulator,
            info.namespace,
            reg.plugin,
            tuple(records.get(reg.plugin, ())),
        )
    return owners


def _selected_plugins(choices: PluginChoices) -> set[str]:
    chosen = {
        choices.entry_cache.plugin,
        choices.cursor_container.plugin,
        choices.delayed_delivery.plugin,
        choices.ack_state_persister.plugin,
    }
    return chosen | {reg.plugin for reg in choices.eviction_predicates}


def why_not_applied(
    key: str, owner: KeyOwner, label: str, simulators: set[str], selected: set[str]
) -> str | None:
    """Why ``key`` means nothing to profile ``label`` (``None``: it applies).

    ``simulators`` are those the profile runs (empty: every one), ``selected`` the plugins whose
    records its choices name."""
    if simulators and owner.simulator not in simulators:
        return (
            f"{key} is read by the {owner.simulator} simulator; {label} runs "
            f"{', '.join(sorted(simulators))} workloads only"
        )
    if owner.records and owner.plugin not in selected:
        return (
            f"{key} is a setting of plugin {owner.plugin} ({', '.join(owner.records)}), "
            f"which {label} does not select"
        )
    return None


@dataclass(frozen=True)
class SweepApplication:
    """One cell's ``--set`` values split into those the profile reads and those it does not."""

    profile: Profile
    """The profile with the applied values."""
    applied: dict[str, str]
    skipped: dict[str, str]
    """Key -> why it did not apply."""


def apply_sweep_values(
    base: Profile,
    label: str,
    values: Mapping[str, str],
    host: PluginHost,
    owners: Mapping[str, KeyOwner] | None = None,
) -> SweepApplication:
    """``base`` with those of ``values`` that apply to it.

    Every value is validated against ``base`` first (a bad value is an error whether or not it
    applies). Raises :class:`~brokerlab.errors.ProfileError` for a bad key or value."""
    if not values:
        return SweepApplication(base, {}, {})
    owners = key_owners(host) if owners is None else owners
    full = base.with_overrides(dict(values))  # validates every value
    simulators = profile_simulators(base, host)
    selected = _selected_plugins(host.resolve(full))
    applied, skipped = {}, {}
    for key, value in values.items():
        owner = owners.get(key)
        reason = None if owner is None else why_not_applied(key, owner, label, simulators, selected)
        if reason is None and not key_applies(key, full, host):
            # A broker key only some plugin records read (brokerlab.profiles.readers).
            unread = unread_keys(full, host, keys=[key])
            reason = f"{key} {unread[0].problem()}" if unread else f"{key} is read by nothing here"
        if reason is None:
            applied[key] = value
        else:
            skipped[key] = reason
    if not skipped:
        return SweepApplication(full, applied, {})
    profile = base.with_overrides(applied) if applied else base
    return SweepApplication(profile, applied, skipped)


def keys_not_applied(
    base: Profile,
    label: str,
    sweeps: Mapping[str, Sequence[str]],
    host: PluginHost,
    owners: Mapping[str, KeyOwner] | None = None,
) -> dict[str, str]:
    """The swept keys (``key -> values``) that apply to ``base`` with none of the other keys'
    values, each with why: the profile ran once for them."""
    owners = key_owners(host) if owners is None else owners
    reasons: dict[str, str] = {}
    applied: set[str] = set()
    for values in itertools.product(*sweeps.values()):
        application = apply_sweep_values(
            base, label, dict(zip(sweeps, values, strict=True)), host, owners
        )
        applied.update(application.applied)
        for key, reason in application.skipped.items():
            reasons.setdefault(key, reason)
    return {key: reason for key, reason in reasons.items() if key not in applied}
