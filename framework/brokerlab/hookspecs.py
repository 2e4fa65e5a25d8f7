"""The extension points of brokerlab, as pluggy hook specifications.

Every hook here is a *registration* hook in the style of conda's plugin system: it takes no
arguments and returns (usually ``yield``\\ s) zero or more named records from
:mod:`brokerlab.records`. The host calls each hook once, when it collects records, and never again
during a simulation; the records' factories build the objects the simulated broker then talks to
through the protocols in :mod:`brokerlab.protocols`.

A profile selects one record per extension point by name or alias; two records with one name, from
any two plugins, are an error that names both distributions.
"""

from __future__ import annotations

from collections.abc import Iterable

import pluggy

from brokerlab.records import (
    AckStatePersisterRecord,
    CursorContainerRecord,
    DelayedDeliveryTrackerFactoryRecord,
    EntryCacheRecord,
    EvictionPredicateRecord,
    SettingsRecord,
    WorkloadRecord,
)

PROJECT_NAME = "brokerlab"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

__all__ = ["PROJECT_NAME", "hookimpl", "hookspec"]


@hookspec
def brokerlab_entry_caches() -> Iterable[EntryCacheRecord]:
    """Register entry-cache managers.

    **When:** once, when the host collects records (``brokerlab plugins``, ``profile check``, before
    every simulation).

    **Returns:** an iterable of :class:`~brokerlab.records.EntryCacheRecord`. Each record's
    ``factory(context)`` builds one :class:`~brokerlab.protocols.EntryCache` for the whole broker;
    the profile key ``sim.entryCache`` picks the record by name or alias.

    **Example:**

    .. code-block:: python

        @brokerlab.hookimpl
        def brokerlab_entry_caches():
            yield EntryCacheRecord(
                name="fifo-bytes",
                description="A byte-bounded FIFO, the simplest useful baseline",
                factory=lambda context: FifoCache(context.settings.cache_size_bytes),
            )
    """


@hookspec
def brokerlab_eviction_predicates() -> Iterable[EvictionPredicateRecord]:
    """Register predicates that a removal queue consults for its head entry.

    **When:** once, when the host collects records.

    **Returns:** an iterable of :class:`~brokerlab.records.EvictionPredicateRecord`. The chain for a
    profile is built from Pulsar's own switches (``cacheEvictionByExpectedReadCount`` adds the
    remaining-expected-reads predicate, ``managedLedgerCacheEvictionExtendTTLOfRecentlyAccessed``
    the recently-accessed one) followed by the names listed in ``sim.evictionPredicates``, in that
    order. Each ``factory(context)`` builds one
    :class:`~brokerlab.protocols.EvictionPredicate` per cache.

    **Example:**

    .. code-block:: python

        @brokerlab.hookimpl
        def brokerlab_eviction_predicates():
            yield EvictionPredicateRecord(
                name="keep-small",
                description="Requeue entries under 1 KiB once",
                factory=lambda context: KeepSmall(limit=1024),
            )
    """


@hookspec
def brokerlab_cursor_containers() -> Iterable[CursorContainerRecord]:
    """Register active-cursor containers.

    **When:** once, when the host collects records.

    **Returns:** an iterable of :class:`~brokerlab.records.CursorContainerRecord`; ``factory()``
    returns an empty :class:`~brokerlab.protocols.CursorContainer` (one per managed ledger).
    ``sim.cursorContainer`` picks one; when unset, the choice follows
    ``cacheEvictionByExpectedReadCount``. A container that answers the rank query should satisfy
    :class:`~brokerlab.protocols.RankedCursorContainer`.

    **Example:**

    .. code-block:: python

        @brokerlab.hookimpl
        def brokerlab_cursor_containers():
            yield CursorContainerRecord(
                name="sorted-list",
                description="Sorted list with an O(1) rank query",
                factory=SortedCursorContainer,
            )
    """


@hookspec
def brokerlab_delayed_delivery_tracker_factories() -> Iterable[DelayedDeliveryTrackerFactoryRecord]:
    """Register delayed-delivery tracker factories.

    **When:** once, when the host collects records.

    **Returns:** an iterable of :class:`~brokerlab.records.DelayedDeliveryTrackerFactoryRecord`.
    ``delayedDeliveryTrackerFactoryClassName`` picks one by name or alias, so give the record the
    Java class name it models as an alias and a real broker.conf selects it unchanged.
    ``factory(context)`` builds one :class:`~brokerlab.protocols.DelayedDeliveryTrackerFactory` per
    broker.

    **Example:**

    .. code-block:: python

        @brokerlab.hookimpl
        def brokerlab_delayed_delivery_tracker_factories():
            yield DelayedDeliveryTrackerFactoryRecord(
                name="my-tracker",
                aliases=("com.example.MyTrackerFactory",),
                description="A tracker keyed by deliver-at second",
                factory=MyTrackerFactory,
            )
    """


@hookspec
def brokerlab_ack_state_persisters() -> Iterable[AckStatePersisterRecord]:
    """Register cursor ack-state persisters.

    **When:** once, when the host collects records.

    **Returns:** an iterable of :class:`~brokerlab.records.AckStatePersisterRecord`.
    ``sim.ackStatePersister`` picks one; Pulsar's own keys
    (``managedLedgerMaxUnackedRangesToPersist``
    and friends) set its parameters. ``factory(context, cursor_name)`` builds one
    :class:`~brokerlab.protocols.AckStatePersister` per durable cursor, and the persister must never
    recover a position as acknowledged that was not.

    **Example:**

    .. code-block:: python

        @brokerlab.hookimpl
        def brokerlab_ack_state_persisters():
            yield AckStatePersisterRecord(
                name="mark-delete-only",
                description="Persist the mark-delete position, never individual acks",
                factory=lambda context, cursor: MarkDeleteOnly(context.clock),
            )
    """


@hookspec
def brokerlab_settings() -> Iterable[SettingsRecord]:
    """Register the profile keys a plugin owns.

    **When:** once, before any profile is validated; every registered model is validated in the
    same pass as the broker's own keys, so a typo in a plugin key is caught like any other.

    **Returns:** an iterable of :class:`~brokerlab.records.SettingsRecord`. Each field of ``model``
    (a pydantic model with aliases, defaults, bounds and descriptions) is read from the key
    ``sim.<namespace>.<alias>``. Namespaces must be unique across plugins.

    **Example:**

    .. code-block:: python

        class S3FifoSettings(BaseModel):
            small_ratio: float = Field(0.1, alias="smallQueueRatio", gt=0, lt=1)

        @brokerlab.hookimpl
        def brokerlab_settings():
            yield SettingsRecord(namespace="s3fifo", model=S3FifoSettings)
    """


@hookspec
def brokerlab_workloads() -> Iterable[WorkloadRecord]:
    """Register named workloads.

    **When:** once, when the host collects records (``brokerlab workloads``, ``run --workload``).

    **Returns:** an iterable of :class:`~brokerlab.records.WorkloadRecord`. ``document`` is the
    workload in the declarative TOML format (see ``docs/workloads.md``); it is validated like a
    workload file, with ``origin`` naming it in errors.

    **Example:**

    .. code-block:: python

        @brokerlab.hookimpl
        def brokerlab_workloads():
            text = resources.files(__package__).joinpath("burst.toml").read_text()
            yield WorkloadRecord(name="burst", description="One topic, 10x bursts", document=text)
    """
