"""The named records that registration hooks yield.

A plugin announces each implementation it offers as one frozen record. The host collects the
records of every registered plugin, refuses two records with one name, and hands the one a profile
selects to the simulation. Records are plain data: nothing here imports pluggy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from brokerlab.protocols import (
        AckStatePersister,
        CursorContainer,
        DelayedDeliveryTrackerFactory,
        EntryCache,
        EvictionPredicate,
        PluginContext,
        SimulationOutput,
        SimulationRequest,
    )
    from brokerlab.workloads.model import WorkloadDocument
    from brokerlab.workloads.resources import Estimate

__all__ = [
    "JAVA_INT",
    "JAVA_LONG",
    "AckStatePersisterRecord",
    "CursorContainerRecord",
    "DelayedDeliveryTrackerFactoryRecord",
    "EntryCacheRecord",
    "EvictionPredicateRecord",
    "JavaLong",
    "JavaType",
    "PluginRecord",
    "SettingsRecord",
    "SimulatorRecord",
    "WorkloadRecord",
]


@dataclass(frozen=True, kw_only=True)
class PluginRecord:
    """What every record has: a unique name, other names it answers to, and one line for people.

    `aliases` lets a record answer to the names Pulsar or Kafka use (a Java class name, say), so a
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
    """An entry-cache manager: `factory(context)` returns one per broker.

    The factory builds one [`EntryCache`][brokerlab.protocols.EntryCache].
    `uses_eviction_predicates` says the cache runs a removal queue that consults the eviction
    predicate chain
    ([`PluginContext.eviction_predicates`][brokerlab.protocols.PluginContext.eviction_predicates]);
    only such caches accept `sim.evictionPredicates`.
    """

    factory: Callable[[PluginContext], EntryCache]
    uses_eviction_predicates: bool = False


@dataclass(frozen=True, kw_only=True)
class EvictionPredicateRecord(PluginRecord):
    """A predicate a removal queue consults: `factory(context)` returns one.

    The factory builds one [`EvictionPredicate`][brokerlab.protocols.EvictionPredicate] per cache
    that consults the chain.
    """

    factory: Callable[[PluginContext], EvictionPredicate]


@dataclass(frozen=True, kw_only=True)
class CursorContainerRecord(PluginRecord):
    """An active-cursor container: `factory()` returns an empty one.

    The factory takes no arguments and builds one
    [`CursorContainer`][brokerlab.protocols.CursorContainer] per managed ledger.
    """

    factory: Callable[[], CursorContainer]


@dataclass(frozen=True, kw_only=True)
class DelayedDeliveryTrackerFactoryRecord(PluginRecord):
    """A delayed-delivery tracker factory: `factory(context)` returns one per broker.

    The factory builds one
    [`DelayedDeliveryTrackerFactory`][brokerlab.protocols.DelayedDeliveryTrackerFactory], which
    then creates a tracker per subscription.
    """

    factory: Callable[[PluginContext], DelayedDeliveryTrackerFactory]


@dataclass(frozen=True, kw_only=True)
class AckStatePersisterRecord(PluginRecord):
    """A cursor ack-state persister: `factory(context, cursor_name)` returns one per cursor."""

    factory: Callable[[PluginContext, str], AckStatePersister]


@dataclass(frozen=True, kw_only=True)
class SettingsRecord:
    """Profile keys a plugin owns: each field of `model` is read from `<prefix><alias>`.

    The model is a pydantic model whose fields carry aliases (the key after the prefix), defaults,
    bounds and descriptions; it is validated in the same pass as the broker's own keys. The prefix
    is `sim.<namespace>.` unless `prefix` says otherwise: a plugin modelling another broker's
    own configuration (Kafka's dotted `remote.log.*` keys, say) sets `prefix=""` and spells
    each key in full in its alias, so that broker's real files load unchanged.
    """

    namespace: str
    model: type[BaseModel]
    description: str = ""
    prefix: str | None = None
    simulator: str = "pulsar"
    """The simulator that reads these keys: a matrix runs a profile that sets keys of one
    simulator only with that simulator's workloads."""
    read_by: tuple[tuple[str, str], ...] = ()
    """The plugin records that read these keys, as `(extension point, record name)` pairs (e.g.
    `("delayed_delivery", "topic-level")`); empty: the simulator reads them whatever the profile
    selects. A key set while none of them is selected is an error in a strict profile and in
    `--set` (see `brokerlab.profiles.readers`)."""

    @property
    def key_prefix(self) -> str:
        """What goes before each field's alias in a profile."""
        return f"sim.{self.namespace}." if self.prefix is None else self.prefix


@dataclass(frozen=True, kw_only=True)
class SimulatorRecord(PluginRecord):
    """A broker model that runs one family of workloads.

    A workload document names its simulator (`simulator = "<name>"`, default `pulsar`, the
    framework's own Pulsar broker model). `workload_model` validates those documents (a subclass
    of `WorkloadDocument`); `run` simulates one of them under one
    profile; `scale` shortens one along its time axis (`matrix --scale`); `cost` estimates
    its relative cost so the runner can start long cells first. `estimate` gives a run's peak
    memory and events from the validated document alone (without allocating in proportion to
    any count in it), so `run` and `matrix` refuse a run above `--max-memory` before it starts;
    a simulator without one is not limited.

    `settings_of` names the simulators whose profile keys this one reads (see
    `SettingsRecord.simulator`); empty means its own. A matrix runs a profile that sets keys only
    of other simulators without this one's workloads: a simulator replaying cache traces through
    the Pulsar entry caches reads Pulsar keys, so it lists `"pulsar"`.
    """

    workload_model: type[WorkloadDocument]
    run: Callable[[SimulationRequest], SimulationOutput]
    scale: Callable[[Any, float], Any]
    cost: Callable[[Any], float]
    estimate: Callable[[Any], Estimate] | None = None
    settings_of: tuple[str, ...] = ()
    timeline: bool = False
    """Whether `run` returns samples over simulated time (`SimulationOutput.timeline`); declared so
    `brokerlab run --timeline` is refused before a run that would record none."""

    @property
    def settings_families(self) -> frozenset[str]:
        """The simulators whose keys this one reads: `settings_of`, or its own name."""
        return frozenset(self.settings_of or (self.name,))


@dataclass(frozen=True, kw_only=True)
class WorkloadRecord(PluginRecord):
    """A named workload: `document` is its TOML text, `origin` names it in errors."""

    document: str
    origin: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JavaType:
    """`Annotated` metadata on an integer settings field: the Java type Pulsar (or Kafka) parses
    the key as. An integer field without it is a Java `int`; see `JavaLong`."""

    name: str
    low: int
    high: int


JAVA_INT = JavaType("int", -(2**31), 2**31 - 1)
JAVA_LONG = JavaType("long", -(2**63), 2**63 - 1)
JavaLong = Annotated[int, JAVA_LONG]
"""An integer key the broker declares as a Java `long`: `ttl_ms: JavaLong = Field(...)`."""
