"""Which selected plugins read a profile key: a key that none reads changes nothing but the
fingerprint, so a sweep over it would report identical configurations as different.

Most broker keys are read by the broker model whatever a profile selects. The ones below are read
only by some plugin records (the ack-state persister PIP-299's byte limit belongs to, say); a
plugin's own ``sim.<namespace>.*`` keys declare theirs in
:attr:`~brokerlab.records.SettingsRecord.read_by`; and every plugin key belongs to one simulator
(:attr:`~brokerlab.records.SettingsRecord.simulator`: Kafka's keys to the Kafka model).

:func:`readers_of` is the one place this is decided: ``brokerlab run`` and a plain ``--set`` of
``brokerlab matrix`` refuse a key no selected plugin reads, ``profile check`` refuses it in a
strict profile and warns in a lenient one, and a matrix sweep marks it "not applied" per profile.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brokerlab.errors import Origin
from brokerlab.profiles.loader import INCLUDE_KEY, Profile, profile_keys

if TYPE_CHECKING:
    from brokerlab.host import PluginHost, Registered

__all__ = ["BROKER_KEY_READERS", "UnreadKey", "key_applies", "readers_of", "unread_keys"]

_POINT_TITLES = {
    "ack_state_persister": "ack-state persister",
    "delayed_delivery": "delayed-delivery tracker factory",
    "entry_cache": "entry cache",
    "cursor_container": "cursor container",
    "eviction_predicate": "eviction predicate",
}

_RANGE_COUNT = ("ack_state_persister", "range-count")
_PIP299 = ("ack_state_persister", "pip299")
_PIP81 = ("ack_state_persister", "pip81")
_TOPIC_LEVEL = ("delayed_delivery", "topic-level")

BROKER_KEY_READERS: Mapping[str, tuple[tuple[str, str], ...]] = {
    # ack-state.md §0.1: Pulsar's range-count caps and pause (PIP-299 replaces them, §0.2).
    "managedLedgerMaxUnackedRangesToPersist": (_RANGE_COUNT,),
    "managedLedgerMaxBatchDeletedIndexToPersist": (_RANGE_COUNT,),
    "dispatcherPauseOnAckStatePersistentEnabled": (_RANGE_COUNT,),
    "managedLedgerPersistIndividualAckAsLongArray": (_RANGE_COUNT, _PIP299),
    "managedLedgerUnackedRangesOpenCacheSetEnabled": (_RANGE_COUNT, _PIP299),
    # §0.2: the PIP-299 byte limit and its pause switch.
    "managedLedgerMaxAckStateInBytesToPersist": (_PIP299,),
    "dispatcherPauseOnAckPersistentStateEnabled": (_PIP299,),
    # §0.3: PIP-81's memory cap.
    "maxIndividualAckCacheBytesPerCursor": (_PIP81,),
    "enableLruCacheMaxUnackedRanges": (_PIP81,),
    # delayed-delivery.md §0.2: the PIP-448 topic-level tracker's keys.
    "delayedDeliveryPruneMinIntervalMillis": (_TOPIC_LEVEL,),
    "delayedDeliveryPruneEligibleRatio": (_TOPIC_LEVEL,),
    "delayedDeliveryTopicManagerIdleMillis": (_TOPIC_LEVEL,),
}
"""Broker keys that only some plugin records read: ``(extension point, record name)`` pairs,
checked against the plugins in ``plugins/`` (who reads ``context.settings.<key>``)."""


def _describe(point: str, name: str) -> str:
    return f"the {_POINT_TITLES.get(point, point)} {name!r}"


def _declared(key: str, host: PluginHost) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """The simulator family a key belongs to and the records that read it (empty: all);
    ``None`` for a key no settings model has."""
    info = profile_keys(None, host.plugin_settings()).get(key)
    if info is None:
        return None
    if info.namespace is None:
        return "pulsar", BROKER_KEY_READERS.get(key, ())
    record = next(r for r in host.plugin_settings() if r.namespace == info.namespace)
    return record.simulator, record.read_by


def readers_of(
    key: str, profile: Profile, host: PluginHost, families: Collection[str] | None = None
) -> set[str]:
    """The plugins (or the simulator) that read ``key`` in a run of ``profile``; empty when
    none does.

    ``families`` are the settings families of the simulators that will run it (a workload's
    :attr:`~brokerlab.records.SimulatorRecord.settings_families`); ``None``: every simulator. A key
    of another simulator's family has no reader; a key that only some records read has as readers
    those of them ``profile`` selects (:meth:`~brokerlab.host.PluginHost.resolve`). Selection keys
    (``sim.entryCache``, ...) and keys no model has are read (the loader judges those).
    """
    declared = _declared(key, host)
    if declared is None or key == INCLUDE_KEY:
        return {"brokerlab"}
    family, records = declared
    if families is not None and family not in families:
        return set()
    if not records:
        return {f"the {family} simulator"}
    selected = _selected(profile, host)
    return {_describe(point, name) for point, name in records if name in selected.get(point, ())}


def key_applies(
    key: str, profile: Profile, host: PluginHost, families: Collection[str] | None = None
) -> bool:
    """Whether some selected plugin reads ``key`` (:func:`readers_of` is not empty)."""
    return bool(readers_of(key, profile, host, families))


def _selected(profile: Profile, host: PluginHost) -> dict[str, set[str]]:
    """Extension point -> the names (aliases included) of what ``profile`` selects."""
    choices = host.resolve(profile)
    chosen: dict[str, list[Registered[Any]]] = {
        "entry_cache": [choices.entry_cache],
        "cursor_container": [choices.cursor_container],
        "delayed_delivery": [choices.delayed_delivery],
        "ack_state_persister": [choices.ack_state_persister],
        "eviction_predicate": list(choices.eviction_predicates),
    }
    return {point: {n for reg in regs for n in reg.record.names} for point, regs in chosen.items()}


@dataclass(frozen=True)
class UnreadKey:
    """A key set to a value that changes nothing: no selected plugin reads it."""

    key: str
    origin: Origin
    readers: str
    """Who would read it, in words: ``the ack-state persister 'pip299'``."""
    selection: str
    """What the profile selects instead, in words (or which simulators run it)."""

    def problem(self) -> str:
        return f"is read only by {self.readers}, and {self.selection}"


def unread_keys(
    profile: Profile,
    host: PluginHost,
    families: Collection[str] | None = None,
    keys: Collection[str] | None = None,
) -> list[UnreadKey]:
    """The keys ``profile`` sets (or those of ``keys``) to a value other than the default that
    no selected plugin reads, in the order they were set. A key set to its default changes
    nothing either way (the reference profile sets every key)."""
    infos = profile_keys(None, host.plugin_settings())
    found: list[UnreadKey] = []
    for key, origin in profile.origins.items():
        if (keys is not None and key not in keys) or key not in infos:
            continue
        if profile.get(key) == infos[key].default or key_applies(key, profile, host, families):
            continue
        declared = _declared(key, host)
        assert declared is not None
        family, records = declared
        if families is not None and family not in families:
            readers = f"the {family} simulator"
            selection = f"the workload runs on the {' or '.join(sorted(families))} simulator"
        else:
            readers = " and ".join(_describe(point, name) for point, name in records)
            points = sorted({point for point, _ in records})
            selected = host.resolve(profile).names()
            selection = "this profile selects " + ", ".join(
                f"{_describe(point, selected.get(point, '') or 'none')}" for point in points
            )
        found.append(UnreadKey(key, origin, readers, selection))
    return found
