"""The extension points of brokerlab, as pluggy hook specifications.

Every hook here is a *registration* hook in the style of conda's plugin system: it takes no
arguments and returns (usually by `yield`) zero or more named records from
[`brokerlab.records`][brokerlab.records]. The host calls each hook once, when it collects records,
and never again during a simulation; the records' factories build the objects the simulated broker
then talks to through the protocols in [`brokerlab.protocols`][brokerlab.protocols].

No hook is `firstresult`: the host calls every implementation and collects all their records. A
profile selects one record per extension point by name or alias; two records with one name, from
any two plugins, are an error that names both distributions. `brokerlab_metrics` yields metric
declarations rather than records: what a plugin reports, whichever of its records a profile
selects.
"""

from __future__ import annotations

from collections.abc import Iterable

import pluggy

from brokerlab.metrics import Metric
from brokerlab.records import (
    AckStatePersisterRecord,
    CursorContainerRecord,
    DelayedDeliveryTrackerFactoryRecord,
    EntryCacheRecord,
    EvictionPredicateRecord,
    SettingsRecord,
    SimulatorRecord,
    WorkloadRecord,
)

PROJECT_NAME = "brokerlab"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

__all__ = ["PROJECT_NAME", "hookimpl", "hookspec"]


@hookspec
def brokerlab_entry_caches() -> Iterable[EntryCacheRecord]:
    """Register entry-cache managers.

    **When:** once, when the host collects records (`brokerlab plugins`, `profile check`, before
    every simulation).

    **Parameters:** none.

    **Returns:** an iterable of [`EntryCacheRecord`][brokerlab.records.EntryCacheRecord]. Each
    record's `factory(context)` builds one [`EntryCache`][brokerlab.protocols.EntryCache] for the
    whole broker; the profile key `sim.entryCache` picks the record by name or alias. Set
    `uses_eviction_predicates=True` when the cache consults the eviction-predicate chain.

    **Example:**

    ```python
    @brokerlab.hookimpl
    def brokerlab_entry_caches():
        yield EntryCacheRecord(
            name="fifo-bytes",
            description="A byte-bounded FIFO, the simplest useful baseline",
            factory=lambda context: FifoCache(context.settings.cache_size_bytes),
        )
    ```
    """


@hookspec
def brokerlab_eviction_predicates() -> Iterable[EvictionPredicateRecord]:
    """Register predicates that a removal queue consults for its head entry.

    **When:** once, when the host collects records.

    **Parameters:** none.

    **Returns:** an iterable of
    [`EvictionPredicateRecord`][brokerlab.records.EvictionPredicateRecord]. The chain for a
    profile is built from Pulsar's own switches, in this order:
    `managedLedgerCacheEvictionExtendTTLOfRecentlyAccessed` adds the recently-accessed predicate,
    `cacheEvictionByExpectedReadCount` the remaining-expected-reads one; the names listed in
    `sim.evictionPredicates` follow, in their order. Each `factory(context)` builds one
    [`EvictionPredicate`][brokerlab.protocols.EvictionPredicate] per cache.

    **Example:**

    ```python
    @brokerlab.hookimpl
    def brokerlab_eviction_predicates():
        yield EvictionPredicateRecord(
            name="keep-small",
            description="Requeue entries under 1 KiB once",
            factory=lambda context: KeepSmall(limit=1024),
        )
    ```
    """


@hookspec
def brokerlab_cursor_containers() -> Iterable[CursorContainerRecord]:
    """Register active-cursor containers.

    **When:** once, when the host collects records.

    **Parameters:** none.

    **Returns:** an iterable of [`CursorContainerRecord`][brokerlab.records.CursorContainerRecord];
    `factory()` returns an empty [`CursorContainer`][brokerlab.protocols.CursorContainer] (one
    per managed ledger). `sim.cursorContainer` picks one; when unset, the choice follows
    `cacheEvictionByExpectedReadCount`. A container that answers the rank query should satisfy
    [`RankedCursorContainer`][brokerlab.protocols.RankedCursorContainer].

    **Example:**

    ```python
    @brokerlab.hookimpl
    def brokerlab_cursor_containers():
        yield CursorContainerRecord(
            name="sorted-list",
            description="Sorted list with an O(1) rank query",
            factory=SortedCursorContainer,
        )
    ```
    """


@hookspec
def brokerlab_delayed_delivery_tracker_factories() -> Iterable[DelayedDeliveryTrackerFactoryRecord]:
    """Register delayed-delivery tracker factories.

    **When:** once, when the host collects records.

    **Parameters:** none.

    **Returns:** an iterable of
    [`DelayedDeliveryTrackerFactoryRecord`][brokerlab.records.DelayedDeliveryTrackerFactoryRecord].
    `delayedDeliveryTrackerFactoryClassName` picks one by name or alias, so give the record the
    Java class name it models as an alias and a real broker.conf selects it unchanged.
    `factory(context)` builds one
    [`DelayedDeliveryTrackerFactory`][brokerlab.protocols.DelayedDeliveryTrackerFactory] per
    broker.

    **Example:**

    ```python
    @brokerlab.hookimpl
    def brokerlab_delayed_delivery_tracker_factories():
        yield DelayedDeliveryTrackerFactoryRecord(
            name="my-tracker",
            aliases=("com.example.MyTrackerFactory",),
            description="A tracker keyed by deliver-at second",
            factory=MyTrackerFactory,
        )
    ```
    """


