"""The named records that registration hooks yield.

A plugin announces each implementation it offers as one frozen record. The host collects the
records of every registered plugin, refuses two records with one name, and hands the one a profile
selects to the simulation. Records are plain data: nothing here imports pluggy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from brokerlab.protocols import (
        AckStatePersister,
        CursorContainer,
        DelayedDeliveryTrackerFactory,
        EntryCache,
        EvictionPredicate,
        PluginContext,
    )

__all__ = [
    "AckStatePersisterRecord",
    "CursorContainerRecord",
    "DelayedDeliveryTrackerFactoryRecord",
    "EntryCacheRecord",
    "EvictionPredicateRecord",
    "PluginRecord",
    "SettingsRecord",
    "WorkloadRecord",
]


@dataclass(frozen=True, kw_only=True)
class PluginRecord:
    """What every record has: a unique name, other names it answers to, and one line for people.

    ``aliases`` lets a record answer to the names Pulsar or Kafka use (a Java class name, say), so a
    real broker.conf selects it unchanged.
    """

    name: str
    description: str
    aliases: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


@dataclass(frozen=True, kw_only=True)
class EntryCacheRecord(PluginRecord):
    """An entry-cache manager: ``factory(context)`` returns one :class:`EntryCache` per broker.

    ``uses_eviction_predicates`` says the cache runs a removal queue that consults the eviction
    predicate chain (:attr:`PluginContext.eviction_predicates`); only such caches accept
    ``sim.evictionPredicates``.
    """

    factory: Callable[[PluginContext], EntryCache]
    uses_eviction_predicates: bool = False


@dataclass(frozen=True, kw_only=True)
class EvictionPredicateRecord(PluginRecord):
    """A predicate a removal queue consults: ``factory(context)`` returns one."""

    factory: Callable[[PluginContext], EvictionPredicate]


@dataclass(frozen=True, kw_only=True)
class CursorContainerRecord(PluginRecord):
    """An active-cursor container: ``factory()`` returns an empty :class:`CursorContainer`."""

    factory: Callable[[], CursorContainer]


@dataclass(frozen=True, kw_only=True)
class DelayedDeliveryTrackerFactoryRecord(PluginRecord):
    """A delayed-delivery tracker factory: ``factory(context)`` returns one per broker."""

    factory: Callable[[PluginContext], DelayedDeliveryTrackerFactory]


@dataclass(frozen=True, kw_only=True)
class AckStatePersisterRecord(PluginRecord):
    """A cursor ack-state persister: ``factory(context, cursor_name)`` returns one per cursor."""

    factory: Callable[[PluginContext, str], AckStatePersister]


@dataclass(frozen=True, kw_only=True)
class SettingsRecord:
    """Profile keys a plugin owns: each field of ``model`` is read from ``sim.<namespace>.<alias>``.

    The model is a pydantic model whose fields carry aliases (the key after the prefix), defaults,
    bounds and descriptions; it is validated in the same pass as the broker's own keys.
    """

    namespace: str
    model: type[BaseModel]
    description: str = ""


@dataclass(frozen=True, kw_only=True)
class WorkloadRecord(PluginRecord):
    """A named workload: ``document`` is its TOML text, ``origin`` names it in errors."""

    document: str
    origin: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