@hookspec
def brokerlab_ack_state_persisters() -> Iterable[AckStatePersisterRecord]:
    """Register cursor ack-state persisters.

    **When:** once, when the host collects records.

    **Parameters:** none.

    **Returns:** an iterable of
    [`AckStatePersisterRecord`][brokerlab.records.AckStatePersisterRecord].
    `sim.ackStatePersister` picks one; Pulsar's own keys (`managedLedgerMaxUnackedRangesToPersist`
    and friends) set its parameters. `factory(context, cursor_name)` builds one
    [`AckStatePersister`][brokerlab.protocols.AckStatePersister] per durable cursor, and the
    persister must never recover a position as acknowledged that was not.

    **Example:**

    ```python
    @brokerlab.hookimpl
    def brokerlab_ack_state_persisters():
        yield AckStatePersisterRecord(
            name="mark-delete-only",
            description="Persist the mark-delete position, never individual acks",
            factory=lambda context, cursor: MarkDeleteOnly(context.clock),
        )
    ```
    """


@hookspec
def brokerlab_settings() -> Iterable[SettingsRecord]:
    """Register the profile keys a plugin owns.

    **When:** once, before any profile is validated; every registered model is validated in the
    same pass as the broker's own keys, so a typo in a plugin key is caught like any other.

    **Parameters:** none.

    **Returns:** an iterable of [`SettingsRecord`][brokerlab.records.SettingsRecord]. Each field
    of `model` (a pydantic model with aliases, defaults, bounds and descriptions) is read from the
    key `sim.<namespace>.<alias>` (`<prefix><alias>` when the record sets `prefix`). Namespaces
    must be unique across plugins. The validated model reaches the plugin's factories as
    `context.plugin_settings[namespace]`.

    **Example:**

    ```python
    class S3FifoSettings(BaseModel):
        small_ratio: float = Field(0.1, alias="smallQueueRatio", gt=0, lt=1)

    @brokerlab.hookimpl
    def brokerlab_settings():
        yield SettingsRecord(namespace="s3fifo", model=S3FifoSettings)
    ```
    """


@hookspec
def brokerlab_workloads() -> Iterable[WorkloadRecord]:
    """Register named workloads.

    **When:** once, when the host collects records (`brokerlab workloads`, `run --workload`).

    **Parameters:** none.

    **Returns:** an iterable of [`WorkloadRecord`][brokerlab.records.WorkloadRecord]. `document`
    is the workload in the declarative TOML format (see `docs/workloads.md`); it is validated like
    a workload file, with `origin` naming it in errors.

    **Example:**

    ```python
    @brokerlab.hookimpl
    def brokerlab_workloads():
        text = resources.files(__package__).joinpath("burst.toml").read_text()
        yield WorkloadRecord(name="burst", description="One topic, 10x bursts", document=text)
    ```
    """


@hookspec
def brokerlab_simulators() -> Iterable[SimulatorRecord]:
    """Register broker models (simulators) that run a family of workloads.

    **When:** once, when the host collects records (loading a workload, `brokerlab plugins`,
    before every simulation). The framework registers its own Pulsar broker model as `pulsar`.

    **Parameters:** none.

    **Returns:** an iterable of [`SimulatorRecord`][brokerlab.records.SimulatorRecord]. A
    workload document selects one with its top-level key `simulator` (default `pulsar`); the
    record's `workload_model` validates the document, `run(request)` takes a
    [`SimulationRequest`][brokerlab.protocols.SimulationRequest] and returns a
    [`SimulationOutput`][brokerlab.protocols.SimulationOutput] whose metrics are declared (by
    `brokerlab_metrics`, usually of the same plugin) under this simulator's name (a declared one
    it leaves out is null in the results). `run` must be a pure function of the
    profile, the workload and the seed.

    **Example:**

    ```python
    @brokerlab.hookimpl
    def brokerlab_simulators():
        yield SimulatorRecord(
            name="kafka-tiered-storage",
            description="A Kafka broker's remote index cache under tiered-storage reads",
            workload_model=KafkaWorkload,
            run=run_kafka,
            scale=scale_kafka_workload,
            cost=lambda workload: workload.duration_s * len(workload.partitions),
        )
    ```
    """


@hookspec
def brokerlab_metrics() -> Iterable[Metric]:
    """Declare the metrics a plugin reports: name, unit, kind, meaning, how seeds aggregate.

    **When:** once, when the host assembles the metric registry (`brokerlab run`, `matrix`,
    `metrics`, and before every simulation). The framework declares the broker model's own metrics
    (`brokerlab.metrics.FRAMEWORK_METRICS`) through this same hook.

    **Parameters:** none.

    **Returns:** an iterable of [`Metric`][brokerlab.metrics.Metric]. The registry is the union of
    what every loaded plugin declares; a name declared by two plugins (or by a plugin and the
    framework) is an error naming both. A plugin reports values under these names from the
    `stats()` of the objects its factories build (a simulator: in its `SimulationOutput`); a
    reported name nobody declared fails the run. Every declared metric of a run's simulator
    appears in its results, null where nothing reported it (never 0), unless it sets
    `reported_when`. Declare a metric once, in the plugin that produces it; prefix its name with
    something of your plugin's (`clock_`), since names share one namespace with every other
    plugin's. `unit`, `kind`, `description`, `higher_is_better` and `aggregation` travel with
    the results, so a report reads them where the plugin is not installed.

    **Example:**

    ```python
    @brokerlab.hookimpl
    def brokerlab_metrics():
        yield Metric(
            name="clock_second_chances",
            unit="entries",
            kind="counter",
            description="Entries the clock hand spared because they were read since queued.",
            group="clock",
            aggregation="mean",
        )
    ```
    """
